package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/latency/stats"
)

// ResultVersion is the version of the Result JSON format.
const ResultVersion = 1

// Result is a whole benchmark's outcome. It is JSON (Save, ReadResult),
// and results of the same plan run on several machines merge into one
// (Merge): distributions merge exactly, counts add up.
type Result struct {
	Version int `json:"version"`
	// Plan is the plan that ran (payload bodies and header values left out).
	Plan *Plan `json:"plan"`
	// Begin and End bound the run (wall clock, for the record).
	Begin time.Time `json:"begin"`
	End   time.Time `json:"end"`
	// Hosts names the machines whose runs are in the result, with their
	// CPU count.
	Hosts   []Host          `json:"hosts"`
	Targets []*TargetResult `json:"targets"`
	// Interrupted is set when the run was stopped before its limits.
	Interrupted bool `json:"interrupted,omitempty"`
	// Shard, on one worker's result of a sharded run (bench --shards),
	// says which part of the plan it ran (Plan is the whole plan).
	Shard *Shard `json:"shard,omitempty"`
	// Shards, on a merged result of a sharded run, lists its shards.
	Shards []ShardRun `json:"shards,omitempty"`
}

// Host is a machine that contributed to a result.
type Host struct {
	Name string `json:"name"`
	CPUs int    `json:"cpus"`
}

// TargetResult is one target's outcome.
type TargetResult struct {
	Name     string `json:"name"`
	Provider string `json:"provider"`
	Service  string `json:"service"`
	Endpoint string `json:"endpoint,omitempty"`
	Model    string `json:"model,omitempty"`
	Action   string `json:"action"`
	Stream   bool   `json:"stream"`
	Load     string `json:"load"`
	// Network is the impairment the target's connections went through
	// (Target.Network), if any.
	Network string `json:"network,omitempty"`
	// Begin is when the measured run started; Wall is how long it took,
	// to the last response (merged: from the earliest start to the latest
	// end). Wall is the denominator of every throughput of the target
	// (requests, successes, tokens and goodput per second), and its
	// Recorder's window; SendRate alone is over the span of the sends.
	Begin time.Time `json:"begin"`
	Wall  Duration  `json:"wall"`
	// Sent counts measured requests sent; Late those whose schedule lag
	// passed Load.LateAfter.
	Sent int64 `json:"sent"`
	Late int64 `json:"late"`
	// Cut counts measured requests the run itself canceled, still in
	// flight after its drain (Options.Drain) or a second interrupt: they
	// are in Sent but in no figure, neither failed nor successful.
	Cut int64 `json:"cut,omitempty"`
	// Unsent counts the open loop's sends that were due before the
	// duration ended but could not be made by then (plus LateAfter): the
	// target or the in-flight cap could not keep up. They are not in Sent.
	Unsent int64 `json:"unsent,omitempty"`
	// CapWaits counts the open loop's sends that found every worker busy
	// at the in-flight cap (Load.MaxInFlight) and waited for one: sends
	// late because the target did not keep up, not the client.
	CapWaits int64 `json:"cap_waits,omitempty"`
	// Saturated, when set, says why the client itself was the bottleneck
	// (CPU-bound, or sends late or unsent with workers to spare): the
	// figures that measure the generator (sent /s, lag, late, the figures
	// from the intended send) are then the client's, not the target's,
	// and the reports mark them.
	Saturated string `json:"saturated,omitempty"`
	// OfferedRate is the open loop's scheduled rate (0 otherwise);
	// SendRate the rate the sends achieved: (sent − 1) / (last − first send).
	OfferedRate float64 `json:"offered_rate,omitempty"`
	SendRate    float64 `json:"send_rate,omitempty"`
	// CPU is the process's CPU use during the run, as a share of all the
	// machine's cores (−1: not measured).
	CPU float64 `json:"cpu"`
	// MachineCPU is the whole machine's CPU use during the run (every
	// process), as a share of its cores (−1: not measured).
	MachineCPU float64 `json:"machine_cpu"`
	// GCs counts the client process's own garbage collections during the
	// run, and GCPauseMax is the longest stop of the world among them (to
	// the runtime's histogram bucket, a few percent wide): the sends due
	// during a pause go out after it, so a pause over a millisecond is in
	// the schedule lag's tail (see warnings). Merged: the sum of the
	// collections and the longest pause.
	GCs        int64    `json:"gcs,omitempty"`
	GCPauseMax Duration `json:"gc_pause_max,omitempty"`
	// Recorder holds every measured request's metrics, split by class and
	// start kind, with the target's name as endpoint; its counts hold the
	// errors by code.
	Recorder *stats.Recorder `json:"recorder"`
	// Tags holds per tag dimension and value the count and E2E.
	Tags map[string]map[string]*TagStats `json:"tags,omitempty"`
	// Turns holds the sessions model's figures by turn: Turns[k-1] is
	// every conversation's turn k.
	Turns []*TurnStats `json:"turns,omitempty"`
	// SessionsOpened and SessionsClosed count the stateful sessions
	// (SageMaker) the sessions model opened and saw closed.
	SessionsOpened int64 `json:"sessions_opened,omitempty"`
	SessionsClosed int64 `json:"sessions_closed,omitempty"`
	// ErrorExamples holds the first message seen of each error code.
	ErrorExamples map[string]string `json:"error_examples,omitempty"`
	// Series is the run over time; Points a sample of requests for charts.
	Series *Series      `json:"series"`
	Points []Point      `json:"points,omitempty"`
	Ladder *LadderTrace `json:"ladder,omitempty"`
	// Warnings are the generator's own problems that may distort the
	// figures (CPU-bound, behind schedule).
	Warnings []string `json:"warnings,omitempty"`
	// Fatal says why the target could not be run at all.
	Fatal string `json:"fatal,omitempty"`
	// Machines is how many runs were merged into this one.
	Machines int `json:"machines,omitempty"`
	// StartSpread, on a merged result of a sharded run, is how far apart
	// the shards' measured runs of the target started (their Begin).
	StartSpread Duration `json:"start_spread,omitempty"`
	// Server is what the target's servers said: their scraped metrics
	// over the measured window and, where a server keeps per-request
	// records, the requests joined with them (see Decompose).
	Server *ServerResult `json:"server,omitempty"`
}

