// Package h1client is an HTTP/1.1 client transport (an http.RoundTripper)
// that does each request's I/O on the goroutine that makes it: it writes
// the request and reads the response on that goroutine, over a pooled
// keep-alive connection of its own, and hands everything else to a
// fallback transport.
//
// It exists for the load generator. net/http's Transport runs two
// goroutines per connection (a reader and a writer), so a request passes
// between three goroutines, and a connection costs two goroutine stacks.
// Profiles of cloudinfer bench against a loopback server on a 2-core
// machine showed those hand-offs (the scheduler's wake-ups, futexes,
// netpoll) as the largest share of the client's CPU, and the per-connection
// goroutines as what made a burst of new connections costly enough to
// drag an open loop behind its schedule. Libraries that do I/O on the
// caller's goroutine (fasthttp) are not http.RoundTrippers, and the
// adapters, signers and timeline are built on net/http's types; this
// package keeps those types, and replaces the connection handling and,
// for plain requests and responses, net/http's request writer and
// response parser: writeRequest writes what Request.Write writes, byte
// for byte, and readPlain reads a plain response as http.ReadResponse
// reads it; each leaves every other message to net/http's own. On Linux
// it reads and writes a socket with raw system calls through the runtime's poller, which spares the
// scheduler's system-call bookkeeping: a process that comes idle between
// requests, as a paced load generator's does, otherwise wakes the
// runtime's monitor thread on each read and write (see rawIO).
//
// What it carries: cleartext (http) requests that go direct (no proxy,
// per the Proxy function) and ask for no protocol change (no Upgrade, no
// Expect: 100-continue). Everything else (https, which may negotiate
// HTTP/2; proxied requests) goes to Fallback. It calls the request's
// httptrace hooks as net/http does: GetConn, GotConn (Reused, WasIdle,
// IdleTime), the dialer's DNS and connect hooks, WroteHeaderField,
// WroteHeaders, WroteRequest, GotFirstResponseByte and Got1xxResponse.
//
// Behaviour that differs from net/http's Transport:
//   - It asks for no compression (no Accept-Encoding: gzip is added), so
//     bodies come as the server sends them.
//   - It does not retry a request itself. A pooled connection that was
//     idle at least ProbeIdle is probed for a close by the server (one
//     non-blocking peek) before it is reused; one closed by the server
//     more recently than that fails its next request, which the caller's
//     retry policy sees as a transport error.
//   - A body closed before its end closes its connection (no drain).
//   - Idle connections are closed when found too old on reuse and by
//     CloseIdleConnections; no goroutine watches them.
//   - At most MaxDialsPerHost dials to a host are in progress at once; a
//     request beyond them waits for a released connection or a dial.
package h1client

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults.
const (
	// DefaultMaxIdleConnsPerHost is how many idle connections a host
	// keeps when MaxIdleConnsPerHost is 0.
	DefaultMaxIdleConnsPerHost = 256
	// DefaultProbeIdle is ProbeIdle's default.
	DefaultProbeIdle = time.Millisecond
	// DefaultMaxDialsPerHost is MaxDialsPerHost's default.
	DefaultMaxDialsPerHost = 4
	// bufSize is each connection's read and write buffer.
	bufSize = 4 << 10
)

