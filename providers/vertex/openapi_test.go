package vertex

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// countingTokens issues tokens that expire after ttl, counting them.
type countingTokens struct {
	n   atomic.Int32
	ttl time.Duration
	err error
}

func (c *countingTokens) Token() (*oauth2.Token, error) {
	if c.err != nil {
		return nil, c.err
	}
	c.n.Add(1)
	return &oauth2.Token{AccessToken: "vertex-token", TokenType: "Bearer", Expiry: time.Now().Add(c.ttl)}, nil
}

func openAPIEmulator(t *testing.T) *emulator.Server {
	t.Helper()
	eps := emulator.DefaultEndpoints()
	for i := range eps {
		eps[i].Credentials.Keys = []string{"vertex-token"}
	}
	srv, err := emulator.New(emulator.Options{TimeScale: 0.01, Seed: 5, Endpoints: eps})
	require.NoError(t, err)
	require.NoError(t, srv.Start("127.0.0.1:0", ""))
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func openAPIReq() *cloudreq.CloudRequest {
	return &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderGCP, Service: ServiceOpenAPI, Action: cloudreq.ActionGenerate,
		Target:   cloudreq.Target{Model: "llama-3-8b"},
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "Say hello."}}, MaxTokens: 8},
	}
}

// TestOpenAPIConformance: generate, a stream and a raw invoke through the
// emulator's endpoints/openapi route with a token source whose tokens are
// cached; an unknown model is ERR_NOT_FOUND of provider gcp; a token
// refused is ERR_UNAUTHENTICATED and never quoted; a failing token source
// is ERR_UNAUTHENTICATED before anything is sent.
func TestOpenAPIConformance(t *testing.T) {
	srv := openAPIEmulator(t)
	ts := &countingTokens{ttl: time.Hour}
	ad, err := NewOpenAPI(context.Background(), OpenAPIOptions{
		BaseURL: srv.URL() + "/v1/projects/p/locations/us-central1/endpoints/openapi", TokenSource: ts, AllowInsecureHTTP: true})
	require.NoError(t, err)
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}}, func(o *cloudreq.Options) { o.Retry.MaxAttempts = 1 })
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	resp, err := c.Invoke(ctx, openAPIReq())
	require.NoError(t, err)
	assert.NotEmpty(t, resp.Text)
	assert.Equal(t, 8, resp.Usage.OutputTokens)

	s, err := c.Stream(ctx, openAPIReq())
	require.NoError(t, err)
	var text strings.Builder
	for s.Next() {
		text.WriteString(s.Chunk().Text)
	}
	require.NoError(t, s.Err())
	_ = s.Close()
	assert.NotEmpty(t, text.String())

	raw := &cloudreq.CloudRequest{Provider: cloudreq.ProviderGCP, Service: ServiceOpenAPI, Action: cloudreq.ActionInvoke,
		Target:  cloudreq.Target{Model: "llama-3-8b"},
		Payload: cloudreq.Payload{Body: []byte(`{"model":"llama-3-8b","messages":[{"role":"user","content":"hi"}],"max_tokens":4}`)}}
	resp, err = c.Invoke(ctx, raw)
	require.NoError(t, err)
	assert.Contains(t, string(resp.Data), `"choices"`)
	assert.Equal(t, int32(1), ts.n.Load(), "the token is cached across calls")

	missing := openAPIReq()
	missing.Target.Model = "no-such-model"
	_, err = c.Invoke(ctx, missing)
	var e *errcodes.Error
	require.True(t, errors.As(err, &e), "%v", err)
	assert.Equal(t, errcodes.NotFound, e.Code)
	assert.Equal(t, cloudreq.ProviderGCP, e.Provider)

	other := openAPIEmulator(t)
	wrong, err := NewOpenAPI(context.Background(), OpenAPIOptions{
		BaseURL: other.URL() + "/v1/projects/p/locations/us-central1/endpoints/openapi", TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "wrong-token-value"}), AllowInsecureHTTP: true})
	require.NoError(t, err)
	_, err = wrong.Invoke(ctx, &cloudreq.Call{Request: openAPIReq(), Payload: mustEncode(t, wrong, openAPIReq()), Attempt: 1})
	assert.Equal(t, errcodes.Unauthenticated, errcodes.Of(err))

	broken, err := NewOpenAPI(context.Background(), OpenAPIOptions{BaseURL: srv.URL() + "/v1/projects/p/locations/l/endpoints/openapi",
		TokenSource: &countingTokens{err: errors.New("metadata server unreachable")}, AllowInsecureHTTP: true})
	require.NoError(t, err)
	_, err = broken.Invoke(ctx, &cloudreq.Call{Request: openAPIReq(), Payload: mustEncode(t, broken, openAPIReq()), Attempt: 1})
	require.True(t, errors.As(err, &e), "%v", err)
	assert.Equal(t, errcodes.Unauthenticated, e.Code)
	assert.False(t, e.Retryable)
	assert.Contains(t, e.Message, "metadata server unreachable")
}

func mustEncode(t *testing.T, a *OpenAPIAdapter, req *cloudreq.CloudRequest) cloudreq.Payload {
	t.Helper()
	p, err := a.Encode(req, false)
	require.NoError(t, err)
	return p
}

func TestNewOpenAPIOptions(t *testing.T) {
	ctx := context.Background()
	_, err := NewOpenAPI(ctx, OpenAPIOptions{})
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
	_, err = NewOpenAPI(ctx, OpenAPIOptions{BaseURL: "http://127.0.0.1:1/x", TokenSource: &countingTokens{}})
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err), "a token over plain http needs AllowInsecureHTTP")
	a, err := NewOpenAPI(ctx, OpenAPIOptions{Project: "p", Location: "europe-west4", TokenSource: &countingTokens{}})
	require.NoError(t, err)
	assert.Equal(t, ServiceOpenAPI, a.Describe().Service)
	assert.Error(t, a.Validate(&cloudreq.CloudRequest{}))
}

// TestIntegrationGCPOpenAPI calls Vertex AI's OpenAI-compatible endpoint
// with Application Default Credentials. It needs CLOUDINFER_IT_GCP=1 and
// GOOGLE_CLOUD_PROJECT; CLOUDINFER_IT_GCP_LOCATION (default us-central1)
// and CLOUDINFER_IT_GCP_OPENAPI_MODEL (default google/gemini-2.0-flash-001).
func TestIntegrationGCPOpenAPI(t *testing.T) {
	if os.Getenv("CLOUDINFER_IT_GCP") != "1" || os.Getenv("GOOGLE_CLOUD_PROJECT") == "" {
		t.Skip("real-GCP test: set CLOUDINFER_IT_GCP=1 and GOOGLE_CLOUD_PROJECT to run it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ad, err := NewOpenAPI(ctx, OpenAPIOptions{Project: os.Getenv("GOOGLE_CLOUD_PROJECT"), Location: envOr("CLOUDINFER_IT_GCP_LOCATION", "us-central1")})
	require.NoError(t, err)
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}})
	require.NoError(t, err)
	defer c.Close()
	req := openAPIReq()
	req.Target.Model = envOr("CLOUDINFER_IT_GCP_OPENAPI_MODEL", "google/gemini-2.0-flash-001")
	resp, err := c.Invoke(ctx, req)
	require.NoError(t, err)
	assert.NotEmpty(t, resp.Text)
}
