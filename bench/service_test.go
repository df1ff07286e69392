package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

// TestPrepareOtherServices: a plan names SageMaker asynchronous inference
// by service or as its provider; it has no stream; a service the provider
// does not serve is refused with the list of those it does.
func TestPrepareOtherServices(t *testing.T) {
	p, err := ParsePlan([]byte(`
limits: {requests: 1}
targets:
  - {provider: aws, service: sagemaker-async, endpoint: e1, stream: true}
  - {provider: sagemaker-async, endpoint: e2}
  - {provider: aws, endpoint: e3, stream: true}
  - {provider: vertex-openai, model: google/gemini-2.0-flash-001, stream: true}
  - {provider: aws, service: sagemaker-openai, endpoint: e4, stream: true}
  - {provider: pai-eas-queue, endpoint: e5, stream: true}
`))
	require.NoError(t, err)
	require.NoError(t, p.Prepare())
	for i, want := range []string{"sagemaker-async", "sagemaker-async", cloudreq.ServiceSageMaker} {
		assert.Equal(t, cloudreq.ProviderAWS, p.Targets[i].Provider, i)
		assert.Equal(t, want, p.Targets[i].Service, i)
	}
	assert.False(t, p.Targets[0].Stream, "asynchronous inference answers whole")
	assert.True(t, p.Targets[2].Stream)
	assert.Equal(t, cloudreq.ProviderGCP, p.Targets[3].Provider)
	assert.Equal(t, "vertex-openai", p.Targets[3].Service)
	assert.True(t, p.Targets[3].Stream)
	assert.Equal(t, cloudreq.ProviderAWS, p.Targets[4].Provider)
	assert.Equal(t, "sagemaker-openai", p.Targets[4].Service)
	assert.True(t, p.Targets[4].Stream)
	assert.Equal(t, cloudreq.ProviderAlibaba, p.Targets[5].Provider)
	assert.Equal(t, "pai-eas-queue", p.Targets[5].Service)
	assert.False(t, p.Targets[5].Stream, "the queue answers whole")

	p, err = ParsePlan([]byte("limits: {requests: 1}\ntargets:\n  - {provider: azure, service: sagemaker-async, endpoint: e}\n"))
	require.NoError(t, err)
	assert.ErrorContains(t, p.Prepare(), `provider azure serves azureml, not "sagemaker-async"`)
	p, err = ParsePlan([]byte("limits: {requests: 1}\ntargets:\n  - {provider: aws, service: bedrock, endpoint: e}\n"))
	require.NoError(t, err)
	assert.ErrorContains(t, p.Prepare(), `provider aws serves sagemaker, sagemaker-async, sagemaker-openai, not "bedrock"`)
}
