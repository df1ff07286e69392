package openai

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/hooks"
	"github.com/cloudinfer/cloudinfer/providers/providertest"
)

// TestValidate: a request needs a model name or an endpoint, which is the
// model name or a server URL.
func TestValidate(t *testing.T) {
	a := &Adapter{}
	for _, tc := range []struct {
		name   string
		target cloudreq.Target
		want   string // in the error message; empty: accepted
	}{
		{"model", cloudreq.Target{Model: "llama-3-8b"}, ""},
		{"endpoint as the model", cloudreq.Target{Endpoint: "llama-3-8b"}, ""},
		{"server URL", cloudreq.Target{Endpoint: "http://127.0.0.1:8000"}, ""},
		{"server URL and model", cloudreq.Target{Endpoint: "http://127.0.0.1:8000/v1", Model: "llama-3-8b"}, ""},
		{"path only", cloudreq.Target{Path: "/v1/completions"}, "openai-compatible needs Target.Model, or Target.Endpoint"},
		{"nothing", cloudreq.Target{}, "openai-compatible needs Target.Model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, action := range []string{cloudreq.ActionInvoke, cloudreq.ActionGenerate} {
				err := a.Validate(&cloudreq.CloudRequest{Provider: cloudreq.ProviderOpenAI, Service: cloudreq.ServiceOpenAICompatible,
					Action: action, Target: tc.target})
				if tc.want == "" {
					assert.NoError(t, err)
					continue
				}
				providertest.CheckInvalid(t, err, cloudreq.ProviderOpenAI, tc.want)
			}
		})
	}
}

// TestEndpointAsModelThroughDefaultHooks: a generate request that names
// its model as Target.Endpoint, and an invoke request to a server URL
// with no model, pass hooks.Default and are sent; the endpoint becomes the
// body's model.
func TestEndpointAsModelThroughDefaultHooks(t *testing.T) {
	var mu sync.Mutex
	var models []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(b, &body)
		mu.Lock()
		models = append(models, body.Model)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"c1","object":"chat.completion","model":"llama-3-8b","choices":[{"index":0,` +
			`"message":{"role":"assistant","content":"Hello!"},"finish_reason":"stop"}],` +
			`"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`))
	}))
	t.Cleanup(srv.Close)
	a, err := New(Options{BaseURL: srv.URL})
	require.NoError(t, err)
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{a}},
		func(o *cloudreq.Options) { o.Hooks = hooks.Default(); o.Retry.MaxAttempts = 1 })
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })

	resp, err := c.Invoke(context.Background(), &cloudreq.CloudRequest{Provider: cloudreq.ProviderOpenAI,
		Service: cloudreq.ServiceOpenAICompatible, Action: cloudreq.ActionGenerate, Target: cloudreq.Target{Endpoint: "llama-3-8b"},
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "hi"}}, MaxTokens: 4}})
	require.NoError(t, err)
	assert.Equal(t, "Hello!", resp.Text)

	_, err = c.Invoke(context.Background(), &cloudreq.CloudRequest{Provider: cloudreq.ProviderOpenAI,
		Service: cloudreq.ServiceOpenAICompatible, Action: cloudreq.ActionInvoke, Target: cloudreq.Target{Endpoint: srv.URL},
		Payload: cloudreq.Payload{Body: []byte(`{"model":"from-body","messages":[{"role":"user","content":"hi"}]}`)}})
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"llama-3-8b", "from-body"}, models)
}
