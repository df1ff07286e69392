package cloudreq_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/cloudreq/cloudreqtest"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// closerAdapter is a fake adapter that is an io.Closer and, like a gRPC
// client, fails a second Close.
type closerAdapter struct {
	*cloudreqtest.Adapter
	closes atomic.Int64
}

func (a *closerAdapter) Close() error {
	if a.closes.Add(1) > 1 {
		return errors.New("already closed")
	}
	return nil
}

// countingHooks counts the hook calls.
type countingHooks struct{ n atomic.Int64 }

func (h *countingHooks) PreValidate(context.Context, *cloudreq.CloudRequest) error {
	h.n.Add(1)
	return nil
}

func (h *countingHooks) PreSerialize(context.Context, *cloudreq.CloudRequest) error {
	h.n.Add(1)
	return nil
}

func (h *countingHooks) PostDeserialize(context.Context, *cloudreq.CloudRequest, *cloudreq.CloudResponse, error) error {
	h.n.Add(1)
	return nil
}

// TestCloseIsIdempotent: only the first Close, of many concurrent ones,
// closes the adapters; every later Close returns nil.
func TestCloseIsIdempotent(t *testing.T) {
	ad := &closerAdapter{Adapter: &cloudreqtest.Adapter{}}
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}})
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = c.Close() })
	}
	wg.Wait()
	for _, err := range errs {
		assert.NoError(t, err)
	}
	assert.NoError(t, c.Close())
	assert.EqualValues(t, 1, ad.closes.Load(), "the adapter is closed once")
}

// TestClosedClientFails: Invoke and Stream on a closed client fail at
// once with a non-retryable ERR_INVALID_PARAM, before any hook runs and
// without reaching the adapter.
func TestClosedClientFails(t *testing.T) {
	ad := &closerAdapter{Adapter: &cloudreqtest.Adapter{}}
	h := &countingHooks{}
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}, CallOptions: cloudreq.CallOptions{Hooks: h}})
	require.NoError(t, err)
	_, err = c.Invoke(context.Background(), req())
	require.NoError(t, err, "an open client serves")
	require.NotZero(t, h.n.Load())
	h.n.Store(0)
	require.NoError(t, c.Close())
	calls := len(ad.Calls())

	check := func(err error) {
		t.Helper()
		require.Error(t, err)
		e := errcodes.From(err)
		require.NotNil(t, e)
		assert.Equal(t, errcodes.InvalidParam, e.Code)
		assert.False(t, e.Retryable)
		assert.Contains(t, e.Message, "the client is closed")
	}
	resp, err := c.Invoke(context.Background(), req())
	assert.Nil(t, resp)
	check(err)
	s, err := c.Stream(context.Background(), req())
	assert.Nil(t, s)
	check(err)
	_, err = c.Invoke(context.Background(), req(), func(o *cloudreq.CallOptions) { o.Retry.MaxAttempts = 5 })
	check(err)
	assert.Zero(t, h.n.Load(), "no hook runs")
	assert.Len(t, ad.Calls(), calls, "the adapter is not called")
}

// panickyAdapter panics in Describe or in Close.
type panickyAdapter struct {
	cloudreqtest.Adapter
	inDescribe bool
}

func (a *panickyAdapter) Describe() cloudreq.Description {
	if a.inDescribe {
		panic("describe boom")
	}
	return a.Adapter.Describe()
}

func (a *panickyAdapter) Close() error { panic("close boom") }

// TestAdapterPanicsInNewAndClose: a panic in an adapter's Describe or Close
// becomes an error of New or Close.
func TestAdapterPanicsInNewAndClose(t *testing.T) {
	var err error
	require.NotPanics(t, func() {
		_, err = cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{&panickyAdapter{inDescribe: true}}})
	})
	assert.Equal(t, errcodes.Internal, errcodes.Of(err))

	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{&panickyAdapter{}}})
	require.NoError(t, err)
	require.NotPanics(t, func() { err = c.Close() })
	assert.Equal(t, errcodes.Internal, errcodes.Of(err))
}
