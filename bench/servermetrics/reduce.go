package servermetrics

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// Parse reads a Prometheus text exposition (version 0.0.4; OpenMetrics 1.0
// text mostly reads too) with the Prometheus parser. Metric names may hold
// colons (vLLM's "vllm:…") and any UTF-8.
func Parse(r io.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, errcodes.Wrap(err, errcodes.InvalidParam, "servermetrics: not a Prometheus exposition: "+err.Error())
	}
	return fams, nil
}

// Summary is one server's metrics over a benchmark's measured window: its
// counters' deltas, its histograms' delta buckets and its gauges over time.
type Summary struct {
	// Source is the URL scraped (without user info or query values).
	Source string `json:"source"`
	// Server is the server the families say it is: vllm, sglang, tgi,
	// triton or emulator ("" if none known).
	Server string `json:"server,omitempty"`
	// Begin and End are the scrapes that bound the window: the one at the
	// measured run's start and the last.
	Begin time.Time `json:"begin"`
	End   time.Time `json:"end"`
	// Scrapes counts the successful scrapes (the baseline included),
	// Failed the failed ones.
	Scrapes int `json:"scrapes"`
	Failed  int `json:"failed,omitempty"`
	// Cost is what the scraping cost the client.
	Cost Cost `json:"cost"`
	// Restarts counts the scrapes at which the server's counters went
	// back (a restart); the deltas count from zero there.
	Restarts int `json:"restarts,omitempty"`
	// Machines is how many runs scraped this server in a merged result:
	// their summaries are not summed (see bench.Merge); one is kept.
	Machines int `json:"machines,omitempty"`
	// Families holds every family seen, known or not, reduced by type.
	Families []*Family `json:"families,omitempty"`
	// Over is the known gauges (running, waiting, KV cache) at each scrape
	// of the window, summed over their series.
	Over []TimePoint `json:"over,omitempty"`
	// Dropped counts series left out past MaxSeries.
	Dropped int `json:"dropped,omitempty"`
	// Warnings are the scraping's problems; a run never fails of them.
	Warnings []string `json:"warnings,omitempty"`
}

// Cost is the scraping's cost.
type Cost struct {
	// Mean and Max are a scrape's duration (request to parsed).
	Mean time.Duration `json:"mean"`
	Max  time.Duration `json:"max"`
	// Bytes is the total read.
	Bytes int64 `json:"bytes"`
}

// TimePoint is the known gauges at one scrape: T is seconds from the
// window's start; a role absent from the server is absent here.
type TimePoint struct {
	T      float64          `json:"t"`
	Gauges map[Role]float64 `json:"gauges"`
}

// Family is one metric family, reduced.
type Family struct {
	Name string `json:"name"`
	// Type is counter, gauge, histogram, summary or untyped.
	Type string `json:"type"`
	// Known says the family is documented (Families); its series carry
	// their Role. An unknown family is kept as it was reduced, raw.
	Known  bool      `json:"known,omitempty"`
	Series []*Series `json:"series"`
}

// Series is one labeled series of a family, reduced by the family's type.
type Series struct {
	Labels map[string]string `json:"labels,omitempty"`
	Role   Role              `json:"role,omitempty"`
	// Delta is a counter's increase over the window (resets counted from
	// zero); an untyped series' last value.
	Delta *float64 `json:"delta,omitempty"`
	// Gauge is a gauge's values over the window's scrapes.
	Gauge *GaugeStats `json:"gauge,omitempty"`
	// Histogram is a histogram's (or a summary's count and sum) delta.
	Histogram *HistogramDelta `json:"histogram,omitempty"`
}

// GaugeStats is a gauge's minimum, mean and maximum over the scrapes, and
// its last value.
type GaugeStats struct {
	Min  float64 `json:"min"`
	Mean float64 `json:"mean"`
	Max  float64 `json:"max"`
	Last float64 `json:"last"`
	N    int     `json:"n"`
}

