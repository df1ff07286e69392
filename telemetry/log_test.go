package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/cloudreq/cloudreqtest"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/hooks"
)

// jsonLines decodes a JSON handler's output, one record a line.
func jsonLines(t *testing.T, b *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		out = append(out, m)
	}
	return out
}

func byMsg(recs []map[string]any, msg string) []map[string]any {
	var out []map[string]any
	for _, r := range recs {
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

func TestLogHookInstalled(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	set := hooks.Default()
	require.NoError(t, NewLogHook(logger, LogOptions{}).Install(set))
	assert.Equal(t, []string{hooks.NameRequestID, LogHookName}, set.Serialize.Names())
	assert.Equal(t, []string{LogHookName}, set.Deserialize.Names())
	require.Error(t, NewLogHook(logger, LogOptions{}).Install(set), "a second log hook under the same name")

	throttled := errcodes.New(errcodes.Throttled, "queue full")
	throttled.HTTPStatus, throttled.ProviderCode, throttled.RetryAfter = 450, "450", time.Millisecond
	fake := &cloudreqtest.Adapter{Provider: cloudreq.ProviderAlibaba, Service: cloudreq.ServicePAIEAS,
		Outcomes: []cloudreqtest.Outcome{{Err: throttled}, {Response: &cloudreq.CloudResponse{StatusCode: 200, Data: []byte("ok"), RequestID: "eas-7"}}}}
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{fake}, Hooks: set,
		Retry: cloudreq.RetryOptions{BaseDelay: time.Millisecond, NoBudget: true}})
	require.NoError(t, err)
	req := &cloudreq.CloudRequest{Provider: cloudreq.ProviderAlibaba, Service: cloudreq.ServicePAIEAS, Action: cloudreq.ActionInvoke,
		Target:  cloudreq.Target{Endpoint: "http://127.0.0.1:9/api/predict/svc?token=abcdef", Path: "/v1/x"},
		Header:  http.Header{"Authorization": {"EAS c2lnbmF0dXJlLXZhbHVl"}, "X-Trace": {"t-1"}},
		Payload: cloudreq.Payload{Body: []byte(`{"prompt":"private words"}`)}}
	_, err = c.Invoke(context.Background(), req)
	require.NoError(t, err)

	recs := jsonLines(t, &buf)
	reqs := byMsg(recs, LogMsgRequest)
	require.Len(t, reqs, 1)
	r := reqs[0]
	assert.Equal(t, "INFO", r["level"])
	assert.Equal(t, "alibaba", r["provider"])
	assert.Equal(t, "pai-eas", r["service"])
	assert.Equal(t, "invoke", r["action"])
	assert.Equal(t, "/v1/x", r["path"])
	assert.Equal(t, "http://127.0.0.1:9/api/predict/svc?token=%5BREDACTED%5D", r["endpoint"])
	assert.Regexp(t, `^[0-9a-f]{32}$`, r["request_id"], "logged after the request-id hook")
	assert.Equal(t, map[string]any{"Authorization": hooks.Redacted, "X-Trace": "t-1"}, r["header"])
	assert.EqualValues(t, 26, r["payload_bytes"])
	assert.NotContains(t, r, "body", "no content unless asked")

	resps := byMsg(recs, LogMsgResponse)
	require.Len(t, resps, 2)
	assert.Equal(t, "WARN", resps[0]["level"], "a failed attempt is one level up")
	assert.Equal(t, "ERR_THROTTLED", resps[0]["code"])
	assert.Equal(t, "450", resps[0]["provider_code"])
	assert.EqualValues(t, 450, resps[0]["status"])
	assert.Equal(t, true, resps[0]["retryable"])
	assert.Equal(t, "queue full", resps[0]["message"])
	assert.EqualValues(t, 1, resps[0]["attempt"])
	assert.Equal(t, "INFO", resps[1]["level"])
	assert.EqualValues(t, 200, resps[1]["status"])
	assert.EqualValues(t, 2, resps[1]["attempt"])
	assert.Equal(t, "eas-7", resps[1]["provider_request_id"])
	assert.EqualValues(t, 2, resps[1]["body_bytes"])
	assert.Greater(t, resps[1]["elapsed"].(float64), resps[0]["elapsed"].(float64))
	assert.Equal(t, r["request_id"], resps[1]["request_id"])
	assert.NotContains(t, buf.String(), "private words")
	assert.NotContains(t, buf.String(), "c2lnbmF0dXJlLXZhbHVl")
	assert.NotContains(t, buf.String(), "abcdef")
}

