package openai

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
	"github.com/cloudinfer/cloudinfer/providers/providertest"
)

const chatResponse = `{"id":"chatcmpl-1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`

func TestGenerateRequestAndResponse(t *testing.T) {
	var got struct {
		path, auth, ct, accept, rid string
		body                        map[string]any
	}
	a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		got.path, got.auth = r.URL.Path, r.Header.Get("Authorization")
		got.ct, got.accept, got.rid = r.Header.Get("Content-Type"), r.Header.Get("Accept"), r.Header.Get("X-Request-Id")
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &got.body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "srv-1")
		w.Header().Set("X-Emulator-Cold-Start", "true")
		w.Header().Set("X-Emulator-Cold-Start-Ms", "12.5")
		w.Header().Set("X-Emulator-Ttft-Ms", "3.25")
		_, _ = io.WriteString(w, chatResponse)
	})
	temp := 0.5
	r := generateReq("llama")
	r.RequestID = "req-123"
	r.Generate.Temperature = &temp
	r.Generate.Stop = []string{"\n"}
	resp, err := client(t, a).Invoke(ctx(t), r)
	require.NoError(t, err)

	assert.Equal(t, "/v1/chat/completions", got.path)
	assert.Equal(t, "Bearer sk-test-secret", got.auth)
	assert.Equal(t, "application/json", got.ct)
	assert.Equal(t, "application/json", got.accept)
	assert.Equal(t, "req-123", got.rid)
	assert.Equal(t, "llama", got.body["model"])
	assert.Equal(t, []any{map[string]any{"role": "user", "content": "hi"}}, got.body["messages"])
	assert.EqualValues(t, 8, got.body["max_tokens"])
	assert.EqualValues(t, 0.5, got.body["temperature"])
	assert.Equal(t, []any{"\n"}, got.body["stop"])
	assert.NotContains(t, got.body, "stream")

	assert.Equal(t, "Hello there", resp.Text)
	assert.Equal(t, "stop", resp.FinishReason)
	assert.Equal(t, cloudreq.Usage{InputTokens: 5, OutputTokens: 2, Source: "server"}, resp.Usage)
	assert.Equal(t, "srv-1", resp.RequestID)
	assert.Equal(t, "true", resp.Header.Get("X-Emulator-Cold-Start"), "the response's headers as received")
	assert.Equal(t, "3.25", resp.Header.Get("X-Emulator-Ttft-Ms"))
	assert.Nil(t, resp.ServerStart, "the adapter reads no server's start report")
	assert.Equal(t, map[string]string{"X-Request-Id": "srv-1"}, resp.Metadata, "the kept headers only")
}

func TestEncode(t *testing.T) {
	a, err := New(Options{})
	require.NoError(t, err)
	r := generateReq("m")
	p, err := a.Encode(r, true)
	require.NoError(t, err)
	assert.JSONEq(t, `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":8,"stream":true,"stream_options":{"include_usage":true}}`, string(p.Body))
	assert.Equal(t, "text/event-stream", p.Accept)

	r.Target.Path = "/v1/completions"
	r.Generate.Messages = append(r.Generate.Messages, cloudreq.Message{Role: "assistant", Content: "yo"})
	p, err = a.Encode(r, false)
	require.NoError(t, err)
	assert.JSONEq(t, `{"model":"m","prompt":"user: hi\nassistant: yo\nassistant:","max_tokens":8}`, string(p.Body))

	// The endpoint name stands in for a missing model.
	r = generateReq("")
	r.Target.Endpoint = "qwen2-7b"
	a2, _ := New(Options{OmitStreamUsage: true})
	p, err = a2.Encode(r, true)
	require.NoError(t, err)
	assert.JSONEq(t, `{"model":"qwen2-7b","messages":[{"role":"user","content":"hi"}],"max_tokens":8,"stream":true}`, string(p.Body))

	_, err = a.Encode(&cloudreq.CloudRequest{}, false)
	assert.ErrorIs(t, err, errcodes.InvalidParam)
}

