package latency

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// headerLog is a HeaderObserver that keeps what it saw.
type headerLog struct {
	mu   sync.Mutex
	keys []string
}

func (h *headerLog) WroteHeaderField(key string, _ []string) {
	h.mu.Lock()
	h.keys = append(h.keys, key)
	h.mu.Unlock()
}

func get(t *testing.T, ctx context.Context, hc *http.Client, url string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("{}"))
	require.NoError(t, err)
	req.Header.Set("X-Probe", "1")
	res, err := hc.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, res.Body)
	require.NoError(t, res.Body.Close())
}

// TestContextTimesHTTPRequests: the first request dials (its hooks are not
// reused: a dial may still report), the next ones reuse the connection and
// their hook sets go back to the pool; every attempt's phases are its own.
func TestContextTimesHTTPRequests(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	hc := srv.Client()
	defer hc.CloseIdleConnections()

	for i := 1; i <= 20; i++ {
		tr := NewAttemptTrace(i, 0)
		hdr := &headerLog{}
		tr.SetHeaderObserver(hdr)
		ctx := tr.Context(context.Background())
		assert.Same(t, tr, TraceFromContext(ctx))
		get(t, ctx, hc, srv.URL)
		hooks := tr.hooks
		require.NotNil(t, hooks)
		a := tr.Finish(200, "")
		assert.Nil(t, tr.hooks, "Finish detaches the hooks")
		assert.Nil(t, hooks.cur.Load())

		assert.Equal(t, i != 1, a.ConnReused, "attempt %d", i)
		assert.Equal(t, i != 1, hooks.ctx != nil && hooks.quiet(tr), "attempt %d: hooks reusable", i)
		if i == 1 {
			assert.False(t, a.ConnectStart.IsZero())
			assert.False(t, a.ConnectDone.Before(a.ConnectStart))
		} else {
			assert.True(t, a.ConnectStart.IsZero(), "attempt %d: a reused connection has no connect phase", i)
		}
		for name, at := range map[string]time.Time{"got conn": a.GotConn, "wrote": a.WroteRequest, "first byte": a.FirstByte} {
			assert.False(t, at.Before(a.Send), "attempt %d: %s before send", i, name)
			assert.False(t, a.End.Before(at), "attempt %d: %s after end", i, name)
		}
		assert.False(t, a.WroteRequest.Before(a.GotConn))
		assert.False(t, a.FirstByte.Before(a.WroteRequest))
		hdr.mu.Lock()
		assert.Contains(t, hdr.keys, "X-Probe")
		hdr.mu.Unlock()

		// A request made with the context after Finish is not timed.
		get(t, ctx, hc, srv.URL)
		assert.Equal(t, a, tr.Finish(200, ""), "attempt %d", i)
	}
}

// TestEventsAfterFinishAreIgnored: a callback that arrives once the
// attempt ended (a background dial, a late write) changes nothing.
func TestEventsAfterFinishAreIgnored(t *testing.T) {
	tr := NewAttemptTrace(1, 0)
	ctx := tr.Context(context.Background())
	ct := httptrace.ContextClientTrace(ctx)
	require.NotNil(t, ct)
	assert.Nil(t, ct.WroteHeaderField, "no header observer: the transport need not report header fields")
	ct.GotConn(httptrace.GotConnInfo{Reused: true, WasIdle: true})
	a := tr.Finish(200, "")
	ct.ConnectStart("tcp", "127.0.0.1:1")
	ct.WroteRequest(httptrace.WroteRequestInfo{})
	ct.GotFirstResponseByte()
	tr.FirstByte(time.Now())
	b := tr.Finish(200, "")
	assert.True(t, b.ConnectStart.IsZero())
	assert.True(t, b.WroteRequest.IsZero())
	assert.True(t, b.FirstByte.IsZero())
	assert.Equal(t, a.GotConn, b.GotConn)
	assert.Nil(t, httptrace.ContextClientTrace(ctx), "the context drops the hooks at Finish")
}

