package faults

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// end says how a streamed answer ends after its chunks.
type end int

const (
	endComplete  end = iota // the provider's end marker, then a clean end
	endTruncated            // a clean end without the end marker
	endReset                // the connection is cut
	endStall                // nothing more until the client gives up
	endError                // the provider's in-stream error event
)

// Kinds refine an answer's status.
const (
	kindNotReady = "model-not-ready" // the model is loading or scaling from zero
)

// answer is what a fake server does for one attempt.
type answer struct {
	status    int           // an error status (0: success)
	kind      string        // refines status (kindNotReady)
	header    http.Header   // extra response headers (Retry-After, …)
	retryInfo time.Duration // gRPC: a RetryInfo detail with this delay
	delay     time.Duration // wait before answering
	hold      bool          // never answer; wait for the client to go away
	reset     bool          // cut the connection before any response byte
	chunks    int           // stream: content chunks before the end
	gap       time.Duration // stream: pause before each chunk
	end       end           // stream: how it ends
	// cutWhen (endReset) is closed once the caller has the chunks; the
	// connection is cut then, so that the chunks are not lost with it
	// however late the client's reader runs.
	cutWhen <-chan struct{}
	// lazyHead (gRPC) sends a stream's headers only with its first
	// message, as grpc-go servers do unless told otherwise; by default
	// the fake sends them at once, as HTTP servers do.
	lazyHead bool
	// echoAuth (gRPC) fails with UNAUTHENTICATED quoting the credentials
	// the server received.
	echoAuth bool
	// raw answers by hand (HTTP backends only).
	raw func(w http.ResponseWriter, r *http.Request)
}

// fail is an error answer of status.
func fail(status int) answer { return answer{status: status} }

// ok is a successful answer; streams send n chunks and end completely.
func ok(n int) answer { return answer{chunks: n} }

// seen is one attempt as a fake server received it.
type seen struct {
	at     time.Time
	body   []byte
	header http.Header
	path   string
}

// recorder hands out a backend's answers in order (the last one repeats)
// and records every attempt. Safe for concurrent use.
type recorder struct {
	mu      sync.Mutex
	answers []answer
	seen    []seen
}

func (r *recorder) next(s seen) answer {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, s)
	if len(r.answers) == 0 {
		return answer{chunks: 3}
	}
	return r.answers[min(len(r.seen), len(r.answers))-1]
}

func (r *recorder) attempts() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

// backend is one provider adapter with a fake server speaking its wire form.
type backend struct {
	name string
	// grpc marks a backend whose fake is a gRPC server (no HTTP headers,
	// no raw answers, no in-memory network).
	grpc bool
	// applies reports whether the backend can realize an answer on its
	// wire (nil: every answer).
	applies func(a answer) bool
	// start serves env.rec's answers and returns an adapter talking to them.
	start func(t testing.TB, env startEnv) cloudreq.Adapter
	// newAdapter returns an adapter for a server at base reached through hc
	// (HTTP backends only).
	newAdapter func(t testing.TB, base string, hc *http.Client) cloudreq.Adapter
	// matrix overrides the status matrix's code for a row, by row name,
	// where the provider documents another meaning for the status.
	matrix map[string]errcodes.Code
	// request returns a fresh request: an invoke, or a generate to stream.
	request func(stream bool) *cloudreq.CloudRequest
}

func (b backend) can(a answer) bool { return b.applies == nil || b.applies(a) }

// code is the code b gives the status matrix's row named row (def unless
// b documents another).
func (b backend) code(row string, def errcodes.Code) errcodes.Code {
	if c, ok := b.matrix[row]; ok {
		return c
	}
	return def
}

// moreBackends holds the backends the wire_*_test.go files of the
// net/http adapters register.
var moreBackends []func() backend

// backends returns every provider the suite drives, in a stable order.
func backends() []backend {
	out := []backend{sagemakerBackend(), vertexBackend()}
	var more []backend
	for _, f := range moreBackends {
		more = append(more, f())
	}
	slices.SortFunc(more, func(a, b backend) int { return strings.Compare(a.name, b.name) })
	return append(out, more...)
}

// httpBackends returns the backends whose fake is an HTTP server.
func httpBackends() []backend {
	var out []backend
	for _, b := range backends() {
		if !b.grpc {
			out = append(out, b)
		}
	}
	return out
}

