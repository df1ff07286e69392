package stats

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
)

// GroupKey is how a Recorder splits requests: by endpoint, request class
// and start kind. Failed requests, which have no start verdict, have an
// empty Start.
type GroupKey struct {
	Endpoint string            `json:"endpoint"`
	Class    string            `json:"class"`
	Start    latency.StartKind `json:"start"`
}

// Counts are a group's request counters.
type Counts struct {
	// Requests counts every finished call; Failed those that ended in an
	// error, by code in Errors.
	Requests int64            `json:"requests"`
	Failed   int64            `json:"failed"`
	Errors   map[string]int64 `json:"errors,omitempty"`
	// Reasons counts successful requests by the evidence behind their
	// start kind.
	Reasons map[latency.StartReason]int64 `json:"reasons,omitempty"`
	// Good counts successful requests that met every SLA covering them
	// (goodput's numerator).
	Good int64 `json:"good"`
	// ConnectionCold counts successful requests whose final attempt opened
	// a new connection; Retried those that needed more than one attempt.
	ConnectionCold int64 `json:"connection_cold"`
	Retried        int64 `json:"retried"`
	// OutputTokens sums N_out over successful requests; TokensFromServer and
	// TokensCounted count the requests whose N_out came from each source.
	OutputTokens     int64 `json:"output_tokens"`
	TokensFromServer int64 `json:"tokens_from_server"`
	TokensCounted    int64 `json:"tokens_counted"`
}

// TokenSource says where the N_out of the counted requests came from:
// "server" or "counted" when every request's came from one source,
// "mixed" when both occur, "" when no request had an N_out.
func (c *Counts) TokenSource() string {
	switch {
	case c.TokensFromServer > 0 && c.TokensCounted > 0:
		return "mixed"
	case c.TokensFromServer > 0:
		return string(latency.TokensFromServer)
	case c.TokensCounted > 0:
		return string(latency.TokensCounted)
	}
	return ""
}

func (c *Counts) merge(o *Counts) {
	c.Requests += o.Requests
	c.Failed += o.Failed
	for k, v := range o.Errors {
		if c.Errors == nil {
			c.Errors = map[string]int64{}
		}
		c.Errors[k] += v
	}
	for k, v := range o.Reasons {
		if c.Reasons == nil {
			c.Reasons = map[latency.StartReason]int64{}
		}
		c.Reasons[k] += v
	}
	c.Good += o.Good
	c.ConnectionCold += o.ConnectionCold
	c.Retried += o.Retried
	c.OutputTokens += o.OutputTokens
	c.TokensFromServer += o.TokensFromServer
	c.TokensCounted += o.TokensCounted
}

// cut is a threshold a Recorder counts exactly: how many values of Metric
// are at most Threshold. The sketch alone cannot tell a percentile equal
// to a threshold from one 1% above it; with the count an SLA on the same
// metric and threshold passes or fails on the values themselves.
type cut struct {
	Metric    latency.Metric
	Threshold int64
}

