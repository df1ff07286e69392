package vertex

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/api/option"
	"google.golang.org/grpc"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// newLimitedClient returns a client over a fake-server adapter whose
// responses are bounded to limit bytes.
func newLimitedClient(t *testing.T, addr string, limit int, co ...option.ClientOption) *cloudreq.Client {
	t.Helper()
	a, err := New(context.Background(), Options{
		Project: "p", Location: "us-central1", Endpoint: addr, Insecure: true,
		MaxResponseBytes: limit, ClientOptions: co,
	})
	require.NoError(t, err)
	o := cloudreq.Options{Adapters: []cloudreq.Adapter{a}}
	o.Retry.BaseDelay, o.Retry.MaxDelay = time.Millisecond, 5*time.Millisecond
	c, err := cloudreq.New(o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestMaxResponseBytes: a response message over Options.MaxResponseBytes
// fails with ERR_PAYLOAD_TOO_LARGE and is not retried; one under it is
// read. (The fake's rawPredict answers "echo:" and the request body.)
func TestMaxResponseBytes(t *testing.T) {
	const limit = 1024
	f, addr := startFake(t)
	c := newLimitedClient(t, addr, limit)

	resp, err := c.Invoke(context.Background(), invokeReq(strings.Repeat("a", limit-100), "text/csv"))
	require.NoError(t, err)
	assert.Len(t, resp.Data, len("echo:")+limit-100)

	_, err = c.Invoke(context.Background(), invokeReq(strings.Repeat("a", limit+1), "text/csv"))
	require.Error(t, err)
	e := errcodes.From(err)
	require.NotNil(t, e)
	assert.Equal(t, errcodes.PayloadTooLarge, e.Code, "%v", err)
	assert.False(t, e.Retryable)
	assert.Equal(t, cloudreq.ProviderGCP, e.Provider)
	assert.Len(t, f.Calls(), 2, "the oversized answer is not retried")
}

// TestMaxResponseBytesStream: a stream message over the bound fails the
// stream with ERR_PAYLOAD_TOO_LARGE.
func TestMaxResponseBytesStream(t *testing.T) {
	const limit = 1024
	f, addr := startFake(t)
	f.set(func(f *fakeServer) {
		f.rawChunks = [][]byte{[]byte("data: small\n\n"), []byte(strings.Repeat("b", limit+1))}
	})
	c := newLimitedClient(t, addr, limit)
	s, err := c.Stream(context.Background(), invokeReq(`{"x":1}`, "application/json"))
	require.NoError(t, err)
	defer s.Close()
	for i := 0; s.Next(); i++ {
		require.Less(t, i, 10, "stream does not end")
	}
	require.Error(t, s.Err())
	assert.ErrorIs(t, s.Err(), errcodes.PayloadTooLarge, "%v", s.Err())
}

// TestMaxResponseBytesDefaultAndOverride: the bound defaults to
// DefaultMaxResponseBytes, and a call option in ClientOptions, applied
// after the adapter's, overrides it.
func TestMaxResponseBytesDefaultAndOverride(t *testing.T) {
	_, addr := startFake(t)
	a := newFakeAdapter(t, addr)
	assert.Equal(t, DefaultMaxResponseBytes, a.opts.MaxResponseBytes)

	c := newLimitedClient(t, addr, 64,
		option.WithGRPCDialOption(grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<20))))
	resp, err := c.Invoke(context.Background(), invokeReq(strings.Repeat("a", 4096), "text/csv"))
	require.NoError(t, err, "the caller's option wins")
	assert.Len(t, resp.Data, len("echo:")+4096)
}
