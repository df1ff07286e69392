package stats

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/latency/internal/quantile"
)

// Starts says which starts an SLA covers.
type Starts string

// SLA start scopes.
const (
	// StartsAll covers every request.
	StartsAll Starts = "all"
	// StartsWarm covers warm requests, suspected-cold ones included:
	// suspicion is not evidence, and dropping the slowest warm requests on
	// suspicion alone would flatter the warm SLA.
	StartsWarm Starts = "warm"
	// StartsCold covers cold requests (evidence 1–3 only).
	StartsCold Starts = "cold"
)

// covers reports whether a request with start kind k falls in the scope.
func (s Starts) covers(k latency.StartKind) bool {
	switch s {
	case StartsWarm:
		return k == latency.Warm || k == latency.SuspectedCold
	case StartsCold:
		return k == latency.Cold
	default:
		return true
	}
}

// SLA is one service-level objective: the Percentile of Metric over the
// requests it covers must not exceed Threshold.
//
// Its text form, used by flags and config files, is
//
//	<metric> p<percentile> <threshold> [starts=warm|cold|all] [class=NAME] [endpoint=NAME] [name=NAME]
//
// for instance "ttft p95 150ms starts=warm" or "cold-start p50 1.2s
// starts=cold endpoint=aws/sagemaker/llm". Thresholds are Go durations, or
// plain numbers for the output-tokens metric.
type SLA struct {
	// Name labels the SLA in reports; empty: its text form.
	Name string
	// Metric is what is measured.
	Metric latency.Metric
	// Percentile is in (0, 100]: 95 means p95.
	Percentile float64
	// Threshold is the limit: a duration in nanoseconds, or a count.
	Threshold int64
	// Starts is which starts it covers (default StartsAll).
	Starts Starts
	// Class and Endpoint restrict it to one request class or endpoint;
	// empty covers all.
	Class    string
	Endpoint string
}

// ParseSLA parses an SLA's text form (see SLA).
func ParseSLA(s string) (SLA, error) {
	bad := func(format string, args ...any) (SLA, error) {
		return SLA{}, errcodes.Errorf(errcodes.InvalidParam, "latency: SLA %q: "+format, append([]any{s}, args...)...)
	}
	f := strings.Fields(s)
	if len(f) < 3 {
		return bad("want \"<metric> p<percentile> <threshold> [starts=…] [class=…] [endpoint=…] [name=…]\"")
	}
	m, err := latency.ParseMetric(f[0])
	if err != nil {
		return bad("%v", err)
	}
	ps, ok := strings.CutPrefix(strings.ToLower(f[1]), "p")
	if !ok {
		return bad("percentile %q must look like p95", f[1])
	}
	p, err := strconv.ParseFloat(ps, 64)
	if err != nil || !(p > 0 && p <= 100) {
		return bad("percentile %q must be in (0, 100]", f[1])
	}
	var th int64
	if m.Info().Unit == latency.Nanoseconds {
		d, err := time.ParseDuration(f[2])
		if err != nil || d <= 0 {
			return bad("threshold %q must be a positive duration such as 150ms", f[2])
		}
		th = int64(d)
	} else {
		n, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || n <= 0 {
			return bad("threshold %q must be a positive integer", f[2])
		}
		th = n
	}
	out := SLA{Metric: m, Percentile: p, Threshold: th, Starts: StartsAll}
	for _, kv := range f[3:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" {
			return bad("option %q must be key=value", kv)
		}
		switch strings.ToLower(k) {
		case "starts":
			switch st := Starts(strings.ToLower(v)); st {
			case StartsAll, StartsWarm, StartsCold:
				out.Starts = st
			default:
				return bad("starts %q must be warm, cold or all", v)
			}
		case "class":
			out.Class = v
		case "endpoint":
			out.Endpoint = v
		case "name":
			out.Name = v
		default:
			return bad("unknown option %q (starts, class, endpoint, name)", k)
		}
	}
	return out, nil
}

