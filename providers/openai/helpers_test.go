package openai

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/providers/providertest"
)

var (
	// server starts an httptest server with h and an adapter pointed at it.
	server = providertest.Server(func(url string, optFns ...func(*Options)) (*Adapter, error) {
		return New(Options{BaseURL: url, APIKey: "sk-test-secret", AllowInsecureHTTP: true}, optFns...)
	})
	// client returns a cloudreq.Client on a with one attempt per call.
	client = providertest.Client
	ctx    = providertest.Context
)

func generateReq(model string) *cloudreq.CloudRequest {
	return providertest.GenerateRequest(cloudreq.ProviderOpenAI, cloudreq.ServiceOpenAICompatible, cloudreq.Target{Model: model})
}

func invokeReq(body string) *cloudreq.CloudRequest {
	return providertest.InvokeRequest(cloudreq.ProviderOpenAI, cloudreq.ServiceOpenAICompatible, cloudreq.Target{Model: "m"}, body)
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

// sseWriter writes SSE frames and flushes each.
func sseWriter(w http.ResponseWriter) func(string) {
	return providertest.Flushed(w, "text/event-stream")
}

// stream runs a stream through a cloudreq.Client.
func stream(t *testing.T, a *Adapter, r *cloudreq.CloudRequest) providertest.Streamed {
	t.Helper()
	return providertest.Stream(t, client(t, a), r)
}
