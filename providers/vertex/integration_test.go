package vertex

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/googleapis/gax-go/v2/apierror"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// TestIntegrationGCP runs against real Vertex AI with Application Default
// Credentials. It needs CLOUDINFER_IT_GCP=1 and GOOGLE_CLOUD_PROJECT;
// CLOUDINFER_IT_GCP_LOCATION (default us-central1) and
// CLOUDINFER_IT_GCP_MODEL (default gemini-2.0-flash) are optional, and
// CLOUDINFER_IT_GCP_ENDPOINT, an endpoint id, adds a predict call with
// CLOUDINFER_IT_GCP_PREDICT_BODY (default {"instances":[{"prompt":"hi"}]}).
func TestIntegrationGCP(t *testing.T) {
	if os.Getenv("CLOUDINFER_IT_GCP") != "1" {
		t.Skip("real-GCP test: set CLOUDINFER_IT_GCP=1 and GOOGLE_CLOUD_PROJECT to run it")
	}
	project := os.Getenv("GOOGLE_CLOUD_PROJECT")
	require.NotEmpty(t, project, "GOOGLE_CLOUD_PROJECT names the project to call")
	location := envOr("CLOUDINFER_IT_GCP_LOCATION", "us-central1")
	model := envOr("CLOUDINFER_IT_GCP_MODEL", "gemini-2.0-flash")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	ad, err := New(ctx, Options{Project: project, Location: location})
	require.NoError(t, err)
	client, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}})
	require.NoError(t, err)
	defer client.Close()
	req := func() *cloudreq.CloudRequest {
		return &cloudreq.CloudRequest{
			Provider: cloudreq.ProviderGCP, Service: cloudreq.ServiceVertex, Action: cloudreq.ActionGenerate,
			Target:   cloudreq.Target{Model: model},
			Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "Say hello."}}, MaxTokens: 16},
		}
	}

	resp, err := client.Invoke(ctx, req())
	require.NoError(t, err)
	assert.NotEmpty(t, resp.Text)
	assert.Positive(t, resp.Usage.OutputTokens)
	assert.False(t, resp.Timing.LastAttempt().FirstByte.IsZero())

	s, err := client.Stream(ctx, req())
	require.NoError(t, err)
	defer s.Close()
	var text strings.Builder
	for s.Next() {
		text.WriteString(s.Chunk().Text)
	}
	require.NoError(t, s.Err())
	assert.NotEmpty(t, text.String())
	assert.NotEmpty(t, s.Response().FinishReason)

	missing := req()
	missing.Target.Model = "cloudinfer-it-no-such-model"
	_, err = client.Invoke(ctx, missing)
	assert.ErrorIs(t, err, errcodes.NotFound)
	var ae *apierror.APIError
	assert.True(t, errors.As(err, &ae), "errors.As reaches *apierror.APIError")

	if ep := os.Getenv("CLOUDINFER_IT_GCP_ENDPOINT"); ep != "" {
		body := envOr("CLOUDINFER_IT_GCP_PREDICT_BODY", `{"instances":[{"prompt":"hi"}]}`)
		resp, err := client.Invoke(ctx, &cloudreq.CloudRequest{
			Provider: cloudreq.ProviderGCP, Service: cloudreq.ServiceVertex, Action: cloudreq.ActionInvoke,
			Target: cloudreq.Target{Endpoint: ep}, Payload: cloudreq.Payload{Body: []byte(body)},
		})
		require.NoError(t, err)
		assert.NotEmpty(t, resp.Metadata[MetaDeployedModelID])
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
