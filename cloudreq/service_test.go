package cloudreq_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/cloudreq/cloudreqtest"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
)

// serviceSeer records the Service of the requests its calls start with.
type serviceSeer struct{ services []string }

func (s *serviceSeer) StartCall(ctx context.Context, req *cloudreq.CloudRequest, _ bool) (context.Context, cloudreq.CallObserver) {
	s.services = append(s.services, req.Service)
	return ctx, nil
}

// TestServiceDefaultsFromProvider: a request without Service goes to the
// one adapter of its Provider, and the client's working copy (which
// observers and the adapter see) carries that adapter's service, while
// the caller's request is left as it was.
func TestServiceDefaultsFromProvider(t *testing.T) {
	sm := &cloudreqtest.Adapter{Provider: "aws", Service: "sagemaker"}
	oa := &cloudreqtest.Adapter{}
	seer := &serviceSeer{}
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{sm, oa},
		CallOptions: cloudreq.CallOptions{Observers: []cloudreq.Observer{seer}}})
	require.NoError(t, err)

	r := req()
	r.Provider, r.Service = "aws", ""
	_, err = c.Invoke(context.Background(), r)
	require.NoError(t, err)
	assert.Empty(t, r.Service, "the caller's request is not modified")
	require.Len(t, sm.Calls(), 1)
	assert.Equal(t, "sagemaker", sm.Calls()[0].Request.Service)
	assert.Empty(t, oa.Calls())

	s, err := c.Stream(context.Background(), r)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	assert.Equal(t, []string{"sagemaker", "sagemaker"}, seer.services)

	// A spelled Service still routes as before.
	r.Provider, r.Service = "openai", "openai-compatible"
	_, err = c.Invoke(context.Background(), r)
	require.NoError(t, err)
	assert.Len(t, oa.Calls(), 1)
}

// TestServiceDefaultFailures: a provider with no adapter is unsupported
// as before, and one with two adapters needs Service, naming both.
func TestServiceDefaultFailures(t *testing.T) {
	a := &cloudreqtest.Adapter{Provider: "p", Service: "one"}
	b := &cloudreqtest.Adapter{Provider: "p", Service: "two"}
	var ended []*errcodes.Error
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{a, b},
		CallOptions: cloudreq.CallOptions{Observers: []cloudreq.Observer{endObserver(func(e *errcodes.Error) { ended = append(ended, e) })}}})
	require.NoError(t, err)

	r := req()
	r.Provider, r.Service = "p", ""
	_, err = c.Invoke(context.Background(), r)
	require.Error(t, err)
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
	assert.ErrorContains(t, err, `provider "p" has adapters for services one, two: set Service`)
	require.Len(t, ended, 1)
	assert.Equal(t, errcodes.InvalidParam, ended[0].Code)

	r.Service = "two"
	_, err = c.Invoke(context.Background(), r)
	require.NoError(t, err)
	assert.Len(t, b.Calls(), 1)
	assert.Empty(t, a.Calls())

	r.Provider, r.Service = "gcp", ""
	_, err = c.Invoke(context.Background(), r)
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
	assert.ErrorContains(t, err, `unsupported provider/service "gcp"/""`)
}

// endObserver calls f with each call's error.
type endObserver func(*errcodes.Error)

func (f endObserver) StartCall(ctx context.Context, _ *cloudreq.CloudRequest, _ bool) (context.Context, cloudreq.CallObserver) {
	return ctx, endCall(f)
}

type endCall func(*errcodes.Error)

func (endCall) EndAttempt(cloudreq.AttemptInfo) {}

func (f endCall) EndCall(_ *cloudreq.CloudResponse, _ *latency.Timeline, err *errcodes.Error) { f(err) }
