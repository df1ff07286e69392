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

// TestIntegrationGCPDedicated calls a real endpoint through its dedicated
// DNS name with Application Default Credentials. It needs
// CLOUDINFER_IT_GCP=1, GOOGLE_CLOUD_PROJECT, CLOUDINFER_IT_GCP_ENDPOINT
// (the endpoint id), CLOUDINFER_IT_GCP_DEDICATED_DNS (its
// dedicatedEndpointDns) and CLOUDINFER_IT_GCP_LOCATION (default
// us-central1); the endpoint serves a chat model's generateContent.
func TestIntegrationGCPDedicated(t *testing.T) {
	dns := os.Getenv("CLOUDINFER_IT_GCP_DEDICATED_DNS")
	if os.Getenv("CLOUDINFER_IT_GCP") != "1" || dns == "" {
		t.Skip("real-GCP test: set CLOUDINFER_IT_GCP=1, GOOGLE_CLOUD_PROJECT, CLOUDINFER_IT_GCP_ENDPOINT and CLOUDINFER_IT_GCP_DEDICATED_DNS to run it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ad, err := New(ctx, Options{Project: os.Getenv("GOOGLE_CLOUD_PROJECT"), Location: envOr("CLOUDINFER_IT_GCP_LOCATION", "us-central1"), DedicatedEndpoint: dns})
	require.NoError(t, err)
	client, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}})
	require.NoError(t, err)
	defer client.Close()
	resp, err := client.Invoke(ctx, &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderGCP, Action: cloudreq.ActionGenerate,
		Target:   cloudreq.Target{Endpoint: os.Getenv("CLOUDINFER_IT_GCP_ENDPOINT")},
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "Say hello."}}, MaxTokens: 16},
	})
	require.NoError(t, err)
	assert.NotEmpty(t, resp.Text)
}
