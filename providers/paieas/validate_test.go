package paieas

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/hooks"
	"github.com/cloudinfer/cloudinfer/providers/providertest"
)

// TestValidate: a request needs the service, by URL or by name with the
// endpoint root in Options.Endpoint; Validate accepts exactly what the
// adapter can build a URL for.
func TestValidate(t *testing.T) {
	root, err := New(Options{Endpoint: "https://123456789.cn-hangzhou.pai-eas.aliyuncs.com"})
	require.NoError(t, err)
	noRoot, err := New(Options{})
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		a      *Adapter
		target cloudreq.Target
		want   string // in the error message; empty: accepted
	}{
		{"service name", root, cloudreq.Target{Endpoint: "llm-svc"}, ""},
		{"service name and model", root, cloudreq.Target{Endpoint: "llm-svc", Model: "qwen"}, ""},
		{"service URL", noRoot, cloudreq.Target{Endpoint: "https://123456789.cn-hangzhou.pai-eas.aliyuncs.com/api/predict/llm-svc"}, ""},
		{"model only", root, cloudreq.Target{Model: "qwen"}, "pai-eas needs Target.Endpoint, the service name or URL"},
		{"nothing", root, cloudreq.Target{}, "pai-eas needs Target.Endpoint"},
		{"service name without root", noRoot, cloudreq.Target{Endpoint: "llm-svc"}, "pai-eas needs Options.Endpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &cloudreq.CloudRequest{Provider: cloudreq.ProviderAlibaba, Service: cloudreq.ServicePAIEAS,
				Action: cloudreq.ActionInvoke, Target: tc.target}
			err := tc.a.Validate(req)
			_, urlErr := tc.a.url(req)
			assert.Equal(t, err == nil, urlErr == nil, "Validate and url agree: %v, %v", err, urlErr)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			providertest.CheckInvalid(t, err, cloudreq.ProviderAlibaba, tc.want)
		})
	}
}

// TestValidateThroughClient: with hooks.Default, a request naming the
// service is sent, and one naming only a model fails before anything is
// sent.
func TestValidateThroughClient(t *testing.T) {
	srv, hits := providertest.CountingServer(t)
	a, err := New(Options{Endpoint: srv.URL})
	require.NoError(t, err)
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{a}},
		func(o *cloudreq.Options) { o.Hooks = hooks.Default(); o.Retry.MaxAttempts = 1 })
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	req := func(target cloudreq.Target) *cloudreq.CloudRequest {
		return &cloudreq.CloudRequest{Provider: cloudreq.ProviderAlibaba, Service: cloudreq.ServicePAIEAS, Action: cloudreq.ActionInvoke,
			Target: target, Payload: cloudreq.Payload{Body: []byte(`{"prompt":"hi"}`)}}
	}

	_, err = c.Invoke(context.Background(), req(cloudreq.Target{Endpoint: "llm-svc"}))
	require.NoError(t, err)
	require.Equal(t, int32(1), hits.Load())

	_, err = c.Invoke(context.Background(), req(cloudreq.Target{Model: "qwen"}))
	e := providertest.CheckInvalid(t, err, cloudreq.ProviderAlibaba, "pai-eas needs Target.Endpoint")
	assert.Contains(t, e.Error(), "alibaba: pai-eas needs Target.Endpoint")
	assert.Equal(t, int32(1), hits.Load(), "nothing sent")
}