// TestDialAfterGotConnIsNotTheAttempts: a dial that reports after the
// attempt had its connection (one started for it, then beaten by an idle
// connection) is not the setup of the connection it used.
func TestDialAfterGotConnIsNotTheAttempts(t *testing.T) {
	tr := NewAttemptTrace(1, 0)
	ct := httptrace.ContextClientTrace(tr.Context(context.Background()))
	ct.GotConn(httptrace.GotConnInfo{Reused: true})
	ct.ConnectStart("tcp", "127.0.0.1:1")
	ct.ConnectDone("tcp", "127.0.0.1:1", nil)
	s := tr.hooks
	a := tr.Finish(200, "")
	assert.True(t, a.ConnectStart.IsZero())
	assert.True(t, a.ConnectDone.IsZero())
	assert.False(t, s.quiet(tr), "a dial reported: the hooks may be called again")
}

func TestHookSetQuiet(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		getConn, gotConn, dial  uint64
		wrote, firstByte, fresh bool
		want                    bool
	}{
		{name: "no request", want: true},
		{name: "one request on an idle connection", getConn: 1, gotConn: 1, wrote: true, firstByte: true, want: true},
		{name: "HTTP/2 request (no GetConn)", gotConn: 1, wrote: true, firstByte: true, want: true},
		{name: "dialed connection", getConn: 1, gotConn: 1, wrote: true, firstByte: true, fresh: true},
		{name: "dial reported", getConn: 1, gotConn: 1, wrote: true, firstByte: true, dial: 1},
		{name: "write still running", getConn: 1, gotConn: 1, firstByte: true},
		{name: "no answer", getConn: 1, gotConn: 1, wrote: true},
		{name: "waiting for a connection", getConn: 1},
		{name: "two requests", getConn: 2, gotConn: 2, wrote: true, firstByte: true},
		{name: "transport retry", getConn: 2, gotConn: 1, wrote: true, firstByte: true},
		{name: "many requests", getConn: 300, gotConn: 300, wrote: true, firstByte: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newHookSet(true)
			tr := NewAttemptTrace(1, 0)
			for ev, n := range map[uint64]uint64{evGetConn: tc.getConn, evGotConn: tc.gotConn, evDial: tc.dial} {
				for range n {
					s.events.Add(ev)
				}
			}
			if tc.fresh {
				s.events.Add(evFresh)
			}
			if tc.wrote {
				tr.WroteRequest(time.Now())
			}
			if tc.firstByte {
				tr.FirstByte(time.Now())
			}
			assert.Equal(t, tc.want, s.quiet(tr))
		})
	}
}

func TestStampEncoding(t *testing.T) {
	for _, d := range []time.Duration{0, 1, -1, -2, time.Second, -time.Hour, 1<<62 - 1, -(1 << 62)} {
		v := encode(d)
		assert.NotEqual(t, int64(unset), v, "%v", d)
		assert.Equal(t, d, decode(v), "%v", d)
	}
}

// TestLateWriteReport: a transport that reports the request written after
// the response began (HTTP/2's and gRPC's writers may) had written it by the
// first byte, and the attempt says so; an earlier report is kept.
func TestLateWriteReport(t *testing.T) {
	for _, tc := range []struct {
		name              string
		wrote, firstByte  time.Duration
		wantWrote, wantFB time.Duration
	}{
		{"in order", 2 * time.Millisecond, 5 * time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond},
		{"reported late", 7 * time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewAttemptTrace(1, 0)
			send := tr.Send()
			tr.GotConn(send.Add(time.Millisecond), true)
			tr.FirstByte(send.Add(tc.firstByte))
			tr.WroteRequest(send.Add(tc.wrote))
			a := tr.Finish(200, "")
			assert.Equal(t, tc.wantWrote, a.WroteRequest.Sub(send))
			assert.Equal(t, tc.wantFB, a.FirstByte.Sub(send))
		})
	}
}

// TestContextComposesWithACallersTrace: a caller's own ClientTrace still
// sees its events, and the attempt is timed as well.
func TestContextComposesWithACallersTrace(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	hc := srv.Client()
	defer hc.CloseIdleConnections()
	var theirs int
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotFirstResponseByte: func() { theirs++ },
	})
	tr := NewAttemptTrace(1, 0)
	get(t, tr.Context(ctx), hc, srv.URL)
	a := tr.Finish(200, "")
	assert.Equal(t, 1, theirs)
	assert.False(t, a.FirstByte.IsZero())
	assert.False(t, a.GotConn.IsZero())
}

