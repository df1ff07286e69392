package sagemaker

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// TestIntegrationAWS runs against a real SageMaker endpoint with the default
// AWS configuration. It needs CLOUDINFER_IT_AWS=1 and
// CLOUDINFER_IT_AWS_ENDPOINT (an LLM endpoint's name); CLOUDINFER_IT_AWS_DIALECT
// ("messages" or "tgi") says what its container speaks.
func TestIntegrationAWS(t *testing.T) {
	if os.Getenv("CLOUDINFER_IT_AWS") != "1" {
		t.Skip("real-AWS test: set CLOUDINFER_IT_AWS=1 and CLOUDINFER_IT_AWS_ENDPOINT to run it")
	}
	endpoint := os.Getenv("CLOUDINFER_IT_AWS_ENDPOINT")
	require.NotEmpty(t, endpoint, "CLOUDINFER_IT_AWS_ENDPOINT names the endpoint to call")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ad, err := New(ctx, Options{Dialect: Dialect(os.Getenv("CLOUDINFER_IT_AWS_DIALECT"))})
	require.NoError(t, err)
	client, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}})
	require.NoError(t, err)
	defer client.Close()
	req := func() *cloudreq.CloudRequest {
		return &cloudreq.CloudRequest{
			Provider: cloudreq.ProviderAWS, Service: cloudreq.ServiceSageMaker, Action: cloudreq.ActionGenerate,
			Target:   cloudreq.Target{Endpoint: endpoint},
			Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "Say hello."}}, MaxTokens: 16},
		}
	}

	resp, err := client.Invoke(ctx, req())
	require.NoError(t, err)
	assert.NotEmpty(t, resp.Text)
	assert.NotEmpty(t, resp.RequestID)

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
	missing.Target.Endpoint = "cloudinfer-it-no-such-endpoint"
	_, err = client.Invoke(ctx, missing)
	assert.Equal(t, errcodes.NotFound, errcodes.Of(err), "%v", err)
}