// Transport is the synchronous HTTP/1.1 round tripper. Its zero value is
// not usable: set Fallback. Its fields must not change once it is in use.
type Transport struct {
	// Fallback carries the requests Transport does not (see the package
	// doc). Required.
	Fallback http.RoundTripper
	// Proxy says which requests go through a proxy, as
	// http.Transport.Proxy does; those go to Fallback. Its answer is
	// kept per scheme and host. Nil: every request goes direct.
	Proxy func(*http.Request) (*url.URL, error)
	// DialContext dials a connection. Nil: a net.Dialer with a 30 s
	// timeout and 30 s keep-alive.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// MaxIdleConnsPerHost bounds each host's idle connections (0:
	// DefaultMaxIdleConnsPerHost). A connection released past it is
	// closed.
	MaxIdleConnsPerHost int
	// IdleConnTimeout closes a connection found idle longer than this
	// when it would be reused (0: no limit).
	IdleConnTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for a response's header
	// after the request is written (0: no limit).
	ResponseHeaderTimeout time.Duration
	// ProbeIdle is the idle time from which a pooled connection is
	// probed before reuse (0: DefaultProbeIdle; negative: always).
	ProbeIdle time.Duration
	// MaxDialsPerHost bounds each host's dials in progress (0:
	// DefaultMaxDialsPerHost; negative: no bound). A request that finds
	// no idle connection and the dials at the bound waits for whichever
	// comes first, a connection released by another request or a dial
	// of its own; the wait is in its GetConn-to-GotConn time. The
	// number of connections is not bounded, only how fast it grows: a
	// load generator that falls behind for a few milliseconds otherwise
	// dials for every send it then makes at once, and the dials (a
	// connect and an accept each, on a machine it may share with the
	// server) made it fall further behind. On 2 cores against
	// scripts/loopserver at 12,000/s, a run that did so ended with 3,898
	// connections and a schedule lag p99 of 329 ms. The bound costs a
	// far server: its pool grows by at most MaxDialsPerHost connections
	// per dial's time (4 per 50 ms over a 50 ms path). Letting a request
	// dial past the bound after a short wait brought the storms back (a
	// 1 ms wait: 2,860-3,886 connections at 15,000/s).
	MaxDialsPerHost int

	mu    sync.Mutex
	hosts map[string]*host
}

// host is one http host's pool and proxy decision.
type host struct {
	addr   string // dial address, host:port
	direct bool   // no proxy: Transport carries its requests
	idle   []*conn
	// dialing counts the dials in progress, and waiters are the
	// requests waiting for a connection or a dial (MaxDialsPerHost),
	// first come first served.
	dialing int
	waiters []chan *conn
}

// conn is one pooled connection.
type conn struct {
	nc     net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	h      *host
	idleAt time.Time
	used   bool // it has carried a request
	// cut is set once the connection is closed under a request (its
	// context ended): it goes back to no pool.
	cut atomic.Bool
}

func (c *conn) close() { _ = c.nc.Close() }

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	h, err := t.host(req)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	if h == nil {
		return t.Fallback.RoundTrip(req)
	}
	ctx := req.Context()
	trace := httptrace.ContextClientTrace(ctx)
	if trace != nil && trace.GetConn != nil {
		trace.GetConn(h.addr)
	}
	c, idle, err := t.getConn(ctx, h)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	if trace != nil && trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{Conn: c.nc, Reused: c.used, WasIdle: c.used, IdleTime: idle})
	}
	c.used = true
	// A request whose context ends has its connection closed: a write or
	// a read blocked on it returns, and the connection is not reused.
	stop := func() bool { return true }
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() { c.cut.Store(true); c.close() })
	}
	fail := func(err error) (*http.Response, error) {
		stop()
		c.close()
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	err = writeRequest(c.bw, req, trace) // closes req.Body; calls the write hooks
	if err == nil {
		err = c.bw.Flush()
	}
	if err != nil {
		return fail(err)
	}
	if t.ResponseHeaderTimeout > 0 {
		_ = c.nc.SetReadDeadline(time.Now().Add(t.ResponseHeaderTimeout))
	}
	resp, err := readResponse(c.br, req, trace)
	if err != nil {
		var ne net.Error
		if t.ResponseHeaderTimeout > 0 && errors.As(err, &ne) && ne.Timeout() && ctx.Err() == nil {
			err = errHeaderTimeout
		}
		return fail(err)
	}
	if t.ResponseHeaderTimeout > 0 {
		_ = c.nc.SetReadDeadline(time.Time{})
	}
	reuse := !resp.Close && !req.Close && resp.StatusCode != http.StatusSwitchingProtocols
	if resp.Body == http.NoBody {
		t.release(c, stop, reuse)
		return resp, nil
	}
	resp.Body = &body{rc: resp.Body, c: c, t: t, stop: stop, reuse: reuse, ctx: ctx}
	return resp, nil
}

// readResponse reads the response to req from br, past any 1xx
// (informational) responses, calling the first-byte and 1xx hooks.
func readResponse(br *bufio.Reader, req *http.Request, trace *httptrace.ClientTrace) (*http.Response, error) {
	if _, err := br.Peek(1); err != nil {
		return nil, err
	}
	if trace != nil && trace.GotFirstResponseByte != nil {
		trace.GotFirstResponseByte()
	}
	if resp, ok := readPlain(br, req); ok {
		return resp, nil
	}
	for {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			return nil, err
		}
		code := resp.StatusCode
		if code < 100 || code >= 200 || code == http.StatusSwitchingProtocols {
			return resp, nil
		}
		if trace != nil && trace.Got1xxResponse != nil {
			if err := trace.Got1xxResponse(code, textproto.MIMEHeader(resp.Header)); err != nil {
				return nil, err
			}
		}
	}
}