// String returns the SLA's text form.
func (s SLA) String() string {
	var b strings.Builder
	b.WriteString(s.Metric.String())
	b.WriteString(" p")
	b.WriteString(strconv.FormatFloat(s.Percentile, 'g', -1, 64))
	b.WriteByte(' ')
	if s.Metric.Info().Unit == latency.Nanoseconds {
		b.WriteString(time.Duration(s.Threshold).String())
	} else {
		b.WriteString(strconv.FormatInt(s.Threshold, 10))
	}
	if s.Starts != "" && s.Starts != StartsAll {
		b.WriteString(" starts=" + string(s.Starts))
	}
	if s.Class != "" {
		b.WriteString(" class=" + s.Class)
	}
	if s.Endpoint != "" {
		b.WriteString(" endpoint=" + s.Endpoint)
	}
	if s.Name != "" {
		b.WriteString(" name=" + s.Name)
	}
	return b.String()
}

// Label is the SLA's name, or its text form when it has none.
func (s SLA) Label() string {
	if s.Name != "" {
		return s.Name
	}
	return s.String()
}

// Validate checks the SLA's fields.
func (s SLA) Validate() error {
	_, err := ParseSLA(s.String())
	if err == nil && strings.ContainsAny(s.Class+s.Endpoint+s.Name, " \t\n") {
		err = errcodes.Errorf(errcodes.InvalidParam, "latency: SLA %q: class, endpoint and name cannot hold spaces", s.String())
	}
	return err
}