func TestWithLogging(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{
		{Err: errcodes.New(errcodes.Unavailable, "try again")},
		{Response: &cloudreq.CloudResponse{StatusCode: 200, Text: "hello there", FinishReason: "stop",
			Usage: cloudreq.Usage{InputTokens: 3, OutputTokens: 2}}}}}
	veto := hooks.PostDeserializeFunc(func(_ context.Context, _ *cloudreq.CloudRequest, resp *cloudreq.CloudResponse, err error) error {
		if err == nil && resp.Text == "" {
			return errcodes.New(errcodes.ModelError, "empty text")
		}
		return nil
	})
	set := &hooks.Set{}
	require.NoError(t, set.Deserialize.Add("veto-empty", veto))
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{fake}, Hooks: set,
		Retry: cloudreq.RetryOptions{BaseDelay: time.Millisecond, NoBudget: true}})
	require.NoError(t, err)
	resp, err := c.Invoke(context.Background(), generateReq(), WithLogging(logger, LogOptions{Level: slog.LevelDebug, CaptureContent: true}))
	require.NoError(t, err)
	require.Equal(t, "hello there", resp.Text)
	assert.Equal(t, []string{"veto-empty"}, set.Deserialize.Names(), "the configured set is not modified")

	recs := jsonLines(t, &buf)
	reqs := byMsg(recs, LogMsgRequest)
	require.Len(t, reqs, 1)
	assert.Equal(t, "DEBUG", reqs[0]["level"])
	assert.Equal(t, "req-1", reqs[0]["request_id"])
	assert.JSONEq(t, `[{"role":"user","parts":[{"type":"text","content":"the secret prompt"}]}]`, reqs[0]["input_messages"].(string))
	resps := byMsg(recs, LogMsgResponse)
	require.Len(t, resps, 2)
	assert.Equal(t, "INFO", resps[0]["level"], "Debug steps up to Info on failure")
	assert.Equal(t, "ERR_UNAVAILABLE", resps[0]["code"])
	assert.Equal(t, "hello there", resps[1]["text"])
	assert.EqualValues(t, 2, resps[1]["output_tokens"])
	assert.Len(t, byMsg(recs, "cloudinfer retry"), 1, "the client's retry record goes to the same logger")

	// Without content capture, and with a veto from the wrapped hooks.
	buf.Reset()
	fake2 := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Response: &cloudreq.CloudResponse{StatusCode: 200}}}}
	c2, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{fake2}, Hooks: set,
		Retry: cloudreq.RetryOptions{MaxAttempts: 1}}, WithLogging(logger, LogOptions{}))
	require.NoError(t, err)
	_, err = c2.Invoke(context.Background(), generateReq())
	require.ErrorIs(t, err, errcodes.ModelError)
	recs = jsonLines(t, &buf)
	resps = byMsg(recs, LogMsgResponse)
	require.Len(t, resps, 1)
	assert.Equal(t, "ERR_MODEL_ERROR", resps[0]["code"], "the log shows the outcome after the veto")
	assert.Equal(t, "WARN", resps[0]["level"])
	assert.NotContains(t, buf.String(), "the secret prompt")
}

