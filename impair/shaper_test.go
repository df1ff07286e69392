package impair

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestArrivalSaturates(t *testing.T) {
	now := time.Unix(0, 0)
	s := newShaper(Link{Rate: 1}, DefaultRetransmitDelay, 1, 0)
	at := s.arrival(now, 2e9) // 16e9 s at 1 bit/s: past time.Duration's range
	assert.True(t, at.After(now), "a huge wait stays in the future: %v", at.Sub(now))
	assert.InDelta(t, float64(maxWait), float64(at.Sub(now)), float64(time.Microsecond), "capped")
}