// TagStats is the requests with one value of a tag dimension.
type TagStats struct {
	Count  int64       `json:"count"`
	Errors int64       `json:"errors"`
	E2E    *stats.Dist `json:"e2e,omitempty"`
}

func (t *TagStats) add(s *latency.Sample) {
	t.Count++
	if s.Err != "" {
		t.Errors++
		return
	}
	if v, ok := s.Value(latency.E2E); ok {
		if t.E2E == nil {
			t.E2E = &stats.Dist{}
		}
		t.E2E.Add(v)
	}
}

// TurnStats is the requests of one turn index of the sessions model.
type TurnStats struct {
	// Turn is the turn index (1: a conversation's first request).
	Turn   int   `json:"turn"`
	Count  int64 `json:"count"`
	Errors int64 `json:"errors"`
	// PromptTokens sums the turns' estimated prompt lengths (bytes /
	// CharsPerToken, rounded up): the conversation so far.
	PromptTokens int64       `json:"prompt_tokens"`
	TTFT         *stats.Dist `json:"ttft,omitempty"`
	E2E          *stats.Dist `json:"e2e,omitempty"`
}

// MeanPromptTokens returns the turn's mean prompt length.
func (t *TurnStats) MeanPromptTokens() float64 {
	if t.Count == 0 {
		return 0
	}
	return float64(t.PromptTokens) / float64(t.Count)
}

func (t *TurnStats) add(promptTokens int, s *latency.Sample) {
	t.Count++
	t.PromptTokens += int64(promptTokens)
	if s.Err != "" {
		t.Errors++
		return
	}
	if v, ok := s.Value(latency.TTFT); ok && s.Streamed {
		if t.TTFT == nil {
			t.TTFT = &stats.Dist{}
		}
		t.TTFT.Add(v)
	}
	if v, ok := s.Value(latency.E2E); ok {
		if t.E2E == nil {
			t.E2E = &stats.Dist{}
		}
		t.E2E.Add(v)
	}
}

func (t *TurnStats) merge(o *TurnStats) {
	t.Count += o.Count
	t.Errors += o.Errors
	t.PromptTokens += o.PromptTokens
	mergeDist(&t.TTFT, o.TTFT)
	mergeDist(&t.E2E, o.E2E)
}

// Series is a run over time, in buckets of Width from the run's start, by
// intended send time (the call's start in a closed loop).
type Series struct {
	Width   Duration  `json:"width"`
	Buckets []*Bucket `json:"buckets"`
}

// Bucket is one time bucket of a Series.
type Bucket struct {
	Count  int64       `json:"count"`
	Errors int64       `json:"errors"`
	Cold   int64       `json:"cold"`
	E2E    *stats.Dist `json:"e2e,omitempty"`
	TTFT   *stats.Dist `json:"ttft,omitempty"`
}

