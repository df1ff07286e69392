package bench

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/impair"
	"github.com/cloudinfer/cloudinfer/latency/stats"
)

// Merge combines results of the same plan run on several machines into
// one, as if one client had sent every request: targets of the same name
// merge their recorders (exactly), counts, tags and time series (aligned
// on each run's start); the chart samples are pooled and thinned to
// MaxPoints. Ladder traces cannot be summed and are kept from the first
// result. The inputs are not modified. The same run twice (also inside a
// result merged before), or runs of different plans, are refused; the
// seeds may differ, and should (give each machine its own --seed), or
// every machine sends the same arrival times and mix order. The shards of
// a sharded run (RunShard) merge only all together: shards of different
// plans, a shard given twice and a missing shard are refused; the merged
// result lists them (Shards) and the spread of their starts (StartSpread).
func Merge(results ...*Result) (*Result, error) {
	if len(results) == 0 {
		return nil, errcodes.New(errcodes.InvalidParam, "bench: nothing to merge")
	}
	for _, r := range results {
		if r == nil {
			return nil, errcodes.New(errcodes.InvalidParam, "bench: merge: nil result")
		}
	}
	if err := mergeable(results); err != nil {
		return nil, err
	}
	if err := checkShards(results); err != nil {
		return nil, err
	}
	out := &Result{Version: ResultVersion, Plan: results[0].Plan, Begin: results[0].Begin, End: results[0].End}
	byName := map[string]*TargetResult{}
	for _, r := range results {
		if r.Begin.Before(out.Begin) {
			out.Begin = r.Begin
		}
		if r.End.After(out.End) {
			out.End = r.End
		}
		out.Hosts = append(out.Hosts, r.Hosts...)
		out.Interrupted = out.Interrupted || r.Interrupted
		for _, t := range r.Targets {
			m := byName[t.Name]
			if m == nil {
				m = emptyLike(t)
				byName[t.Name] = m
				out.Targets = append(out.Targets, m)
			}
			if err := m.merge(t); err != nil {
				return nil, err
			}
		}
	}
	mergeShards(out, results)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, t := range out.Targets {
		if len(t.Points) > MaxPoints {
			rng.Shuffle(len(t.Points), func(i, j int) { t.Points[i], t.Points[j] = t.Points[j], t.Points[i] })
			t.Points = t.Points[:MaxPoints]
			slices.SortFunc(t.Points, func(a, b Point) int {
				switch {
				case a.T < b.T:
					return -1
				case a.T > b.T:
					return 1
				}
				return 0
			})
		}
	}
	return out, nil
}

func emptyLike(t *TargetResult) *TargetResult {
	return &TargetResult{
		Name: t.Name, Provider: t.Provider, Service: t.Service, Endpoint: t.Endpoint, Model: t.Model,
		Action: t.Action, Stream: t.Stream, Load: t.Load, Network: t.Network, Begin: t.Begin, CPU: -1, MachineCPU: -1,
		Recorder: &stats.Recorder{}, Series: &Series{Width: Duration(firstBucket)},
	}
}

// merge adds o into t.
func (t *TargetResult) merge(o *TargetResult) error {
	if o.Stream != t.Stream || o.Action != t.Action {
		return errcodes.Errorf(errcodes.InvalidParam, "bench: merge: target %q was run differently (stream %v/%v, action %s/%s)",
			t.Name, t.Stream, o.Stream, t.Action, o.Action)
	}
	if o.Recorder != nil {
		if err := t.Recorder.Merge(o.Recorder); err != nil {
			return err
		}
	}
	t.Machines += max(o.Machines, 1)
	switch {
	case t.Begin.IsZero():
		t.Begin, t.Wall = o.Begin, o.Wall
	case !o.Begin.IsZero():
		// The merged run spans from the earliest start to the latest end,
		// as the merged recorders' window does.
		end := t.Begin.Add(t.Wall.D())
		if oe := o.Begin.Add(o.Wall.D()); oe.After(end) {
			end = oe
		}
		if o.Begin.Before(t.Begin) {
			t.Begin = o.Begin
		}
		t.Wall = Duration(end.Sub(t.Begin))
	}
	t.Sent += o.Sent
	t.Late += o.Late
	t.Cut += o.Cut
	t.Unsent += o.Unsent
	t.OfferedRate += o.OfferedRate
	t.SendRate += o.SendRate
	if o.CPU > t.CPU {
		t.CPU = o.CPU // the busiest machine
	}
	if o.MachineCPU > t.MachineCPU {
		t.MachineCPU = o.MachineCPU
	}
	t.GCs += o.GCs
	t.GCPauseMax = max(t.GCPauseMax, o.GCPauseMax)
	if t.Ladder == nil {
		t.Ladder = o.Ladder
	}
	for _, w := range o.Warnings {
		if !slices.Contains(t.Warnings, w) {
			t.Warnings = append(t.Warnings, w)
		}
	}
	for k, v := range o.ErrorExamples {
		if t.ErrorExamples == nil {
			t.ErrorExamples = map[string]string{}
		}
		if _, ok := t.ErrorExamples[k]; !ok {
			t.ErrorExamples[k] = v
		}
	}
	if t.Fatal == "" {
		t.Fatal = o.Fatal
	}
	for dim, vals := range o.Tags {
		if t.Tags == nil {
			t.Tags = map[string]map[string]*TagStats{}
		}
		if t.Tags[dim] == nil {
			t.Tags[dim] = map[string]*TagStats{}
		}
		for v, ts := range vals {
			m := t.Tags[dim][v]
			if m == nil {
				m = &TagStats{}
				t.Tags[dim][v] = m
			}
			m.Count += ts.Count
			m.Errors += ts.Errors
			mergeDist(&m.E2E, ts.E2E)
		}
	}
	for i, ts := range o.Turns {
		if ts == nil {
			continue
		}
		for len(t.Turns) <= i {
			t.Turns = append(t.Turns, &TurnStats{Turn: len(t.Turns) + 1})
		}
		t.Turns[i].merge(ts)
	}
	t.SessionsOpened += o.SessionsOpened
	t.SessionsClosed += o.SessionsClosed
	if o.Series != nil {
		t.Series.mergeFrom(o.Series)
	}
	t.Points = append(t.Points, o.Points...)
	t.mergeServer(o.Server)
	return nil
}

