package bench

import (
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// Duration is a time.Duration that reads and writes as a Go duration
// string ("250ms", "10s") in JSON and YAML; a bare JSON number is read as
// milliseconds.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats d like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	s := string(b)
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		ms, ok := millis(v)
		if !ok {
			return errcodes.Errorf(errcodes.InvalidParam, "bench: bad duration %q (out of range)", s)
		}
		*d = ms
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return errcodes.Errorf(errcodes.InvalidParam, "bench: bad duration %q (want 250ms, 10s, 1m…)", s)
	}
	*d = Duration(v)
	return nil
}

// millis returns v milliseconds, and false when that is not a finite
// number within a Duration's range (about 292 years).
func millis(v float64) (Duration, bool) {
	ns := v * float64(time.Millisecond)
	if !(math.Abs(ns) < math.MaxInt64) {
		return 0, false
	}
	return Duration(ns), true
}

// UnmarshalJSON accepts a duration string or a number of milliseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		return d.UnmarshalText([]byte(s))
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return errcodes.Errorf(errcodes.InvalidParam, "bench: bad duration %s", b)
	}
	ms, ok := millis(v)
	if !ok {
		return errcodes.Errorf(errcodes.InvalidParam, "bench: bad duration %s (out of range)", b)
	}
	*d = ms
	return nil
}

// Metrics the ladder can watch, as latency.Metric spells them.
const (
	MetricTTFT = "ttft"
	MetricE2E  = "e2e"
)
