package cloudreq_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

func TestEndpointKey(t *testing.T) {
	tests := []struct {
		target cloudreq.Target
		want   string
	}{
		{cloudreq.Target{Endpoint: "ep"}, "sagemaker/runtime/ep"},
		{cloudreq.Target{Endpoint: "ep", Variant: "v1"}, "sagemaker/runtime/ep/v1"},
		{cloudreq.Target{Endpoint: "ep", Model: "m"}, "sagemaker/runtime/ep#m"},
		{cloudreq.Target{Endpoint: "ep", Variant: "v1", Model: "m"}, "sagemaker/runtime/ep/v1#m"},
		{cloudreq.Target{Model: "m"}, "sagemaker/runtime/#m"},
	}
	for _, tc := range tests {
		r := cloudreq.CloudRequest{Provider: "sagemaker", Service: "runtime", Target: tc.target}
		assert.Equal(t, tc.want, r.EndpointKey())
	}
}
