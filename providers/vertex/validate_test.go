package vertex

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/hooks"
	"github.com/cloudinfer/cloudinfer/providers/providertest"
)

// TestValidate: a request needs an endpoint or a publisher model, and a
// name that is not a full resource name needs the adapter's project and
// location; Validate accepts what resolveTarget resolves.
func TestValidate(t *testing.T) {
	scoped := &Adapter{opts: Options{Project: "p", Location: "us-central1"}}
	bare := &Adapter{}
	for _, tc := range []struct {
		name   string
		a      *Adapter
		target cloudreq.Target
		want   string // in the error message; empty: accepted
	}{
		{"endpoint id", scoped, cloudreq.Target{Endpoint: "1234567890"}, ""},
		{"endpoint resource", bare, cloudreq.Target{Endpoint: "projects/p/locations/us-central1/endpoints/123"}, ""},
		{"publisher model in Endpoint", bare, cloudreq.Target{Endpoint: "projects/p/locations/us-central1/publishers/google/models/gemini-2.0-flash"}, ""},
		{"publisher model", scoped, cloudreq.Target{Model: "publishers/meta/models/llama-3-8b"}, ""},
		{"bare model id", scoped, cloudreq.Target{Model: "gemini-2.0-flash"}, ""},
		{"model resource", bare, cloudreq.Target{Model: "projects/p/locations/us-central1/publishers/google/models/gemini-2.0-flash"}, ""},
		{"nothing", scoped, cloudreq.Target{}, "vertex needs Target.Endpoint (an endpoint id or resource name) or Target.Model"},
		{"variant only", scoped, cloudreq.Target{Variant: "v1"}, "vertex needs Target.Endpoint"},
		{"endpoint id, no project", bare, cloudreq.Target{Endpoint: "1234567890"}, "vertex needs Options.Project and Options.Location"},
		{"publisher model, no project", bare, cloudreq.Target{Model: "publishers/meta/models/llama-3-8b"}, "vertex needs Options.Project and Options.Location"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, action := range []string{cloudreq.ActionInvoke, cloudreq.ActionGenerate} {
				err := tc.a.Validate(&cloudreq.CloudRequest{Provider: cloudreq.ProviderGCP, Service: cloudreq.ServiceVertex,
					Action: action, Target: tc.target})
				_, resErr := resolveTarget(tc.target, tc.a.opts.Project, tc.a.opts.Location)
				assert.Equal(t, err == nil, resErr == nil, "Validate and resolveTarget agree: %v, %v", err, resErr)
				if tc.want == "" {
					assert.NoError(t, err)
					continue
				}
				providertest.CheckInvalid(t, err, cloudreq.ProviderGCP, tc.want)
			}
		})
	}
}

// TestPublisherModelThroughDefaultHooks: a request that names a
// publisher model and no endpoint passes hooks.Default and is served; one
// with neither fails before anything is sent.
func TestPublisherModelThroughDefaultHooks(t *testing.T) {
	srv, err := emulator.New(emulator.Options{TimeScale: 0.01, Seed: 3})
	require.NoError(t, err)
	require.NoError(t, srv.Start("127.0.0.1:0", "127.0.0.1:0"))
	t.Cleanup(func() { _ = srv.Close() })
	ad, err := New(context.Background(), Options{Project: "p", Location: "us-central1", Endpoint: srv.GRPCAddr(), Insecure: true})
	require.NoError(t, err)
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}},
		func(o *cloudreq.Options) {
			o.Hooks = hooks.Default()
			o.Retry.MaxAttempts, o.Retry.BaseDelay = 1, time.Millisecond
		})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	gen := func(target cloudreq.Target) *cloudreq.CloudRequest {
		return &cloudreq.CloudRequest{Provider: cloudreq.ProviderGCP, Service: cloudreq.ServiceVertex, Action: cloudreq.ActionGenerate,
			Target:   target,
			Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "Say hello."}}, MaxTokens: 8}}
	}

	for _, model := range []string{"publishers/meta/models/llama-3-8b", "llama-3-8b"} {
		resp, err := c.Invoke(context.Background(), gen(cloudreq.Target{Model: model}))
		require.NoError(t, err, model)
		assert.NotEmpty(t, resp.Text, model)
	}

	_, err = c.Invoke(context.Background(), gen(cloudreq.Target{Variant: "v1"}))
	e := providertest.CheckInvalid(t, err, cloudreq.ProviderGCP, "vertex needs Target.Endpoint")
	assert.Contains(t, e.Error(), "gcp: vertex needs Target.Endpoint")
}
