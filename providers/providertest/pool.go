package providertest

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
)

// PoolHarness tells RunPool how to build one HTTP adapter.
type PoolHarness struct {
	// NewAdapter returns an adapter that sends to the server at baseURL
	// through hc as its Options.HTTPClient; a nil hc leaves the option
	// unset (the adapter's own client). The adapter must be an io.Closer.
	NewAdapter func(t *testing.T, baseURL string, hc *http.Client) cloudreq.Adapter
	// Request returns an ActionInvoke request for that adapter; the test
	// server answers any request 200 with a few bytes.
	Request func() *cloudreq.CloudRequest
	// Core, when set, returns the HTTP core of an adapter NewAdapter
	// built, for the OwnTransport check.
	Core func(cloudreq.Adapter) *httpadapter.Core
}

// Concurrency of RunPool's reuse check.
const (
	// PoolWorkers is how many goroutines make calls at once.
	PoolWorkers = 64
	// PoolCalls is how many calls each goroutine makes, one after another.
	PoolCalls = 10
)

// How long RunPool waits for the server to see a connection close, and
// how often it looks.
const (
	waitFor   = 10 * time.Second
	pollEvery = 10 * time.Millisecond
)

// connServer is an httptest server that counts the connections it
// accepted and those that closed.
type connServer struct {
	*httptest.Server
	opened, closed atomic.Int64
}