// errHeaderTimeout is ResponseHeaderTimeout's error, a net.Error that
// times out, as net/http's is.
var errHeaderTimeout error = headerTimeout{}

type headerTimeout struct{}

func (headerTimeout) Error() string   { return "h1client: timeout awaiting response headers" }
func (headerTimeout) Timeout() bool   { return true }
func (headerTimeout) Temporary() bool { return true }

// host returns req's host when Transport carries req, nil when Fallback
// does.
func (t *Transport) host(req *http.Request) (*host, error) {
	u := req.URL
	if u == nil || u.Scheme != "http" || u.Host == "" {
		return nil, nil
	}
	if req.Header.Get("Upgrade") != "" || req.Header.Get("Expect") != "" {
		return nil, nil
	}
	key := u.Host
	t.mu.Lock()
	h := t.hosts[key]
	t.mu.Unlock()
	if h == nil {
		direct := true
		if t.Proxy != nil {
			p, err := t.Proxy(req)
			if err != nil {
				return nil, err
			}
			direct = p == nil
		}
		t.mu.Lock()
		if h = t.hosts[key]; h == nil {
			if t.hosts == nil {
				t.hosts = map[string]*host{}
			}
			h = &host{addr: dialAddr(u), direct: direct}
			t.hosts[key] = h
		}
		t.mu.Unlock()
	}
	if !h.direct {
		return nil, nil
	}
	return h, nil
}

// dialAddr returns u's host and port, port 80 when u names none.
func dialAddr(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// getConn returns an idle connection of h (the last released: the
// warmest), skipping those too old or closed by the server, or a new one,
// with how long it was idle. When h has no idle connection and its dials
// are at MaxDialsPerHost, it waits for a released connection or a dial of
// its own, whichever comes first.
func (t *Transport) getConn(ctx context.Context, h *host) (*conn, time.Duration, error) {
	probeAfter := t.ProbeIdle
	if probeAfter == 0 {
		probeAfter = DefaultProbeIdle
	}
	limit := t.MaxDialsPerHost
	if limit == 0 {
		limit = DefaultMaxDialsPerHost
	}
	for {
		t.mu.Lock()
		if n := len(h.idle); n > 0 {
			c := h.idle[n-1]
			h.idle[n-1] = nil
			h.idle = h.idle[:n-1]
			t.mu.Unlock()
			idle := time.Since(c.idleAt)
			if t.IdleConnTimeout > 0 && idle > t.IdleConnTimeout {
				c.close()
				continue
			}
			if idle >= probeAfter && !alive(c) {
				c.close()
				continue
			}
			return c, idle, nil
		}
		// Deciding under the lock that found no idle connection: a
		// connection put back after it goes to a waiter.
		if limit < 0 || h.dialing < limit {
			h.dialing++
			t.mu.Unlock()
			return t.dial(ctx, h)
		}
		w := make(chan *conn, 1) // a released connection, or nil: a dial of its own
		h.waiters = append(h.waiters, w)
		t.mu.Unlock()
		return t.wait(ctx, h, w)
	}
}

// wait waits on w, queued in h.waiters, for a released connection or a
// dial, or for ctx to end; what it is handed once ctx has ended goes on
// to the next waiter or the pool.
func (t *Transport) wait(ctx context.Context, h *host, w chan *conn) (*conn, time.Duration, error) {
	select {
	case c := <-w:
		switch {
		case ctx.Err() != nil:
			t.handOn(h, c)
		case c == nil:
			return t.dial(ctx, h)
		default:
			return c, 0, nil
		}
	case <-ctx.Done():
		t.mu.Lock()
		i := slices.Index(h.waiters, w)
		if i >= 0 {
			h.waiters = slices.Delete(h.waiters, i, i+1)
		}
		t.mu.Unlock()
		if i < 0 { // handed something as the context ended
			t.handOn(h, <-w)
		}
	}
	return nil, 0, ctx.Err()
}

// handOn passes on what a waiter was handed and does not use: a
// connection (back to the pool or the next waiter), or nil, a dial.
func (t *Transport) handOn(h *host, c *conn) {
	if c == nil {
		t.dialDone(h)
	} else {
		t.put(c)
	}
}

// dial dials a connection to h, on a dial counted in h.dialing, and
// hands that dial on when it ends.
func (t *Transport) dial(ctx context.Context, h *host) (*conn, time.Duration, error) {
	defer t.dialDone(h)
	dial := t.DialContext
	if dial == nil {
		dial = defaultDialer.DialContext
	}
	nc, err := dial(ctx, "tcp", h.addr)
	if err != nil {
		return nil, 0, err
	}
	rw := wrapIO(nc)
	return &conn{nc: nc, br: bufio.NewReaderSize(rw, bufSize), bw: bufio.NewWriterSize(rw, bufSize), h: h}, 0, nil
}

// dialDone ends a dial of h's: the first waiter, if any, dials in its
// place.
func (t *Transport) dialDone(h *host) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if w := h.firstWaiter(); w != nil {
		w <- nil
		return
	}
	h.dialing--
}

