package paieas

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

const token = "eas-token-secret"

func server(t *testing.T, h http.HandlerFunc, optFns ...func(*Options)) (*Adapter, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	a, err := New(Options{Endpoint: srv.URL, Token: token, AllowInsecureHTTP: true}, optFns...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	return a, srv
}

func client(t *testing.T, a *Adapter) *cloudreq.Client {
	t.Helper()
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{a}},
		func(o *cloudreq.Options) { o.Retry.MaxAttempts, o.Retry.ColdStartWait = 1, -1 })
	require.NoError(t, err)
	return c
}

func generateReq() *cloudreq.CloudRequest {
	return &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderAlibaba, Service: cloudreq.ServicePAIEAS,
		Action: cloudreq.ActionGenerate, Target: cloudreq.Target{Endpoint: "llm-svc"},
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "hi"}}, MaxTokens: 8},
	}
}

func legacyReq() *cloudreq.CloudRequest {
	r := generateReq()
	r.Attributes.Extra = map[string]string{ExtraDialect: string(DialectLegacy)}
	return r
}

func invokeReq(body string) *cloudreq.CloudRequest {
	return &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderAlibaba, Service: cloudreq.ServicePAIEAS,
		Action: cloudreq.ActionInvoke, Target: cloudreq.Target{Endpoint: "svc"},
		Payload: cloudreq.Payload{Body: []byte(body)},
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

type streamed struct {
	texts   []string
	content int
	err     error
	resp    *cloudreq.CloudResponse
}

func (s streamed) text() string {
	out := ""
	for _, t := range s.texts {
		out += t
	}
	return out
}

func stream(t *testing.T, a *Adapter, r *cloudreq.CloudRequest) streamed {
	t.Helper()
	s, err := client(t, a).Stream(ctx(t), r)
	if err != nil {
		return streamed{err: err}
	}
	defer s.Close()
	var out streamed
	for i := 0; s.Next() && i < 1000; i++ {
		out.texts = append(out.texts, s.Chunk().Text)
		if s.Chunk().Content {
			out.content++
		}
	}
	out.err, out.resp = s.Err(), s.Response()
	return out
}

func writeFlushed(w http.ResponseWriter, ct string, parts ...string) {
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	f := w.(http.Flusher)
	for _, p := range parts {
		_, _ = io.WriteString(w, p)
		f.Flush()
	}
}

func newClientRetrying(a *Adapter) (*cloudreq.Client, error) {
	return cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{a}}, func(o *cloudreq.Options) {
		o.Retry.MaxAttempts = 2
		o.Retry.BaseDelay = time.Millisecond
		o.Retry.MaxRetryAfter = 2 * time.Second
	})
}
