package providertest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// Serve starts h on an httptest server and returns the adapter that
// newAdapter builds for the server's URL, with the server. Both are
// closed when the test ends.
func Serve[A io.Closer](t testing.TB, h http.HandlerFunc, newAdapter func(url string) (A, error)) (A, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ad, err := newAdapter(srv.URL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ad.Close() })
	return ad, srv
}

// Server returns a test's server function for an adapter that newAdapter
// builds for a server URL with option functions: it starts a handler on
// an httptest server (Serve) and returns the adapter for it, with the
// option functions applied, and the server.
func Server[A io.Closer, O any](newAdapter func(url string, optFns ...func(*O)) (A, error)) func(t *testing.T, h http.HandlerFunc, optFns ...func(*O)) (A, *httptest.Server) {
	return func(t *testing.T, h http.HandlerFunc, optFns ...func(*O)) (A, *httptest.Server) {
		t.Helper()
		return Serve(t, h, func(url string) (A, error) { return newAdapter(url, optFns...) })
	}
}

// Client returns a cloudreq.Client on ad that makes one attempt per call
// and does not wait out a model that is not ready: each call is one
// answer of the server.
func Client(t testing.TB, ad cloudreq.Adapter) *cloudreq.Client {
	t.Helper()
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}},
		func(o *cloudreq.Options) { o.Retry.MaxAttempts, o.Retry.ColdStartWait = 1, -1 })
	require.NoError(t, err)
	return c
}

// Context returns a context that ends after 10 s, or when the test ends.
func Context(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// GenerateRequest returns an ActionGenerate request of provider and
// service to target: one user message "hi", at most 8 tokens.
func GenerateRequest(provider, service string, target cloudreq.Target) *cloudreq.CloudRequest {
	return &cloudreq.CloudRequest{
		Provider: provider, Service: service, Action: cloudreq.ActionGenerate, Target: target,
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "hi"}}, MaxTokens: 8},
	}
}

// InvokeRequest returns an ActionInvoke request of provider and service
// to target with body as its payload.
func InvokeRequest(provider, service string, target cloudreq.Target, body string) *cloudreq.CloudRequest {
	return &cloudreq.CloudRequest{
		Provider: provider, Service: service, Action: cloudreq.ActionInvoke, Target: target,
		Payload: cloudreq.Payload{Body: []byte(body)},
	}
}

// WriteFlushed answers 200 with contentType and writes parts, flushing
// each: a stream whose parts arrive apart.
func WriteFlushed(w http.ResponseWriter, contentType string, parts ...string) {
	send := Flushed(w, contentType)
	for _, p := range parts {
		send(p)
	}
}

// Flushed answers 200 with contentType and returns a function that writes
// one part and flushes it.
func Flushed(w http.ResponseWriter, contentType string) func(string) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	f := w.(http.Flusher)
	return func(s string) {
		_, _ = io.WriteString(w, s)
		f.Flush()
	}
}

// Streamed is what Stream read of a stream.
type Streamed struct {
	// Chunks are the chunks, their Data copied.
	Chunks []cloudreq.StreamChunk
	// Err is the stream's error (the open's, or Err at its end); Resp its
	// response at the end (nil when it did not open).
	Err  error
	Resp *cloudreq.CloudResponse
}

// Text returns the chunks' text, joined.
func (s Streamed) Text() string { return strings.Join(s.Texts(), "") }

// Texts returns each chunk's text.
func (s Streamed) Texts() []string {
	var out []string
	for _, c := range s.Chunks {
		out = append(out, c.Text)
	}
	return out
}

// Content counts the chunks that are content.
func (s Streamed) Content() int {
	n := 0
	for _, c := range s.Chunks {
		if c.Content {
			n++
		}
	}
	return n
}

// Stream opens r on c and reads the stream to its end (at most 1000
// chunks), then closes it.
func Stream(t testing.TB, c *cloudreq.Client, r *cloudreq.CloudRequest) Streamed {
	t.Helper()
	s, err := c.Stream(Context(t), r)
	if err != nil {
		return Streamed{Err: err}
	}
	defer s.Close()
	var out Streamed
	for i := 0; s.Next() && i < 1000; i++ {
		ch := s.Chunk()
		ch.Data = bytes.Clone(ch.Data)
		out.Chunks = append(out.Chunks, ch)
	}
	out.Err, out.Resp = s.Err(), s.Response()
	return out
}

// Endless is a response body that never ends (of 'x' bytes); N counts the
// bytes read of it, for a test that a body is read bounded.
type Endless struct{ N int64 }

// Read implements io.Reader: p is filled.
func (e *Endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	e.N += int64(len(p))
	return len(p), nil
}

// Close implements io.Closer.
func (e *Endless) Close() error { return nil }

// RoundTrip is an http.RoundTripper that answers with a function.
type RoundTrip func(*http.Request) (*http.Response, error)

// RoundTrip implements http.RoundTripper.
func (f RoundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// HoldAfter returns a handler that answers 200 with contentType and first,
// flushed, then holds the request until the client goes away (at most
// 10 s), and a channel closed when the client went away.
func HoldAfter(contentType, first string) (http.HandlerFunc, <-chan struct{}) {
	released := make(chan struct{})
	return func(w http.ResponseWriter, r *http.Request) {
		WriteFlushed(w, contentType, first)
		select {
		case <-r.Context().Done():
			close(released)
		case <-time.After(10 * time.Second):
		}
	}, released
}

// CancelMidStream opens r on c against a HoldAfter handler, reads the
// first chunk, cancels the call's context and checks that the stream
// ends at the next Next with ERR_CANCELED and that the server saw the
// connection go (released closed). It returns the first chunk.
func CancelMidStream(t *testing.T, c *cloudreq.Client, r *cloudreq.CloudRequest, released <-chan struct{}) cloudreq.StreamChunk {
	t.Helper()
	cctx, cancel := context.WithCancel(Context(t))
	defer cancel()
	s, err := c.Stream(cctx, r)
	require.NoError(t, err)
	defer s.Close()
	require.True(t, s.Next(), "the first chunk: %v", s.Err())
	first := s.Chunk()
	cancel()
	assert.False(t, s.Next())
	assert.Equal(t, errcodes.Canceled, errcodes.Of(s.Err()), "%v", s.Err())
	select {
	case <-released:
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the connection close")
	}
	return first
}

// CheckInvalid asserts that err is a final ERR_INVALID_PARAM from provider
// whose message holds want, as an adapter's Validate must return, and
// returns it.
func CheckInvalid(t testing.TB, err error, provider, want string) *errcodes.Error {
	t.Helper()
	var e *errcodes.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, errcodes.InvalidParam, e.Code, "%v", err)
	assert.Equal(t, provider, e.Provider)
	assert.False(t, e.Retryable, "a refused request is never retried")
	assert.Contains(t, e.Message, want)
	return e
}

// CountingServer starts an httptest server that answers every request
// with the JSON {"ok":1} and counts the requests; it is closed when the
// test ends.
func CountingServer(t testing.TB) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	hits := new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":1}`))
	}))
	t.Cleanup(srv.Close)
	return srv, hits
}
