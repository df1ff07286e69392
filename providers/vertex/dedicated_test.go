package vertex

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

func TestDedicatedHost(t *testing.T) {
	for in, want := range map[string]string{
		"1234.us-central1-5678.prediction.vertexai.goog":          "1234.us-central1-5678.prediction.vertexai.goog:443",
		"https://1234.us-central1-5678.prediction.vertexai.goog/": "1234.us-central1-5678.prediction.vertexai.goog:443",
		"10.0.0.7:8443": "10.0.0.7:8443",
	} {
		got, err := dedicatedHost(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "https://", "host/path", "user@host"} {
		_, err := dedicatedHost(bad)
		assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err), bad)
	}
	_, err := New(context.Background(), Options{DedicatedEndpoint: "a b"})
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
}

// TestDedicatedEndpointMetadata: with Options.DedicatedEndpoint, every
// call (unary and stream) to the emulator carries x-vertex-ai-endpoint-id
// naming the target's endpoint; a publisher model is refused.
func TestDedicatedEndpointMetadata(t *testing.T) {
	srv, err := emulator.New(emulator.Options{TimeScale: 0.01, Seed: 3})
	require.NoError(t, err)
	require.NoError(t, srv.Start("127.0.0.1:0", "127.0.0.1:0"))
	t.Cleanup(func() { _ = srv.Close() })
	var mu sync.Mutex
	var seen []string
	record := func(ctx context.Context) {
		md, _ := metadata.FromOutgoingContext(ctx)
		mu.Lock()
		seen = append(seen, md.Get(HeaderDedicatedEndpointID)...)
		mu.Unlock()
	}
	ad, err := New(context.Background(), Options{Project: "p", Location: "us-central1", Endpoint: srv.GRPCAddr(), Insecure: true,
		DedicatedEndpoint: "1234.us-central1-5678.prediction.vertexai.goog",
		ClientOptions: []option.ClientOption{
			option.WithGRPCDialOption(grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, inv grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				record(ctx)
				return inv(ctx, method, req, reply, cc, opts...)
			})),
			option.WithGRPCDialOption(grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, st grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
				record(ctx)
				return st(ctx, desc, cc, method, opts...)
			})),
		}})
	require.NoError(t, err)
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}}, func(o *cloudreq.Options) { o.Retry.MaxAttempts = 1 })
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	resp, err := c.Invoke(ctx, emuGenerate("llama-3-8b"))
	require.NoError(t, err)
	assert.NotEmpty(t, resp.Text)
	s, err := c.Stream(ctx, emuGenerate("llama-3-8b"))
	require.NoError(t, err)
	for s.Next() {
	}
	require.NoError(t, s.Err())
	_ = s.Close()
	mu.Lock()
	assert.Equal(t, []string{"llama-3-8b", "llama-3-8b"}, seen)
	mu.Unlock()

	_, err = c.Invoke(ctx, emuGenerate("projects/p/locations/us-central1/publishers/google/models/gemini-2.0-flash"))
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
	assert.ErrorContains(t, err, "dedicated endpoint")
}