// HistogramDelta is a histogram's observations over the window: count,
// sum and cumulative bucket counts (the finite bounds': the +Inf bucket
// is Count), deltas of the scrapes'. Its mean
// (Sum/Count) is exact; its quantiles are bucket estimates (Quantile).
type HistogramDelta struct {
	Count   float64  `json:"count"`
	Sum     float64  `json:"sum"`
	Buckets []Bucket `json:"buckets,omitempty"`
}

// Bucket is a cumulative histogram bucket: Count observations ≤ Le.
type Bucket struct {
	Le    float64 `json:"le"`
	Count float64 `json:"count"`
}

// Mean returns Sum/Count (0 without observations).
func (h *HistogramDelta) Mean() float64 {
	if h == nil || h.Count <= 0 {
		return 0
	}
	return h.Sum / h.Count
}

// Quantile estimates the q-quantile from the buckets as Prometheus's
// histogram_quantile does: linearly within the bucket that holds it, the
// highest finite bound for the +Inf bucket. It is a bucket estimate: it
// cannot be finer than the bucket it falls in (with vLLM's TTFT buckets,
// 100 ms → 250 ms), and it knows nothing of how the observations lie in
// it. ok is false without observations or buckets.
func (h *HistogramDelta) Quantile(q float64) (v float64, ok bool) {
	if h == nil || h.Count <= 0 || len(h.Buckets) == 0 {
		return 0, false
	}
	rank := q * h.Count
	prevLe, prevCount := 0.0, 0.0
	for _, b := range h.Buckets {
		if b.Count >= rank {
			if math.IsInf(b.Le, 1) {
				return prevLe, true
			}
			if b.Count == prevCount {
				return b.Le, true
			}
			return prevLe + (b.Le-prevLe)*(rank-prevCount)/(b.Count-prevCount), true
		}
		prevLe, prevCount = b.Le, b.Count
	}
	return prevLe, true // in the +Inf bucket: the highest finite bound
}

// MaxSeries bounds the series a Summary keeps (all families together).
const MaxSeries = 2000

// MaxTimePoints bounds Summary.Over: past it, every other point is dropped.
const MaxTimePoints = 600

// Reducer turns successive scrapes of one server into a Summary. Add
// every scrape in order; Mark starts the measured window at a scrape.
type Reducer struct {
	// Models, when set, keeps only the series whose model_name (or model)
	// label is one of them, if any series at the first scrape has one of
	// them: one server often serves several models, a target one.
	Models []string

	filter  bool
	decided bool
	marked  bool
	begin   time.Time
	last    time.Time
	prev    map[string]point // by series key, the previous scrape's
	acc     map[string]*accum
	order   []string
	over    []TimePoint
	dropped map[string]bool
	servers map[string]bool
	resets  int
	resetAt []string
}

type point struct {
	value      float64
	count, sum float64
	buckets    []Bucket
}

type accum struct {
	family, typ string
	labels      map[string]string
	role        Role
	scale       float64
	known       bool
	delta       float64
	last        float64
	g           GaugeStats
	h           HistogramDelta
}

// NewReducer returns a Reducer keeping the series of models (none: all).
func NewReducer(models ...string) *Reducer {
	return &Reducer{Models: models, prev: map[string]point{}, acc: map[string]*accum{}, dropped: map[string]bool{}, servers: map[string]bool{}}
}

// Mark starts the measured window at the scrape fams, taken at at: the
// deltas count from it, the gauges' statistics and Over start with it.
func (r *Reducer) Mark(at time.Time, fams map[string]*dto.MetricFamily) {
	r.add(at, fams, true)
}

// Add reduces a scrape taken at at. Before Mark, a scrape only sets the
// values the window's first deltas are taken from and finds restarts.
func (r *Reducer) Add(at time.Time, fams map[string]*dto.MetricFamily) {
	r.add(at, fams, false)
}

