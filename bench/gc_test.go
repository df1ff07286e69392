package bench

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGCPercent(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		name                 string
		live, scanned, floor uint64
		want                 int
	}{
		{"small live heap: the goal is the floor", 4 * mb, 5 * mb, 256 * mb, 5040},
		{"past the floor", 300 * mb, 301 * mb, 256 * mb, benchGOGC},
		{"near the floor: never under benchGOGC", 100 * mb, 100 * mb, 256 * mb, benchGOGC},
		{"no live heap", 0, 0, 256 * mb, gcPercentMax},
		{"scanned under live (a partial read)", 4 * mb, 0, 256 * mb, 6300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, gcPercent(tc.live, tc.scanned, tc.floor))
		})
	}
}

// gogc reads the collector's percentage.
func gogc(t *testing.T) int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	require.Equal(t, metrics.KindUint64, s[0].Value.Kind())
	return int(s[0].Value.Uint64())
}

func TestGCFloorFor(t *testing.T) {
	const mb = 1 << 20
	assert.Equal(t, uint64(120*mb), gcFloorFor(60*mb, time.Second, 128*mb), "60 MB/s: 2 s of it")
	assert.Equal(t, uint64(128*mb), gcFloorFor(600*mb, time.Second, 128*mb), "at most most")
	assert.Equal(t, uint64(15*mb), gcFloorFor(75*mb, 10*time.Second, 128*mb), "7.5 MB/s")
	assert.Equal(t, uint64(128*mb), gcFloorFor(mb, 0, 128*mb), "no time")
}

// TestGCTunerRetunes: the tuner starts at benchGOGC (the allocation rate
// is unknown), raises the percentage after a collection that follows
// fast allocation with a small live heap, and sets benchGOGC again after
// one that finds a live heap past its floor.
func TestGCTunerRetunes(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	const most = 64 << 20
	runtime.GC() // the live heap now, not an earlier test's
	tu := newGCTuner(most)
	defer tu.stop()
	tu.start()
	assert.Equal(t, benchGOGC, gogc(t), "before a collection")

	var sink []byte
	deadline := time.Now().Add(10 * time.Second)
	for gogc(t) <= benchGOGC && time.Now().Before(deadline) {
		for range 64 {
			sink = make([]byte, 1<<20) // 64 MiB of garbage in a moment
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	assert.Greater(t, gogc(t), benchGOGC, "after fast allocation with a small live heap")
	runtime.KeepAlive(sink)

	live := make([]*[1 << 20]byte, 96) // 96 MiB, past the floor
	for i := range live {
		live[i] = new([1 << 20]byte)
	}
	for gogc(t) != benchGOGC && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	assert.Equal(t, benchGOGC, gogc(t), "after collections with 96 MiB live")
	runtime.KeepAlive(live)
}

func TestTuneGCLeavesTheUsersSetting(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(123))
	t.Setenv("GOGC", "123")
	stop := TuneGC()
	assert.Equal(t, 123, gogc(t))
	stop()
	assert.Equal(t, 123, gogc(t))
}

// TestTuneGCStops: TuneGC sets benchGOGC until a collection tells the
// allocation rate, and its stop restores the percentage before.
func TestTuneGCStops(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(77))
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	runtime.GC() // the live heap now, not an earlier test's
	stop := TuneGC()
	assert.Equal(t, benchGOGC, gogc(t))
	stop()
	assert.Equal(t, 77, gogc(t))
}

func TestMemoryLimit(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/meminfo is Linux's")
	}
	total := machineMemory()
	require.Positive(t, total)
	m := memoryLimit()
	assert.Positive(t, m)
	assert.LessOrEqual(t, m, total)
}
