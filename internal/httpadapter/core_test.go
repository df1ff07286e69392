package httpadapter

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

func TestCheckPlainHTTP(t *testing.T) {
	parse := func(s string) *url.URL {
		u, err := url.Parse(s)
		require.NoError(t, err)
		return u
	}
	tests := []struct {
		url, credential string
		policy          PlainHTTP
		refused         bool
	}{
		{"https://example.com", "the key", PlainHTTPNever, false},
		{"HTTPS://example.com", "the key", PlainHTTPNever, false},
		{"http://example.com", "", PlainHTTPNever, false},
		{"http://example.com", "the key", PlainHTTPNever, true},
		{"HTTP://example.com", "the key", PlainHTTPNever, true},
		{"http://127.0.0.1:8000", "the key", PlainHTTPNever, true},
		{"http://example.com", "the key", PlainHTTPAnywhere, false},
		{"http://127.0.0.1:8000", "the key", PlainHTTPLoopback, false},
		{"http://127.9.9.9", "the key", PlainHTTPLoopback, false},
		{"http://[::1]:80", "the key", PlainHTTPLoopback, false},
		{"http://localhost:80", "the key", PlainHTTPLoopback, false},
		{"http://192.0.2.1:8000", "the key", PlainHTTPLoopback, true},
		{"http://localhost.example.com", "the key", PlainHTTPLoopback, true},
	}
	for _, tt := range tests {
		err := CheckPlainHTTP("p", parse(tt.url), tt.credential, tt.policy)
		if !tt.refused {
			assert.NoError(t, err, "%s %v", tt.url, tt.policy)
			continue
		}
		var e *errcodes.Error
		require.ErrorAs(t, err, &e, "%s %v", tt.url, tt.policy)
		assert.Equal(t, errcodes.InvalidParam, e.Code)
		assert.Equal(t, "p", e.Provider)
		assert.Contains(t, e.Message, "refusing to send the key over plain http to "+parse(tt.url).Host)
		assert.Contains(t, e.Message, "use https")
		if tt.policy == PlainHTTPLoopback {
			assert.Contains(t, e.Message, "not this machine")
			assert.NotContains(t, e.Message, "AllowInsecureHTTP", "the CLI's users set no adapter option")
		} else {
			assert.Contains(t, e.Message, "AllowInsecureHTTP")
		}
	}
	assert.NoError(t, CheckPlainHTTP("p", nil, "the key", PlainHTTPNever))
	assert.Equal(t, PlainHTTPAnywhere, Insecure(true))
	assert.Equal(t, PlainHTTPNever, Insecure(false))
}

func TestIsLoopbackHost(t *testing.T) {
	for h, want := range map[string]bool{
		"localhost": true, "127.0.0.1": true, "127.1.2.3": true, "::1": true,
		"": false, "example.com": false, "10.0.0.1": false, "::": false, "0.0.0.0": false,
	} {
		assert.Equal(t, want, IsLoopbackHost(h), h)
	}
}

func TestLimitsDefaults(t *testing.T) {
	assert.Equal(t, Limits{MaxResponseBytes: DefaultMaxResponse, MaxErrorBytes: DefaultMaxErrorBody, MaxEventBytes: DefaultMaxEvent}, Limits{}.WithDefaults())
	assert.Equal(t, Limits{MaxResponseBytes: 1, MaxErrorBytes: 2, MaxEventBytes: 3}, Limits{MaxResponseBytes: 1, MaxErrorBytes: 2, MaxEventBytes: 3}.WithDefaults())
	assert.EqualValues(t, DefaultMaxErrorBody, New(Config{Limits: Limits{MaxErrorBytes: -1}}).Limits().MaxErrorBytes)
}

func TestDescribe(t *testing.T) {
	d := New(Config{Provider: "p", Service: "s"}).Describe()
	assert.Equal(t, cloudreq.Description{Provider: "p", Service: "s", Actions: []string{cloudreq.ActionInvoke, cloudreq.ActionGenerate}}, d)
	c := New(Config{Provider: "p", Service: "s", Actions: []string{cloudreq.ActionInvoke}})
	d = c.Describe()
	assert.Equal(t, []string{cloudreq.ActionInvoke}, d.Actions)
	d.Actions[0] = "changed"
	assert.Equal(t, []string{cloudreq.ActionInvoke}, c.Describe().Actions, "each Description is the caller's")
}