func (r *Reducer) add(at time.Time, fams map[string]*dto.MetricFamily, mark bool) {
	if !r.decided {
		r.decided = true
		r.filter = len(r.Models) > 0 && r.anyModel(fams)
	}
	if mark {
		r.marked, r.begin = true, at
		for _, a := range r.acc {
			a.delta, a.g, a.h = 0, GaugeStats{}, HistogramDelta{}
		}
		r.over = nil
	}
	r.last = at
	tp := TimePoint{T: at.Sub(r.begin).Seconds(), Gauges: map[Role]float64{}}
	tpRank := map[Role]int{} // the family each role's point is read from
	reset := ""
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		f := fams[name]
		typ := strings.ToLower(f.GetType().String())
		ks := known(name)
		for _, k := range ks {
			r.servers[k.Server] = true
		}
		for _, m := range f.GetMetric() {
			labels := labelMap(m)
			if r.filter && !r.keep(labels) {
				continue
			}
			key := name + "{" + labelKey(labels) + "}"
			a := r.acc[key]
			if a == nil {
				if len(r.acc) >= MaxSeries {
					r.dropped[key] = true
					continue
				}
				a = &accum{family: name, typ: typ, labels: labels}
				for _, k := range ks {
					if k.matches(labels) {
						a.role, a.scale, a.known = k.Role, k.Scale, true
						break
					}
				}
				if len(ks) > 0 {
					a.known = true
				}
				r.acc[key] = a
				r.order = append(r.order, key)
			}
			cur := read(f.GetType(), m)
			// A series first seen inside the window starts from zero.
			prev, seen := r.prev[key]
			r.prev[key] = cur
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				if seen && cur.value < prev.value {
					reset = name
					prev = point{}
				}
				if r.marked && !mark {
					a.delta += cur.value - prev.value
				}
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM, dto.MetricType_SUMMARY:
				if seen && cur.count < prev.count {
					reset = name
					prev = point{}
				}
				if r.marked && !mark {
					a.h.Count += cur.count - prev.count
					a.h.Sum += cur.sum - prev.sum
					a.h.Buckets = addBuckets(a.h.Buckets, cur.buckets, prev.buckets)
				}
			case dto.MetricType_GAUGE:
				if r.marked {
					g := &a.g
					if g.N == 0 || cur.value < g.Min {
						g.Min = cur.value
					}
					if g.N == 0 || cur.value > g.Max {
						g.Max = cur.value
					}
					g.Mean += (cur.value - g.Mean) / float64(g.N+1)
					g.N++
					g.Last = cur.value
					switch a.role {
					case RoleRunning, RoleWaiting, RoleKVCache:
						rk, seenRole := tpRank[a.role]
						switch fr := rank(name); {
						case !seenRole || fr < rk:
							tpRank[a.role] = fr
							tp.Gauges[a.role] = cur.value
						case fr == rk:
							tp.Gauges[a.role] += cur.value
						}
					}
				}
			default:
				a.last = cur.value
			}
		}
	}
	if reset != "" {
		r.resets++
		r.resetAt = append(r.resetAt, fmt.Sprintf("%s (%s went back)", at.Format(time.RFC3339), reset))
	}
	if r.marked && len(tp.Gauges) > 0 {
		r.over = append(r.over, tp)
		if len(r.over) > MaxTimePoints {
			thin := r.over[:0]
			for i, p := range r.over {
				if i%2 == 0 || i == len(r.over)-1 {
					thin = append(thin, p)
				}
			}
			r.over = thin
		}
	}
}

// anyModel reports whether some series of fams is of one of r.Models.
func (r *Reducer) anyModel(fams map[string]*dto.MetricFamily) bool {
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			l := labelMap(m)
			for _, k := range []string{"model_name", "model"} {
				if v, ok := l[k]; ok && slices.Contains(r.Models, v) {
					return true
				}
			}
		}
	}
	return false
}