// rig is a backend started for one test: its fake server, adapter and a
// client with fast retries.
type rig struct {
	b      backend
	rec    *recorder
	ad     cloudreq.Adapter
	client *cloudreq.Client
}

// startEnv is what a backend's start gets.
type startEnv struct {
	rec *recorder
	// mem serves over an in-memory network (for testing/synctest).
	mem bool
	// transport wraps the adapter's HTTP transport (nil: none).
	transport func(http.RoundTripper) http.RoundTripper
}

// rigOption configures newRig.
type rigOption struct {
	env    startEnv
	client []func(*cloudreq.Options)
}

func inMemory() func(*rigOption) { return func(o *rigOption) { o.env.mem = true } }

func withTransport(f func(http.RoundTripper) http.RoundTripper) func(*rigOption) {
	return func(o *rigOption) { o.env.transport = f }
}

func withClient(f func(*cloudreq.Options)) func(*rigOption) {
	return func(o *rigOption) { o.client = append(o.client, f) }
}

// fastRetries are the client options every rig starts from: three attempts,
// not-ready ones included (no cold-start wait), millisecond backoff.
func fastRetries(o *cloudreq.Options) {
	o.Retry.MaxAttempts = 3
	o.Retry.BaseDelay = time.Millisecond
	o.Retry.MaxDelay = 4 * time.Millisecond
	o.Retry.ColdStartWait = -1
}

func newRig(t testing.TB, b backend, answers []answer, opts ...func(*rigOption)) *rig {
	t.Helper()
	var ro rigOption
	for _, f := range opts {
		f(&ro)
	}
	rec := &recorder{answers: answers}
	ro.env.rec = rec
	ad := b.start(t, ro.env)
	co := cloudreq.Options{Adapters: []cloudreq.Adapter{ad}}
	fastRetries(&co)
	for _, f := range ro.client {
		f(&co)
	}
	c, err := cloudreq.New(co)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return &rig{b: b, rec: rec, ad: ad, client: c}
}

func (r *rig) invoke(ctx context.Context, opts ...func(*cloudreq.CallOptions)) (*cloudreq.CloudResponse, error) {
	return r.client.Invoke(ctx, r.b.request(false), opts...)
}

// stream opens a stream and reads it to its end, keeping the chunks' text.
func (r *rig) stream(ctx context.Context, opts ...func(*cloudreq.CallOptions)) ([]string, *cloudreq.CloudResponse, error) {
	return r.streamEach(ctx, func([]string) {}, opts...)
}

// streamEach is stream, calling seen with the texts so far after each
// content chunk.
func (r *rig) streamEach(ctx context.Context, seen func([]string), opts ...func(*cloudreq.CallOptions)) ([]string, *cloudreq.CloudResponse, error) {
	s, err := r.client.Stream(ctx, r.b.request(true), opts...)
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	var texts []string
	for i := 0; i < 100000 && s.Next(); i++ {
		if ch := s.Chunk(); ch.Content {
			texts = append(texts, ch.Text)
			seen(texts)
		}
	}
	return texts, s.Response(), s.Err()
}

// awaitCut waits until cut is closed, the request ends or 10 s pass.
func awaitCut(ctx context.Context, cut <-chan struct{}) {
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-cut:
	case <-ctx.Done():
	case <-t.C:
	}
}

// sleepCtx waits d or until ctx ends, and reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// wire writes one HTTP provider's native answers.
type wire interface {
	// isStream reports whether r (whose body is body) asks for a streamed
	// response.
	isStream(r *http.Request, body []byte) bool
	// writeError answers with the provider's error for a.status and a.kind.
	writeError(w http.ResponseWriter, a answer)
	// writeOK answers a non-streaming request successfully.
	writeOK(w http.ResponseWriter)
	// streamHead writes a stream's status and headers.
	streamHead(w http.ResponseWriter)
	// chunk writes content chunk i ("tok<i> ").
	chunk(w io.Writer, i int) error
	// finish writes the stream's end marker.
	finish(w io.Writer) error
	// streamError writes the provider's in-stream error event.
	streamError(w io.Writer) error
}