func TestCheckURL(t *testing.T) {
	c := New(Config{Provider: "p", Credential: "the key"})
	base, query, err := c.CheckURL("https://user:pw@example.com/v1/?api-version=1#frag")
	require.NoError(t, err)
	assert.Equal(t, "https://example.com/v1", base)
	assert.Equal(t, "api-version=1", query)
	base, query, err = c.CheckURL("https://example.com/?")
	require.NoError(t, err)
	assert.Equal(t, "https://example.com", base, "an empty query leaves no '?'")
	assert.Empty(t, query)

	for _, raw := range []string{"example.com", "ftp://example.com", "https://", "http://user:secret@h:bad"} {
		_, _, err := c.CheckURL(raw)
		var e *errcodes.Error
		require.ErrorAs(t, err, &e, raw)
		assert.Equal(t, errcodes.InvalidParam, e.Code, raw)
		assert.Equal(t, "p", e.Provider)
		assert.NotContains(t, e.Error(), "secret")
	}
	_, _, err = c.CheckURL("http://example.com")
	assert.ErrorIs(t, err, errcodes.InvalidParam, "a credential over plain http")
	_, _, err = New(Config{}).CheckURL("http://example.com")
	assert.NoError(t, err, "no credential: plain http is fine")
	_, _, err = New(Config{Credential: "the key", AllowInsecureHTTP: true}).CheckURL("http://example.com")
	assert.NoError(t, err)
}

// seen is what a test server saw of a request.
type seen struct {
	header http.Header
	body   string
}

