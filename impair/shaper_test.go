package impair

import (
	"io"
	"math"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestArrivalSaturates(t *testing.T) {
	now := time.Unix(0, 0)
	s := newShaper(Link{Rate: 1}, DefaultRetransmitDelay, 1, 0)
	s.busy = now.Add(math.MaxInt64) // as after 2e9 bytes at 1 bit/s: 16e9 s, past time.Duration's range
	k, at := s.next(now, 2e9)
	assert.Equal(t, SegmentSize, k, "one segment at a time")
	assert.Equal(t, time.Duration(math.MaxInt64), at.Sub(now), "a huge wait stays in the future, capped")
}

// TestLossHoldsBackOnlyWhatFollows writes two segments at once, of which
// only the second is lost: the first arrives on time.
func TestLossHoldsBackOnlyWhatFollows(t *testing.T) {
	const loss = 0.5
	p := Profile{Up: Link{Delay: 5 * time.Millisecond, Loss: loss}, RetransmitDelay: 100 * time.Millisecond}
	for p.Seed = 1; ; p.Seed++ { // a seed that keeps segment 0 and loses segment 1
		s := newShaper(p.Up, p.rto(), p.Seed, 0)
		if s.draw(drawLoss, 0) >= loss && s.draw(drawLoss, 1) < loss {
			break
		}
	}
	synctest.Test(t, func(t *testing.T) {
		a, srv := net.Pipe()
		c := p.Conn(a, 0)
		defer func() { _ = c.Close(); _ = srv.Close() }()
		t0 := time.Now()
		_, err := c.Write(make([]byte, 2*SegmentSize))
		require.NoError(t, err)
		_, err = io.ReadFull(srv, make([]byte, SegmentSize))
		require.NoError(t, err)
		assert.Equal(t, 5*time.Millisecond, time.Since(t0), "the segment before the lost one")
		_, err = io.ReadFull(srv, make([]byte, SegmentSize))
		require.NoError(t, err)
		assert.Equal(t, 105*time.Millisecond, time.Since(t0), "the lost one, a retransmission delay late")
	})
}

// TestArrivalDoesNotWrapAround gives a link the longest delay there is:
// adding jitter or a retransmission delay to it must not wrap around to
// an arrival in the past.
func TestArrivalDoesNotWrapAround(t *testing.T) {
	now := time.Now()
	for _, l := range []Link{
		{Delay: math.MaxInt64, Loss: 1},
		{Delay: math.MaxInt64, Jitter: time.Hour},
		{Delay: math.MaxInt64 - time.Second, Jitter: time.Hour, Loss: 1},
	} {
		for seed := range uint64(20) {
			s := newShaper(l, time.Hour, seed, 0)
			_, at := s.next(now, 1)
			if !assert.True(t, at.Sub(now) >= time.Duration(math.MaxInt64/2), "%+v seed %d: arrives %v after now", l, seed, at.Sub(now)) {
				break
			}
		}
	}
}

// TestEachConnectAttemptTakesTheHandshake calls the handshake twice, as
// a dial that tries a second address does: each attempt waits a round
// trip.
func TestEachConnectAttemptTakesTheHandshake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := Profile{Up: Link{Delay: 10 * time.Millisecond}, Down: Link{Delay: 15 * time.Millisecond}}
		c := p.newConn(nil, 0)
		t0 := time.Now()
		require.NoError(t, c.handshake(t.Context()))
		assert.Equal(t, 25*time.Millisecond, time.Since(t0), "the first attempt")
		time.Sleep(time.Second) // the attempt fails after a while
		t1 := time.Now()
		require.NoError(t, c.handshake(t.Context()))
		assert.Equal(t, 25*time.Millisecond, time.Since(t1), "the second attempt")
	})
}