// mergeFrom adds o's buckets, aligned on the runs' starts, after bringing
// both to the same (the coarser) width.
func (s *Series) mergeFrom(o *Series) {
	o = o.copy()
	for s.Width < o.Width {
		s.coarsen()
	}
	for o.Width < s.Width {
		o.coarsen()
	}
	for i, b := range o.Buckets {
		for len(s.Buckets) <= i {
			s.Buckets = append(s.Buckets, &Bucket{})
		}
		s.Buckets[i].merge(b)
	}
	for len(s.Buckets) > MaxBuckets {
		s.coarsen()
	}
}

func (s *Series) copy() *Series {
	c := &Series{Width: s.Width}
	for _, b := range s.Buckets {
		nb := &Bucket{}
		nb.merge(b)
		c.Buckets = append(c.Buckets, nb)
	}
	if c.Width <= 0 {
		c.Width = Duration(firstBucket)
	}
	return c
}

// planKey is what makes two plans the same for Merge: all but the seeds
// (the plan's, and its targets' network impairments'), and a trace's
// shard and request limit.
func planKey(p *Plan) ([]byte, error) {
	var c Plan
	if p != nil {
		c = *p
		c.Seed = 0
		if tl := c.Load.Trace; tl != nil {
			// The shards of one trace merge: each replays its own part,
			// and its request limit is its part's length.
			t := *tl
			t.Shard = 0
			c.Load.Trace = &t
			c.Limits.Requests = 0
		}
		c.Targets = slices.Clone(p.Targets)
		for i := range c.Targets {
			if np, err := impair.Parse(c.Targets[i].Network); err == nil {
				np.Seed = 0
				c.Targets[i].Network = np.String()
			}
		}
	}
	b, err := json.Marshal(&c)
	if err != nil {
		return nil, errcodes.Wrap(err, errcodes.Internal, "bench: merge: encode plan: "+err.Error())
	}
	return b, nil
}

// mergeable refuses results that would merge into a wrong figure: the same
// run twice (its requests counted twice), or runs of different plans. The
// plans' seeds may differ: machines that share a seed send the same
// arrival times and the same mix order, so each should have its own.
func mergeable(results []*Result) error {
	plan0, err := planKey(results[0].Plan)
	if err != nil {
		return err
	}
	type run struct {
		begin, end time.Time
		hosts      string
	}
	seen := map[run]int{}
	for i, r := range results {
		hosts := ""
		for _, h := range r.Hosts {
			hosts += h.Name + "\x00"
		}
		k := run{r.Begin, r.End, hosts}
		if j, ok := seen[k]; ok {
			return errcodes.Errorf(errcodes.InvalidParam, "bench: merge: results %d and %d are the same run (same machines, same start and end): its requests would count twice", j+1, i+1)
		}
		seen[k] = i
		p, err := planKey(r.Plan)
		if err != nil {
			return err
		}
		if !bytes.Equal(p, plan0) {
			return errcodes.Errorf(errcodes.InvalidParam, "bench: merge: result %d ran another plan than result 1; merge only runs of one plan", i+1)
		}
	}
	// A merged result keeps its machines' names but not each run's span:
	// a machine it shares with another result over the same time is, as
	// far as the files tell, the same run in both.
	for i, a := range results {
		for j := i + 1; j < len(results); j++ {
			b := results[j]
			if len(a.Hosts) < 2 && len(b.Hosts) < 2 || !overlap(a, b) {
				continue // two single runs: the check above
			}
			for _, h := range a.Hosts {
				if slices.ContainsFunc(b.Hosts, func(o Host) bool { return o.Name == h.Name }) {
					return errcodes.Errorf(errcodes.InvalidParam,
						"bench: merge: results %d and %d both hold a run of machine %q over the same time: its requests would count twice; merge the original results instead", i+1, j+1, h.Name)
				}
			}
		}
	}
	return nil
}

// overlap reports whether two results' spans meet; a missing end counts
// as the begin.
func overlap(a, b *Result) bool {
	end := func(r *Result) time.Time {
		if r.End.Before(r.Begin) {
			return r.Begin
		}
		return r.End
	}
	return !a.Begin.After(end(b)) && !b.Begin.After(end(a))
}