func TestRedactAttr(t *testing.T) {
	const s = "s3cr3t-VALUE-0123456789"
	wrapped := errcodes.Wrap(errors.New("upstream said "+s), errcodes.Unauthenticated, "")
	for _, tc := range []struct {
		in   slog.Attr
		want string // the attribute as the text handler prints it
	}{
		{slog.String("Authorization", "Bearer "+s), "Authorization=[REDACTED]"},
		{slog.String("x-api-key", s), "x-api-key=[REDACTED]"},
		{slog.String("api_key", s), "api_key=[REDACTED]"},
		{slog.String("openai_api_key", s), "openai_api_key=[REDACTED]"},
		{slog.String("X-Amz-Security-Token", s), "X-Amz-Security-Token=[REDACTED]"},
		{slog.String("eas_token", s), "eas_token=[REDACTED]"},
		{slog.Int("token", 42), "token=[REDACTED]"},
		{slog.String("note", "sent Bearer "+s+" to it"), `note="sent Bearer [REDACTED] to it"`},
		{slog.String("note", "EAS "+s), `note="EAS [REDACTED]"`},
		{slog.String("note", "PAI-EAS service busy"), `note="PAI-EAS service busy"`},
		{slog.String("url", "https://h.example/p?sig="+s+"&x=1"), `url="https://h.example/p?sig=%5BREDACTED%5D&x=1"`},
		{slog.String("q", "api-key="+s+"&b=2"), `q="api-key=[REDACTED]&b=2"`},
		{slog.Any("u", &url.URL{Scheme: "https", Host: "h", User: url.UserPassword("me", s)}), `u=https://%5BREDACTED%5D@h`},
		{slog.Any("h", http.Header{"X-Api-Key": {s}, "Accept": {"a/b"}}), `h.Accept=a/b h.X-Api-Key=[REDACTED]`},
		{slog.Any("err", wrapped), `err=ERR_UNAUTHENTICATED`},
		{slog.Any("err", fmt.Errorf("call: %w", &errcodes.Error{Code: errcodes.Throttled, Provider: "aws", ProviderCode: "ThrottlingException",
			HTTPStatus: 429, Message: "slow down, key=" + s, RequestID: "r1", Err: errors.New(s)})),
			`err="ERR_THROTTLED: aws ThrottlingException (HTTP 429): slow down, key=[REDACTED] [request id r1]"`},
		{slog.Any("err", errors.New("GET https://h/?key="+s+": refused")), `err="GET https://h/?key=%5BREDACTED%5D: refused"`},
		{slog.Any("body", []byte("token="+s)), `body="token=[REDACTED]"`},
		{slog.Group("g", slog.String("password", s), slog.Int("n", 1)), `g.password=[REDACTED] g.n=1`},
		{slog.String("status", "ok"), `status=ok`},
		{slog.Int("code", 7), `code=7`},
	} {
		var buf bytes.Buffer
		l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey {
				return slog.Attr{}
			}
			return a
		}}))
		l.LogAttrs(context.Background(), slog.LevelInfo, "", RedactAttr(nil, tc.in))
		assert.Equal(t, tc.want, strings.TrimSpace(buf.String()), tc.in.Key)
		assert.NotContains(t, buf.String(), s)
	}
}

func TestRedactHandler(t *testing.T) {
	const s = "tok-ABCDEFGH-987654321"
	var buf bytes.Buffer
	h := RedactHandler(slog.NewJSONHandler(&buf, nil))
	assert.Same(t, h, RedactHandler(h), "wrapping twice is wrapping once")
	l := slog.New(h).With("authorization", "Bearer "+s, "svc", "pai-eas").WithGroup("call")
	l.Info("calling https://x/?sig="+s, "x-amz-security-token", s, "ok", true)
	out := buf.String()
	assert.NotContains(t, out, s)
	var m map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &m))
	assert.Equal(t, "calling https://x/?sig=%5BREDACTED%5D", m["msg"])
	assert.Equal(t, hooks.Redacted, m["authorization"])
	assert.Equal(t, "pai-eas", m["svc"])
	assert.Equal(t, map[string]any{"x-amz-security-token": hooks.Redacted, "ok": true}, m["call"])
	assert.False(t, slog.New(RedactHandler(slog.NewJSONHandler(&buf, nil))).Enabled(context.Background(), slog.LevelDebug))
}

// TestLogHookPathRedacted: the request path is logged through
// hooks.RedactURL, whose list of credential parameters ("code" among them)
// is longer than what free-text redaction knows.
func TestLogHookPathRedacted(t *testing.T) {
	const secret = "SECRET123"
	for _, tc := range []struct{ path, want string }{
		{"/v1/x", "/v1/x"},
		{"/oauth/cb?code=" + secret + "&state=s1", "/oauth/cb?code=%5BREDACTED%5D&state=s1"},
		{"/v1/chat?sig=" + secret, "/v1/chat?sig=%5BREDACTED%5D"},
		{"v1/predict?token=" + secret + "&n=2", "v1/predict?n=2&token=%5BREDACTED%5D"},
	} {
		var buf bytes.Buffer
		logger := slog.New(slog.NewJSONHandler(&buf, nil))
		c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{&cloudreqtest.Adapter{}}}, WithLogging(logger, LogOptions{}))
		require.NoError(t, err)
		req := generateReq()
		req.Target.Path = tc.path
		_, err = c.Invoke(context.Background(), req)
		require.NoError(t, err)
		require.NoError(t, c.Close())
		recs := jsonLines(t, &buf)
		require.Len(t, recs, 2)
		for _, r := range recs {
			p, _ := r["path"].(string)
			assert.Equal(t, tc.want, masked(p, secret), "path")
		}
		assert.NotContains(t, masked(buf.String(), secret), "<LEAKED", "the secret reached the log")
	}
}

