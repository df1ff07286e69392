// Package grpctrace times gRPC attempts into package latency's
// AttemptTraces: StatsHandler is the gRPC counterpart of the
// net/http/httptrace hooks that latency.AttemptTrace.Context installs for
// HTTP transports. A gRPC adapter (Vertex AI's) installs one on its
// connection and passes each attempt's trace through the RPC's context
// with latency.ContextWithTrace. It lives apart from package latency so
// that the client, which every adapter links, does not link gRPC.
package grpctrace

import (
	"context"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc/stats"

	"github.com/cloudinfer/cloudinfer/latency"
)

// StatsHandler fills latency.AttemptTraces from gRPC's stats events, the
// gRPC counterpart of net/http/httptrace. Install one per connection:
//
//	conn, err := grpc.NewClient(addr, grpc.WithStatsHandler(grpctrace.NewStatsHandler()), …)
//
// and pass each attempt's trace through the RPC's context with
// latency.ContextWithTrace. RPCs without a trace are ignored. Events map
// to the attempt as follows:
//
//   - OutHeader: the RPC has a connection (GotConn). When that connection
//     became ready after the attempt's send and this is its first RPC, the
//     attempt waited for it: ConnReused is false, ConnectStart is the send
//     and ConnectDone the connection's ready time (gRPC reports no dial
//     start nor a separate TLS handshake, so the wait is not split
//     further). Otherwise ConnReused is true.
//   - OutPayload: the request message was written (WroteRequest).
//   - InHeader, InPayload or InTrailer, whichever comes first: FirstByte.
//
// The content chunks of a server stream are recorded by cloudreq's stream
// reader, as for HTTP. A StatsHandler is safe for concurrent use.
type StatsHandler struct {
	mu    sync.Mutex
	conns map[string]*grpcConn
}

type grpcConn struct {
	ready time.Time
	used  bool
}

type connKey struct{}

// NewStatsHandler returns a handler for one gRPC client connection.
func NewStatsHandler() *StatsHandler {
	return &StatsHandler{conns: map[string]*grpcConn{}}
}

var _ stats.Handler = (*StatsHandler)(nil)

func addrKey(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.Network() + "|" + a.String()
}

// TagConn implements stats.Handler: gRPC calls it once a connection is
// established (TCP and any TLS handshake done), which is its ready time.
func (h *StatsHandler) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	k := addrKey(info.LocalAddr)
	h.mu.Lock()
	h.conns[k] = &grpcConn{ready: time.Now()}
	h.mu.Unlock()
	return context.WithValue(ctx, connKey{}, k)
}

// HandleConn implements stats.Handler: it forgets ended connections.
func (h *StatsHandler) HandleConn(ctx context.Context, s stats.ConnStats) {
	if _, ok := s.(*stats.ConnEnd); !ok {
		return
	}
	if k, ok := ctx.Value(connKey{}).(string); ok {
		h.mu.Lock()
		delete(h.conns, k)
		h.mu.Unlock()
	}
}

// TagRPC implements stats.Handler.
func (h *StatsHandler) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	return ctx
}

// HandleRPC implements stats.Handler.
func (h *StatsHandler) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if !s.IsClient() {
		return
	}
	tr := latency.TraceFromContext(ctx)
	if tr == nil {
		return
	}
	now := time.Now()
	switch ev := s.(type) {
	case *stats.OutHeader:
		send := tr.Send()
		h.mu.Lock()
		c := h.conns[addrKey(ev.LocalAddr)]
		fresh := c != nil && !c.used && c.ready.After(send)
		var ready time.Time
		if c != nil {
			ready = c.ready
			c.used = true
		}
		h.mu.Unlock()
		tr.GotConn(now, !fresh)
		if fresh {
			tr.Connected(send, ready)
		}
	case *stats.OutPayload:
		tr.WroteRequest(now)
	case *stats.InHeader, *stats.InPayload, *stats.InTrailer:
		tr.FirstByte(now)
	}
}
