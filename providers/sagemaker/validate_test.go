package sagemaker

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/hooks"
	"github.com/cloudinfer/cloudinfer/providers/providertest"
)

// TestValidate: a request needs the endpoint name; a target model or
// variant does not stand in for it.
func TestValidate(t *testing.T) {
	a := &Adapter{}
	for _, tc := range []struct {
		name   string
		target cloudreq.Target
		want   string // in the error message; empty: accepted
	}{
		{"endpoint", cloudreq.Target{Endpoint: "my-endpoint"}, ""},
		{"endpoint and variant", cloudreq.Target{Endpoint: "my-endpoint", Variant: "AllTraffic"}, ""},
		{"multi-model endpoint", cloudreq.Target{Endpoint: "mme", Model: "model-a.tar.gz"}, ""},
		{"model only", cloudreq.Target{Model: "model-a.tar.gz"}, "sagemaker needs Target.Endpoint, the endpoint name"},
		{"variant only", cloudreq.Target{Variant: "AllTraffic"}, "sagemaker needs Target.Endpoint"},
		{"nothing", cloudreq.Target{}, "sagemaker needs Target.Endpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, action := range []string{cloudreq.ActionInvoke, cloudreq.ActionGenerate} {
				err := a.Validate(&cloudreq.CloudRequest{Provider: cloudreq.ProviderAWS, Service: cloudreq.ServiceSageMaker,
					Action: action, Target: tc.target})
				if tc.want == "" {
					assert.NoError(t, err)
					continue
				}
				providertest.CheckInvalid(t, err, cloudreq.ProviderAWS, tc.want)
			}
		})
	}
}

// TestValidateThroughClient: with hooks.Default, a request naming the
// endpoint is sent, and one naming only a target model fails before
// anything is sent.
func TestValidateThroughClient(t *testing.T) {
	srv, hits := providertest.CountingServer(t)
	ad, err := New(context.Background(), Options{Region: "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDTESTTESTTEST", "secret", ""),
		BaseEndpoint: srv.URL, AllowInsecureHTTP: true})
	require.NoError(t, err)
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}},
		func(o *cloudreq.Options) { o.Hooks = hooks.Default(); o.Retry.MaxAttempts = 1 })
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	req := func(target cloudreq.Target) *cloudreq.CloudRequest {
		return &cloudreq.CloudRequest{Provider: cloudreq.ProviderAWS, Service: cloudreq.ServiceSageMaker, Action: cloudreq.ActionInvoke,
			Target: target, Payload: cloudreq.Payload{Body: []byte(`{"inputs":"hi"}`)}}
	}

	resp, err := c.Invoke(context.Background(), req(cloudreq.Target{Endpoint: "mme", Model: "model-a.tar.gz"}))
	require.NoError(t, err)
	assert.JSONEq(t, `{"ok":1}`, string(resp.Data))
	require.Equal(t, int32(1), hits.Load())

	_, err = c.Invoke(context.Background(), req(cloudreq.Target{Model: "model-a.tar.gz"}))
	e := providertest.CheckInvalid(t, err, cloudreq.ProviderAWS, "sagemaker needs Target.Endpoint")
	assert.Contains(t, e.Error(), "aws: sagemaker needs Target.Endpoint")
	assert.Equal(t, int32(1), hits.Load(), "nothing sent")
}
