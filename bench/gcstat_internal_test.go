package bench

import (
	"bytes"
	"encoding/csv"
	"math"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSampleGCCountsCollectionsAndPauses(t *testing.T) {
	before := sampleGC()
	require.NotNil(t, before.pauses, "the runtime publishes its pause histogram")
	runtime.GC()
	runtime.GC()
	cycles, pause := sampleGC().since(before)
	assert.GreaterOrEqual(t, cycles, int64(2))
	assert.Positive(t, pause, "two collections stop the world at least twice")
	assert.Less(t, pause, time.Second)
}

func hist(counts []uint64, buckets ...float64) *metrics.Float64Histogram {
	return &metrics.Float64Histogram{Counts: counts, Buckets: buckets}
}

func TestGCSinceLongestPause(t *testing.T) {
	b := []float64{0, 1e-4, 1e-3, 2e-3, math.Inf(1)}
	for _, tc := range []struct {
		name          string
		before, after gcSample
		cycles        int64
		pause         time.Duration
	}{
		{"the highest bucket that grew, its upper bound",
			gcSample{4, hist([]uint64{5, 1, 0, 0}, b...)}, gcSample{7, hist([]uint64{9, 1, 1, 0}, b...)}, 3, 2 * time.Millisecond},
		{"an older long pause is not the run's",
			gcSample{4, hist([]uint64{5, 1, 0, 2}, b...)}, gcSample{5, hist([]uint64{6, 1, 0, 2}, b...)}, 1, 100 * time.Microsecond},
		{"the unbounded bucket: its lower bound",
			gcSample{0, hist([]uint64{0, 0, 0, 0}, b...)}, gcSample{1, hist([]uint64{0, 0, 0, 1}, b...)}, 1, 2 * time.Millisecond},
		{"no collection",
			gcSample{3, hist([]uint64{5, 1, 0, 0}, b...)}, gcSample{3, hist([]uint64{5, 1, 0, 0}, b...)}, 0, 0},
		{"no histogram", gcSample{3, nil}, gcSample{5, nil}, 2, 0},
		{"histograms of different shapes",
			gcSample{0, hist([]uint64{0, 0}, 0, 1, 2)}, gcSample{1, hist([]uint64{0, 0, 0, 1}, b...)}, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cycles, pause := tc.after.since(tc.before)
			assert.Equal(t, tc.cycles, cycles)
			assert.Equal(t, tc.pause, pause)
		})
	}
}

func TestGCPauseWarning(t *testing.T) {
	p := &Plan{}
	open := &TargetResult{CPU: -1, MachineCPU: -1, OfferedRate: 100, GCs: 3, GCPauseMax: Duration(2340 * time.Microsecond)}
	open.warnings(p)
	require.Len(t, open.Warnings, 1)
	assert.Contains(t, open.Warnings[0], "garbage collector stopped it for up to 2.34ms (3 collections")
	assert.Contains(t, open.Warnings[0], "the sends due in a pause went out after it")
	assert.Empty(t, open.Saturated, "a pause is a note on the lag, not a saturated client")

	closed := &TargetResult{CPU: -1, MachineCPU: -1, GCs: 1, GCPauseMax: Duration(1100 * time.Microsecond)}
	closed.warnings(p)
	require.Len(t, closed.Warnings, 1)
	assert.Contains(t, closed.Warnings[0], "up to 1.1ms (1 collection during the run): a request timed across a pause includes it")

	short := &TargetResult{CPU: -1, MachineCPU: -1, GCs: 9, GCPauseMax: Duration(GCPauseWarn)}
	short.warnings(p)
	assert.Empty(t, short.Warnings)
}

func TestGCFiguresInCSVAndMerge(t *testing.T) {
	r := synthetic(t, "m1", 10, 0, 10, 0)
	r.Targets[0].GCs, r.Targets[0].GCPauseMax = 4, Duration(1500*time.Microsecond)
	var b bytes.Buffer
	require.NoError(t, r.Render(&b, FormatCSV, RenderOptions{}))
	rows, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
	require.NoError(t, err)
	got := map[string][]string{}
	for _, row := range rows {
		if row[0] == "load" && strings.HasPrefix(row[4], "client-gc") {
			got[row[4]] = row[5:]
		}
	}
	assert.Equal(t, []string{"count", "4", "collections"}, got["client-gc"])
	assert.Equal(t, []string{"max", "1.5", "ms"}, got["client-gc-pause"])

	m := emptyLike(r.Targets[0])
	require.NoError(t, m.merge(r.Targets[0]))
	o := *r.Targets[0]
	o.Recorder, o.GCs, o.GCPauseMax = nil, 2, Duration(3*time.Millisecond)
	require.NoError(t, m.merge(&o))
	assert.Equal(t, int64(6), m.GCs)
	assert.Equal(t, Duration(3*time.Millisecond), m.GCPauseMax)
}
