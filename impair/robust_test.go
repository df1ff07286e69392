package impair_test

import (
	"io"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/impair"
)

// TestCloseEndsAWriteWaitingForRoom blocks a write behind a full queue,
// then ends it with CloseWrite or Close; synctest.Test fails if a
// goroutine is left behind.
func TestCloseEndsAWriteWaitingForRoom(t *testing.T) {
	for _, half := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			a, srv := net.Pipe()
			c := impair.Profile{Up: impair.Link{Delay: time.Hour}}.Conn(&halfPipe{Conn: a, closedAt: make(chan time.Time, 1)}, 0)
			defer func() { _ = c.Close(); _ = srv.Close() }()
			_, err := c.Write(make([]byte, 4<<20))
			require.NoError(t, err)
			type result struct {
				n   int
				err error
			}
			res := make(chan result, 1)
			go func() {
				n, err := c.Write(make([]byte, 10))
				res <- result{n, err}
			}()
			synctest.Wait()
			select {
			case r := <-res:
				t.Fatalf("the write did not wait for room: %d, %v", r.n, r.err)
			default:
			}
			if half {
				require.NoError(t, c.CloseWrite())
			} else {
				require.NoError(t, c.Close())
			}
			r := <-res
			assert.Zero(t, r.n)
			assert.ErrorIs(t, r.err, net.ErrClosed)
		})
	}
}

func TestZeroLengthWriteAndRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := impair.Profile{Up: impair.Link{Delay: 10 * time.Millisecond}, Down: impair.Link{Delay: 10 * time.Millisecond}}
		c, srv := pipe(t, p)
		t0 := time.Now()
		n, err := c.Write(nil)
		assert.Zero(t, n)
		assert.NoError(t, err)
		n, err = c.Read(nil)
		assert.Zero(t, n)
		assert.NoError(t, err)
		assert.Equal(t, t0, time.Now(), "neither waits")
		go func() { _, _ = c.Write([]byte("x")) }()
		b, at := readAt(t, srv, 1)
		assert.Equal(t, "x", string(b), "an empty write sends nothing")
		assert.Equal(t, 10*time.Millisecond, at.Sub(t0))
	})
}

// TestConcurrentConnectionsDrawAsAlone runs connections side by side: each
// draws what it draws alone.
func TestConcurrentConnectionsDrawAsAlone(t *testing.T) {
	p := impair.Profile{Up: impair.Link{Delay: 20 * time.Millisecond, Jitter: 15 * time.Millisecond, Loss: 0.2}, RetransmitDelay: 40 * time.Millisecond, Seed: 5}
	const conns, n = 8, 30
	got := make([][]time.Duration, conns)
	synctest.Test(t, func(t *testing.T) {
		var wg sync.WaitGroup
		for i := range conns {
			a, b := net.Pipe()
			c := p.Conn(a, uint64(i))
			wg.Go(func() {
				defer func() { _ = c.Close(); _ = b.Close() }()
				t0 := time.Now()
				arrived := make(chan []time.Duration, 1)
				go func() {
					var out []time.Duration
					buf := make([]byte, 1)
					for range n {
						if _, err := io.ReadFull(b, buf); err != nil {
							break
						}
						out = append(out, time.Since(t0))
					}
					arrived <- out
				}()
				for range n {
					if _, err := c.Write([]byte{1}); err != nil {
						break
					}
					time.Sleep(time.Millisecond)
				}
				got[i] = <-arrived
			})
		}
		wg.Wait()
	})
	for i := range conns {
		assert.Equal(t, arrivals(t, p, uint64(i), n), got[i], "connection %d", i)
	}
	assert.NotEqual(t, got[0], got[1])
}
