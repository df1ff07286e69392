package openai

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

// server starts an httptest server with h and an adapter pointed at it.
func server(t *testing.T, h http.HandlerFunc, optFns ...func(*Options)) (*Adapter, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	a, err := New(Options{BaseURL: srv.URL, APIKey: "sk-test-secret", AllowInsecureHTTP: true}, optFns...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	return a, srv
}

// client returns a cloudreq.Client on a with one attempt per call.
func client(t *testing.T, a *Adapter) *cloudreq.Client {
	t.Helper()
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{a}},
		func(o *cloudreq.Options) { o.Retry.MaxAttempts, o.Retry.ColdStartWait = 1, -1 })
	require.NoError(t, err)
	return c
}

func generateReq(model string) *cloudreq.CloudRequest {
	return &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderOpenAI, Service: cloudreq.ServiceOpenAICompatible,
		Action: cloudreq.ActionGenerate, Target: cloudreq.Target{Model: model},
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "hi"}}, MaxTokens: 8},
	}
}

func invokeReq(body string) *cloudreq.CloudRequest {
	return &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderOpenAI, Service: cloudreq.ServiceOpenAICompatible,
		Action: cloudreq.ActionInvoke, Target: cloudreq.Target{Model: "m"},
		Payload: cloudreq.Payload{Body: []byte(body)},
	}
}

// call builds the Call the client would hand the adapter.
func call(t *testing.T, a *Adapter, r *cloudreq.CloudRequest, stream bool) *cloudreq.Call {
	t.Helper()
	p := r.Payload
	if r.Action == cloudreq.ActionGenerate {
		var err error
		p, err = a.Encode(r, stream)
		require.NoError(t, err)
	}
	return &cloudreq.Call{Request: r, Payload: p, Attempt: 1}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// sseWriter writes SSE frames and flushes each.
func sseWriter(w http.ResponseWriter) func(string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	f := w.(http.Flusher)
	return func(s string) {
		_, _ = io.WriteString(w, s)
		f.Flush()
	}
}
