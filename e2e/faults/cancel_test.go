package faults

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
)

// runBackends runs f for every backend: HTTP backends inside a
// testing/synctest bubble over an in-memory network, where time is exact
// and a leaked goroutine fails the test, and gRPC backends on loopback in
// real time with goleak checking after the test. unit is the time step f
// should scale its delays by (1 s in a bubble, 100 ms in real time).
func runBackends(t *testing.T, f func(t *testing.T, b backend, unit time.Duration, opts ...func(*rigOption))) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			if b.grpc {
				noLeaks(t)
				f(t, b, 100*time.Millisecond)
				return
			}
			synctest.Test(t, func(t *testing.T) { f(t, b, time.Second, inMemory()) })
		})
	}
}

// noLeaks fails t if goroutines started during the test outlive it (its
// cleanups included).
func noLeaks(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

// attemptCounter is a cloudreq.Observer that counts attempts client-side,
// including those that never reached a server.
type attemptCounter struct{ n atomic.Int32 }

func (c *attemptCounter) StartCall(ctx context.Context, _ *cloudreq.CloudRequest, _ bool) (context.Context, cloudreq.CallObserver) {
	return ctx, c
}
func (c *attemptCounter) EndAttempt(cloudreq.AttemptInfo) { c.n.Add(1) }
func (c *attemptCounter) EndCall(*cloudreq.CloudResponse, *latency.Timeline, *errcodes.Error) {
}

// within runs f and fails the test if it has not returned after limit: a
// hang detector, not a performance bound.
func within(t *testing.T, limit time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("still blocked after %v", limit)
	}
}

// TestCancelDuringBackoff: canceling while the client waits out a
// server's Retry-After (or RetryInfo) ends the call at once with
// ERR_CANCELED, and no further attempt is made afterwards.
func TestCancelDuringBackoff(t *testing.T) {
	runBackends(t, func(t *testing.T, b backend, unit time.Duration, opts ...func(*rigOption)) {
		a := answer{status: 503, header: hdr("Retry-After", "10")}
		if b.grpc {
			a = answer{status: 429, retryInfo: 10 * time.Second}
		}
		r := newRig(t, b, []answer{a, ok(0)}, opts...)
		for _, stream := range []bool{false, true} {
			r.rec.setAnswers(a, ok(0))
			ctx, cancel := context.WithCancel(context.Background())
			start := time.Now()
			timer := time.AfterFunc(2*unit, cancel)
			var err error
			within(t, time.Minute, func() {
				if stream {
					_, _, err = r.stream(ctx)
				} else {
					_, err = r.invoke(ctx)
				}
			})
			elapsed := time.Since(start)
			timer.Stop()
			cancel()
			assert.Equal(t, errcodes.Canceled, errcodes.Of(err), "stream=%v: %v", stream, err)
			assert.GreaterOrEqual(t, elapsed, 2*unit)
			assert.Less(t, elapsed, 10*time.Second, "returned without waiting out the delay")
			time.Sleep(6 * unit)
			assert.Equal(t, 1, r.rec.count(), "stream=%v: no attempt after the cancel", stream)
		}
	})
}

// TestCancelDuringConnect: canceling while the connection is being set up
// (the server never accepts it, or never completes the handshake) returns
// ERR_CANCELED promptly after one attempt.
func TestCancelDuringConnect(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			if b.grpc {
				noLeaks(t)
				cancelDuringConnectGRPC(t, b)
				return
			}
			synctest.Test(t, func(t *testing.T) {
				l := newMemListener() // never accepts: every dial blocks
				defer l.Close()
				var dials atomic.Int32
				tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
					dials.Add(1)
					return l.dial(ctx, network, addr)
				}}
				defer tr.CloseIdleConnections()
				ad := b.newAdapter(t, "http://127.0.0.1:9", &http.Client{Transport: tr})
				ac := &attemptCounter{}
				c, err := cloudreq.New(cloudreq.Options{
					Adapters:    []cloudreq.Adapter{ad},
					CallOptions: cloudreq.CallOptions{Observers: []cloudreq.Observer{ac}},
				}, fastRetries)
				require.NoError(t, err)
				defer c.Close()
				for _, stream := range []bool{false, true} {
					ctx, cancel := context.WithCancel(context.Background())
					time.AfterFunc(3*time.Second, cancel)
					start := time.Now()
					if stream {
						_, err = c.Stream(ctx, b.request(true))
					} else {
						_, err = c.Invoke(ctx, b.request(false))
					}
					assert.Equal(t, errcodes.Canceled, errcodes.Of(err), "stream=%v: %v", stream, err)
					assert.Equal(t, 3*time.Second, time.Since(start), "returned when canceled")
					cancel()
				}
				time.Sleep(time.Minute)
				assert.Equal(t, int32(2), ac.n.Load(), "one attempt per call")
				assert.Equal(t, int32(2), dials.Load(), "one dial per call")
			})
		})
	}
}

