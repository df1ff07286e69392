package impair

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Link is the impairment of one direction of a connection.
type Link struct {
	// Delay is the one-way delay added to every byte.
	Delay time.Duration
	// Jitter varies the delay of each segment uniformly within ±Jitter
	// (never below zero). Bytes stay in order, as on a TCP connection: a
	// byte is never delivered before one written earlier.
	Jitter time.Duration
	// Loss is the probability (0 to 1) that a segment of SegmentSize bytes
	// is lost. A connection is a reliable stream, so a loss is a delay, not
	// missing bytes: the lost segment, and every byte behind it, arrive
	// Profile.RetransmitDelay later, as after a retransmission timeout;
	// segments lost within that delay of one another cost it once (TCP
	// recovers one window's losses together).
	Loss float64
	// Rate is the link's bandwidth in bits per second; 0 is unlimited.
	// Segments queue behind one another at that rate before the delay: a
	// large write's first segment arrives before its last.
	Rate int64
}

// IsZero reports whether the link adds nothing.
func (l Link) IsZero() bool { return l == Link{} }

// Profile is the impairment of a connection: one Link per direction, and
// the seed of its random draws.
type Profile struct {
	// Up is the direction client → server (what the client writes); Down
	// is server → client (what it reads).
	Up, Down Link
	// RetransmitDelay is what a lost segment costs (default
	// DefaultRetransmitDelay).
	RetransmitDelay time.Duration
	// Seed seeds the draws of jitter and loss. A draw is tied to its
	// connection (a Dialer's n-th connection is n) and its direction, and
	// to a position in the byte stream: a segment's, for loss, so a run
	// with the same connections in the same order loses the same
	// segments, however the bytes were split into writes and reads; a
	// segment's first byte's, for jitter, which depends on where writes
	// (downstream: the underlying connection's reads) start.
	Seed uint64
}

// SegmentSize is the most bytes of a segment, the unit a Link's delay,
// jitter, loss and rate apply to; segments are cut at multiples of it in
// the byte stream, and where a write starts. It is a TCP segment's payload
// on an Ethernet path (1500-byte MTU, IPv4 and TCP headers with
// timestamps).
const SegmentSize = 1448

// DefaultRetransmitDelay is the cost of a lost segment by default: Linux's
// minimum TCP retransmission timeout.
const DefaultRetransmitDelay = 200 * time.Millisecond

// IsZero reports whether the profile impairs nothing.
func (p Profile) IsZero() bool { return p.Up.IsZero() && p.Down.IsZero() }

// rto is the retransmission delay in effect.
func (p Profile) rto() time.Duration {
	if p.RetransmitDelay > 0 {
		return p.RetransmitDelay
	}
	return DefaultRetransmitDelay
}

// Validate reports the first value out of range.
func (p Profile) Validate() error {
	for _, d := range []struct {
		name string
		l    Link
	}{{"up", p.Up}, {"down", p.Down}} {
		l := d.l
		switch {
		case l.Delay < 0:
			return fmt.Errorf("impair: %s delay %v is negative", d.name, l.Delay)
		case l.Jitter < 0:
			return fmt.Errorf("impair: %s jitter %v is negative", d.name, l.Jitter)
		case math.IsNaN(l.Loss) || l.Loss < 0 || l.Loss > 1:
			return fmt.Errorf("impair: %s loss %v is not between 0 and 1 (0%% to 100%%)", d.name, l.Loss)
		case l.Rate < 0:
			return fmt.Errorf("impair: %s rate %d bit/s is negative", d.name, l.Rate)
		}
	}
	if p.RetransmitDelay < 0 {
		return fmt.Errorf("impair: retransmit delay %v is negative", p.RetransmitDelay)
	}
	return nil
}

// Parse reads a profile from its text form: settings separated by commas
// or spaces, each key=value.
//
//	delay=20ms       one-way delay, in each direction (a round trip gains 40 ms)
//	jitter=5ms       ± uniform variation of the delay
//	loss=0.5%        segment loss probability (also 0.005)
//	rate=100mbit     bandwidth: bit, kbit, mbit or gbit per second (1000-based)
//	rto=200ms        what a lost segment costs (RetransmitDelay; positive)
//	seed=7           the seed of the draws
//
// delay, jitter, loss and rate apply to both directions; prefixed with
// "up." or "down." they set one only, and win over the unprefixed form
// whatever their order ("delay=10ms,down.delay=30ms"). An empty spec is the
// zero Profile.
func Parse(spec string) (Profile, error) {
	var p Profile
	var both, up, down [4]*string // delay, jitter, loss, rate
	fields := strings.FieldsFunc(spec, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok || v == "" {
			return Profile{}, fmt.Errorf("impair: %q is not key=value", f)
		}
		name := k
		k = strings.ToLower(k)
		switch k {
		case "rto":
			d, err := parseDuration(k, v)
			if err != nil {
				return Profile{}, err
			}
			if d == 0 {
				// The field's 0 stands for the default, which the text
				// would not say: leaving rto out says it.
				return Profile{}, fmt.Errorf("impair: rto %v is not positive (leave it out for the default, %v)", d, DefaultRetransmitDelay)
			}
			p.RetransmitDelay = d
			continue
		case "seed":
			s, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return Profile{}, fmt.Errorf("impair: seed %q is not a non-negative integer", v)
			}
			p.Seed = s
			continue
		}
		set := &both
		switch {
		case strings.HasPrefix(k, "up."):
			set, k = &up, k[len("up."):]
		case strings.HasPrefix(k, "down."):
			set, k = &down, k[len("down."):]
		}
		i := slices.Index(linkKeys[:], k)
		if i < 0 {
			return Profile{}, fmt.Errorf("impair: unknown setting %q (want delay, jitter, loss or rate, each maybe prefixed up. or down., rto or seed)", name)
		}
		set[i] = &v
	}
	for i, k := range linkKeys {
		for _, s := range []struct {
			l   *Link
			val *string
		}{{&p.Up, both[i]}, {&p.Down, both[i]}, {&p.Up, up[i]}, {&p.Down, down[i]}} {
			if s.val == nil {
				continue
			}
			if err := setLink(s.l, k, *s.val); err != nil {
				return Profile{}, err
			}
		}
	}
	return p, p.Validate()
}

