package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// MaxShards bounds how many workers a plan is split over.
const MaxShards = 10000

// Shard says which part of a sharded plan a worker's result holds: worker
// Index of Count, of the plan whose PlanHash is Plan. The result's own
// Plan is the whole plan, not the worker's part of it, so that the shards
// of one run hold the same plan and Merge can check that they do.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
	// Plan is the whole plan's PlanHash.
	Plan string `json:"plan"`
}

// ShardRun is one shard of a merged result: its index, the machine that
// ran it and when its run began (Result.Begin, before the warm-up).
type ShardRun struct {
	Index int       `json:"index"`
	Host  string    `json:"host"`
	Begin time.Time `json:"begin"`
}

// ShardSpreadWarning is the spread of the shards' measured starts, as a
// share of the merged run's wall time, beyond which Merge warns: the
// shards did not send together, and the merged rate was not the plan's
// all along.
const ShardSpreadWarning = 0.01

// PlanHash returns a short hash of a prepared plan as a result file
// records it (payload bodies and header values left out): the shards of
// one run share it, and Merge refuses shards whose hashes differ.
func PlanHash(p *Plan) (string, error) {
	if p == nil {
		return "", errcodes.New(errcodes.InvalidParam, "bench: plan hash: no plan")
	}
	b, err := json.Marshal(p.public())
	if err != nil {
		return "", errcodes.Wrap(err, errcodes.Internal, "bench: plan hash: "+err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}

// ShardSeed returns the seed of worker index of a plan seeded with seed:
// each worker draws its own Poisson arrivals and mix deck, and the same
// plan and index draw the same ones again. Worker 0 of 1 keeps seed.
func ShardSeed(seed uint64, index int) uint64 {
	if index == 0 {
		return seed
	}
	// splitmix64 of the seed offset by the index: neighbouring indices
	// and seeds give unrelated streams.
	z := seed + uint64(index)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	if z == 0 {
		z = 1 // 0 means "default" to Prepare
	}
	return z
}

// splitCount returns worker index's part of total split over count
// workers: total/count, one more for the first total%count workers, so
// that the parts add up to total exactly.
func splitCount(total, index, count int) int {
	n := total / count
	if index < total%count {
		n++
	}
	return n
}

// ShardPlan returns worker index's part (of count workers) of the prepared
// plan p; p is not modified. The workers together run p's load:
//
//   - closed loop: the concurrency split over the workers (it must be at
//     least count), the first concurrency%count workers one more each;
//   - constant rate λ: each worker λ/count, worker i's sends offset by
//     i/λ, so that together they send at exactly the plan's times;
//   - Poisson rate λ: each worker an independent Poisson stream of rate
//     λ/count (their sum is a Poisson stream of rate λ), with its own
//     seed (ShardSeed);
//   - gamma rate λ: each worker λ/count with the plan's burstiness (the
//     sum has the plan's rate and, over long windows, its variance; its
//     gaps are closer to Poisson's than one stream's);
//   - ramp: each worker's rates From/count to To/count, over the same
//     time (constant arrivals are not offset between workers);
//   - trace replay: record j of the replayed window goes to worker
//     j mod count (Trace.Shard), its time kept, so the workers' sends add
//     up to the trace's; a plan whose trace is already sharded is refused;
//   - sessions: the users split as the concurrency is;
//   - the request limit split exactly as the concurrency is (it must be at
//     least count), and so the in-flight cap; the duration is each
//     worker's.
//
// Every worker draws its mix deck, its Poisson, gamma and think-time draws
// and its requests' own prompt text with its own seed; shared prefixes and
// a trace's hash blocks stay shared across workers. The warm-up is each
// worker's own (it warms that worker's connections) and is left out of
// the results. The ladder decides each step from its own requests' p95
// and is not split: it is refused, as is any other load model.
func (p *Plan) ShardPlan(index, count int) (*Plan, error) {
	bad := func(format string, args ...any) (*Plan, error) {
		return nil, errcodes.Errorf(errcodes.InvalidParam, "bench: shards: "+format, args...)
	}
	if count < 1 || count > MaxShards {
		return bad("%d shards: want 1 to %d", count, MaxShards)
	}
	if index < 0 || index >= count {
		return bad("shard %d of %d: want an index from 0 to %d", index, count, count-1)
	}
	c := *p
	if count == 1 {
		return &c, nil
	}
	c.Seed = ShardSeed(p.Seed, index)
	l := &c.Load
	switch l.Model {
	case LoadClosed:
		if l.Concurrency < count {
			return bad("concurrency %d cannot be split over %d shards: give each at least one worker", l.Concurrency, count)
		}
		l.Concurrency = splitCount(l.Concurrency, index, count)
	case LoadConstant:
		l.phase = time.Duration(float64(index) / l.Rate * float64(time.Second))
		l.Rate /= float64(count)
	case LoadPoisson, LoadGamma:
		l.Rate /= float64(count)
	case LoadRamp:
		rp := *l.Ramp
		rp.From /= float64(count)
		rp.To /= float64(count)
		l.Ramp = &rp
	case LoadTrace:
		tl := *l.Trace
		if tl.Shards > 1 {
			return bad("the plan's trace already replays part %d of %d: drop its shard and shards, and let --shards split it", tl.Shard, tl.Shards)
		}
		if tl.trace == nil || len(tl.trace.Records) < count {
			return bad("a trace of fewer records than %d shards cannot be split", count)
		}
		tl.Shard, tl.Shards = index, count
		tl.trace = tl.trace.Shard(index, count)
		l.Trace = &tl
	case LoadSessions:
		ss := *l.Sessions
		if ss.Users < count {
			return bad("%d users cannot be split over %d shards: give each at least one", ss.Users, count)
		}
		ss.Users = splitCount(ss.Users, index, count)
		l.Sessions = &ss
	case LoadLadder:
		return bad("the ladder decides each step from the p95 of its own requests, which one worker of several does not see; run it on one machine")
	default:
		return bad("load model %q cannot be split over shards", l.Model)
	}
	if l.MaxInFlight < count {
		return bad("max in flight %d cannot be split over %d shards", l.MaxInFlight, count)
	}
	l.MaxInFlight = splitCount(l.MaxInFlight, index, count)
	if n := p.Limits.Requests; n > 0 {
		if n < count {
			return bad("%d requests cannot be split over %d shards: give each at least one", n, count)
		}
		c.Limits.Requests = splitCount(n, index, count)
	}
	return &c, nil
}

// RunShard prepares p and runs worker index's part of it (of count
// workers; see ShardPlan), as Run does. The result holds the whole plan
// (not the worker's part) and its Shard, so that Merge can put the
// shards of one run back together, refusing those of another plan and a
// missing or repeated shard.
func RunShard(ctx context.Context, p *Plan, index, count int, opts Options) (*Result, error) {
	if err := p.Prepare(); err != nil {
		return nil, err
	}
	sp, err := p.ShardPlan(index, count)
	if err != nil {
		return nil, err
	}
	hash, err := PlanHash(p)
	if err != nil {
		return nil, err
	}
	res, err := Run(ctx, sp, opts)
	if err != nil {
		return nil, err
	}
	res.Plan = p.public()
	res.Shard = &Shard{Index: index, Count: count, Plan: hash}
	return res, nil
}

// checkShards refuses shards that do not make one whole run: a shard
// merged with a result that is none, shards of different plans (or
// different counts), a shard whose plan does not hash to its record, a
// shard given twice, and a missing shard.
func checkShards(results []*Result) error {
	first := -1
	for i, r := range results {
		if r.Shard != nil && first < 0 {
			first = i
		}
	}
	if first < 0 {
		return nil
	}
	bad := func(format string, args ...any) error {
		return errcodes.Errorf(errcodes.InvalidParam, "bench: merge: "+format, args...)
	}
	s0 := results[first].Shard
	seen := map[int]int{}
	for i, r := range results {
		s := r.Shard
		if s == nil {
			return bad("result %d is shard %d of %d, result %d is no shard: merge the shards of one run, all of them, and nothing else",
				first+1, s0.Index, s0.Count, i+1)
		}
		if s.Count != s0.Count || s.Plan != s0.Plan {
			return bad("result %d is a shard of %d of plan %s, result %d of %d of plan %s: shards of different plans do not merge",
				i+1, s.Count, s.Plan, first+1, s0.Count, s0.Plan)
		}
		if s.Index < 0 || s.Index >= s.Count {
			return bad("result %d is shard %d of %d: no such shard", i+1, s.Index, s.Count)
		}
		if h, err := PlanHash(r.Plan); err != nil || h != s.Plan {
			return bad("result %d says it ran plan %s, but its plan hashes to %s: the file was changed", i+1, s.Plan, h)
		}
		if j, ok := seen[s.Index]; ok {
			return bad("results %d and %d are both shard %d of %d: its requests would count twice", j+1, i+1, s.Index, s.Count)
		}
		seen[s.Index] = i
	}
	if len(seen) < s0.Count {
		var missing []string
		for i := 0; i < s0.Count && len(missing) < 10; i++ {
			if _, ok := seen[i]; !ok {
				missing = append(missing, fmt.Sprint(i))
			}
		}
		more := ""
		if n := s0.Count - len(seen); n > len(missing) {
			more = fmt.Sprintf(" and %d more", n-len(missing))
		}
		return bad("%d of %d shards are missing (%s%s): the merged counts would fall short of the plan's",
			s0.Count-len(seen), s0.Count, strings.Join(missing, ", "), more)
	}
	return nil
}

// mergeShards fills a merged result of a whole run's shards: the shards
// it holds, each target's load (the whole plan's, not one worker's) and
// the spread of the shards' measured starts, with a warning when the
// spread passes ShardSpreadWarning of the run's wall time.
func mergeShards(out *Result, results []*Result) {
	if len(results) == 0 || results[0].Shard == nil {
		return
	}
	for _, r := range results {
		host := ""
		if len(r.Hosts) > 0 {
			host = r.Hosts[0].Name
		}
		out.Shards = append(out.Shards, ShardRun{Index: r.Shard.Index, Host: host, Begin: r.Begin})
	}
	slices.SortFunc(out.Shards, func(a, b ShardRun) int { return a.Index - b.Index })
	for _, t := range out.Targets {
		if out.Plan != nil {
			t.Load = out.Plan.Load.String()
		}
		var lo, hi time.Time
		for _, r := range results {
			for _, o := range r.Targets {
				if o.Name != t.Name || o.Begin.IsZero() {
					continue
				}
				if lo.IsZero() || o.Begin.Before(lo) {
					lo = o.Begin
				}
				if o.Begin.After(hi) {
					hi = o.Begin
				}
			}
		}
		t.StartSpread = Duration(hi.Sub(lo))
		if t.Wall > 0 && float64(t.StartSpread) > ShardSpreadWarning*float64(t.Wall) {
			t.Warnings = append(t.Warnings, fmt.Sprintf(
				"the %d shards started their measured runs %v apart (%.1f%% of the run): the merged load was below the plan's at its start and end",
				len(results), t.StartSpread.D().Round(time.Millisecond), 100*float64(t.StartSpread)/float64(t.Wall)))
		}
	}
}