// firstWaiter takes the first of h's waiters off the queue, or returns
// nil when none waits. The caller holds Transport.mu.
func (h *host) firstWaiter() chan *conn {
	if len(h.waiters) == 0 {
		return nil
	}
	w := h.waiters[0]
	h.waiters = slices.Delete(h.waiters, 0, 1)
	return w
}

var defaultDialer = &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}

// alive reports whether an idle connection may carry a request: nothing
// unread is buffered, and the peer has neither closed it nor sent
// anything unasked.
func alive(c *conn) bool {
	if c.br.Buffered() > 0 {
		return false
	}
	return peekAlive(c.nc)
}

// release puts c back in its host's pool when reuse allows it and its
// request's context did not close it (stop reports that its close will
// never run); else it closes c.
func (t *Transport) release(c *conn, stop func() bool, reuse bool) {
	if !stop() || !reuse || c.br.Buffered() > 0 {
		c.close()
		return
	}
	t.put(c)
}

// put hands a reusable connection to the first request waiting for one,
// else puts it in its host's pool, else (the pool full) closes it.
func (t *Transport) put(c *conn) {
	limit := t.MaxIdleConnsPerHost
	if limit <= 0 {
		limit = DefaultMaxIdleConnsPerHost
	}
	c.idleAt = time.Now()
	h := c.h
	t.mu.Lock()
	if w := h.firstWaiter(); w != nil {
		w <- c
		c = nil
	} else if len(h.idle) < limit {
		h.idle = append(h.idle, c)
		c = nil
	}
	t.mu.Unlock()
	if c != nil {
		c.close()
	}
}

// CloseIdleConnections closes the idle connections, Transport's and
// Fallback's.
func (t *Transport) CloseIdleConnections() {
	var idle []*conn
	t.mu.Lock()
	for _, h := range t.hosts {
		idle = append(idle, h.idle...)
		clear(h.idle)
		h.idle = h.idle[:0]
	}
	t.mu.Unlock()
	for _, c := range idle {
		c.close()
	}
	if ci, ok := t.Fallback.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// body is a response body: read to its end, it puts its connection back
// in the pool; closed before, it closes the connection. Close may be
// called while a Read is blocked.
type body struct {
	rc    io.ReadCloser // http.ReadResponse's body
	c     *conn
	t     *Transport
	stop  func() bool
	reuse bool
	ctx   context.Context
	done  atomic.Bool
}

// Read implements io.Reader.
func (b *body) Read(p []byte) (int, error) {
	if b.done.Load() {
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF:
		if b.done.CompareAndSwap(false, true) {
			b.t.release(b.c, b.stop, b.reuse)
		}
	case err != nil:
		if b.done.CompareAndSwap(false, true) {
			b.stop()
			b.c.close()
		}
		if cerr := b.ctx.Err(); cerr != nil && b.c.cut.Load() {
			err = cerr
		}
	}
	return n, err
}

// Close implements io.Closer.
func (b *body) Close() error {
	if b.done.CompareAndSwap(false, true) {
		b.stop()
		b.c.close()
	}
	return nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}