func recordingServer(t *testing.T, got *seen, status int, ct, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.header, got.body = r.Header.Clone(), string(b)
		w.Header().Set("Content-Type", ct)
		w.Header().Set("X-Id", "rid-1")
		w.Header().Set("X-Keep", "k")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func testCore(table ErrorTable) *Core {
	return New(Config{
		Provider: "p", Name: "pname", RequestIDHeader: "X-Id",
		KeepHeaders: []string{"X-Keep"}, IDHeaders: []string{"X-Id"}, Errors: table,
		Limits: Limits{MaxErrorBytes: 8, MaxResponseBytes: 16},
	})
}

func testCall(action string, p cloudreq.Payload, h http.Header) *cloudreq.Call {
	return &cloudreq.Call{Request: &cloudreq.CloudRequest{Action: action, RequestID: "req-7", Header: h, Payload: p}, Payload: p, Attempt: 1}
}

func TestDo(t *testing.T) {
	var got seen
	srv := recordingServer(t, &got, 200, "application/json", `{"ok":true}`)
	c := testCore(nil)
	defer c.Close()

	call := testCall(cloudreq.ActionInvoke, cloudreq.Payload{Body: []byte("hello")}, http.Header{"X-Mine": {"a", "b"}})
	resp, err := c.Do(context.Background(), call, Request{URL: srv.URL, Accept: "text/event-stream", Prepare: func(r *http.Request) {
		r.Header.Set("Authorization", "Bearer k")
	}})
	require.NoError(t, err)
	out, err := c.Read(resp)
	require.NoError(t, err)
	assert.Equal(t, "hello", got.body)
	assert.Equal(t, []string{"a", "b"}, got.header.Values("X-Mine"), "the caller's headers")
	assert.Equal(t, "application/json", got.header.Get("Content-Type"), "the default content type")
	assert.Equal(t, "text/event-stream", got.header.Get("Accept"))
	assert.Equal(t, "req-7", got.header.Get("X-Id"), "the request id")
	assert.Equal(t, "Bearer k", got.header.Get("Authorization"), "what Prepare set")
	assert.Equal(t, `{"ok":true}`, string(out.Data))
	assert.Equal(t, "rid-1", out.RequestID)
	assert.Equal(t, map[string]string{"X-Keep": "k"}, out.Metadata)
	assert.Equal(t, 200, out.StatusCode)
	assert.Equal(t, "application/json", out.ContentType)
	assert.Equal(t, "k", out.Header.Get("X-Keep"))

	// The payload's types win; the caller's request id stays; Body
	// replaces the payload.
	call = testCall(cloudreq.ActionInvoke, cloudreq.Payload{Body: []byte("x"), ContentType: "text/plain", Accept: "application/x-mine"},
		http.Header{"X-Id": {"callers"}})
	resp, err = c.Do(context.Background(), call, Request{URL: srv.URL, Accept: "text/event-stream", Body: strings.NewReader("signed")})
	require.NoError(t, err)
	_, err = c.Read(resp)
	require.NoError(t, err)
	assert.Equal(t, "signed", got.body)
	assert.Equal(t, "text/plain", got.header.Get("Content-Type"))
	assert.Equal(t, "application/x-mine", got.header.Get("Accept"))
	assert.Equal(t, []string{"callers"}, got.header.Values("X-Id"))

	// No Accept anywhere: none is sent.
	resp, err = c.Do(context.Background(), testCall(cloudreq.ActionInvoke, cloudreq.Payload{}, nil), Request{URL: srv.URL})
	require.NoError(t, err)
	_, _ = c.Read(resp)
	assert.Empty(t, got.header.Values("Accept"))

	// DefaultAccept: sent where nothing else names one, the caller's
	// header (an empty one is none) and Accept before it.
	for _, tc := range []struct {
		name    string
		h       http.Header
		accept  string
		payload string
		want    []string
	}{
		{"alone", nil, "", "", []string{"application/json"}},
		{"caller's", http.Header{"Accept": {"text/plain"}}, "", "", []string{"text/plain"}},
		{"caller's empty", http.Header{"Accept": {""}}, "", "", []string{"application/json"}},
		{"Accept", http.Header{"Accept": {"text/plain"}}, "text/event-stream", "", []string{"text/event-stream"}},
		{"payload's", nil, "text/event-stream", "application/x-mine", []string{"application/x-mine"}},
	} {
		call := testCall(cloudreq.ActionInvoke, cloudreq.Payload{Accept: tc.payload}, tc.h)
		resp, err := c.Do(context.Background(), call, Request{URL: srv.URL, Accept: tc.accept, DefaultAccept: "application/json"})
		require.NoError(t, err, tc.name)
		_, _ = c.Read(resp)
		assert.Equal(t, tc.want, got.header.Values("Accept"), tc.name)
	}
}

// TestDoHeaderValues: the header values Do sets share one array, but
// each is its own: a Prepare that appends to one changes no other.
func TestDoHeaderValues(t *testing.T) {
	var got seen
	srv := recordingServer(t, &got, 200, "application/json", `{}`)
	c := New(Config{Provider: "p", Name: "pname", RequestIDHeader: "x-request-id"})
	defer c.Close()
	call := testCall(cloudreq.ActionInvoke, cloudreq.Payload{}, nil)
	resp, err := c.Do(context.Background(), call, Request{URL: srv.URL, Accept: "a/b", Prepare: func(r *http.Request) {
		r.Header["Accept"] = append(r.Header["Accept"], "c/d")
	}})
	require.NoError(t, err)
	_, _ = c.Read(resp)
	assert.Equal(t, []string{"a/b", "c/d"}, got.header.Values("Accept"))
	assert.Equal(t, []string{"application/json"}, got.header.Values("Content-Type"))
	assert.Equal(t, []string{"req-7"}, got.header.Values("X-Request-Id"), "a lower-case RequestIDHeader")
}

func TestDoErrors(t *testing.T) {
	var got seen
	srv := recordingServer(t, &got, 503, "text/plain", "0123456789abcdef")
	var tableBody []byte
	var tableRID string
	native := errors.New("native")
	c := testCore(func(resp *http.Response, body []byte, rid string) *errcodes.Error {
		tableBody, tableRID = body, rid
		return NewError(errcodes.Unavailable, "p", resp, "503", string(body), rid, native)
	})
	defer c.Close()
	_, err := c.Do(context.Background(), testCall(cloudreq.ActionInvoke, cloudreq.Payload{}, nil), Request{URL: srv.URL})
	var e *errcodes.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, errcodes.Unavailable, e.Code)
	assert.ErrorIs(t, err, native)
	assert.Equal(t, "01234567", string(tableBody), "the error body, read up to MaxErrorBytes")
	assert.Equal(t, "rid-1", tableRID)

	// Without an error table, the status decides.
	_, err = testCore(nil).Do(context.Background(), testCall(cloudreq.ActionInvoke, cloudreq.Payload{}, nil), Request{URL: srv.URL})
	require.ErrorAs(t, err, &e)
	assert.Equal(t, errcodes.Unavailable, e.Code)
	assert.Equal(t, "503", e.ProviderCode)
	assert.Equal(t, "01234567", e.Message, "the error body's text")
	assert.Equal(t, "rid-1", e.RequestID)
	assert.Equal(t, "p", e.Provider)
	e = StatusError("p", &http.Response{StatusCode: 302, Header: http.Header{}}, nil, "")
	assert.Equal(t, errcodes.Unknown, e.Code)
	assert.Equal(t, "Found", e.Message)

	// A transport failure names the provider.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	_, err = c.Do(context.Background(), testCall(cloudreq.ActionInvoke, cloudreq.Payload{}, nil), Request{URL: dead.URL})
	require.ErrorAs(t, err, &e)
	assert.Equal(t, errcodes.Unavailable, e.Code)
	assert.Equal(t, "p", e.Provider)

	// A URL that cannot be a request.
	_, err = c.Do(context.Background(), testCall(cloudreq.ActionInvoke, cloudreq.Payload{}, nil), Request{URL: "http://h/\x7f"})
	require.ErrorAs(t, err, &e)
	assert.Equal(t, errcodes.InvalidParam, e.Code)
	assert.Contains(t, e.Message, "pname: building the request failed")
}