// keep reports whether a series belongs to r.Models: it has no model
// label, or one of them.
func (r *Reducer) keep(labels map[string]string) bool {
	for _, k := range []string{"model_name", "model"} {
		if v, ok := labels[k]; ok && !slices.Contains(r.Models, v) {
			return false
		}
	}
	return true
}

// Restarts returns how many restarts were seen, and when.
func (r *Reducer) Restarts() (int, []string) { return r.resets, r.resetAt }

// Summary returns the reduction so far (nil before Mark).
func (r *Reducer) Summary() *Summary {
	if !r.marked {
		return nil
	}
	s := &Summary{Begin: r.begin, End: r.last, Restarts: r.resets, Dropped: len(r.dropped), Over: slices.Clone(r.over)}
	for _, srv := range []string{"emulator", "vllm", "sglang", "tgi", "triton"} {
		if r.servers[srv] {
			s.Server = srv
			break
		}
	}
	byName := map[string]*Family{}
	for _, key := range r.order {
		a := r.acc[key]
		f := byName[a.family]
		if f == nil {
			f = &Family{Name: a.family, Type: a.typ, Known: a.known}
			byName[a.family] = f
			s.Families = append(s.Families, f)
		}
		se := &Series{Labels: a.labels, Role: a.role}
		switch a.typ {
		case "counter":
			d := a.delta
			if a.scale > 0 {
				d *= a.scale
			}
			se.Delta = &d
		case "gauge":
			if a.g.N == 0 {
				continue
			}
			g := a.g
			se.Gauge = &g
		case "histogram", "gauge_histogram", "summary":
			h := a.h
			// The +Inf bucket is Count (and JSON has no infinity).
			h.Buckets = slices.DeleteFunc(slices.Clone(h.Buckets), func(b Bucket) bool { return math.IsInf(b.Le, 1) })
			if a.scale > 0 {
				h.Sum *= a.scale
				for i := range h.Buckets {
					h.Buckets[i].Le *= a.scale
				}
			}
			se.Histogram = &h
		default:
			v := a.last
			se.Delta = &v
		}
		f.Series = append(f.Series, se)
	}
	s.Families = slices.DeleteFunc(s.Families, func(f *Family) bool { return len(f.Series) == 0 })
	return s
}

func read(t dto.MetricType, m *dto.Metric) point {
	switch t {
	case dto.MetricType_COUNTER:
		return point{value: m.GetCounter().GetValue()}
	case dto.MetricType_GAUGE:
		return point{value: m.GetGauge().GetValue()}
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		h := m.GetHistogram()
		p := point{count: float64(h.GetSampleCount()), sum: h.GetSampleSum()}
		if h.SampleCountFloat != nil {
			p.count = h.GetSampleCountFloat()
		}
		for _, b := range h.GetBucket() {
			c := float64(b.GetCumulativeCount())
			if b.CumulativeCountFloat != nil {
				c = b.GetCumulativeCountFloat()
			}
			p.buckets = append(p.buckets, Bucket{Le: b.GetUpperBound(), Count: c})
		}
		if len(p.buckets) > 0 && !math.IsInf(p.buckets[len(p.buckets)-1].Le, 1) {
			p.buckets = append(p.buckets, Bucket{Le: math.Inf(1), Count: p.count})
		}
		return p
	case dto.MetricType_SUMMARY:
		s := m.GetSummary()
		return point{count: float64(s.GetSampleCount()), sum: s.GetSampleSum()}
	}
	return point{value: m.GetUntyped().GetValue()}
}

// addBuckets adds cur − prev (matched by bound) to acc.
func addBuckets(acc, cur, prev []Bucket) []Bucket {
	for _, b := range cur {
		d := b.Count
		for _, p := range prev {
			if p.Le == b.Le {
				d -= p.Count
				break
			}
		}
		i := slices.IndexFunc(acc, func(a Bucket) bool { return a.Le == b.Le })
		if i < 0 {
			acc = append(acc, Bucket{Le: b.Le})
			i = len(acc) - 1
		}
		acc[i].Count += d
	}
	slices.SortFunc(acc, func(a, b Bucket) int {
		switch {
		case a.Le < b.Le:
			return -1
		case a.Le > b.Le:
			return 1
		}
		return 0
	})
	return acc
}

