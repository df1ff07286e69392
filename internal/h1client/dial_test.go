package h1client

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gatedDialer dials for real, holding each dial whose number (from 1) is
// in hold until its gate opens or its context ends, and counts dials
// in progress and their most.
type gatedDialer struct {
	mu         sync.Mutex
	n, now, hi int
	gates      map[int]chan struct{}
}

func (d *gatedDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.n++
	d.now++
	d.hi = max(d.hi, d.now)
	gate := d.gates[d.n]
	d.mu.Unlock()
	defer func() { d.mu.Lock(); d.now--; d.mu.Unlock() }()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	} else {
		time.Sleep(2 * time.Millisecond) // long enough for others to queue
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

func (d *gatedDialer) counts() (n, hi int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n, d.hi
}

// TestDialsAreBounded: requests that find no idle connection dial at
// most MaxDialsPerHost at a time, and all of them are carried.
func TestDialsAreBounded(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	d := &gatedDialer{}
	tr, _, c := newTransport(t)
	tr.DialContext, tr.MaxDialsPerHost = d.dial, 2
	var wg sync.WaitGroup
	for range 24 {
		wg.Go(func() {
			code, body := get(t, c, http.MethodGet, s.URL, nil)
			assert.Equal(t, http.StatusOK, code)
			assert.Equal(t, "ok", body)
		})
	}
	wg.Wait()
	n, hi := d.counts()
	assert.LessOrEqual(t, hi, 2, "dials in progress at once")
	assert.GreaterOrEqual(t, n, 1)
	assert.Equal(t, int64(n), s.conns.Load())
}

// TestWaiterTakesAReleasedConnection: a request waiting for a dial takes
// the connection another request releases first, as a reused one.
func TestWaiterTakesAReleasedConnection(t *testing.T) {
	release := make(chan struct{})
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			<-release
		}
		_, _ = io.WriteString(w, r.URL.Path)
	})
	d := &gatedDialer{gates: map[int]chan struct{}{2: make(chan struct{})}} // dial 2 never ends by itself
	tr, _, c := newTransport(t)
	tr.DialContext, tr.MaxDialsPerHost = d.dial, 1

	first := make(chan string)
	go func() { _, body := get(t, c, http.MethodGet, s.URL+"/hold", nil); first <- body }()
	require.Eventually(t, func() bool { n, _ := d.counts(); return n == 1 && s.conns.Load() == 1 }, 5*time.Second, time.Millisecond)
	time.Sleep(10 * time.Millisecond) // the first request is at the server, its dial done

	dialerCtx, cancelDialer := context.WithCancel(context.Background())
	dialerDone := make(chan error, 1)
	go func() { // takes the dial slot, and dial 2 holds it
		req, _ := http.NewRequestWithContext(dialerCtx, http.MethodGet, s.URL+"/dialer", nil)
		_, err := c.Do(req)
		dialerDone <- err
	}()
	require.Eventually(t, func() bool { n, _ := d.counts(); return n == 2 }, 5*time.Second, time.Millisecond)

	var reused atomic.Bool
	waiter := make(chan string)
	go func() {
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused.Store(i.Reused) }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, s.URL+"/waiter", nil)
		resp, err := c.Do(req)
		if !assert.NoError(t, err) {
			waiter <- ""
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		waiter <- string(b)
	}()
	time.Sleep(10 * time.Millisecond) // the waiter queues behind dial 2
	close(release)
	assert.Equal(t, "/hold", <-first)
	select {
	case body := <-waiter:
		assert.Equal(t, "/waiter", body)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting request never took the released connection")
	}
	assert.True(t, reused.Load(), "the waiter's connection was not reported reused")
	n, _ := d.counts()
	assert.Equal(t, 2, n, "dials")
	cancelDialer()
	require.Error(t, <-dialerDone)
}

// TestWaiterCancel: a waiting request whose context ends returns its
// error at once, and the dial it waited on still serves the next one.
func TestWaiterCancel(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	gate := make(chan struct{})
	d := &gatedDialer{gates: map[int]chan struct{}{1: gate}}
	tr, _, c := newTransport(t)
	tr.DialContext, tr.MaxDialsPerHost = d.dial, 1

	first := make(chan string)
	go func() { _, body := get(t, c, http.MethodGet, s.URL, nil); first <- body }()
	require.Eventually(t, func() bool { n, _ := d.counts(); return n == 1 }, 5*time.Second, time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	start := time.Now()
	_, err := c.Do(req)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 2*time.Second)

	close(gate)
	assert.Equal(t, "ok", <-first)
	for range 3 {
		_, body := get(t, c, http.MethodGet, s.URL, nil)
		assert.Equal(t, "ok", body)
	}
	tr.mu.Lock()
	for _, h := range tr.hosts {
		assert.Zero(t, h.dialing, "dials counted as in progress")
		assert.Empty(t, h.waiters)
	}
	tr.mu.Unlock()
}

// TestIdleBeforeWaiting: with the dials at the bound, a connection put
// back is taken at once, not waited past.
func TestIdleBeforeWaiting(t *testing.T) {
	tr := &Transport{Fallback: http.DefaultTransport, MaxDialsPerHost: 1}
	h := &host{addr: "x:80", direct: true, dialing: 1} // a slow dial in progress
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := &conn{nc: a, br: bufio.NewReader(a), bw: bufio.NewWriter(a), h: h, used: true}
	tr.put(c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, _, err := tr.getConn(ctx, h)
	require.NoError(t, err)
	assert.Same(t, c, got)
	assert.Empty(t, h.waiters)
}