// linkKeys are a Link's settings in Parse's text form.
var linkKeys = [4]string{"delay", "jitter", "loss", "rate"}

func setLink(l *Link, k, v string) error {
	var err error
	switch k {
	case "delay":
		l.Delay, err = parseDuration(k, v)
	case "jitter":
		l.Jitter, err = parseDuration(k, v)
	case "loss":
		l.Loss, err = parseLoss(v)
	case "rate":
		l.Rate, err = parseRate(v)
	}
	return err
}

func parseDuration(k, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("impair: %s %q is not a duration (like 20ms)", k, v)
	}
	if d < 0 {
		return 0, fmt.Errorf("impair: %s %v is negative", k, d)
	}
	return d, nil
}

func parseLoss(v string) (float64, error) {
	s, pct := strings.CutSuffix(v, "%")
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("impair: loss %q is not a number (like 0.5%% or 0.005)", v)
	}
	if pct {
		f /= 100
	}
	if f < 0 || f > 1 {
		return 0, fmt.Errorf("impair: loss %q is not between 0%% and 100%%", v)
	}
	return f, nil
}

// rateUnits are the bandwidth units Parse knows, longest suffix first.
var rateUnits = []struct {
	suffix string
	mult   float64
}{{"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1}}

func parseRate(v string) (int64, error) {
	lv := strings.ToLower(v)
	for _, u := range rateUnits {
		num, ok := strings.CutSuffix(lv, u.suffix)
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(num, 64)
		// float64(math.MaxInt64) is 2^63, one past the range: >= keeps
		// the conversion below defined.
		if err != nil || math.IsNaN(f) || f < 0 || f*u.mult >= math.MaxInt64 {
			break
		}
		if r := int64(f * u.mult); r > 0 || (f == 0 && zeroLiteral(num)) {
			return r, nil
		}
		return 0, fmt.Errorf("impair: rate %q is below 1 bit/s", v)
	}
	return 0, fmt.Errorf("impair: rate %q is not a bandwidth (like 100mbit; units bit, kbit, mbit, gbit)", v)
}

// zeroLiteral reports whether a number's digits before its exponent are
// all zeros: a number that only reads as 0 by underflow (1e-400) is not.
func zeroLiteral(num string) bool {
	m := strings.TrimLeft(num, "+-0._")
	return m == "" || m[0] == 'e'
}

// String returns the profile in Parse's form, both directions spelled out
// when they differ: Parse(p.String()) == p.
func (p Profile) String() string {
	var parts []string
	if p.Up == p.Down {
		parts = appendLink(parts, "", p.Up)
	} else {
		parts = appendLink(parts, "up.", p.Up)
		parts = appendLink(parts, "down.", p.Down)
	}
	if p.RetransmitDelay != 0 {
		parts = append(parts, "rto="+p.RetransmitDelay.String())
	}
	if p.Seed != 0 {
		parts = append(parts, "seed="+strconv.FormatUint(p.Seed, 10))
	}
	return strings.Join(parts, ",")
}

func appendLink(parts []string, prefix string, l Link) []string {
	if l.Delay != 0 {
		parts = append(parts, prefix+"delay="+l.Delay.String())
	}
	if l.Jitter != 0 {
		parts = append(parts, prefix+"jitter="+l.Jitter.String())
	}
	if l.Loss != 0 {
		parts = append(parts, prefix+"loss="+formatLoss(l.Loss))
	}
	if l.Rate != 0 {
		parts = append(parts, prefix+"rate="+formatRate(l.Rate))
	}
	return parts
}

// formatLoss writes a loss as a percentage when that reads back exactly,
// else as a fraction.
func formatLoss(f float64) string {
	pct := strconv.FormatFloat(f*100, 'g', -1, 64) + "%"
	if back, err := parseLoss(pct); err == nil && back == f {
		return pct
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// formatRate writes a rate in the largest unit that divides it.
func formatRate(r int64) string {
	for _, u := range rateUnits {
		if m := int64(u.mult); r%m == 0 {
			return strconv.FormatInt(r/m, 10) + u.suffix
		}
	}
	return strconv.FormatInt(r, 10) + "bit"
}
