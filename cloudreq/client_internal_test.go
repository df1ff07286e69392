package cloudreq

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestEndpointKeyReuse: the client reuses the latest call's endpoint key
// only for the same endpoint.
func TestEndpointKeyReuse(t *testing.T) {
	c := &Client{}
	reqs := []*CloudRequest{
		{Provider: "aws", Service: "sagemaker", Target: Target{Endpoint: "e1"}},
		{Provider: "aws", Service: "sagemaker", Target: Target{Endpoint: "e1", Model: "m"}},
		{Provider: "aws", Service: "sagemaker", Target: Target{Endpoint: "e1"}},
		{Provider: "aws", Service: "sagemaker", Target: Target{Endpoint: "e1", Variant: "v"}},
		{Provider: "aws", Service: "sagemaker", Target: Target{Endpoint: "e1", Model: "m"}},
		{Provider: "azure", Service: "sagemaker", Target: Target{Endpoint: "e1"}},
		{Provider: "aws", Service: "azureml", Target: Target{Endpoint: "e1"}},
		{Provider: "aws", Service: "sagemaker", Target: Target{Endpoint: "e2"}},
	}
	for round := 0; round < 2; round++ {
		for _, r := range reqs {
			assert.Equal(t, r.EndpointKey(), c.endpointKey(r))
			assert.Equal(t, r.EndpointKey(), c.endpointKey(r), "again, from the cache")
		}
	}
}
