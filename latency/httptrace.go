package latency

import (
	"context"
	"crypto/tls"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
)

// HeaderObserver sees each request header field as the HTTP transport
// writes it (httptrace's WroteHeaderField). cloudreq uses one to learn the
// credentials an attempt sent, so that none is quoted back in an error.
type HeaderObserver interface {
	WroteHeaderField(key string, values []string)
}

// Context returns ctx carrying t: HTTP requests made with it are timed into
// t through net/http/httptrace, and TraceFromContext returns t (for
// package latency/grpctrace's stats handler). Requests started after
// Finish are not timed.
//
// The httptrace hooks come from a pool, so that timing a request on a
// pooled connection allocates nothing. A hook set goes back to the pool at
// Finish only when the attempt made no request, or exactly one, on a
// connection that was idle in the transport's pool (so no dial was started
// for it), that was fully written and answered: net/http then calls no hook
// for it any more. Any other attempt leaves its hooks to the garbage
// collector, where a late callback (a background dial, a write still in
// flight) can reach nothing but them. A ctx that already carries an
// httptrace.ClientTrace gets hooks of its own, composed with it.
//
// Call Context at most once per AttemptTrace, and not after Finish.
func (t *AttemptTrace) Context(ctx context.Context) context.Context {
	headers := t.hdr != nil
	if httptrace.ContextClientTrace(ctx) != nil {
		s := newHookSet(headers) // composing changes the hooks: never pooled
		s.cur.Store(t)
		t.hooks = s
		return context.WithValue(httptrace.WithClientTrace(ctx, &s.ct), traceKey{}, t)
	}
	s := hookPools[btoi(headers)].Get().(*hookSet)
	s.cur.Store(t)
	t.hooks = s
	t.tctx.Context, t.tctx.t, t.tctx.hooks = ctx, t, s
	return &t.tctx
}

// SetHeaderObserver has o see the header fields of t's HTTP requests. Call
// it before Context. Without one, the transport is not asked to report
// header fields, which saves it an allocation per field.
func (t *AttemptTrace) SetHeaderObserver(o HeaderObserver) { t.hdr = o }

// releaseHooks detaches t's hook set and pools it when no callback of t's
// requests can reach it any more (see Context).
func (t *AttemptTrace) releaseHooks() {
	s := t.hooks
	if s == nil {
		return
	}
	t.hooks = nil
	s.cur.Store(nil)
	if s.ctx == nil || !s.quiet(t) {
		return
	}
	s.events.Store(0)
	hookPools[btoi(s.ct.WroteHeaderField != nil)].Put(s)
}

// traceCtx is an attempt's context: its parent, with the hook set's
// httptrace values and the AttemptTrace looked up first. It lives inside
// the AttemptTrace, so that tracing needs no context allocation. Its fields
// are set before the context is handed out and never written again; once
// the attempt is finished, lookups skip the hook set's values (the set may
// be timing another attempt by then).
type traceCtx struct {
	context.Context
	t     *AttemptTrace
	hooks *hookSet // whose ctx holds the httptrace values
}

// Value implements context.Context.
func (c *traceCtx) Value(key any) any {
	if key == (traceKey{}) {
		return c.t
	}
	if c.hooks != nil && !c.t.done.Load() {
		if x := c.hooks.ctx.Value(key); x != nil {
			return x
		}
	}
	return c.Context.Value(key)
}

// hookSet is one set of httptrace hooks, bound to whichever AttemptTrace
// it is attached to, with the counts that tell when it may be reused.
type hookSet struct {
	cur atomic.Pointer[AttemptTrace]
	ct  httptrace.ClientTrace
	// ctx holds ct as httptrace.WithClientTrace installs it (with the
	// net-level DNS and connect hooks); nil for a set that is never pooled.
	ctx context.Context
	// events counts the attached attempt's events, one bit field per kind
	// (evGetConn…): one atomic word, so that counting and resetting cost one
	// atomic operation each. Each hook counts after its last use of the
	// set, so a count seen means the hook is done with it.
	events atomic.Uint64
}