func (s *Series) add(off time.Duration, smp *latency.Sample) {
	off = max(off, 0)
	i := int(off / s.Width.D())
	for i >= MaxBuckets {
		s.coarsen()
		i = int(off / s.Width.D())
	}
	for len(s.Buckets) <= i {
		s.Buckets = append(s.Buckets, &Bucket{})
	}
	b := s.Buckets[i]
	b.Count++
	if smp.Err != "" {
		b.Errors++
		return
	}
	if smp.Start == latency.Cold {
		b.Cold++
	}
	if v, ok := smp.Value(latency.E2E); ok {
		if b.E2E == nil {
			b.E2E = &stats.Dist{}
		}
		b.E2E.Add(v)
	}
	if v, ok := smp.Value(latency.TTFT); ok && smp.Streamed {
		if b.TTFT == nil {
			b.TTFT = &stats.Dist{}
		}
		b.TTFT.Add(v)
	}
}

// coarsen doubles the bucket width, merging neighbours.
func (s *Series) coarsen() {
	s.Width *= 2
	var out []*Bucket
	for i := 0; i < len(s.Buckets); i += 2 {
		b := s.Buckets[i]
		if i+1 < len(s.Buckets) {
			b.merge(s.Buckets[i+1])
		}
		out = append(out, b)
	}
	s.Buckets = out
}

func mergeDist(a **stats.Dist, b *stats.Dist) {
	if b == nil {
		return
	}
	if *a == nil {
		*a = b.Copy()
		return
	}
	(*a).Merge(b)
}

func (b *Bucket) merge(o *Bucket) {
	b.Count += o.Count
	b.Errors += o.Errors
	b.Cold += o.Cold
	mergeDist(&b.E2E, o.E2E)
	mergeDist(&b.TTFT, o.TTFT)
}

// Point is one sampled request, for charts. Times are milliseconds.
type Point struct {
	// T is the intended send (the call's start in a closed loop), in
	// seconds from the run's start.
	T     float64 `json:"t"`
	E2E   float64 `json:"e2e,omitempty"`
	TTFT  float64 `json:"ttft,omitempty"`
	TPOT  float64 `json:"tpot,omitempty"`
	Class string  `json:"class,omitempty"`
	Start string  `json:"start,omitempty"`
	Err   string  `json:"err,omitempty"`
}

func newPoint(off time.Duration, s *latency.Sample) Point {
	ms := func(m latency.Metric) float64 {
		if v, ok := s.Value(m); ok {
			return float64(v) / 1e6
		}
		return 0
	}
	p := Point{T: off.Seconds(), Class: s.Class, Start: string(s.Start), Err: s.Err}
	if s.Err == "" {
		p.E2E, p.TPOT = ms(latency.E2E), ms(latency.TPOT)
		if s.Streamed {
			p.TTFT = ms(latency.TTFT)
		}
	}
	return p
}

func newResult(p *Plan) *Result {
	host, _ := os.Hostname()
	return &Result{Version: ResultVersion, Plan: p.public(), Begin: time.Now(),
		Hosts: []Host{{Name: host, CPUs: runtime.NumCPU()}}}
}

func (r *Result) finish() { r.End = time.Now() }

// public returns a copy of the plan fit for a result file: no payload
// bodies, no header values, no user info or query values in endpoint and
// base URLs (they may hold credentials; see publicURL). A target's action
// still says it sent a body; a class's inline body becomes redacted, so
// that the class is still seen to have sent one.
func (p *Plan) public() *Plan {
	c := *p
	c.Targets = slices.Clone(p.Targets)
	for i := range c.Targets {
		t := &c.Targets[i]
		t.Payload.Body = ""
		t.Payload.body = nil
		t.Header = redactedHeader(t.Header)
		t.Endpoint, t.URL = publicURL(t.Endpoint), publicURL(t.URL)
	}
	if p.Mix != nil {
		m := *p.Mix
		m.Classes = slices.Clone(p.Mix.Classes)
		for i := range m.Classes {
			cl := &m.Classes[i]
			cl.Header = redactedHeader(cl.Header)
			if cl.Payload != nil {
				pl := *cl.Payload
				if pl.Body != "" {
					pl.Body = redacted
				}
				pl.body = nil
				cl.Payload = &pl
			}
		}
		c.Mix = &m
	}
	return &c
}

// redacted stands for a value a result file leaves out.
const redacted = "[redacted]"