// TestSensitiveKey: credential names are recognised whatever their
// spelling; names of token counts and the package's own keys are not.
func TestSensitiveKey(t *testing.T) {
	for _, k := range []string{
		"apiKey", "apikey", "API_KEY", "api-key", "x.api_key", "openai_api_key", "accessToken", "access_token",
		"authToken", "clientSecret", "client_secret", "sessionToken", "secretAccessKey", "aws_secret_access_key",
		"bearerToken", "bearer_token", "refresh_token", "id_token", "idToken", "eas_token", "token", "key", "sig",
		"signature", "x-amz-signature", "X-Amz-Credential", "credentials", "password", "dbPassword", "passwd",
		"privateKey", "private_key", "storageAccountKey", "Authorization", "Proxy-Authorization", "X-Api-Key",
		"Api-Key", "Ocp-Apim-Subscription-Key", "X-Goog-Api-Key", "X-Amz-Security-Token", "Cookie", "Set-Cookie",
		"auth.token", "jwt",
	} {
		assert.True(t, SensitiveKey(k), "%s is a credential's name", k)
	}
	for _, k := range []string{
		"tokens", "output_tokens", "input_tokens", "token_count", "tokenCount", "max_tokens", "maxTokens",
		"max_new_tokens", "max_completion_tokens", "prompt_tokens", "completion_tokens", "total_tokens",
		"tokens_per_second", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.request.max_tokens",
		"gen_ai.token.type", "token_type", "tokenizer", "time_to_first_token", "first-token", "itl-token",
		"eos_token", "max_token", "secret_name", "apiKeyId", "credential_source", "signature_version",
		"code", "status", "provider_code", "request_id", "provider_request_id", "endpoint", "model", "path",
		"message", "monkey", "keyboard", "",
	} {
		assert.False(t, SensitiveKey(k), "%s is not a credential's name", k)
	}
}

// TestPackageKeysNotSensitive: no key this package writes (log records,
// span attributes, metric attributes) is taken for a credential's name,
// so that token counts and codes stay readable.
func TestPackageKeysNotSensitive(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	throttled := errcodes.New(errcodes.Throttled, "slow down")
	throttled.HTTPStatus, throttled.ProviderCode, throttled.RetryAfter, throttled.RequestID = 429, "Throttling", time.Millisecond, "r-0"
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Err: throttled}, {Chunks: []cloudreq.StreamChunk{
		{Text: "a"}, {Text: "b", FinishReason: "stop", Usage: &cloudreq.Usage{InputTokens: 3, OutputTokens: 2}}}},
		{Response: &cloudreq.CloudResponse{StatusCode: 200, Text: "hi", FinishReason: "stop", RequestID: "p-1",
			Usage: cloudreq.Usage{InputTokens: 3, OutputTokens: 2, Source: "server"}}}}}
	r := newRig(t, Options{CaptureContent: true}, fake, WithLogging(logger, LogOptions{Level: slog.LevelDebug, CaptureContent: true}))
	req := generateReq()
	req.Target.Variant, req.Target.Path = "v", "/p"
	s, err := r.client.Stream(context.Background(), req)
	require.NoError(t, err)
	for s.Next() {
	}
	require.NoError(t, s.Err())
	_, err = r.client.Invoke(context.Background(), generateReq())
	require.NoError(t, err)

	keys := map[string]bool{}
	for _, rec := range jsonLines(t, &buf) {
		for k := range rec {
			keys[k] = true
		}
	}
	for _, sp := range r.spans.Ended() {
		for _, kv := range sp.Attributes() {
			keys[string(kv.Key)] = true
		}
	}
	for _, m := range r.metrics(t) {
		for _, set := range metricAttrSets(m) {
			for _, kv := range set.ToSlice() {
				keys[string(kv.Key)] = true
			}
		}
	}
	for _, k := range []string{"input_tokens", "output_tokens", "max_tokens", "gen_ai.usage.output_tokens", "gen_ai.token.type"} {
		require.True(t, keys[k], "%s was written", k)
	}
	for k := range keys {
		assert.False(t, SensitiveKey(k), "the package's key %s is taken for a credential", k)
	}
}

