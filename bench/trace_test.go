package bench_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
)

var traceSamples = []struct {
	file, format string
	n            int
	first        bench.TraceRecord
}{
	{"azure2023.csv", bench.TraceAzure, 40, bench.TraceRecord{InputTokens: 302, OutputTokens: 8}},
	{"azure2024.csv", bench.TraceAzure, 40, bench.TraceRecord{InputTokens: 54, OutputTokens: 6}},
	{"burstgpt.csv", bench.TraceBurstGPT, 40, bench.TraceRecord{InputTokens: 321, OutputTokens: 9}},
	{"mooncake.jsonl", bench.TraceMooncake, 30, bench.TraceRecord{InputTokens: 774, OutputTokens: 2, HashIDs: []int64{2, 100}}},
	{"bailian.jsonl", bench.TraceBailian, 30, bench.TraceRecord{InputTokens: 59, OutputTokens: 1, HashIDs: []int64{1000, 1001, 1002, 1003}}},
}

func traceFile(name string) string { return filepath.Join("testdata", "traces", name) }

func TestReadTraceSamples(t *testing.T) {
	for _, s := range traceSamples {
		t.Run(s.file, func(t *testing.T) {
			tr, err := bench.ReadTraceFile(traceFile(s.file))
			require.NoError(t, err)
			assert.Equal(t, s.format, tr.Format)
			require.Len(t, tr.Records, s.n)
			assert.Equal(t, s.first, tr.Records[0])
			assert.True(t, slices.IsSortedFunc(tr.Records, func(a, b bench.TraceRecord) int { return int(a.At - b.At) }))
			span := tr.Span()
			assert.True(t, span > time.Second && span <= 2*time.Second, "span %v", span)
		})
	}
}

func TestReadTraceTimes(t *testing.T) {
	// Azure: seven fractional digits, 100 ns resolution.
	tr, err := bench.ReadTrace(strings.NewReader("TIMESTAMP,ContextTokens,GeneratedTokens\n" +
		"2023-11-16 18:17:04.0000000,10,2\n2023-11-16 18:17:03.9799600,5,1\n"))
	require.NoError(t, err)
	assert.Equal(t, []bench.TraceRecord{{At: 0, InputTokens: 5, OutputTokens: 1}, {At: 20040 * time.Microsecond, InputTokens: 10, OutputTokens: 2}}, tr.Records)
	// BurstGPT v1 (no session columns), seconds.
	tr, err = bench.ReadTrace(strings.NewReader("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,472,18,490,Conversation log\n6.5,GPT-4,1,0,1,API log\n"))
	require.NoError(t, err)
	assert.Equal(t, bench.TraceBurstGPT, tr.Format)
	assert.Equal(t, []bench.TraceRecord{{At: 0, InputTokens: 472, OutputTokens: 18}, {At: 1500 * time.Millisecond, InputTokens: 1, OutputTokens: 0}}, tr.Records)
	// Mooncake: milliseconds.
	tr, err = bench.ReadTrace(strings.NewReader(`{"timestamp": 1000, "input_length": 600, "output_length": 3, "hash_ids": [1, 2]}` + "\n" + `{"timestamp": 1250, "input_length": 10, "output_length": 1, "hash_ids": [3]}`))
	require.NoError(t, err)
	assert.Equal(t, bench.TraceMooncake, tr.Format)
	assert.Equal(t, 512, tr.BlockTokens)
	assert.Equal(t, 250*time.Millisecond, tr.Records[1].At)
}

func TestReadTraceErrors(t *testing.T) {
	for name, in := range map[string]string{
		"empty":          "",
		"unknown header": "time,prompt,output\n1,2,3\n",
		"no records":     "TIMESTAMP,ContextTokens,GeneratedTokens\n",
		"bad time":       "TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,1,2\n",
		"bad count":      "Timestamp,Request tokens,Response tokens\n1,-4,2\n",
		"short row":      "Timestamp,Request tokens,Response tokens\n1,4\n",
		"bad json":       `{"timestamp": 1, "input_length": 2`,
		"missing field":  `{"timestamp": 1, "input_length": 2}`,
		"too long":       `{"timestamp": 1, "input_length": 2000, "output_length": 1, "hash_ids": [1]}`,
		"huge seconds":   "Timestamp,Request tokens,Response tokens\n1e300,4,2\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := bench.ReadTrace(strings.NewReader(in))
			require.Error(t, err)
			assert.Equal(t, errcodes.InvalidParam, errcodes.From(err).Code, "%v", err)
		})
	}
}

