package emulator

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
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

// TestRecordsBoundedByGaps: besides MaxRecords, the kept records hold at
// most a fixed number of inter-token gaps in all; the oldest go first, and
// the newest is kept whatever its size.
func TestRecordsBoundedByGaps(t *testing.T) {
	s, err := New(Options{MaxRecords: 100})
	require.NoError(t, err)
	s.maxGaps = 25
	for i := 1; i <= 5; i++ {
		s.store(Record{ID: "r" + strconv.Itoa(i), GapsMs: make([]float64, 10)})
	}
	var ids []string
	for _, r := range s.Records() {
		ids = append(ids, r.ID)
	}
	assert.Equal(t, []string{"r4", "r5"}, ids)
	_, ok := s.Record("r3")
	assert.False(t, ok)
	r, ok := s.Record("r5")
	require.True(t, ok)
	assert.Len(t, r.GapsMs, 10)
	s.store(Record{ID: "big", GapsMs: make([]float64, 40)})
	recs := s.Records()
	require.Len(t, recs, 1)
	assert.Equal(t, "big", recs[0].ID)
	for i := range 1000 {
		s.store(Record{ID: "n" + strconv.Itoa(i), GapsMs: make([]float64, 1)})
	}
	assert.Len(t, s.Records(), 25)
	assert.LessOrEqual(t, cap(s.records), 4*100, "dropped records do not pile up")
	r, ok = s.Record("n999")
	require.True(t, ok)
	assert.Equal(t, "n999", r.ID)
}

// TestRecordsEmptyIsList: with no record kept, GET /emulator/requests
// answers an empty JSON list, not null.
func TestRecordsEmptyIsList(t *testing.T) {
	s := start(t, Options{})
	resp, err := http.Get(s.URL() + "/emulator/requests")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "[]", strings.TrimSpace(string(b)))
}