// TestRedactStringForms: credentials in header lines, prefixed key=value
// names, JSON members and a query's "code" are hidden; counts and codes in
// prose are not.
func TestRedactStringForms(t *testing.T) {
	const secret = "SECRET123"
	for _, tc := range []struct{ in, want string }{
		{"Authorization: Bearer " + secret + "abc", "Authorization: [REDACTED]"},
		{"Authorization: " + secret, "Authorization: [REDACTED]"},
		{"proxy-authorization: Basic " + secret + "xyz", "proxy-authorization: [REDACTED]"},
		{"X-Api-Key: " + secret, "X-Api-Key: [REDACTED]"},
		{"api-key:" + secret, "api-key:[REDACTED]"},
		{"Ocp-Apim-Subscription-Key: " + secret, "Ocp-Apim-Subscription-Key: [REDACTED]"},
		{"X-Goog-Api-Key: " + secret, "X-Goog-Api-Key: [REDACTED]"},
		{"Host: h\r\nX-Amz-Security-Token: " + secret + "\r\nAccept: */*", "Host: h\r\nX-Amz-Security-Token: [REDACTED]\r\nAccept: */*"},
		{"request had Authorization: AWS4-HMAC-SHA256 Credential=" + secret + "/x, Signature=" + secret, "request had Authorization: [REDACTED]"},
		{"client_secret=" + secret + "&grant_type=client_credentials", "client_secret=[REDACTED]&grant_type=client_credentials"},
		{"refresh_token=" + secret, "refresh_token=[REDACTED]"},
		{"id_token=" + secret, "id_token=[REDACTED]"},
		{"aws_secret_access_key=" + secret, "aws_secret_access_key=[REDACTED]"},
		{"accessToken=" + secret + " apiKey='" + secret + " x'", "accessToken=[REDACTED] apiKey=[REDACTED]"},
		{`{"api_key": "` + secret + `", "model": "m"}`, `{"api_key": "[REDACTED]", "model": "m"}`},
		{`{"clientSecret":"` + secret + `","n":1}`, `{"clientSecret":"[REDACTED]","n":1}`},
		{`{"Authorization": "Bearer ` + secret + `xyz"}`, `{"Authorization": "[REDACTED]"}`},
		{`{"max_tokens": 64, "token_count": "12", "tokens": "3"}`, `{"max_tokens": 64, "token_count": "12", "tokens": "3"}`},
		{"/oauth/cb?code=" + secret + "&state=s1", "/oauth/cb?code=[REDACTED]&state=s1"},
		{"/cb?state=s1&code=" + secret, "/cb?state=s1&code=[REDACTED]"},
		{"exit code=7, status: ok", "exit code=7, status: ok"},
		{"max_tokens=64 output_tokens=7 token_count=3", "max_tokens=64 output_tokens=7 token_count=3"},
		{"Authorization header missing", "Authorization header missing"},
	} {
		got := redactString(tc.in)
		assert.Equal(t, tc.want, masked(got, secret), masked(tc.in, secret))
	}
}

type testNote string

type testLevel int

type testStringer struct{}

func (testStringer) String() string { return "calling with api_key=SECRET123" }

