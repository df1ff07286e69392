package paieas

import (
	"crypto/hmac"
	"crypto/md5" //nolint:gosec // checking the protocol's MD5
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
	"github.com/cloudinfer/cloudinfer/providers/providertest"
)

type seen struct {
	path, auth, ct, accept, md5, date, rid string
	body                                   []byte
}

func recorder(s *seen, status int, ct, reply string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.path, s.auth, s.ct, s.accept = r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), r.Header.Get("Accept")
		s.md5, s.date, s.rid = r.Header.Get("Content-MD5"), r.Header.Get("Date"), r.Header.Get("X-Request-Id")
		s.body, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, reply)
	}
}

const chatReply = `{"choices":[{"message":{"role":"assistant","content":"Hi!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`

func TestAuthModes(t *testing.T) {
	tests := []struct {
		name string
		auth Auth
		req  *cloudreq.CloudRequest
		path string
		want string
	}{
		{"auto openai path is bearer", AuthAuto, generateReq(), "/api/predict/llm-svc/v1/chat/completions", "Bearer " + token},
		{"auto root is raw", AuthAuto, invokeReq(`{"x":1}`), "/api/predict/svc", token},
		{"token everywhere", AuthToken, generateReq(), "/api/predict/llm-svc/v1/chat/completions", token},
		{"bearer everywhere", AuthBearer, invokeReq(`{}`), "/api/predict/svc", "Bearer " + token},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s seen
			a, _ := server(t, recorder(&s, 200, "application/json", chatReply), func(o *Options) { o.Auth = tt.auth })
			_, err := client(t, a).Invoke(ctx(t), tt.req)
			require.NoError(t, err)
			assert.Equal(t, tt.path, s.path)
			assert.Equal(t, tt.want, s.auth)
		})
	}
}

func TestSignature(t *testing.T) {
	var s seen
	now := time.Date(2026, 11, 3, 8, 4, 5, 0, time.FixedZone("CST", 8*3600))
	a, _ := server(t, recorder(&s, 200, "application/json", `{"response":"ok"}`), func(o *Options) {
		o.Auth = AuthSignature
		o.Now = func() time.Time { return now }
	})
	r := invokeReq(`{"prompt":"hello"}`)
	r.Target.Path = "/sub/path"
	_, err := client(t, a).Invoke(ctx(t), r)
	require.NoError(t, err)

	sum := md5.Sum([]byte(`{"prompt":"hello"}`)) //nolint:gosec // protocol
	md5hex := hex.EncodeToString(sum[:])
	assert.Equal(t, md5hex, s.md5)
	assert.Equal(t, "Tue, 03 Nov 2026 00:04:05 GMT", s.date)
	assert.Equal(t, "application/octet-stream", s.ct)
	assert.Equal(t, "/api/predict/svc/sub/path", s.path)
	m := hmac.New(sha1.New, []byte(token))
	m.Write([]byte("POST\n" + md5hex + "\napplication/octet-stream\n" + s.date + "\n/api/predict/svc/sub/path"))
	assert.Equal(t, "EAS "+base64.StdEncoding.EncodeToString(m.Sum(nil)), s.auth)
	assert.Equal(t, `{"prompt":"hello"}`, string(s.body))
}

func TestGenerateOpenAI(t *testing.T) {
	var s seen
	a, _ := server(t, recorder(&s, 200, "application/json", chatReply))
	r := generateReq()
	r.RequestID = "rid-1"
	r.Target.Model = "qwen"
	resp, err := client(t, a).Invoke(ctx(t), r)
	require.NoError(t, err)
	assert.JSONEq(t, `{"model":"qwen","messages":[{"role":"user","content":"hi"}],"max_tokens":8}`, string(s.body))
	assert.Equal(t, "application/json", s.ct)
	assert.Equal(t, "rid-1", s.rid)
	assert.Equal(t, "Hi!", resp.Text)
	assert.Equal(t, "stop", resp.FinishReason)
	assert.Equal(t, 2, resp.Usage.OutputTokens)
}

