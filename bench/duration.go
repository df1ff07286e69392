package bench

import (
	"encoding/json"
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
		*d = Duration(v * float64(time.Millisecond))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return errcodes.Errorf(errcodes.InvalidParam, "bench: bad duration %q (want 250ms, 10s, 1m…)", s)
	}
	*d = Duration(v)
	return nil
}

// UnmarshalJSON accepts a duration string or a number of milliseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		return d.UnmarshalText([]byte(s))
	}
	var ms float64
	if err := json.Unmarshal(b, &ms); err != nil {
		return errcodes.Errorf(errcodes.InvalidParam, "bench: bad duration %s", b)
	}
	*d = Duration(ms * float64(time.Millisecond))
	return nil
}

// Metrics the ladder can watch, as latency.Metric spells them.
const (
	MetricTTFT = "ttft"
	MetricE2E  = "e2e"
)