// serveWire is the handler of an HTTP backend's fake server.
func serveWire(wr wire, rec *recorder) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		a := rec.next(seen{at: time.Now(), body: body, header: r.Header.Clone(), path: r.URL.Path})
		for k, vs := range a.header {
			w.Header()[k] = vs
		}
		if !sleepCtx(r.Context(), a.delay) {
			return
		}
		switch {
		case a.reset:
			abortConn(w, true)
			return
		case a.hold:
			<-r.Context().Done()
			return
		case a.raw != nil:
			a.raw(w, r)
			return
		case a.status != 0:
			wr.writeError(w, a)
			return
		case !wr.isStream(r, body):
			wr.writeOK(w)
			return
		}
		wr.streamHead(w)
		flush(w)
		for i := range a.chunks {
			if !sleepCtx(r.Context(), a.gap) {
				return
			}
			if wr.chunk(w, i) != nil {
				return
			}
			flush(w)
		}
		switch a.end {
		case endComplete:
			_ = wr.finish(w)
		case endReset:
			flush(w)
			awaitCut(r.Context(), a.cutWhen)
			abortConn(w, true)
		case endStall:
			<-r.Context().Done()
		case endError:
			_ = wr.streamError(w)
		}
	}
}

func flush(w http.ResponseWriter) { _ = http.NewResponseController(w).Flush() }

// abortConn cuts the connection under w, by a TCP RST when reset is set.
func abortConn(w http.ResponseWriter, reset bool) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok && reset {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// serveEnv serves wr's answers for env and returns the base URL and the
// HTTP client an adapter should use.
func serveEnv(t testing.TB, wr wire, env startEnv) (string, *http.Client) {
	t.Helper()
	base, hc := serveHTTP(t, serveWire(wr, env.rec), env.mem)
	if env.transport != nil {
		hc.Transport = env.transport(hc.Transport)
	}
	return base, hc
}

// serveHTTP serves h on loopback (httptest) or, with mem, on an in-memory
// network, and returns the base URL and a client whose idle connections
// are closed at cleanup.
func serveHTTP(t testing.TB, h http.Handler, mem bool) (string, *http.Client) {
	t.Helper()
	if mem {
		l := newMemListener()
		srv := &http.Server{Handler: h}
		done := make(chan struct{})
		go func() { defer close(done); _ = srv.Serve(l) }()
		tr := &http.Transport{DialContext: l.dial}
		t.Cleanup(func() {
			tr.CloseIdleConnections()
			_ = srv.Close()
			<-done
		})
		return "http://127.0.0.1:9", &http.Client{Transport: tr}
	}
	srv := httptest.NewServer(h)
	tr := &http.Transport{}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL, &http.Client{Transport: tr}
}

// memListener is an in-memory net.Listener whose dial hands out net.Pipe
// connections: a network for testing/synctest bubbles.
type memListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newMemListener() *memListener {
	return &memListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *memListener) Addr() net.Addr { return memAddr{} }

func (l *memListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	c, s := net.Pipe()
	select {
	case l.conns <- s:
		return c, nil
	case <-l.closed:
		return nil, &net.OpError{Op: "dial", Net: "mem", Err: syscall.ECONNREFUSED}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type memAddr struct{}

func (memAddr) Network() string { return "mem" }
func (memAddr) String() string  { return "mem" }

// closeCounter counts Close calls on the bodies it wraps.
type closeCounter struct {
	mu     sync.Mutex
	counts []int
}

type countedBody struct {
	io.ReadCloser
	c *closeCounter
	i int
}

func (b *countedBody) Close() error {
	b.c.mu.Lock()
	b.c.counts[b.i]++
	b.c.mu.Unlock()
	return b.ReadCloser.Close()
}

func (c *closeCounter) wrap(rc io.ReadCloser) io.ReadCloser {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts = append(c.counts, 0)
	return &countedBody{ReadCloser: rc, c: c, i: len(c.counts) - 1}
}

func (c *closeCounter) closes() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.counts)
}

// countingTransport counts the closes of every request body it is handed
// and of every response body it returns.
type countingTransport struct {
	next      http.RoundTripper
	requests  closeCounter
	responses closeCounter
}

// RoundTrip implements http.RoundTripper.
func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		r2 := r.Clone(r.Context())
		r2.Body = t.requests.wrap(r.Body)
		r = r2
	}
	resp, err := t.next.RoundTrip(r)
	if err == nil && resp.Body != nil {
		resp.Body = t.responses.wrap(resp.Body)
	}
	return resp, err
}

// CloseIdleConnections closes the wrapped transport's idle connections.
func (t *countingTransport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