func TestEncodeLegacy(t *testing.T) {
	a, err := New(Options{Dialect: DialectLegacy})
	require.NoError(t, err)
	temp := 0.7
	r := generateReq()
	r.Generate = &cloudreq.GenerateInput{
		Messages: []cloudreq.Message{
			{Role: "system", Content: "Be brief."},
			{Role: "user", Content: "u1"}, {Role: "assistant", Content: "a1"},
			{Role: "user", Content: "u2"}, {Role: "user", Content: "u3"}, {Role: "assistant", Content: "a3"},
			{Role: "user", Content: "final"},
		},
		MaxTokens: 32, Temperature: &temp,
	}
	p, err := a.Encode(r, true)
	require.NoError(t, err)
	assert.JSONEq(t, `{"prompt":"final","system_prompt":"Be brief.","history":[["u1","a1"],["u2",""],["u3","a3"]],"max_new_tokens":32,"temperature":0.7,"use_stream_chat":"True"}`, string(p.Body))
	assert.Empty(t, p.Accept)

	p, err = a.Encode(generateReq(), false)
	require.NoError(t, err)
	assert.JSONEq(t, `{"prompt":"hi","max_new_tokens":8,"use_stream_chat":"False"}`, string(p.Body))

	// The per-request attribute wins over the option.
	r = generateReq()
	r.Attributes.Dialect = string(DialectOpenAI)
	p, err = a.Encode(r, true)
	require.NoError(t, err)
	assert.JSONEq(t, `{"messages":[{"role":"user","content":"hi"}],"max_tokens":8,"stream":true,"stream_options":{"include_usage":true}}`, string(p.Body))
	assert.Equal(t, "text/event-stream", p.Accept)

	r.Attributes.Dialect = "klingon"
	_, err = a.Encode(r, true)
	assert.ErrorIs(t, err, errcodes.InvalidParam)
	assert.ErrorContains(t, err, `Attributes.Dialect "klingon"`)

	// Extra is not read: a key named "dialect" there changes nothing.
	r = generateReq()
	r.Attributes.Extra = map[string]string{"dialect": "openai"}
	p, err = a.Encode(r, false)
	require.NoError(t, err)
	assert.Contains(t, string(p.Body), `"prompt"`)
}

func TestGenerateLegacy(t *testing.T) {
	var s seen
	a, _ := server(t, recorder(&s, 200, "application/json", `{"response":"Hello!","history":[]}`))
	resp, err := client(t, a).Invoke(ctx(t), legacyReq())
	require.NoError(t, err)
	assert.Equal(t, "/api/predict/llm-svc", s.path, "the legacy dialect posts to the service root")
	assert.Equal(t, token, s.auth, "raw token off the /v1 paths")
	var body map[string]any
	require.NoError(t, json.Unmarshal(s.body, &body))
	assert.Equal(t, "hi", body["prompt"])
	assert.Equal(t, "Hello!", resp.Text)

	a, _ = server(t, recorder(&s, 200, "application/json", `{"text":"?"}`))
	_, err = client(t, a).Invoke(ctx(t), legacyReq())
	assert.ErrorIs(t, err, errcodes.ModelError, "a 2xx legacy answer with no response is the model server's fault")
}

func TestURLs(t *testing.T) {
	a, err := New(Options{Endpoint: "https://123.cn-hangzhou.pai-eas.aliyuncs.com/"})
	require.NoError(t, err)
	tests := []struct {
		target cloudreq.Target
		action string
		want   string
	}{
		{cloudreq.Target{Endpoint: "svc"}, cloudreq.ActionInvoke, "https://123.cn-hangzhou.pai-eas.aliyuncs.com/api/predict/svc"},
		{cloudreq.Target{Endpoint: "svc", Path: "v1/completions"}, cloudreq.ActionInvoke, "https://123.cn-hangzhou.pai-eas.aliyuncs.com/api/predict/svc/v1/completions"},
		{cloudreq.Target{Endpoint: "svc"}, cloudreq.ActionGenerate, "https://123.cn-hangzhou.pai-eas.aliyuncs.com/api/predict/svc/v1/chat/completions"},
		{cloudreq.Target{Endpoint: "a b"}, cloudreq.ActionInvoke, "https://123.cn-hangzhou.pai-eas.aliyuncs.com/api/predict/a%20b"},
		{cloudreq.Target{Endpoint: "https://other/api/predict/x?q=1"}, cloudreq.ActionInvoke, "https://other/api/predict/x"},
	}
	for _, tt := range tests {
		got, err := a.url(&cloudreq.CloudRequest{Action: tt.action, Target: tt.target})
		require.NoError(t, err)
		assert.Equal(t, tt.want, got)
	}
	_, err = a.url(&cloudreq.CloudRequest{})
	assert.ErrorIs(t, err, errcodes.InvalidParam)
	noBase, _ := New(Options{})
	_, err = noBase.url(&cloudreq.CloudRequest{Target: cloudreq.Target{Endpoint: "svc"}})
	assert.ErrorIs(t, err, errcodes.InvalidParam)
}

