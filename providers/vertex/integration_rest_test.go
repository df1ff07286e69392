package vertex

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

// TestIntegrationGCPREST runs generateContent and
// streamGenerateContent?alt=sse against real Vertex AI over REST with
// Application Default Credentials, and, when CLOUDINFER_IT_GCP_ENDPOINT
// names an endpoint, predict with CLOUDINFER_IT_GCP_PREDICT_BODY (default
// {"instances":[{"prompt":"hi"}]}) and, with
// CLOUDINFER_IT_GCP_SSP_BODY (a StreamingPredictRequest's JSON),
// serverStreamingPredict over REST and gRPC. It needs CLOUDINFER_IT_GCP=1
// and GOOGLE_CLOUD_PROJECT; CLOUDINFER_IT_GCP_LOCATION (default
// us-central1) and CLOUDINFER_IT_GCP_MODEL (default gemini-2.0-flash) are
// optional.
func TestIntegrationGCPREST(t *testing.T) {
	if os.Getenv("CLOUDINFER_IT_GCP") != "1" {
		t.Skip("real-GCP test: set CLOUDINFER_IT_GCP=1 and GOOGLE_CLOUD_PROJECT to run it")
	}
	project := os.Getenv("GOOGLE_CLOUD_PROJECT")
	require.NotEmpty(t, project, "GOOGLE_CLOUD_PROJECT names the project to call")
	location := envOr("CLOUDINFER_IT_GCP_LOCATION", "us-central1")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	clients := map[Transport]*cloudreq.Client{}
	for _, tr := range []Transport{TransportREST, TransportGRPC} {
		ad, err := New(ctx, Options{Project: project, Location: location, Transport: tr})
		require.NoError(t, err)
		c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}})
		require.NoError(t, err)
		defer c.Close()
		clients[tr] = c
	}
	rest := clients[TransportREST]

	gen := &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderGCP, Action: cloudreq.ActionGenerate,
		Target:   cloudreq.Target{Model: envOr("CLOUDINFER_IT_GCP_MODEL", "gemini-2.0-flash")},
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "Say hello."}}, MaxTokens: 16},
	}
	resp, err := rest.Invoke(ctx, gen)
	require.NoError(t, err)
	assert.NotEmpty(t, resp.Text)
	assert.Positive(t, resp.Usage.OutputTokens)
	s, err := rest.Stream(ctx, gen)
	require.NoError(t, err)
	n := 0
	for s.Next() {
		n++
	}
	require.NoError(t, s.Err())
	_ = s.Close()
	assert.Positive(t, n)

	ep := os.Getenv("CLOUDINFER_IT_GCP_ENDPOINT")
	if ep == "" {
		return
	}
	resp, err = rest.Invoke(ctx, &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderGCP, Action: cloudreq.ActionInvoke, Target: cloudreq.Target{Endpoint: ep},
		Payload: cloudreq.Payload{Body: []byte(envOr("CLOUDINFER_IT_GCP_PREDICT_BODY", `{"instances":[{"prompt":"hi"}]}`))},
	})
	require.NoError(t, err)
	assert.NotEmpty(t, resp.Data)
	body := os.Getenv("CLOUDINFER_IT_GCP_SSP_BODY")
	if body == "" {
		return
	}
	for tr, c := range clients {
		s, err := c.Stream(ctx, &cloudreq.CloudRequest{
			Provider: cloudreq.ProviderGCP, Action: cloudreq.ActionInvoke, Target: cloudreq.Target{Endpoint: ep},
			Attributes: cloudreq.Attributes{Method: MethodServerStreamingPredict},
			Payload:    cloudreq.Payload{Body: []byte(body)},
		})
		require.NoError(t, err, tr)
		n := 0
		for s.Next() {
			n++
		}
		require.NoError(t, s.Err(), tr)
		_ = s.Close()
		assert.Positive(t, n, tr)
	}
}