func TestReadTooLarge(t *testing.T) {
	var got seen
	srv := recordingServer(t, &got, 200, "application/json", strings.Repeat("x", 17))
	c := testCore(nil)
	defer c.Close()
	resp, err := c.Do(context.Background(), testCall(cloudreq.ActionInvoke, cloudreq.Payload{}, nil), Request{URL: srv.URL})
	require.NoError(t, err)
	_, err = c.Read(resp)
	var e *errcodes.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, errcodes.PayloadTooLarge, e.Code)
	assert.Equal(t, "p", e.Provider)
	assert.Equal(t, "rid-1", e.RequestID)
	assert.Equal(t, 200, e.HTTPStatus)
	assert.Contains(t, e.Message, "pname: response body exceeds 16 bytes")
}

// TestInvoke: a whole answer's text, finish reason and usage fill the
// response, for invoke as for generate; an error object is the call's
// error; a body the dialect cannot read fails generate with
// ERR_MODEL_ERROR and is left in Data for invoke, which decodes JSON only.
func TestInvoke(t *testing.T) {
	c := New(Config{Provider: "p", IDHeaders: []string{"X-Id"}})
	resp := func(ct, body string) *http.Response {
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {ct}, "X-Id": {"r"}}, Body: io.NopCloser(strings.NewReader(body))}
	}
	objErr := errcodes.New(errcodes.Throttled, "in the body")
	decode := func(_ *http.Response, out *cloudreq.CloudResponse) (Answer, error) {
		switch string(out.Data) {
		case "ok":
			return Answer{Text: "hi", FinishReason: "stop", Usage: &cloudreq.Usage{OutputTokens: 1}}, nil
		case "error":
			return Answer{Text: "ignored", Err: objErr}, nil
		}
		return Answer{}, errors.New("bad json")
	}
	for _, action := range []string{cloudreq.ActionInvoke, cloudreq.ActionGenerate} {
		out, err := c.Invoke(resp("application/json", "ok"), action, "pname: not an answer", decode)
		require.NoError(t, err, action)
		assert.Equal(t, "hi", out.Text)
		assert.Equal(t, "stop", out.FinishReason)
		assert.Equal(t, 1, out.Usage.OutputTokens)
		assert.Equal(t, "ok", string(out.Data))
		assert.Equal(t, "r", out.RequestID)

		_, err = c.Invoke(resp("application/json", "error"), action, "pname: not an answer", decode)
		assert.Same(t, objErr, err, action)
	}

	_, err := c.Invoke(resp("application/json", "{"), cloudreq.ActionGenerate, "pname: not an answer", decode)
	var e *errcodes.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, errcodes.ModelError, e.Code)
	assert.False(t, e.Retryable)
	assert.Equal(t, "pname: not an answer: bad json", e.Message)
	assert.Equal(t, 200, e.HTTPStatus)
	assert.Equal(t, "r", e.RequestID)
	assert.Equal(t, "p", e.Provider)

	out, err := c.Invoke(resp("application/json", "{"), cloudreq.ActionInvoke, "pname: not an answer", decode)
	require.NoError(t, err, "an invoke answer of another shape is the caller's")
	assert.Empty(t, out.Text)
	assert.Equal(t, "{", string(out.Data))

	out, err = c.Invoke(resp("text/plain", "ok"), cloudreq.ActionInvoke, "pname: not an answer", decode)
	require.NoError(t, err)
	assert.Empty(t, out.Text, "an invoke answer that is not JSON is not decoded")
	out, err = c.Invoke(resp("text/plain", "ok"), cloudreq.ActionGenerate, "pname: not an answer", decode)
	require.NoError(t, err)
	assert.Equal(t, "hi", out.Text, "a generate answer is decoded whatever its type")
}