func TestNewValidates(t *testing.T) {
	_, err := New(Options{Endpoint: "http://127.0.0.1:1", Token: token})
	require.ErrorIs(t, err, errcodes.InvalidParam)
	assert.NotContains(t, err.Error(), token)
	for _, f := range []func(*Options){
		func(o *Options) { o.Auth = "magic" },
		func(o *Options) { o.Dialect = "x" },
		func(o *Options) { o.StreamFormat = "x" },
		func(o *Options) { o.LegacyStream = "x" },
		func(o *Options) { o.Endpoint = "ftp://x" },
		func(o *Options) { o.Endpoint = "https://1.cn-hangzhou.pai-eas.aliyuncs.com/api/predict/svc" },
		func(o *Options) { o.Endpoint = "https://1.cn-hangzhou.pai-eas.aliyuncs.com/api/predict/svc/" },
	} {
		_, err := New(Options{}, f)
		assert.ErrorIs(t, err, errcodes.InvalidParam)
	}
	_, err = New(Options{Endpoint: "http://127.0.0.1:1/api/predict/llama-3-8b"})
	require.ErrorIs(t, err, errcodes.InvalidParam)
	assert.Contains(t, err.Error(), "service URL")
	a, err := New(Options{})
	require.NoError(t, err)
	d := a.Describe()
	assert.Equal(t, "alibaba", d.Provider)
	assert.Equal(t, "pai-eas", d.Service)
}

func TestResponseHeaders(t *testing.T) {
	a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Emulator-Cold-Start", "true")
		w.Header().Set("X-Emulator-Cold-Start-Ms", "250")
		w.Header().Set("X-Request-Id", "eas-1")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, chatReply)
	})
	resp, err := client(t, a).Invoke(ctx(t), generateReq())
	require.NoError(t, err)
	assert.Equal(t, "250", resp.Header.Get("X-Emulator-Cold-Start-Ms"), "the response's headers as received")
	assert.Nil(t, resp.ServerStart, "the adapter reads no server's start report")
	assert.Equal(t, map[string]string{"X-Request-Id": "eas-1"}, resp.Metadata, "the kept headers only")
	assert.Equal(t, "eas-1", resp.RequestID)
}

func TestTiming(t *testing.T) {
	a, _ := server(t, recorder(&seen{}, 200, "application/json", chatReply))
	resp, err := client(t, a).Invoke(ctx(t), generateReq())
	require.NoError(t, err)
	at := resp.Timing.LastAttempt()
	require.NotNil(t, at)
	assert.False(t, at.ConnectDone.IsZero())
	assert.False(t, at.FirstByte.IsZero())
	assert.True(t, at.FirstByte.After(at.Send))
}

// TestConnectionPool: without an HTTPClient the adapter keeps enough idle
// connections for concurrent calls and bounds the wait for response
// headers; its Close closes its own transport's idle connections only
// (providertest.RunPool).
func TestConnectionPool(t *testing.T) {
	providertest.RunPool(t, providertest.HTTPPool(func(base string, hc *http.Client) (*Adapter, error) {
		return New(Options{Endpoint: base, HTTPClient: hc})
	}, func(a *Adapter) *httpadapter.Core { return a.core }, func() *cloudreq.CloudRequest { return invokeReq(`{}`) }))
}