func TestInvokeSendsBytesToPath(t *testing.T) {
	const body = `{"model":"m","prompt":"x","max_tokens":1}`
	var path, gotBody, ct string
	a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		path, ct = r.URL.Path, r.Header.Get("Content-Type")
		b, _ := io.ReadAll(r.Body)
		gotBody = string(b)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"choices":[{"text":"y","finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`)
	})
	r := invokeReq(body)
	r.Target.Path = "/v1/completions"
	r.Payload.ContentType = "application/json; charset=utf-8"
	resp, err := client(t, a).Invoke(ctx(t), r)
	require.NoError(t, err)
	assert.Equal(t, "/v1/completions", path)
	assert.Equal(t, body, gotBody)
	assert.Equal(t, "application/json; charset=utf-8", ct)
	assert.Equal(t, body, gotBody)
	assert.JSONEq(t, `{"choices":[{"text":"y","finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`, string(resp.Data))
	assert.Equal(t, "y", resp.Text)
	assert.Equal(t, "length", resp.FinishReason)
}

func TestInvokeNonJSONKeepsBytes(t *testing.T) {
	a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write([]byte{0, 1, 2})
	})
	resp, err := client(t, a).Invoke(ctx(t), invokeReq("x"))
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 1, 2}, resp.Data)
	assert.Empty(t, resp.Text)
}

// TestGenerateRejectsNonCompletion: a 2xx generate answer that is no
// completion (plain text, JSON cut short) is the model server's fault:
// ERR_MODEL_ERROR, not retryable, with the status and request id; by a
// stream answered with one such JSON body too. An invoke keeps the bytes.
func TestGenerateRejectsNonCompletion(t *testing.T) {
	for _, tc := range []struct{ ct, body string }{
		{"text/plain", "hello"},
		{"application/json", `{"id":"chatcmpl-1","choices":[{"mess`},
	} {
		a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", tc.ct)
			w.Header().Set(HeaderRequestID, "rid-1")
			_, _ = io.WriteString(w, tc.body)
		})
		_, err := client(t, a).Invoke(ctx(t), generateReq("m"))
		var e *errcodes.Error
		require.ErrorAs(t, err, &e, tc.body)
		assert.Equal(t, errcodes.ModelError, e.Code, "%s: %v", tc.body, err)
		assert.False(t, e.Retryable, tc.body)
		assert.Equal(t, http.StatusOK, e.HTTPStatus, tc.body)
		assert.Equal(t, "rid-1", e.RequestID, tc.body)
		assert.Equal(t, "openai", e.Provider, tc.body)

		resp, err := client(t, a).Invoke(ctx(t), invokeReq("x"))
		require.NoError(t, err, tc.body)
		assert.Equal(t, tc.body, string(resp.Data))
		assert.Empty(t, resp.Text)

		if tc.ct == "application/json" {
			s, err := client(t, a).Stream(ctx(t), generateReq("m"))
			require.NoError(t, err)
			for s.Next() {
				assert.False(t, s.Chunk().Content)
			}
			require.ErrorAs(t, s.Err(), &e)
			assert.Equal(t, errcodes.ModelError, e.Code, "stream: %v", s.Err())
			assert.False(t, e.Retryable)
			_ = s.Close()
		}
	}
}

func TestURLs(t *testing.T) {
	tests := []struct {
		base, endpoint, path, want string
	}{
		{"http://h:1", "", "", "http://h:1/v1/chat/completions"},
		{"http://h:1/", "", "/v1/completions", "http://h:1/v1/completions"},
		{"https://api.example.com/v1", "", "", "https://api.example.com/v1/chat/completions"},
		{"https://api.example.com/openai/v1", "", "/v1/models", "https://api.example.com/openai/v1/models"},
		{"http://h:1", "https://other:2/v1", "", "https://other:2/v1/chat/completions"},
		{"http://h:1", "name-only", "chat/completions", "http://h:1/chat/completions"},
		{"http://h:1", "", "/chat/completions?api-version=2024-05-01-preview", "http://h:1/chat/completions?api-version=2024-05-01-preview"},
		// A base URL's query goes after the path, joined to the path's own.
		{"https://h.example/v1?tenant=x", "", "", "https://h.example/v1/chat/completions?tenant=x"},
		{"https://h.example/v1?tenant=x#frag", "", "/v1/completions?a=1", "https://h.example/v1/completions?a=1&tenant=x"},
		{"http://h:1?tenant=x", "https://other:2/v1?b=2", "", "https://other:2/v1/chat/completions?b=2"},
	}
	for _, tt := range tests {
		a, err := New(Options{BaseURL: tt.base})
		require.NoError(t, err)
		got, err := a.url(cloudreq.Target{Endpoint: tt.endpoint, Path: tt.path})
		require.NoError(t, err)
		assert.Equal(t, tt.want, got)
	}
}