func labelMap(m *dto.Metric) map[string]string {
	if len(m.GetLabel()) == 0 {
		return nil
	}
	out := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func labelKey(l map[string]string) string {
	ks := make([]string, 0, len(l))
	for k := range l {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var b strings.Builder
	for _, k := range ks {
		fmt.Fprintf(&b, "%s=%q,", k, l[k])
	}
	return b.String()
}

// Histogram returns the role's histogram: the delta of the first family
// of that role with observations (in the order of Families: vLLM's before
// TGI's), its series summed (their
// buckets when they share bounds). ok is false when none has any.
func (s *Summary) Histogram(role Role) (h *HistogramDelta, family string, ok bool) {
	if s == nil {
		return nil, "", false
	}
	for _, f := range s.ranked() {
		var sum *HistogramDelta
		for _, se := range f.Series {
			if se.Role != role || se.Histogram == nil || se.Histogram.Count <= 0 {
				continue
			}
			if sum == nil {
				sum = &HistogramDelta{Buckets: slices.Clone(se.Histogram.Buckets)}
			} else {
				sum.Buckets = addBuckets(sum.Buckets, se.Histogram.Buckets, nil)
			}
			sum.Count += se.Histogram.Count
			sum.Sum += se.Histogram.Sum
		}
		if sum != nil {
			return sum, f.Name, true
		}
	}
	return nil, "", false
}

// Mean returns the mean of a duration role in seconds over the window and
// the number of requests it is over, and the family it came from: a
// histogram's Sum/Count (exact), or, for a server whose durations are
// cumulative counters (Triton), the counter's delta over the requests
// counter's. ok is false when the server has no such data.
func (s *Summary) Mean(role Role) (mean, n float64, family string, ok bool) {
	if h, fam, ok := s.Histogram(role); ok {
		return h.Mean(), h.Count, fam, true
	}
	if s == nil {
		return 0, 0, "", false
	}
	total, fam := s.counter(role)
	reqs, _ := s.counter(RoleRequests)
	if fam == "" || reqs <= 0 {
		return 0, 0, "", false
	}
	return total / reqs, reqs, fam, true
}

// counter returns the sum of the role's counter deltas and their family
// ("" if none).
func (s *Summary) counter(role Role) (float64, string) {
	for _, f := range s.ranked() {
		if f.Type != "counter" {
			continue
		}
		total, found := 0.0, false
		for _, se := range f.Series {
			if se.Role == role && se.Delta != nil {
				total += *se.Delta
				found = true
			}
		}
		if found {
			return total, f.Name
		}
	}
	return 0, ""
}

// Gauge returns the role's gauge statistics, its series summed (the sums
// of their means, minima and maxima: a bound, not the sum's own minimum),
// and the family; ok is false when the server has none.
func (s *Summary) Gauge(role Role) (g GaugeStats, family string, ok bool) {
	if s == nil {
		return g, "", false
	}
	for _, f := range s.ranked() {
		for _, se := range f.Series {
			if se.Role != role || se.Gauge == nil {
				continue
			}
			g.Min += se.Gauge.Min
			g.Mean += se.Gauge.Mean
			g.Max += se.Gauge.Max
			g.Last += se.Gauge.Last
			g.N = max(g.N, se.Gauge.N)
			ok = true
		}
		if ok {
			return g, f.Name, true
		}
	}
	return g, "", false
}

// ranked returns the families in rank order (see rank).
func (s *Summary) ranked() []*Family {
	out := slices.Clone(s.Families)
	slices.SortStableFunc(out, func(a, b *Family) int { return rank(a.Name) - rank(b.Name) })
	return out
}
