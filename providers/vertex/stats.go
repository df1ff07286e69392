package vertex

import (
	"context"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc/stats"

	"github.com/cloudinfer/cloudinfer/latency"
)

// traceKey is the context key under which Invoke and Stream hand the
// attempt's trace to the stats handler.
type traceKey struct{}

func withTrace(ctx context.Context, tr *latency.AttemptTrace) context.Context {
	if tr == nil {
		return ctx
	}
	return context.WithValue(ctx, traceKey{}, tr)
}

func traceFrom(ctx context.Context) *latency.AttemptTrace {
	tr, _ := ctx.Value(traceKey{}).(*latency.AttemptTrace)
	return tr
}

// statsHandler fills an attempt's phases from gRPC's stats events, which
// are the gRPC counterpart of net/http/httptrace:
//
//   - OutHeader: the stream has a connection (GotConn). If that connection
//     became ready after the attempt was sent and carries its first RPC, the
//     attempt paid for it: ConnReused is false and the connection's ready
//     time is recorded as ConnectDone (plain text) or ConnectDone and
//     TLSDone (TLS). gRPC reports no dial start, so ConnectStart and
//     TLSStart stay zero rather than being guessed.
//   - OutPayload: the request message was written (WroteRequest).
//   - InHeader, InTrailer or InPayload, whichever comes first: FirstByte.
//
// Connections are tracked from ConnBegin to ConnEnd by local address.
type statsHandler struct {
	tls bool

	mu    sync.Mutex
	conns map[string]*connState
}

type connState struct {
	ready time.Time
	used  bool
}

func newStatsHandler(tls bool) *statsHandler {
	return &statsHandler{tls: tls, conns: map[string]*connState{}}
}

func addrKey(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.Network() + "|" + a.String()
}

// TagRPC implements stats.Handler.
func (h *statsHandler) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	return ctx
}

// TagConn implements stats.Handler: it records when the connection became
// ready (after TCP and any TLS handshake).
func (h *statsHandler) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	k := addrKey(info.LocalAddr)
	h.mu.Lock()
	h.conns[k] = &connState{ready: time.Now()}
	h.mu.Unlock()
	return context.WithValue(ctx, connKey{}, k)
}

type connKey struct{}

// HandleConn implements stats.Handler: it forgets ended connections.
func (h *statsHandler) HandleConn(ctx context.Context, s stats.ConnStats) {
	if _, ok := s.(*stats.ConnEnd); !ok {
		return
	}
	if k, ok := ctx.Value(connKey{}).(string); ok {
		h.mu.Lock()
		delete(h.conns, k)
		h.mu.Unlock()
	}
}

// HandleRPC implements stats.Handler.
func (h *statsHandler) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if !s.IsClient() {
		return
	}
	tr := traceFrom(ctx)
	if tr == nil {
		return
	}
	now := time.Now()
	switch ev := s.(type) {
	case *stats.OutHeader:
		send := tr.Send()
		h.mu.Lock()
		cs := h.conns[addrKey(ev.LocalAddr)]
		fresh := cs != nil && !cs.used && cs.ready.After(send)
		var ready time.Time
		if cs != nil {
			ready = cs.ready
			cs.used = true
		}
		h.mu.Unlock()
		tr.Mark(func(a *latency.Attempt) {
			if fresh {
				a.ConnReused = false
				a.ConnectDone = ready
				if h.tls {
					a.TLSDone = ready
				}
				a.GotConn = ready
				return
			}
			a.ConnReused = true
			a.GotConn = now
		})
	case *stats.OutPayload:
		tr.Mark(func(a *latency.Attempt) { a.WroteRequest = now })
	case *stats.InHeader, *stats.InTrailer, *stats.InPayload:
		tr.Mark(func(a *latency.Attempt) {
			if a.FirstByte.IsZero() {
				a.FirstByte = now
			}
		})
	}
}