func TestTraceWindowAndShard(t *testing.T) {
	tr, err := bench.ReadTraceFile(traceFile("azure2023.csv"))
	require.NoError(t, err)
	w := tr.Window(500*time.Millisecond, time.Second)
	require.NotEmpty(t, w.Records)
	for _, r := range w.Records {
		assert.True(t, r.At >= 0 && r.At < time.Second, "%v", r.At)
	}
	var inWindow int
	for _, r := range tr.Records {
		if r.At >= 500*time.Millisecond && r.At < 1500*time.Millisecond {
			inWindow++
		}
	}
	assert.Len(t, w.Records, inWindow)
	first := slices.IndexFunc(tr.Records, func(r bench.TraceRecord) bool { return r.At >= 500*time.Millisecond })
	assert.Equal(t, tr.Records[first].At-500*time.Millisecond, w.Records[0].At)

	// The shards partition the trace: every record in exactly one, in
	// order, its time kept.
	const n = 3
	var all []bench.TraceRecord
	for i := range n {
		s := tr.Shard(i, n)
		for j, r := range s.Records {
			assert.Equal(t, tr.Records[i+j*n], r)
			assert.Equal(t, i, bench.TraceShard(i+j*n, n))
		}
		all = append(all, s.Records...)
	}
	slices.SortStableFunc(all, func(a, b bench.TraceRecord) int { return int(a.At - b.At) })
	assert.Equal(t, tr.Records, all)
}

// tracePlan is a plan replaying file at speed against the emulator's
// model "fast", streamed.
func tracePlan(file string, speed float64) *bench.Plan {
	tg := target("fast", true)
	return &bench.Plan{Targets: []bench.Target{tg},
		Load: bench.Load{Model: bench.LoadTrace, Trace: &bench.TraceLoad{File: traceFile(file), Speed: speed}}, Seed: 3}
}

func TestTraceReplayAgainstEmulator(t *testing.T) {
	ep := fastEndpoint("fast", 2)
	srv := startEmulator(t, 1, []emulator.Endpoint{ep})
	const speed = 2.0
	for _, s := range traceSamples {
		t.Run(s.file, func(t *testing.T) {
			srv.ResetRecords()
			p := tracePlan(s.file, speed)
			res, err := bench.Run(context.Background(), p, bench.Options{Connect: emulatorConnect(srv)})
			require.NoError(t, err)
			tr := res.Targets[0]
			require.Zero(t, tr.Counts().Failed, "%v", tr.ErrorExamples)
			trace, err := bench.ReadTraceFile(traceFile(s.file))
			require.NoError(t, err)
			require.Equal(t, int64(len(trace.Records)), tr.Sent)
			recs := srv.Records()
			require.Len(t, recs, len(trace.Records))
			slices.SortFunc(recs, func(a, b emulator.Record) int { return a.Arrival.Compare(b.Arrival) })

			// The schedule the run followed is the trace's, scaled: exactly.
			require.NoError(t, p.Prepare())
			sch := bench.ScheduleOf(p.Load, p.Seed)
			for i, r := range trace.Records {
				require.Equal(t, time.Duration(math.Round(float64(r.At)/speed)), sch.Next(), "send %d", i)
			}
			// The sends arrived at those times, within the generator's own
			// lag (its largest) and the way to the server. The in-process
			// server shares the machine's cores with the client: on a busy
			// machine it reads a request later, so the margin is wide.
			maxLag := time.Duration(tr.Dist(latency.ScheduleLag, "", "").Quantile(1))
			slack := maxLag + 250*time.Millisecond
			var late []time.Duration
			for i, r := range recs {
				want := tr.Begin.Add(time.Duration(float64(trace.Records[i].At) / speed))
				d := r.Arrival.Sub(want)
				late = append(late, d)
				assert.True(t, d >= -time.Millisecond && d <= slack, "request %d arrived %v after its trace time (lag up to %v)", i, d, maxLag)
			}
			slices.Sort(late)
			t.Logf("%s: arrival after the trace time: median %v, max %v; schedule lag max %v", s.file, late[len(late)/2], late[len(late)-1], maxLag)
			// The lengths: a prompt of the input length, and (ignore_eos)
			// exactly the output length, at least one token.
			type lengths struct{ in, out int }
			var want, got []lengths
			for _, r := range trace.Records {
				want = append(want, lengths{max(r.InputTokens, 1), max(r.OutputTokens, 1)})
			}
			for _, r := range recs {
				assert.True(t, r.IgnoreEOS)
				got = append(got, lengths{r.PromptTokens, r.OutputTokens})
			}
			cmp := func(a, b lengths) int { return (a.in-b.in)*1<<16 + a.out - b.out }
			slices.SortFunc(want, cmp)
			slices.SortFunc(got, cmp)
			assert.Equal(t, want, got)
			c := tr.Counts()
			assert.Equal(t, int64(len(trace.Records)), c.Requests)
		})
	}
}

