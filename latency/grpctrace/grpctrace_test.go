package grpctrace

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/cloudinfer/cloudinfer/latency"
)

func TestStatsHandlerFillsAttempts(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	h := NewStatsHandler()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithStatsHandler(h))
	require.NoError(t, err)
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	rpc := func(n int) latency.Attempt {
		tr := latency.NewAttemptTrace(n, 0)
		_, err := hc.Check(latency.ContextWithTrace(ctx, tr), &healthpb.HealthCheckRequest{})
		require.NoError(t, err)
		return tr.Finish(200, "")
	}

	// The first RPC dials: a new connection, paid for by this attempt.
	a := rpc(1)
	assert.False(t, a.ConnReused)
	assert.False(t, a.GotConn.IsZero())
	assert.Equal(t, a.Send, a.ConnectStart)
	assert.False(t, a.ConnectDone.Before(a.Send))
	assert.False(t, a.WroteRequest.Before(a.GotConn))
	assert.False(t, a.FirstByte.Before(a.WroteRequest))
	assert.False(t, a.End.Before(a.FirstByte))
	tl := &latency.Timeline{Start: a.Send, IntendedSend: a.Send, End: a.End, Attempts: []latency.Attempt{a},
		Chunks: []latency.Chunk{{At: a.End, Content: true}}}
	assert.True(t, latency.NewClassifier(0, false).Classify(latency.Evidence{Endpoint: "g", Timeline: tl}).ConnectionCold)
	s := latency.Measure(tl, latency.Outcome{})
	assert.True(t, s.Has.Has(latency.Connect))
	assert.True(t, s.Has.Has(latency.ServerWait))

	// The second reuses it.
	b := rpc(2)
	assert.True(t, b.ConnReused)
	assert.True(t, b.ConnectDone.IsZero())
	assert.False(t, b.FirstByte.IsZero())

	// An RPC without a trace is left alone.
	_, err = hc.Check(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	assert.Nil(t, latency.TraceFromContext(ctx))
	assert.Equal(t, ctx, latency.ContextWithTrace(ctx, nil))
}