// cutsOf returns the distinct metric and threshold pairs of the SLAs.
func cutsOf(slas []SLA) []cut {
	var out []cut
	for _, s := range slas {
		if c := (cut{s.Metric, s.Threshold}); !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// group is one GroupKey's counters and distributions.
type group struct {
	counts Counts
	dists  [latency.NumMetrics]Dist
	// within[i] counts the group's values of the recorder's cuts[i]
	// metric that are at most its threshold; nil when not counted (a
	// group decoded from an encoding without the counts).
	within []uint64
}

// count adds the sample's values under each cut to within.
func (g *group) count(cuts []cut, s *latency.Sample) {
	if g.within == nil {
		return
	}
	for i, c := range cuts {
		var gaps []time.Duration
		switch c.Metric {
		case latency.ITL:
			gaps = s.ITL
		case latency.ITLToken:
			gaps = s.ITLPerToken
		default:
			if v, ok := s.Value(c.Metric); ok && v <= c.Threshold {
				g.within[i]++
			}
			continue
		}
		for _, d := range gaps {
			if int64(d) <= c.Threshold {
				g.within[i]++
			}
		}
	}
}

func (g *group) copy() *group {
	c := &group{counts: g.counts, within: slices.Clone(g.within)}
	c.counts.Errors = maps.Clone(g.counts.Errors)
	c.counts.Reasons = maps.Clone(g.counts.Reasons)
	for i := range g.dists {
		if g.dists[i].n > 0 {
			c.dists[i] = *g.dists[i].Copy()
		}
	}
	return c
}

func (g *group) merge(o *group) {
	g.counts.merge(&o.counts)
	for i := range o.dists {
		g.dists[i].Merge(&o.dists[i])
	}
	if g.within == nil || o.within == nil || len(g.within) != len(o.within) {
		g.within = nil // uncounted on one side: uncounted
		return
	}
	for i, n := range o.within {
		g.within[i] += n
	}
}

// RecorderOptions configures a Recorder.
type RecorderOptions struct {
	// SLAs are the per-request objectives goodput counts against: a
	// request is good when it meets the threshold of every per-request SLA
	// (TTFT, TPOT, E2E, …) covering it; ITL SLAs, pooled over requests,
	// do not gate goodput (as in vLLM's benchmark).
	SLAs []SLA
}

// Recorder aggregates Samples into mergeable distributions, split by
// endpoint, request class and start kind. It is safe for concurrent use.
// Its memory does not grow with the number of samples: each distribution is
// a sketch plus a few exact sums. Recorders merge exactly (Merge), also
// across machines through their JSON encoding. The zero value is a
// Recorder with no SLAs.
type Recorder struct {
	mu     sync.Mutex
	slas   []SLA
	cuts   []cut // cutsOf(slas)
	groups map[GroupKey]*group
	first  time.Time
	last   time.Time
}

// NewRecorder returns a Recorder. Invalid SLAs are an ERR_INVALID_PARAM error.
func NewRecorder(opts RecorderOptions) (*Recorder, error) {
	for _, s := range opts.SLAs {
		if err := s.Validate(); err != nil {
			return nil, err
		}
	}
	r := &Recorder{groups: map[GroupKey]*group{}}
	for _, s := range opts.SLAs {
		if s.Starts == "" {
			s.Starts = StartsAll
		}
		r.slas = append(r.slas, s)
	}
	r.cuts = cutsOf(r.slas)
	return r, nil
}

// SLAs returns the per-request SLAs goodput is counted against.
func (r *Recorder) SLAs() []SLA {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.slas)
}

// Add records one request.
func (r *Recorder) Add(s *latency.Sample) {
	key := GroupKey{Endpoint: s.Endpoint, Class: s.Class, Start: s.Start}
	if s.Err != "" {
		key.Start = ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.groups == nil {
		r.groups = map[GroupKey]*group{}
	}
	g := r.groups[key]
	if g == nil {
		g = &group{}
		if len(r.cuts) > 0 {
			g.within = make([]uint64, len(r.cuts))
		}
		r.groups[key] = g
	}
	r.widen(s.Begin, s.End)
	c := &g.counts
	c.Requests++
	if s.Err != "" {
		c.Failed++
		if c.Errors == nil {
			c.Errors = map[string]int64{}
		}
		c.Errors[s.Err]++
		return
	}
	if s.Reason != "" {
		if c.Reasons == nil {
			c.Reasons = map[latency.StartReason]int64{}
		}
		c.Reasons[s.Reason]++
	}
	if s.ConnectionCold {
		c.ConnectionCold++
	}
	if s.Attempts > 1 {
		c.Retried++
	}
	c.OutputTokens += int64(s.OutputTokens)
	switch s.TokenSource {
	case latency.TokensFromServer:
		c.TokensFromServer++
	case latency.TokensCounted:
		c.TokensCounted++
	}
	good := true
	for i := range r.slas {
		if sl := &r.slas[i]; sl.Metric.Info().PerRequest && !sl.met(s) {
			good = false
			break
		}
	}
	if good {
		c.Good++
	}
	for m := latency.Metric(0); m < latency.NumMetrics; m++ {
		if v, ok := s.Value(m); ok {
			g.dists[m].Add(v)
		}
	}
	for _, d := range s.ITL {
		g.dists[latency.ITL].Add(int64(d))
	}
	for _, d := range s.ITLPerToken {
		g.dists[latency.ITLToken].Add(int64(d))
	}
	g.count(r.cuts, s)
}

// widen extends the run's time window; r.mu is held.
func (r *Recorder) widen(begin, end time.Time) {
	if !begin.IsZero() && (r.first.IsZero() || begin.Before(r.first)) {
		r.first = begin
	}
	if !end.IsZero() && (r.last.IsZero() || end.After(r.last)) {
		r.last = end
	}
}

// SetWindow sets the run's time window (throughput's and goodput's
// denominator), for callers that know it better than the samples' span.
func (r *Recorder) SetWindow(begin, end time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.first, r.last = begin, end
}

// Window returns the run's time window: from the earliest sample's begin
// (intended send or start) to the latest sample's end, unless SetWindow
// set it.
func (r *Recorder) Window() (begin, end time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.first, r.last
}

// Duration is the window's length.
func (r *Recorder) Duration() time.Duration {
	b, e := r.Window()
	if b.IsZero() || e.IsZero() {
		return 0
	}
	return e.Sub(b)
}

// snapshot returns a deep copy of the recorder's state.
func (r *Recorder) snapshot() (slas []SLA, groups map[GroupKey]*group, first, last time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	groups = make(map[GroupKey]*group, len(r.groups))
	for k, g := range r.groups {
		groups[k] = g.copy()
	}
	return slices.Clone(r.slas), groups, r.first, r.last
}

// Merge adds everything o recorded to r; the result equals one recorder
// that saw both sets of samples. Both must count goodput against the same
// SLAs, unless r is still empty, in which case it takes o's.
func (r *Recorder) Merge(o *Recorder) error {
	slas, groups, first, last := o.snapshot()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Equal(r.slas, slas) {
		if len(r.groups) > 0 || len(r.slas) > 0 {
			return errcodes.New(errcodes.InvalidParam, "latency: cannot merge recorders that count goodput against different SLAs")
		}
		r.slas, r.cuts = slas, cutsOf(slas)
	}
	if r.groups == nil {
		r.groups = map[GroupKey]*group{}
	}
	for k, g := range groups {
		if mine := r.groups[k]; mine != nil {
			mine.merge(g)
		} else {
			r.groups[k] = g
		}
	}
	r.widen(first, last)
	return nil
}

// Filter selects groups of a Recorder. Empty fields select all.
type Filter struct {
	Endpoint string
	Class    string
	// Starts selects by start scope (StartsWarm includes SuspectedCold).
	Starts Starts
	// kinds, when set, selects exactly these start kinds.
	kinds []latency.StartKind
}

func (f *Filter) match(k GroupKey) bool {
	if f.Endpoint != "" && f.Endpoint != k.Endpoint || f.Class != "" && f.Class != k.Class {
		return false
	}
	if f.kinds != nil {
		return slices.Contains(f.kinds, k.Start)
	}
	return Starts(cmp.Or(string(f.Starts), string(StartsAll))).covers(k.Start)
}

// Dist returns the merged distribution of a metric over the groups the
// filter selects (a copy: the caller may keep and change it).
func (r *Recorder) Dist(m latency.Metric, f Filter) *Dist {
	d, _, _ := r.distWithin(m, f, -1)
	return d
}

// distWithin returns Dist(m, f) and, read under the same lock, how many of
// its values are at most the threshold of a cut of m: exact reports
// whether the recorder counts that threshold for every selected group.
func (r *Recorder) distWithin(m latency.Metric, f Filter, threshold int64) (d *Dist, within uint64, exact bool) {
	d = &Dist{}
	if !m.Valid() {
		return d, 0, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.Index(r.cuts, cut{m, threshold})
	exact = i >= 0
	for k, g := range r.groups {
		if !f.match(k) {
			continue
		}
		d.Merge(&g.dists[m])
		if exact && len(g.within) == len(r.cuts) {
			within += g.within[i]
		} else {
			exact = false
		}
	}
	return d, within, exact
}

// Counts returns the summed counters of the groups the filter selects.
// Failed requests belong to no start kind: a filter on Starts other than
// StartsAll leaves them out.
func (r *Recorder) Counts(f Filter) Counts {
	var c Counts
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, g := range r.groups {
		if f.match(k) {
			c.merge(&g.counts)
		}
	}
	return c
}

// Groups lists the recorder's group keys, sorted by endpoint, class and
// start kind.
func (r *Recorder) Groups() []GroupKey {
	r.mu.Lock()
	keys := slices.Collect(maps.Keys(r.groups))
	r.mu.Unlock()
	slices.SortFunc(keys, compareKeys)
	return keys
}

var startOrder = map[latency.StartKind]int{latency.Warm: 0, latency.Cold: 1, latency.SuspectedCold: 2, "": 3}

func compareKeys(a, b GroupKey) int {
	return cmp.Or(cmp.Compare(a.Endpoint, b.Endpoint), cmp.Compare(a.Class, b.Class),
		cmp.Compare(startOrder[a.Start], startOrder[b.Start]), cmp.Compare(a.Start, b.Start))
}

// recorderJSON is a Recorder's wire form (version 1).
type recorderJSON struct {
	Version          int         `json:"version"`
	RelativeAccuracy float64     `json:"relative_accuracy"`
	First            time.Time   `json:"first,omitzero"`
	Last             time.Time   `json:"last,omitzero"`
	SLAs             []SLA       `json:"slas,omitempty"`
	Groups           []groupJSON `json:"groups"`
}

type groupJSON struct {
	GroupKey
	Counts  Counts                   `json:"counts"`
	Metrics map[latency.Metric]*Dist `json:"metrics"`
	// Within holds the group's exact counts of values at most each SLA
	// threshold; encodings without it are read as uncounted.
	Within []withinJSON `json:"within,omitempty"`
}

type withinJSON struct {
	Metric    latency.Metric `json:"metric"`
	Threshold int64          `json:"threshold"`
	Count     uint64         `json:"count"`
}

// MarshalJSON encodes the recorder so that decoding and merging encodings
// from several machines gives exactly the recorder that saw every sample.
// Times are wall-clock (monotonic readings do not cross machines).
func (r *Recorder) MarshalJSON() ([]byte, error) {
	slas, groups, first, last := r.snapshot()
	j := recorderJSON{Version: 1, RelativeAccuracy: RelativeAccuracy, First: first, Last: last, SLAs: slas, Groups: []groupJSON{}}
	keys := slices.Collect(maps.Keys(groups))
	slices.SortFunc(keys, compareKeys)
	for _, k := range keys {
		g := groups[k]
		gj := groupJSON{GroupKey: k, Counts: g.counts, Metrics: map[latency.Metric]*Dist{}}
		for m := range g.dists {
			if g.dists[m].n > 0 {
				gj.Metrics[latency.Metric(m)] = &g.dists[m]
			}
		}
		if cuts := cutsOf(slas); len(g.within) == len(cuts) {
			for i, c := range cuts {
				gj.Within = append(gj.Within, withinJSON{Metric: c.Metric, Threshold: c.Threshold, Count: g.within[i]})
			}
		}
		j.Groups = append(j.Groups, gj)
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes a recorder encoded by MarshalJSON, replacing r's
// content.
func (r *Recorder) UnmarshalJSON(b []byte) error {
	var j recorderJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return errcodes.Wrap(err, errcodes.InvalidParam, "latency: bad recorder encoding: "+err.Error())
	}
	if j.Version != 1 {
		return errcodes.Errorf(errcodes.InvalidParam, "latency: recorder encoding version %d, want 1", j.Version)
	}
	if j.RelativeAccuracy != RelativeAccuracy {
		return errcodes.Errorf(errcodes.InvalidParam, "latency: recorder relative accuracy %g, want %g", j.RelativeAccuracy, RelativeAccuracy)
	}
	for _, s := range j.SLAs {
		if err := s.Validate(); err != nil {
			return err
		}
	}
	cuts := cutsOf(j.SLAs)
	groups := make(map[GroupKey]*group, len(j.Groups))
	for _, gj := range j.Groups {
		if _, dup := groups[gj.GroupKey]; dup {
			return errcodes.Errorf(errcodes.InvalidParam, "latency: recorder encoding repeats group %+v", gj.GroupKey)
		}
		g := &group{counts: gj.Counts}
		for m, d := range gj.Metrics {
			if d != nil {
				g.dists[m] = *d
			}
		}
		within, err := decodeWithin(gj.Within, cuts, g)
		if err != nil {
			return errcodes.Errorf(errcodes.InvalidParam, "latency: recorder encoding, group %+v: %v", gj.GroupKey, err)
		}
		g.within = within
		groups[gj.GroupKey] = g
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.slas, r.cuts, r.groups, r.first, r.last = j.SLAs, cuts, groups, j.First, j.Last
	return nil
}

// decodeWithin orders a group's encoded threshold counts as cuts; nil when
// the encoding has none. Each cut must be there once, with a count no
// larger than the group's values of its metric.
func decodeWithin(in []withinJSON, cuts []cut, g *group) ([]uint64, error) {
	if len(in) == 0 {
		return nil, nil
	}
	if len(in) != len(cuts) {
		return nil, fmt.Errorf("%d threshold counts for %d SLA thresholds", len(in), len(cuts))
	}
	out := make([]uint64, len(cuts))
	seen := make([]bool, len(cuts))
	for _, w := range in {
		i := slices.Index(cuts, cut{w.Metric, w.Threshold})
		if i < 0 || seen[i] {
			return nil, fmt.Errorf("threshold count for %s ≤ %d matches no SLA, or repeats", w.Metric, w.Threshold)
		}
		if w.Count > g.dists[w.Metric].n {
			return nil, fmt.Errorf("%d %s values at most %d, of %d", w.Count, w.Metric, w.Threshold, g.dists[w.Metric].n)
		}
		out[i], seen[i] = w.Count, true
	}
	return out, nil
}
