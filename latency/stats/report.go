package stats

import (
	"slices"
	"time"

	"github.com/cloudinfer/cloudinfer/latency"
)

// AllStarts labels a report row that sums every start kind of an endpoint
// and class.
const AllStarts latency.StartKind = "all"

// ReportOptions says what a Report holds.
type ReportOptions struct {
	// SLAs are checked against the recorder; nil checks the recorder's own.
	SLAs []SLA
	// Metrics lists the metrics each group shows (those with data); nil
	// shows every metric that has data.
	Metrics []latency.Metric
}

// Report is a Recorder's summary: per group distributions, rates and
// LogNormal fits, and the SLA results. Durations are in milliseconds.
type Report struct {
	Begin time.Time `json:"begin,omitzero"`
	End   time.Time `json:"end,omitzero"`
	// DurationSeconds is the run's window, throughput's denominator.
	DurationSeconds float64       `json:"duration_s"`
	Groups          []GroupReport `json:"groups"`
	SLAs            []SLAResult   `json:"slas,omitempty"`
}

// GroupReport is one group's summary. A group with Start = AllStarts sums
// its endpoint and class over every start kind (failed requests included).
type GroupReport struct {
	GroupKey
	Counts Counts `json:"counts"`
	// RequestRate is successful requests per second, TokenRate output
	// tokens per second (throughput), Goodput good requests per second.
	RequestRate float64 `json:"request_rate"`
	TokenRate   float64 `json:"token_rate"`
	Goodput     float64 `json:"goodput"`
	// TokenSource is where N_out came from: "server", "counted" or "mixed".
	TokenSource string        `json:"token_source,omitempty"`
	Metrics     []MetricStats `json:"metrics"`
	// Fits are the LogNormal fits of the token gaps: prefill (TTFT) and
	// decode (per-token ITL).
	Fits []FitReport `json:"fits,omitempty"`
}

// MetricStats is one metric's summary in display units (ms or tokens).
type MetricStats struct {
	Metric latency.Metric `json:"metric"`
	Unit   string         `json:"unit"`
	Summary
}

// FitReport is a LogNormal fit of one phase's token gaps beside the
// observed tail. Mu is the mean of ln(gap in ms).
type FitReport struct {
	Phase       string  `json:"phase"`
	N           uint64  `json:"n"`
	Mu          float64 `json:"mu"`
	Sigma       float64 `json:"sigma"`
	FittedP99   float64 `json:"fitted_p99_ms"`
	ObservedP99 float64 `json:"observed_p99_ms"`
}

const nsPerMs = 1e6

// Report summarizes the recorder.
func (r *Recorder) Report(opts ReportOptions) *Report {
	rep := &Report{Groups: []GroupReport{}}
	rep.Begin, rep.End = r.Window()
	secs := 0.0
	if !rep.Begin.IsZero() && !rep.End.IsZero() {
		secs = rep.End.Sub(rep.Begin).Seconds()
	}
	rep.DurationSeconds = secs

	keys := r.Groups()
	type ec struct{ e, c string }
	perEC := map[ec]int{}
	for _, k := range keys {
		perEC[ec{k.Endpoint, k.Class}]++
	}
	emit := func(k GroupKey, f Filter) {
		rep.Groups = append(rep.Groups, r.groupReport(k, f, opts.Metrics, secs))
	}
	for i, k := range keys {
		emit(k, Filter{Endpoint: k.Endpoint, Class: k.Class, kinds: []latency.StartKind{k.Start}})
		last := i == len(keys)-1 || keys[i+1].Endpoint != k.Endpoint || keys[i+1].Class != k.Class
		if last && perEC[ec{k.Endpoint, k.Class}] > 1 {
			emit(GroupKey{Endpoint: k.Endpoint, Class: k.Class, Start: AllStarts}, Filter{Endpoint: k.Endpoint, Class: k.Class, Starts: StartsAll})
		}
	}
	slas := opts.SLAs
	if slas == nil {
		slas = r.SLAs()
	}
	for _, s := range slas {
		rep.SLAs = append(rep.SLAs, r.CheckSLA(s))
	}
	return rep
}

func (r *Recorder) groupReport(k GroupKey, f Filter, metrics []latency.Metric, secs float64) GroupReport {
	g := GroupReport{GroupKey: k, Counts: r.Counts(f), Metrics: []MetricStats{}}
	ok := g.Counts.Requests - g.Counts.Failed
	if secs > 0 {
		g.RequestRate = float64(ok) / secs
		g.TokenRate = float64(g.Counts.OutputTokens) / secs
		g.Goodput = float64(g.Counts.Good) / secs
	}
	g.TokenSource = g.Counts.TokenSource()
	show := metrics
	if show == nil {
		show = latency.Metrics()
	}
	dists := map[latency.Metric]*Dist{}
	for _, m := range show {
		d := r.Dist(m, f)
		dists[m] = d
		if d.Count() == 0 {
			continue
		}
		g.Metrics = append(g.Metrics, metricStats(m, d))
	}
	for _, ph := range []struct {
		name string
		m    latency.Metric
	}{{"prefill", latency.TTFT}, {"decode", latency.ITLToken}} {
		d := dists[ph.m]
		if d == nil {
			d = r.Dist(ph.m, f)
		}
		if fit, ok := d.FitLogNormal(); ok {
			ms := fit.InUnit(nsPerMs)
			g.Fits = append(g.Fits, FitReport{
				Phase: ph.name, N: fit.N, Mu: ms.Mu, Sigma: ms.Sigma,
				FittedP99: ms.Quantile(0.99), ObservedP99: d.Quantile(0.99) / nsPerMs,
			})
		}
	}
	return g
}

func metricStats(m latency.Metric, d *Dist) MetricStats {
	st := d.Summary()
	unit := string(latency.Tokens)
	if m.Info().Unit == latency.Nanoseconds {
		st, unit = st.Scaled(nsPerMs), "ms"
	}
	return MetricStats{Metric: m, Unit: unit, Summary: st}
}

// Group returns the report's group with the given key, or nil.
func (rep *Report) Group(k GroupKey) *GroupReport {
	i := slices.IndexFunc(rep.Groups, func(g GroupReport) bool { return g.GroupKey == k })
	if i < 0 {
		return nil
	}
	return &rep.Groups[i]
}

// Metric returns the group's summary of m, or nil.
func (g *GroupReport) Metric(m latency.Metric) *MetricStats {
	i := slices.IndexFunc(g.Metrics, func(s MetricStats) bool { return s.Metric == m })
	if i < 0 {
		return nil
	}
	return &g.Metrics[i]
}