// redactedHeader returns h's names with every value redacted: header
// values may be credentials. It returns nil for an empty h.
func redactedHeader(h map[string]string) map[string]string {
	if len(h) == 0 {
		return nil
	}
	out := make(map[string]string, len(h))
	for k := range h {
		out[k] = redacted
	}
	return out
}

// publicURL returns an http(s) URL without what may be a credential: its
// user info and fragment dropped, its query's values redacted (the
// parameters' names are kept). Anything else, an endpoint name, is
// returned as it is.
func publicURL(s string) string {
	u, ok := parseHTTPURL(s)
	if !ok {
		return s
	}
	if u == nil {
		return "(unparsable URL)"
	}
	out := u.Scheme + "://" + u.Host + u.EscapedPath()
	if u.RawQuery != "" {
		params := strings.Split(u.RawQuery, "&")
		for i, p := range params {
			if name, _, ok := strings.Cut(p, "="); ok {
				params[i] = name + "=" + redacted
			} else {
				params[i] = redacted // a bare value, not a name
			}
		}
		out += "?" + strings.Join(params, "&")
	}
	return out
}

// urlName returns the name of a target whose endpoint is s: an http(s)
// URL without its user info, query and fragment, which may hold
// credentials; anything else as it is.
func urlName(s string) string {
	u, ok := parseHTTPURL(s)
	switch {
	case !ok:
		return s
	case u == nil:
		return "(unparsable URL)"
	}
	return u.Scheme + "://" + u.Host + u.EscapedPath()
}

// parseHTTPURL parses s when it is an http(s) URL rather than a name: ok
// is false for a name, and u nil for a URL that does not parse.
func parseHTTPURL(s string) (u *url.URL, ok bool) {
	ls := strings.ToLower(s)
	if !strings.HasPrefix(ls, "http://") && !strings.HasPrefix(ls, "https://") {
		return nil, false
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, true
	}
	return u, true
}

// cpuShare returns cpu as a share of wall × the machine's cores, −1 when
// unknown.
func cpuShare(cpu, wall time.Duration) float64 {
	if cpu < 0 || wall <= 0 {
		return -1
	}
	return cpu.Seconds() / (wall.Seconds() * float64(runtime.NumCPU()))
}

// Thresholds of the generator's self-checks.
const (
	// CPUBoundShare is the process CPU share beyond which the client is
	// reported CPU-bound.
	CPUBoundShare = 0.85
	// LateShare is the share of late sends beyond which the client is
	// reported behind its schedule.
	LateShare = 0.01
	// RateShortfall is how far below the offered rate the achieved send
	// rate may fall before a warning.
	RateShortfall = 0.02
	// GCPauseWarn is the client's longest garbage-collection pause beyond
	// which a warning says that the schedule lag includes it.
	GCPauseWarn = time.Millisecond
)

// warnings adds the generator's self-checks to tr.
func (tr *TargetResult) warnings(p *Plan) {
	if tr.CPU >= CPUBoundShare {
		tr.Warnings = append(tr.Warnings, fmt.Sprintf(
			"the client was CPU-bound (%.0f%% of %d cores): latencies include client-side queueing; use fewer targets per machine, or several machines and `cloudinfer report --merge`",
			100*tr.CPU, runtime.NumCPU()))
	}
	if tr.CPU < CPUBoundShare && tr.MachineCPU >= CPUBoundShare {
		tr.Warnings = append(tr.Warnings, fmt.Sprintf(
			"the machine was busy (%.0f%% of %d cores, this process %.0f%%): other processes competed with the client and its timings",
			100*tr.MachineCPU, runtime.NumCPU(), 100*max(tr.CPU, 0)))
	}
	if tr.GCPauseMax.D() > GCPauseWarn {
		effect := "a request timed across a pause includes it"
		if tr.OfferedRate > 0 {
			effect = "the sends due in a pause went out after it, and the schedule lag's tail includes it"
		}
		plural := "s"
		if tr.GCs == 1 {
			plural = ""
		}
		tr.Warnings = append(tr.Warnings, fmt.Sprintf(
			"the client's garbage collector stopped it for up to %v (%d collection%s during the run): %s",
			tr.GCPauseMax.D().Round(10*time.Microsecond), tr.GCs, plural, effect))
	}
	if tr.Sent > 0 && float64(tr.Late)/float64(tr.Sent) > LateShare {
		tr.Warnings = append(tr.Warnings, fmt.Sprintf(
			"the client fell behind its schedule: %d of %d sends (%.1f%%) were more than %v late; see the schedule-lag row and the coordinated-omission corrected figures",
			tr.Late, tr.Sent, 100*float64(tr.Late)/float64(tr.Sent), p.Load.LateAfter))
	}
	if tr.Unsent > 0 {
		tr.Warnings = append(tr.Warnings, fmt.Sprintf(
			"%d sends due before the duration ended were never made (the target or --max-in-flight %d could not keep up): the offered load was not applied in full",
			tr.Unsent, p.Load.MaxInFlight))
	}
	if tr.Cut > 0 {
		tr.Warnings = append(tr.Warnings, fmt.Sprintf(
			"%d requests still in flight at the end were canceled by the run: they are left out of every figure", tr.Cut))
	}
	if tr.OfferedRate > 0 && tr.SendRate > 0 && tr.SendRate < tr.OfferedRate*(1-RateShortfall) && p.Load.Model == LoadConstant {
		tr.Warnings = append(tr.Warnings, fmt.Sprintf(
			"achieved send rate %.1f/s is %.1f%% below the offered %.4g/s", tr.SendRate,
			100*(1-tr.SendRate/tr.OfferedRate), tr.OfferedRate))
	}
	tr.Saturated = tr.saturation()
}

