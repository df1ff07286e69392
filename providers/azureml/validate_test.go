package azureml

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/hooks"
	"github.com/cloudinfer/cloudinfer/providers/providertest"
)

// TestValidate: a request needs the endpoint, by name (with a region when
// the template asks for one) or by URL; Validate accepts exactly what the
// adapter can build a URL for.
func TestValidate(t *testing.T) {
	withRegion, err := New(Options{Region: "westeurope", Anonymous: true})
	require.NoError(t, err)
	noRegion, err := New(Options{Anonymous: true})
	require.NoError(t, err)
	fixed, err := New(Options{EndpointURL: "https://gw.example.com/aml/{endpoint}", Anonymous: true})
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		a      *Adapter
		target cloudreq.Target
		want   string // in the error message; empty: accepted
	}{
		{"name and region", withRegion, cloudreq.Target{Endpoint: "ep"}, ""},
		{"name, variant and model", withRegion, cloudreq.Target{Endpoint: "ep", Variant: "blue", Model: "Phi-3-mini"}, ""},
		{"URL", noRegion, cloudreq.Target{Endpoint: "https://ep.eastus.inference.ml.azure.com/score"}, ""},
		{"name, template without region", fixed, cloudreq.Target{Endpoint: "ep"}, ""},
		{"model only", withRegion, cloudreq.Target{Model: "Phi-3-mini"}, "azureml needs Target.Endpoint, the endpoint name or URL"},
		{"nothing", withRegion, cloudreq.Target{}, "azureml needs Target.Endpoint"},
		{"name without region", noRegion, cloudreq.Target{Endpoint: "ep"}, "azureml needs Options.Region"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &cloudreq.CloudRequest{Provider: cloudreq.ProviderAzure, Service: cloudreq.ServiceAzureML,
				Action: cloudreq.ActionInvoke, Target: tc.target}
			err := tc.a.Validate(req)
			_, urlErr := tc.a.url(req)
			assert.Equal(t, err == nil, urlErr == nil, "Validate and url agree: %v, %v", err, urlErr)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			providertest.CheckInvalid(t, err, cloudreq.ProviderAzure, tc.want)
		})
	}
}

// TestValidateThroughClient: with hooks.Default, a request naming the
// endpoint is sent, and one naming only a model fails before anything is
// sent.
func TestValidateThroughClient(t *testing.T) {
	srv, hits := providertest.CountingServer(t)
	a, err := New(Options{EndpointURL: srv.URL + "/azureml/{endpoint}", Anonymous: true})
	require.NoError(t, err)
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{a}},
		func(o *cloudreq.Options) { o.Hooks = hooks.Default(); o.Retry.MaxAttempts = 1 })
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	req := func(target cloudreq.Target) *cloudreq.CloudRequest {
		return &cloudreq.CloudRequest{Provider: cloudreq.ProviderAzure, Service: cloudreq.ServiceAzureML, Action: cloudreq.ActionInvoke,
			Target: target, Payload: cloudreq.Payload{Body: []byte(`{"input_data":[1]}`)}}
	}

	_, err = c.Invoke(context.Background(), req(cloudreq.Target{Endpoint: "ep"}))
	require.NoError(t, err)
	require.Equal(t, int32(1), hits.Load())

	_, err = c.Invoke(context.Background(), req(cloudreq.Target{Model: "Phi-3-mini"}))
	e := providertest.CheckInvalid(t, err, cloudreq.ProviderAzure, "azureml needs Target.Endpoint")
	assert.Contains(t, e.Error(), "azure: azureml needs Target.Endpoint")
	assert.Equal(t, int32(1), hits.Load(), "nothing sent")
}