// MarshalText implements encoding.TextMarshaler (the text form).
func (s SLA) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler (the text form).
func (s *SLA) UnmarshalText(b []byte) error {
	v, err := ParseSLA(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// applies reports whether the SLA covers a request of this endpoint, class
// and start.
func (s *SLA) applies(endpoint, class string, k latency.StartKind) bool {
	return (s.Endpoint == "" || s.Endpoint == endpoint) &&
		(s.Class == "" || s.Class == class) &&
		s.Starts.covers(k)
}

// met reports whether one request meets the SLA's threshold (goodput). A
// request the SLA does not cover, or that lacks the metric (TPOT of a
// one-token answer, say), meets it.
func (s *SLA) met(smp *latency.Sample) bool {
	if !s.applies(smp.Endpoint, smp.Class, smp.Start) {
		return true
	}
	v, ok := smp.Value(s.Metric)
	return !ok || v <= s.Threshold
}

// SLAResult is one SLA checked against recorded requests.
type SLAResult struct {
	SLA SLA `json:"sla"`
	// Count is how many values the measurement rests on.
	Count uint64 `json:"count"`
	// Measured is the percentile's value (nanoseconds or tokens).
	Measured float64 `json:"measured"`
	// Deviation is (Measured − Threshold) / Threshold: +0.08 is 8% over;
	// 0 for a threshold that is not positive (an invalid SLA).
	Deviation float64 `json:"deviation"`
	// Pass is Measured ≤ Threshold (decided on exact counts where the
	// recorder keeps them: see CheckSLA); false as well with no data.
	Pass bool `json:"pass"`
	// NoData is true when no request was covered.
	NoData bool `json:"no_data,omitempty"`
	// Attribution says how much of an all-starts SLA's value the cold
	// requests explain; nil for warm- or cold-only SLAs.
	Attribution *Attribution `json:"attribution,omitempty"`
}

// Attribution splits an all-starts measurement between cold and other
// requests.
type Attribution struct {
	// ColdCount is how many covered values came from cold requests, and
	// SuspectedCount from suspected-cold ones (kept with the warm).
	ColdCount      uint64 `json:"cold_count"`
	SuspectedCount uint64 `json:"suspected_count"`
	// WithoutColdCount is how many covered values came from requests that
	// are not cold (warm and suspected-cold).
	WithoutColdCount uint64 `json:"without_cold_count"`
	// WithoutCold is the percentile over the requests that are not cold; 0,
	// and not a measurement, when WithoutColdCount is 0.
	WithoutCold float64 `json:"without_cold"`
	// WithoutColdPass is whether the SLA would pass without the cold
	// requests; false when WithoutColdCount is 0.
	WithoutColdPass bool `json:"without_cold_pass"`
	// ColdShare is the share of the deviation the cold requests explain:
	// (Measured − WithoutCold) / (Measured − Threshold), clamped to [0, 1];
	// 0 when the SLA passes.
	ColdShare float64 `json:"cold_share"`
}

// CheckSLA measures an SLA over the recorder's requests.
//
// Measured is the sketch's nearest-rank percentile, within 1% of the
// exact one. When the SLA's metric and threshold are those of one of the
// recorder's own SLAs (whatever its percentile, starts, class or
// endpoint), the recorder has counted the values at most the threshold,
// and Pass is exact: the percentile is at most the threshold exactly when
// at least ⌈q·n⌉ values are. Measured is then moved to the threshold's
// side the count proves, which only brings it nearer the exact value.
// Otherwise Pass compares the estimate, and a percentile within 1% of the
// threshold may fall on either side.
func (r *Recorder) CheckSLA(s SLA) SLAResult {
	out := SLAResult{SLA: s}
	all := r.slaPercentile(&s, Filter{Endpoint: s.Endpoint, Class: s.Class, Starts: s.Starts})
	out.Count = all.n
	if out.Count == 0 {
		out.NoData = true
		return out
	}
	out.Measured, out.Pass = all.value, all.pass
	th := float64(s.Threshold)
	if th > 0 {
		out.Deviation = (out.Measured - th) / th
	}
	if s.Starts == StartsAll || s.Starts == "" {
		at := &Attribution{}
		cold := r.Dist(s.Metric, Filter{Endpoint: s.Endpoint, Class: s.Class, Starts: StartsCold})
		at.ColdCount = cold.Count()
		at.SuspectedCount = r.Dist(s.Metric, Filter{Endpoint: s.Endpoint, Class: s.Class, kinds: []latency.StartKind{latency.SuspectedCold}}).Count()
		warm := r.slaPercentile(&s, Filter{Endpoint: s.Endpoint, Class: s.Class, Starts: StartsWarm})
		at.WithoutColdCount = warm.n
		if warm.n > 0 {
			at.WithoutCold, at.WithoutColdPass = warm.value, warm.pass
		}
		if !out.Pass && at.ColdCount > 0 {
			share := 1.0
			if warm.n > 0 {
				share = (out.Measured - at.WithoutCold) / (out.Measured - th)
			}
			at.ColdShare = math.Min(math.Max(share, 0), 1)
		}
		out.Attribution = at
	}
	return out
}

// percentileCheck is an SLA's percentile over some requests.
type percentileCheck struct {
	n     uint64
	value float64
	pass  bool
}

// slaPercentile measures the SLA's percentile over the requests f selects
// and checks it against the threshold, exactly when the recorder counts
// that threshold (see CheckSLA).
func (r *Recorder) slaPercentile(s *SLA, f Filter) percentileCheck {
	d, within, exact := r.distWithin(s.Metric, f, s.Threshold)
	q := s.Percentile / 100
	out := percentileCheck{n: d.Count(), value: d.Quantile(q)}
	th := float64(s.Threshold)
	out.pass = out.value <= th
	if !exact || out.n == 0 || !(q > 0 && q <= 1) {
		return out
	}
	// The nearest-rank percentile is the value of 0-based rank
	// quantile.NearestRank(q, n): at most the threshold when more values
	// than that rank are.
	out.pass = within > quantile.NearestRank(q, out.n)
	switch {
	case out.pass && out.value > th:
		out.value = th
	case !out.pass && out.value <= th:
		out.value = th + 1 // values are integers: the next one above
	}
	return out
}