// cancelDuringConnectGRPC points a gRPC backend at a TCP listener that
// accepts and then never speaks HTTP/2, so the RPC waits for the
// connection's handshake.
func cancelDuringConnectGRPC(t *testing.T, b backend) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		for _, c := range held {
			_ = c.Close()
		}
	})
	ad := newVertexAt(t, l.Addr().String())
	ac := &attemptCounter{}
	c, err := cloudreq.New(cloudreq.Options{
		Adapters:    []cloudreq.Adapter{ad},
		CallOptions: cloudreq.CallOptions{Observers: []cloudreq.Observer{ac}},
	}, fastRetries)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	for _, stream := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		start := time.Now()
		time.AfterFunc(200*time.Millisecond, cancel)
		within(t, 30*time.Second, func() {
			if stream {
				_, err = c.Stream(ctx, b.request(true))
			} else {
				_, err = c.Invoke(ctx, b.request(false))
			}
		})
		cancel()
		assert.Equal(t, errcodes.Canceled, errcodes.Of(err), "stream=%v: %v", stream, err)
		assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
	}
	assert.Equal(t, int32(2), ac.n.Load(), "one attempt per call")
}

// TestCancelDuringBlockedRead: a stream whose server stops sending after
// two chunks blocks in Next; canceling the context, or calling Close from
// another goroutine, unblocks it at once. The chunks read so far stay
// read, no attempt follows, and nothing is leaked.
func TestCancelDuringBlockedRead(t *testing.T) {
	runBackends(t, func(t *testing.T, b backend, unit time.Duration, opts ...func(*rigOption)) {
		r := newRig(t, b, []answer{{chunks: 2, end: endStall}}, opts...)
		for _, how := range []string{"cancel", "close"} {
			r.rec.setAnswers(answer{chunks: 2, end: endStall})
			ctx, cancel := context.WithCancel(context.Background())
			s, err := r.client.Stream(ctx, b.request(true))
			require.NoError(t, err)
			var texts []string
			for len(texts) < 2 && s.Next() {
				if ch := s.Chunk(); ch.Content {
					texts = append(texts, ch.Text)
				}
			}
			require.Equal(t, []string{"tok0 ", "tok1 "}, texts)
			start := time.Now()
			time.AfterFunc(2*unit, func() {
				if how == "cancel" {
					cancel()
				} else {
					_ = s.Close()
				}
			})
			var more bool
			within(t, time.Minute, func() { more = s.Next() })
			assert.False(t, more, "%s: Next after the unblock", how)
			assert.GreaterOrEqual(t, time.Since(start), 2*unit)
			if how == "cancel" {
				assert.Equal(t, errcodes.Canceled, errcodes.Of(s.Err()), "cancel: %v", s.Err())
			} else {
				assert.NoError(t, s.Err(), "Close is not an error")
			}
			resp := s.Response()
			require.NotNil(t, resp)
			assert.Equal(t, 2, resp.Usage.OutputTokens, "%s: the chunks read are counted", how)
			_ = s.Close()
			cancel()
			time.Sleep(6 * unit)
			assert.Equal(t, 1, r.rec.count(), "%s: no attempt after the unblock", how)
		}
	})
}