// TestTracePrefixSharing replays Mooncake's sample against an emulator
// with a prefix cache: each request finds cached exactly the leading
// blocks an earlier request sent.
func TestTracePrefixSharing(t *testing.T) {
	ep := fastEndpoint("fast", 2)
	ep.Profile.PrefixCacheTokens = 1 << 20
	srv := startEmulator(t, 1, []emulator.Endpoint{ep})
	trace, err := bench.ReadTraceFile(traceFile("mooncake.jsonl"))
	require.NoError(t, err)
	// The design: the leading blocks whose chain of ids an earlier record
	// began with.
	seen := map[string]bool{}
	want := map[int]int{} // input length → cached tokens (the sample's lengths are distinct)
	total := 0
	for _, r := range trace.Records {
		hit := 0
		for j := range r.HashIDs {
			if !seen[fmt.Sprint(r.HashIDs[:j+1])] {
				break
			}
			hit = min((j+1)*bench.MooncakeBlockTokens, r.InputTokens)
		}
		for j := range r.HashIDs {
			seen[fmt.Sprint(r.HashIDs[:j+1])] = true
		}
		_, dup := want[r.InputTokens]
		require.False(t, dup, "the sample's input lengths name its records")
		want[r.InputTokens] = hit
		total += hit
	}
	require.Positive(t, total, "the sample shares prefixes")

	res, err := bench.Run(context.Background(), tracePlan("mooncake.jsonl", 1), bench.Options{Connect: emulatorConnect(srv)})
	require.NoError(t, err)
	require.Zero(t, res.Targets[0].Counts().Failed, "%v", res.Targets[0].ErrorExamples)
	got, gotTotal := map[int]int{}, 0
	for _, r := range srv.Records() {
		got[r.PromptTokens] = r.CachedTokens
		gotTotal += r.CachedTokens
	}
	assert.Equal(t, want, got)
	assert.Equal(t, total, gotTotal)
	assert.Equal(t, float64(total), metricValue(t, srv, "vllm:prefix_cache_hits_total"))
}

// metricValue reads one metric of the emulator's model "fast" (0 when
// it is not there).
func metricValue(t *testing.T, srv *emulator.Server, name string) float64 {
	t.Helper()
	resp, err := http.Get(srv.URL() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, name+`{model_name="fast"} `); ok {
			var v float64
			_, err := fmt.Sscan(rest, &v)
			require.NoError(t, err)
			return v
		}
	}
	return 0 // a counter not yet counted is not exported
}

func TestTracePlanErrors(t *testing.T) {
	for name, tl := range map[string]*bench.TraceLoad{
		"no file":   {},
		"missing":   {File: traceFile("nope.csv")},
		"speed":     {File: traceFile("azure2023.csv"), Speed: -1},
		"shard":     {File: traceFile("azure2023.csv"), Shard: 3, Shards: 3},
		"empty win": {File: traceFile("azure2023.csv"), Start: bench.Duration(time.Hour)},
	} {
		t.Run(name, func(t *testing.T) {
			p := tracePlan("azure2023.csv", 1)
			p.Load.Trace = tl
			err := p.Prepare()
			require.Error(t, err)
			assert.Equal(t, errcodes.InvalidParam, errcodes.From(err).Code)
		})
	}
	// Without limits, the trace's length is the run's.
	p := tracePlan("azure2023.csv", 1)
	p.Load.Trace.Shards, p.Load.Trace.Shard = 4, 1
	require.NoError(t, p.Prepare())
	assert.Equal(t, 10, p.Limits.Requests)
	assert.Contains(t, p.Load.String(), "shard 1 of 4")
}

func TestTraceShardsMerge(t *testing.T) {
	srv := startEmulator(t, 1, []emulator.Endpoint{fastEndpoint("fast", 2)})
	var parts []*bench.Result
	for i := range 2 {
		p := tracePlan("burstgpt.csv", 4)
		p.Load.Trace.Shard, p.Load.Trace.Shards = i, 2
		p.Seed = uint64(i + 1)
		res, err := bench.Run(context.Background(), p, bench.Options{Connect: emulatorConnect(srv)})
		require.NoError(t, err)
		parts = append(parts, res)
	}
	m, err := bench.Merge(parts...)
	require.NoError(t, err)
	assert.Equal(t, int64(40), m.Targets[0].Sent)
}
