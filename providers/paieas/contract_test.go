package paieas_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/providers/paieas"
)

// firstFault injects fault into the first request it sends only, as a
// transient answer that a retry gets past.
type firstFault struct {
	fault emulator.Fault
	sent  atomic.Int32
}

func (f *firstFault) RoundTrip(r *http.Request) (*http.Response, error) {
	if f.sent.Add(1) == 1 {
		r = r.Clone(r.Context())
		r.Header.Set(emulator.HeaderInject, string(f.fault))
	}
	return http.DefaultTransport.RoundTrip(r)
}

// retryOnce calls the emulator's llama-3-8b service with generate, through
// a client that retries once, the first attempt meeting fault; it returns
// the response after a warm-up call, so that the endpoint is known warm.
func retryOnce(t *testing.T, fault emulator.Fault) *cloudreq.CloudResponse {
	t.Helper()
	srv, err := emulator.New(emulator.Options{TimeScale: 0.01, Seed: 9})
	require.NoError(t, err)
	require.NoError(t, srv.Start("127.0.0.1:0", ""))
	t.Cleanup(func() { _ = srv.Close() })
	tr := &firstFault{fault: fault}
	tr.sent.Store(1) // the warm-up goes clean
	a, err := paieas.New(paieas.Options{Endpoint: srv.URL(), Token: "t", AllowInsecureHTTP: true, HTTPClient: &http.Client{Transport: tr}})
	require.NoError(t, err)
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{a}}, func(o *cloudreq.Options) {
		o.Retry.MaxAttempts = 2
		o.Retry.BaseDelay = time.Millisecond
		o.Retry.MaxRetryAfter = 2 * time.Second
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	req := func() *cloudreq.CloudRequest {
		return &cloudreq.CloudRequest{
			Provider: cloudreq.ProviderAlibaba, Service: cloudreq.ServicePAIEAS, Action: cloudreq.ActionGenerate,
			Target:   cloudreq.Target{Endpoint: "llama-3-8b"},
			Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "hi"}}, MaxTokens: 4},
		}
	}
	_, err = c.Invoke(ctx, req())
	require.NoError(t, err)
	tr.sent.Store(0)
	resp, err := c.Invoke(ctx, req())
	require.NoError(t, err)
	require.Len(t, resp.Errors, 1, "one failed attempt, then the answer")
	return resp
}

// TestGatewayOverflowIsNotColdStart: a gateway's transient 503 (Envoy's
// "upstream connect error … reset reason: overflow") is ERR_UNAVAILABLE,
// not a not-ready signal: a warm request that meets it and then succeeds
// stays warm, with no cold-start overhead. EAS's own "no ready instance"
// 503 is still not-ready evidence.
func TestGatewayOverflowIsNotColdStart(t *testing.T) {
	resp := retryOnce(t, emulator.FaultGatewayOverflow)
	assert.Equal(t, errcodes.Unavailable, resp.Errors[0].Code, "%v", resp.Errors[0])
	assert.True(t, resp.Errors[0].Retryable)
	assert.Equal(t, latency.Warm, resp.Start.Kind, "%+v", resp.Start)
	assert.Zero(t, resp.Start.Overhead)

	resp = retryOnce(t, emulator.FaultModelUnavailable)
	assert.Equal(t, errcodes.Unavailable, resp.Errors[0].Code, "%v", resp.Errors[0])
	assert.Equal(t, latency.Warm, resp.Start.Kind, "%+v", resp.Start)

	resp = retryOnce(t, emulator.FaultModelNotReady)
	assert.Equal(t, errcodes.ModelNotReady, resp.Errors[0].Code, "%v", resp.Errors[0])
	assert.Equal(t, latency.Cold, resp.Start.Kind, "%+v", resp.Start)
	assert.Equal(t, latency.ReasonNotReadyThenReady, resp.Start.Reason)
}