func newConnServer(t *testing.T) *connServer {
	t.Helper()
	s := &connServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = io.WriteString(w, "ok")
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			s.opened.Add(1)
		case http.StateClosed, http.StateHijacked:
			s.closed.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// RunPool checks an HTTP adapter's connection handling:
//
//   - Reuse: built without an HTTPClient, PoolWorkers concurrent
//     goroutines making PoolCalls calls each open at most 2×PoolWorkers
//     connections (net/http's default transport, which keeps 2 idle
//     connections per host, opens several hundred).
//   - CloseOwn: the adapter's Close closes the idle connections of the
//     transport it built.
//   - CloseLeavesCallers: Close leaves the idle connections of a caller's
//     client alone, http.DefaultTransport's among them.
//   - OwnTransport (with Core): the adapter's own transport is the one
//     that sends, with httpadapter.NewTransport's pool and response header
//     timeout, which fails a server that never answers with a retryable
//     ERR_TIMEOUT; with a caller's client, that client sends.
func RunPool(t *testing.T, h PoolHarness) {
	t.Helper()
	t.Run("Reuse", func(t *testing.T) {
		srv := newConnServer(t)
		ad := h.NewAdapter(t, srv.URL, nil)
		c := poolClient(t, ad)
		cctx := ctx(t)
		var wg sync.WaitGroup
		var failed atomic.Int64
		for range PoolWorkers {
			wg.Go(func() {
				for range PoolCalls {
					if _, err := c.Invoke(cctx, h.Request()); err != nil {
						if failed.Add(1) == 1 {
							t.Errorf("invoke: %v", err)
						}
					}
				}
			})
		}
		wg.Wait()
		require.Zero(t, failed.Load(), "failed calls")
		require.NoError(t, c.Close())
		t.Logf("%d calls from %d goroutines opened %d connections", PoolWorkers*PoolCalls, PoolWorkers, srv.opened.Load())
		assert.LessOrEqual(t, srv.opened.Load(), int64(2*PoolWorkers),
			"%d calls from %d goroutines opened %d connections", PoolWorkers*PoolCalls, PoolWorkers, srv.opened.Load())
	})
	t.Run("CloseOwn", func(t *testing.T) {
		srv := newConnServer(t)
		ad := h.NewAdapter(t, srv.URL, nil)
		c := poolClient(t, ad)
		_, err := c.Invoke(ctx(t), h.Request())
		require.NoError(t, err)
		require.EqualValues(t, 1, srv.opened.Load())
		require.NoError(t, c.Close())
		assert.Eventually(t, func() bool { return srv.closed.Load() == 1 }, waitFor, pollEvery,
			"Close closes the idle connection of the adapter's own transport")
	})
	t.Run("CloseLeavesCallers", func(t *testing.T) {
		dt, ok := http.DefaultTransport.(*http.Transport)
		if !ok {
			t.Skip("http.DefaultTransport is not an *http.Transport")
		}
		t.Cleanup(dt.CloseIdleConnections)
		srv := newConnServer(t)
		// A caller's client on http.DefaultTransport, and an adapter with
		// its own: closing either adapter leaves the caller's idle
		// connection open.
		callers := h.NewAdapter(t, srv.URL, &http.Client{})
		own := h.NewAdapter(t, srv.URL, nil)
		c := poolClient(t, callers)
		_, err := c.Invoke(ctx(t), h.Request())
		require.NoError(t, err)
		require.EqualValues(t, 1, srv.opened.Load())
		require.NoError(t, own.(io.Closer).Close())
		require.NoError(t, callers.(io.Closer).Close())
		resp, err := http.Get(srv.URL)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
		assert.EqualValues(t, 1, srv.opened.Load(),
			"the idle connection of http.DefaultTransport was reused: the adapters' Close left it open")
	})
	if h.Core != nil {
		t.Run("OwnTransport", func(t *testing.T) { runOwnTransport(t, h) })
	}
}

// poolClient returns a client on ad with one attempt per call, whose
// Close closes ad.
func poolClient(t *testing.T, ad cloudreq.Adapter) *cloudreq.Client {
	t.Helper()
	_, ok := ad.(io.Closer)
	require.True(t, ok, "the adapter is an io.Closer")
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}},
		func(o *cloudreq.Options) { o.Retry.MaxAttempts = 1 })
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// runOwnTransport checks the transport the adapter builds when given no
// HTTPClient: the one that sends, with NewTransport's pool and header
// timeout; a server that never answers fails the call with a retryable
// ERR_TIMEOUT once that timeout passes (shortened here). A caller's
// client is the one that sends, and none is the adapter's own.
func runOwnTransport(t *testing.T, h PoolHarness) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	ad := h.NewAdapter(t, srv.URL, nil)
	core := h.Core(ad)
	own := core.OwnTransport()
	require.NotNil(t, own, "no HTTPClient: the adapter builds its transport")
	assert.Same(t, own, core.Client().Transport)
	assert.Equal(t, httpadapter.DefaultResponseHeaderTimeout, own.ResponseHeaderTimeout)
	assert.Equal(t, httpadapter.DefaultMaxIdleConnsPerHost, own.MaxIdleConnsPerHost)

	own.ResponseHeaderTimeout = 50 * time.Millisecond
	_, err := poolClient(t, ad).Invoke(ctx(t), h.Request())
	require.Error(t, err)
	assert.ErrorIs(t, err, errcodes.Timeout)
	assert.True(t, errcodes.From(err).Retryable)

	hc := &http.Client{}
	core = h.Core(h.NewAdapter(t, srv.URL, hc))
	assert.Nil(t, core.OwnTransport(), "a caller's client is not the adapter's")
	assert.Same(t, hc, core.Client())
}

// HTTPPool returns the PoolHarness of an adapter on the HTTP core
// (httpadapter.Core), OwnTransport check included: newAdapter builds one
// for a base URL and client (nil: none), which the test closes at its
// end; core returns its core; request returns an invoke request for it.
func HTTPPool[A interface {
	cloudreq.Adapter
	io.Closer
}](newAdapter func(baseURL string, hc *http.Client) (A, error), core func(A) *httpadapter.Core, request func() *cloudreq.CloudRequest) PoolHarness {
	return PoolHarness{
		NewAdapter: func(t *testing.T, baseURL string, hc *http.Client) cloudreq.Adapter {
			a, err := newAdapter(baseURL, hc)
			require.NoError(t, err)
			t.Cleanup(func() { _ = a.Close() })
			return a
		},
		Request: request,
		Core:    func(a cloudreq.Adapter) *httpadapter.Core { return core(a.(A)) },
	}
}
