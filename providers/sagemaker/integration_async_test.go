package sagemaker

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

// TestIntegrationAWSAsync runs asynchronous inference against a real
// SageMaker asynchronous endpoint with the default AWS configuration: it
// needs CLOUDINFER_IT_AWS=1 and CLOUDINFER_IT_AWS_ASYNC_ENDPOINT (the
// endpoint's name; its AsyncInferenceConfig's S3 output path must be
// readable with the same credentials); CLOUDINFER_IT_AWS_DIALECT as for
// TestIntegrationAWS.
func TestIntegrationAWSAsync(t *testing.T) {
	if os.Getenv("CLOUDINFER_IT_AWS") != "1" || os.Getenv("CLOUDINFER_IT_AWS_ASYNC_ENDPOINT") == "" {
		t.Skip("real-AWS test: set CLOUDINFER_IT_AWS=1 and CLOUDINFER_IT_AWS_ASYNC_ENDPOINT to run it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ad, err := NewAsync(ctx, Options{Dialect: Dialect(os.Getenv("CLOUDINFER_IT_AWS_DIALECT"))}, AsyncOptions{})
	require.NoError(t, err)
	client, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}})
	require.NoError(t, err)
	defer client.Close()
	resp, err := client.Invoke(ctx, &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderAWS, Service: ServiceAsync, Action: cloudreq.ActionGenerate,
		Target:   cloudreq.Target{Endpoint: os.Getenv("CLOUDINFER_IT_AWS_ASYNC_ENDPOINT")},
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "Say hello."}}, MaxTokens: 16},
	})
	require.NoError(t, err)
	assert.NotEmpty(t, resp.Text)
	assert.Contains(t, resp.Metadata[HeaderOutputLocation], "s3://")
}