func TestFramingOf(t *testing.T) {
	assert.Equal(t, FramingSSE, FramingOf("text/event-stream; charset=utf-8"))
	assert.Equal(t, FramingWhole, FramingOf("application/json"))
	assert.Equal(t, FramingRaw, FramingOf("text/plain"))
	assert.Equal(t, FramingRaw, FramingOf(""))
}

// TestCoreStream: a whole body is bounded by MaxResponseBytes, a frame by
// MaxEventBytes; the stream's head is the response's.
func TestCoreStream(t *testing.T) {
	c := New(Config{Provider: "p", IDHeaders: []string{"X-Id"}, Limits: Limits{MaxResponseBytes: 8, MaxEventBytes: 4}})
	resp := func(body string) *http.Response {
		return &http.Response{StatusCode: 200, Header: http.Header{"X-Id": {"r"}}, Body: io.NopCloser(strings.NewReader(body))}
	}
	for _, tt := range []struct {
		framing Framing
		body    string
		ok      bool
	}{
		{FramingWhole, "12345678", true},
		{FramingWhole, "123456789", false},
		{FramingNUL, "1234\x00", true},
		{FramingNUL, "12345\x00", false},
	} {
		var head *cloudreq.CloudResponse
		s := c.Stream(resp(tt.body), func(h *cloudreq.CloudResponse) (Framing, Decoder) {
			head = h
			return tt.framing, TextDecoder{}
		})
		assert.Equal(t, "r", head.RequestID)
		assert.Same(t, head, s.Response())
		_, err := s.Next()
		if tt.ok {
			assert.NoError(t, err, "%q", tt.body)
		} else {
			assert.ErrorIs(t, err, errcodes.PayloadTooLarge, "%q", tt.body)
		}
		require.NoError(t, s.Close())
	}
}

func TestAPIError(t *testing.T) {
	e := &APIError{Provider: "openai", StatusCode: 429, Code: "rate_limit_exceeded", Type: "t", Message: "slow down"}
	assert.Equal(t, "openai: HTTP 429 rate_limit_exceeded: slow down", e.Error())
	e = &APIError{Provider: "alibaba", Type: "server_error"}
	assert.Equal(t, "alibaba: in-stream error server_error", e.Error())
}
