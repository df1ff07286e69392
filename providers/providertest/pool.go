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