// The event kinds a hookSet counts, each in a 12-bit field of
// hookSet.events (an attempt that made 4096 requests would wrap one; it is
// not quiet long before). That the request was written and answered shows
// in the attempt's stamps instead, which those hooks set last.
const (
	evGetConn = 1 << (12 * iota) // the transport looked for a connection
	evGotConn                    // it had one
	evDial                       // a dial reported
	evFresh                      // a connection that was not idle in the pool
)

// count returns the number of events of kind ev in the word w.
func count(w uint64, ev uint64) uint64 { return w / ev % (1 << 12) }

// hookPools hold the pooled hook sets without (0) and with (1) a header
// field hook.
var hookPools = [2]sync.Pool{{New: func() any { return newPooledHookSet(false) }}, {New: func() any { return newPooledHookSet(true) }}}

// newPooledHookSet returns a hook set with its context, ready for a pool.
func newPooledHookSet(headers bool) *hookSet {
	s := newHookSet(headers)
	s.ctx = httptrace.WithClientTrace(context.Background(), &s.ct)
	return s
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// newHookSet returns a hook set attached to nothing, with a header field
// hook if headers is set.
func newHookSet(headers bool) *hookSet {
	s := new(hookSet)
	s.ct = httptrace.ClientTrace{
		GetConn:      func(string) { s.events.Add(evGetConn) },
		DNSStart:     func(httptrace.DNSStartInfo) { s.dialEvent(stDNSStart) },
		DNSDone:      func(httptrace.DNSDoneInfo) { s.dialEvent(stDNSDone) },
		ConnectStart: func(string, string) { s.dialEvent(stConnectStart) },
		ConnectDone: func(_, _ string, err error) {
			if err == nil {
				s.dialEvent(stConnectDone)
			} else {
				s.events.Add(evDial)
			}
		},
		TLSHandshakeStart: func() { s.dialEvent(stTLSStart) },
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) {
			if err == nil {
				s.dialEvent(stTLSDone)
			} else {
				s.events.Add(evDial)
			}
		},
		GotConn: func(info httptrace.GotConnInfo) {
			if t := s.cur.Load(); t != nil {
				t.reused.Store(info.Reused)
				t.now(stGotConn, false)
			}
			if info.WasIdle {
				s.events.Add(evGotConn)
			} else {
				s.events.Add(evGotConn | evFresh)
			}
		},
		WroteRequest: func(httptrace.WroteRequestInfo) {
			// The stamp is this hook's last use of the set: quiet reads it.
			if t := s.cur.Load(); t != nil {
				t.now(stWroteRequest, false)
			}
		},
		GotFirstResponseByte: func() {
			if t := s.cur.Load(); t != nil {
				t.now(stFirstByte, true)
			}
		},
	}
	if headers {
		s.ct.WroteHeaderField = func(key string, values []string) {
			if t := s.cur.Load(); t != nil && t.hdr != nil {
				t.hdr.WroteHeaderField(key, values)
			}
		}
	}
	return s
}

// dialEvent stamps a connection-setup phase (the first of each kind), unless
// the attempt has its connection already: a dial still running then is not
// the setup of the connection the attempt used.
func (s *hookSet) dialEvent(i int) {
	if t := s.cur.Load(); t != nil && t.stamps[stGotConn].Load() == unset {
		t.now(i, true)
	}
	s.events.Add(evDial)
}

// quiet reports whether net/http will call none of the set's hooks for
// the attempt t any more: t made no request, or made one, on an idle pooled
// connection, that was written and answered.
func (s *hookSet) quiet(t *AttemptTrace) bool {
	w := s.events.Load()
	if w == 0 {
		return true
	}
	return count(w, evGetConn) <= 1 && count(w, evGotConn) == 1 && count(w, evDial) == 0 && count(w, evFresh) == 0 &&
		t.stamps[stWroteRequest].Load() != unset && t.stamps[stFirstByte].Load() != unset
}