// saturation returns why the client was the bottleneck of tr's run, or
// "": its CPU share reached CPUBoundShare, or more than LateShare of its
// sends were late, or sends were left unsent, while most sends found a
// worker free (CapWaits: at the in-flight cap the target is the one that
// does not keep up).
func (tr *TargetResult) saturation() string {
	var why []string
	if tr.CPU >= CPUBoundShare {
		why = append(why, fmt.Sprintf("its CPU use was %.0f%% of %d cores", 100*tr.CPU, runtime.NumCPU()))
	}
	spare := 2*tr.CapWaits < tr.Late+tr.Unsent
	if tr.Sent > 0 && float64(tr.Late)/float64(tr.Sent) > LateShare && spare {
		why = append(why, fmt.Sprintf("%.1f%% of its sends were late with workers to spare", 100*float64(tr.Late)/float64(tr.Sent)))
	}
	if tr.Unsent > 0 && spare {
		why = append(why, fmt.Sprintf("%d sends due were never made", tr.Unsent))
	}
	return strings.Join(why, "; ")
}

// Counts returns the target's request counters (all classes and starts).
func (tr *TargetResult) Counts() stats.Counts {
	return tr.Recorder.Counts(stats.Filter{Endpoint: tr.Name})
}

// Dist returns the target's distribution of m over a class ("" for all)
// and a start scope ("" for all).
func (tr *TargetResult) Dist(m latency.Metric, class string, starts stats.Starts) *stats.Dist {
	return tr.Recorder.Dist(m, stats.Filter{Endpoint: tr.Name, Class: class, Starts: starts})
}

// Classes lists the target's request classes, in the recorder's order.
func (tr *TargetResult) Classes() []string {
	var cs []string
	for _, k := range tr.Recorder.Groups() {
		if k.Endpoint == tr.Name && !slices.Contains(cs, k.Class) {
			cs = append(cs, k.Class)
		}
	}
	return cs
}

// Save writes r as indented JSON to path.
func (r *Result) Save(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return errcodes.Wrap(err, errcodes.InvalidParam, "bench: save result: "+err.Error())
	}
	if err := r.WriteJSON(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteJSON writes r as indented JSON.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	if err := enc.Encode(r); err != nil {
		return errcodes.Wrap(err, errcodes.Internal, "bench: encode result")
	}
	return nil
}

// ReadResult reads a result saved by Save.
func ReadResult(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, errcodes.Wrap(err, errcodes.InvalidParam, "bench: read result: "+err.Error())
	}
	return ParseResult(b)
}

// ParseResult decodes a result's JSON.
func ParseResult(b []byte) (*Result, error) {
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, errcodes.Wrap(err, errcodes.InvalidParam, "bench: parse result: "+err.Error())
	}
	if r.Version != ResultVersion {
		return nil, errcodes.Errorf(errcodes.InvalidParam, "bench: result format version %d; this build reads %d", r.Version, ResultVersion)
	}
	for _, t := range r.Targets {
		if t == nil {
			return nil, errcodes.New(errcodes.InvalidParam, "bench: parse result: null target")
		}
		if t.Series == nil || t.Series.Width <= 0 {
			t.Series = &Series{Width: Duration(firstBucket)}
		}
		if t.Recorder == nil {
			t.Recorder = &stats.Recorder{}
		}
		for _, b := range t.Series.Buckets {
			if b == nil {
				return nil, errcodes.New(errcodes.InvalidParam, "bench: parse result: null series bucket")
			}
		}
	}
	return &r, nil
}