func TestCredentialsOverHTTP(t *testing.T) {
	const key = "sk-very-secret-key"
	_, err := New(Options{BaseURL: "http://127.0.0.1:9", APIKey: key})
	require.Error(t, err)
	assert.ErrorIs(t, err, errcodes.InvalidParam)
	assert.NotContains(t, err.Error(), key)
	assert.Contains(t, err.Error(), "AllowInsecureHTTP")

	_, err = New(Options{BaseURL: "http://127.0.0.1:9"})
	assert.NoError(t, err, "no key: plain http is fine")
	_, err = New(Options{BaseURL: "http://127.0.0.1:9", APIKey: key, AllowInsecureHTTP: true})
	assert.NoError(t, err)

	// A per-request endpoint URL follows the same rule.
	a, err := New(Options{BaseURL: "https://api.example.com", APIKey: key})
	require.NoError(t, err)
	_, err = a.url(cloudreq.Target{Endpoint: "http://user:pw@10.0.0.1/v1"})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), key)
	assert.NotContains(t, err.Error(), "pw")

	for _, bad := range []string{"ftp://x", "not a url", "/relative"} {
		_, err = New(Options{BaseURL: bad})
		assert.ErrorIs(t, err, errcodes.InvalidParam, bad)
	}
}

func TestNoKeyInErrors(t *testing.T) {
	a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		// A server that echoes the request headers in its error body.
		w.WriteHeader(401)
		_, _ = io.WriteString(w, `{"error":{"message":"bad key","type":"invalid_request_error","code":"invalid_api_key"}}`)
	})
	_, err := client(t, a).Invoke(ctx(t), generateReq("m"))
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "sk-test-secret")
	assert.ErrorIs(t, err, errcodes.Unauthenticated)
}

func TestNoAuthorizationWithoutKey(t *testing.T) {
	var auth []string
	_, srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Values("Authorization")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, chatResponse)
	})
	a, err := New(Options{BaseURL: srv.URL})
	require.NoError(t, err)
	_, err = client(t, a).Invoke(ctx(t), generateReq("m"))
	require.NoError(t, err)
	assert.Empty(t, auth)
}

func TestDescribe(t *testing.T) {
	a, err := New(Options{})
	require.NoError(t, err)
	d := a.Describe()
	assert.Equal(t, "openai", d.Provider)
	assert.Equal(t, "openai-compatible", d.Service)
	assert.ElementsMatch(t, []string{"invoke", "generate"}, d.Actions)
	assert.True(t, strings.HasPrefix(a.base, "https://api.openai.com"))
}

func TestResponseTooLarge(t *testing.T) {
	a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, chatResponse)
	}, func(o *Options) { o.MaxResponseBytes = 16 })
	_, err := client(t, a).Invoke(ctx(t), generateReq("m"))
	assert.ErrorIs(t, err, errcodes.PayloadTooLarge)
}

// TestConnectionPool: without an HTTPClient the adapter keeps enough idle
// connections for concurrent calls and bounds the wait for response
// headers; its Close closes its own transport's idle connections only
// (providertest.RunPool).
func TestConnectionPool(t *testing.T) {
	providertest.RunPool(t, providertest.HTTPPool(func(base string, hc *http.Client) (*Adapter, error) {
		return New(Options{BaseURL: base, HTTPClient: hc})
	}, func(a *Adapter) *httpadapter.Core { return a.core }, func() *cloudreq.CloudRequest { return invokeReq(`{}`) }))
}