// TestRedactAttrComposite: maps, structs, slices and named types are
// redacted, not printed as they are.
func TestRedactAttrComposite(t *testing.T) {
	const secret = "SECRET123"
	for _, tc := range []struct {
		in   any
		want string // as the text handler prints attribute "v"
	}{
		{map[string][]string{"Authorization": {"Bearer " + secret + "abc"}, "Accept": {"a/b"}}, `v.Accept=a/b v.Authorization=[REDACTED]`},
		{map[string][]string{"x-goog-api-key": {secret}, "X-Note": {"token=" + secret}}, `v.X-Note="token=[REDACTED]" v.x-goog-api-key=[REDACTED]`},
		{map[string]string{"apiKey": secret, "model": "m", "X-Api-Key": secret}, `v.X-Api-Key=[REDACTED] v.apiKey=[REDACTED] v.model=m`},
		{url.Values{"code": {secret}, "state": {"s1"}, "client_secret": {secret}}, `v.client_secret=[REDACTED] v.code=[REDACTED] v.state=s1`},
		{struct {
			APIKey string
			N      int
		}{secret, 1}, `v="{\"APIKey\":\"[REDACTED]\",\"N\":1}"`},
		{&struct{ Password string }{secret}, `v="{\"Password\":\"[REDACTED]\"}"`},
		{[]string{"Authorization: " + secret}, `v="[\"Authorization: [REDACTED]\"]"`},
		{map[string]any{"nested": map[string]string{"access_token": secret}}, `v="{\"nested\":{\"access_token\":\"[REDACTED]\"}}"`},
		{testNote("token=" + secret), `v="token=[REDACTED]"`},
		{testStringer{}, `v="calling with api_key=[REDACTED]"`},
		{testLevel(3), `v=3`},
		{make(chan int), ``}, // not JSON: printed by fmt (an address), checked for the secret only
	} {
		var buf bytes.Buffer
		l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey {
				return slog.Attr{}
			}
			return a
		}}))
		l.LogAttrs(context.Background(), slog.LevelInfo, "", RedactAttr(nil, slog.Any("v", tc.in)))
		out := masked(strings.TrimSpace(buf.String()), secret)
		if tc.want != "" {
			assert.Equal(t, tc.want, out, "%T", tc.in)
		}
		assert.NotContains(t, out, "<LEAKED", "%T", tc.in)
	}
}

// TestLogPathUnparsable: a path url.Parse rejects is logged with its
// credentials hidden, not replaced whole.
func TestLogPathUnparsable(t *testing.T) {
	const secret = "SECRET123"
	for _, tc := range []struct{ path, want string }{
		{"/v1/x%zz", "/v1/x%zz"},
		{"/v1/x%zz?token=" + secret + "&n=2", "/v1/x%zz?token=[REDACTED]&n=2"},
		{"/cb\x7f?code=" + secret, "/cb\x7f?code=[REDACTED]"},
		{"/v1/chat?sig=" + secret, "/v1/chat?sig=%5BREDACTED%5D"},
		{"", ""},
	} {
		got := logPath(tc.path)
		assert.Equal(t, tc.want, masked(got, secret), masked(tc.path, secret))
	}
}

// nilErrHooks returns a typed nil error (a nil *errcodes.Error in the
// error interface) from every phase: no error, as cloudreq reads it.
type nilErrHooks struct{}

func (nilErrHooks) PreValidate(context.Context, *cloudreq.CloudRequest) error {
	return (*errcodes.Error)(nil)
}

func (nilErrHooks) PreSerialize(context.Context, *cloudreq.CloudRequest) error {
	return (*errcodes.Error)(nil)
}

func (nilErrHooks) PostDeserialize(context.Context, *cloudreq.CloudRequest, *cloudreq.CloudResponse, error) error {
	return (*errcodes.Error)(nil)
}

// TestWithLoggingTypedNilHookErrors: a typed nil error from the wrapped
// hooks is no error, for the log as for the client. It neither skips the
// request record nor fails the call.
func TestWithLoggingTypedNilHookErrors(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Response: &cloudreq.CloudResponse{StatusCode: 200}}}}
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{fake}, Hooks: nilErrHooks{},
		Retry: cloudreq.RetryOptions{MaxAttempts: 1}}, WithLogging(logger, LogOptions{}))
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Invoke(context.Background(), generateReq())
	require.NoError(t, err)

	recs := jsonLines(t, &buf)
	require.Len(t, byMsg(recs, LogMsgRequest), 1, "the request is logged")
	resps := byMsg(recs, LogMsgResponse)
	require.Len(t, resps, 1)
	assert.Equal(t, "INFO", resps[0]["level"], "a success")
	assert.NotContains(t, resps[0], "code")
	assert.EqualValues(t, 200, resps[0]["status"])
}

// TestLogErrorWithoutCode: an error without a code is logged as
// ERR_UNKNOWN, as errcodes writes it everywhere else.
func TestLogErrorWithoutCode(t *testing.T) {
	var buf bytes.Buffer
	h := NewLogHook(slog.New(slog.NewJSONHandler(&buf, nil)), LogOptions{})
	req := generateReq()
	require.NoError(t, h.PostDeserialize(context.Background(), req, nil, &errcodes.Error{Message: "no code"}))
	resps := byMsg(jsonLines(t, &buf), LogMsgResponse)
	require.Len(t, resps, 1)
	assert.Equal(t, "ERR_UNKNOWN", resps[0]["code"])
}
