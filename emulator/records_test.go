package emulator

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRecordsRing checks that the kept records are the newest MaxRecords,
// oldest first, and that Record finds each by id, before and after the ring
// wraps.
func TestRecordsRing(t *testing.T) {
	s, err := New(Options{MaxRecords: 3})
	require.NoError(t, err)
	ids := func() (out []string) {
		for _, r := range s.Records() {
			out = append(out, r.ID)
		}
		return out
	}
	for i := 1; i <= 5; i++ {
		s.store(Record{ID: "r" + strconv.Itoa(i), Seq: uint64(i)})
		if i == 2 {
			assert.Equal(t, []string{"r1", "r2"}, ids())
		}
	}
	assert.Equal(t, []string{"r3", "r4", "r5"}, ids())
	for i := 3; i <= 5; i++ {
		r, ok := s.Record("r" + strconv.Itoa(i))
		require.True(t, ok, i)
		assert.Equal(t, uint64(i), r.Seq)
	}
	_, ok := s.Record("r2")
	assert.False(t, ok, "a dropped record is not found")
	s.ResetRecords()
	_, ok = s.Record("r5")
	assert.False(t, ok)
	assert.Empty(t, s.Records())
}

// TestSleepUntilDeadlineAndEnds checks that a wait ends at its deadline, not before,
// and that Close and the context end it early.
func TestSleepUntilDeadlineAndEnds(t *testing.T) {
	s, err := New(Options{})
	require.NoError(t, err)
	ctx := context.Background()
	for range 5 {
		at := time.Now().Add(3 * time.Millisecond)
		require.NoError(t, s.sleepUntil(ctx, at))
		assert.False(t, time.Now().Before(at), "woke before the deadline")
	}
	assert.Zero(t, s.spinners.Load(), "a spin slot was not given back")

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	assert.ErrorIs(t, s.sleepUntil(cctx, time.Now().Add(time.Millisecond)), context.Canceled, "canceled inside the spin window")
	assert.ErrorIs(t, s.sleepUntil(cctx, time.Now().Add(time.Hour)), context.Canceled, "canceled on the timer")

	require.NoError(t, s.Close())
	assert.ErrorIs(t, s.sleepUntil(ctx, time.Now().Add(time.Hour)), errClosed)
	assert.ErrorIs(t, s.sleepUntil(ctx, time.Now().Add(time.Millisecond)), errClosed)
	assert.Zero(t, s.spinners.Load())
}

func TestSpinSlots(t *testing.T) {
	assert.Equal(t, int32(max(1, runtime.GOMAXPROCS(0)/4)), spinSlots(0))
	assert.Equal(t, int32(0), spinSlots(-1))
	assert.Equal(t, int32(3), spinSlots(3))

	// With spinning off, waits still end at their deadlines, on timers.
	s, err := New(Options{SpinWaits: -1})
	require.NoError(t, err)
	for range 3 {
		at := time.Now().Add(3 * time.Millisecond)
		require.NoError(t, s.sleepUntil(context.Background(), at))
		assert.False(t, time.Now().Before(at), "woke before the deadline")
	}
}

// TestSpinOnlyUnderLightLoad: a wait spins while few are pending, and
// sleeps on the timer alone when more than spinLoad per slot are.
func TestSpinOnlyUnderLightLoad(t *testing.T) {
	s, err := New(Options{SpinWaits: 1})
	require.NoError(t, err)
	ctx := context.Background()
	// A lone wait spins, unless its timer woke past the deadline (a busy
	// machine): tries for up to 5 s.
	for end := time.Now().Add(5 * time.Second); s.spun.Load() == 0 && time.Now().Before(end); {
		require.NoError(t, s.sleepUntil(ctx, time.Now().Add(20*time.Millisecond)))
	}
	spun := s.spun.Load()
	require.NotZero(t, spun, "a lone wait spins")

	s.waiting.Add(spinLoad) // as if that many more were pending
	at := time.Now().Add(3 * time.Millisecond)
	require.NoError(t, s.sleepUntil(ctx, at))
	assert.False(t, time.Now().Before(at), "woke before the deadline")
	assert.Equal(t, spun, s.spun.Load(), "a wait under load does not spin")
	s.waiting.Add(-spinLoad)
	assert.Zero(t, s.waiting.Load())
}