// TestContextUnderConnectionChurn times concurrent requests while the
// server closes some connections and the pool keeps few, so that requests
// dial, wait for connections handed over by others and reuse idle ones,
// with hook sets going back to the pool and out again all along. Every
// attempt's stamps must be its own: within its send and end, in order, and
// no connection setup on a reused connection.
func TestContextUnderConnectionChurn(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if n.Add(1)%5 == 0 {
			w.Header().Set("Connection", "close")
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 2
	hc := &http.Client{Transport: tr}
	defer tr.CloseIdleConnections()

	const workers, each = 8, 100
	var dialed, reused, pooled atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan string, workers*each)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				at := NewAttemptTrace(1, 0)
				req, _ := http.NewRequestWithContext(at.Context(context.Background()), http.MethodPost, srv.URL, strings.NewReader("{}"))
				res, err := hc.Do(req)
				if err != nil {
					errs <- err.Error()
					at.Finish(0, "ERR")
					continue
				}
				_, _ = io.Copy(io.Discard, res.Body)
				_ = res.Body.Close()
				if s := at.hooks; s.quiet(at) {
					pooled.Add(1)
				}
				a := at.Finish(200, "")
				if msg := checkAttempt(a); msg != "" {
					errs <- msg
				}
				if a.ConnReused {
					reused.Add(1)
				} else {
					dialed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	var all []string
	for e := range errs {
		all = append(all, e)
	}
	assert.Empty(t, all)
	// The churn was real: connections were dialed and reused, and hook
	// sets went back to the pool.
	t.Logf("dialed %d, reused %d, hook sets pooled %d", dialed.Load(), reused.Load(), pooled.Load())
	assert.Positive(t, dialed.Load())
	assert.Positive(t, reused.Load())
	assert.Positive(t, pooled.Load())
}

// checkAttempt returns what is wrong with a successful attempt's stamps.
func checkAttempt(a Attempt) string {
	stamps := map[string]time.Time{"dns start": a.DNSStart, "dns done": a.DNSDone, "connect start": a.ConnectStart,
		"connect done": a.ConnectDone, "got conn": a.GotConn, "wrote": a.WroteRequest, "first byte": a.FirstByte}
	for name, at := range stamps {
		if !at.IsZero() && (at.Before(a.Send) || at.After(a.End)) {
			return name + " outside the attempt"
		}
	}
	switch {
	case a.GotConn.IsZero() || a.WroteRequest.IsZero() || a.FirstByte.IsZero():
		return "a phase is missing"
	case a.WroteRequest.Before(a.GotConn) || a.FirstByte.Before(a.WroteRequest):
		return "phases out of order"
	case a.ConnReused && !a.ConnectStart.IsZero():
		return "connection setup on a reused connection"
	case !a.ConnectStart.IsZero() && (a.ConnectDone.IsZero() || a.GotConn.Before(a.ConnectDone)):
		return "connection setup after the connection was had"
	}
	return ""
}

// TestContextOverHTTP2: the HTTP/2 transport reports its own events (no
// GetConn); attempts on one multiplexed connection are timed and their
// hook sets pooled.
func TestContextOverHTTP2(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	hc := srv.Client()
	defer hc.CloseIdleConnections()
	pooled := 0
	for i := 1; i <= 10; i++ {
		at := NewAttemptTrace(i, 0)
		req, err := http.NewRequestWithContext(at.Context(context.Background()), http.MethodPost, srv.URL, strings.NewReader("{}"))
		require.NoError(t, err)
		res, err := hc.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(res.Body)
		require.NoError(t, res.Body.Close())
		require.Equal(t, "HTTP/2.0", string(body))
		if at.hooks.quiet(at) {
			pooled++
		}
		a := at.Finish(200, "")
		assert.Empty(t, checkAttempt(a), "attempt %d", i)
		if i == 1 {
			assert.False(t, a.TLSStart.IsZero(), "the first attempt shakes hands")
			assert.False(t, a.TLSDone.Before(a.TLSStart))
		} else {
			assert.True(t, a.ConnReused, "attempt %d", i)
		}
	}
	// Attempts on the established connection go back to the pool, unless
	// HTTP/2's writer had not yet reported the request written.
	assert.Positive(t, pooled)
}
