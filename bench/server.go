package bench

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cloudinfer/cloudinfer/bench/servermetrics"
	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
	"github.com/cloudinfer/cloudinfer/latency"
)

// ServerResult is what a target's servers said about the run: the
// reduced metrics of each /metrics scraped, and, where the server keeps
// per-request records (the cloudinfer emulator), the measured requests
// joined with their records, by class and start.
type ServerResult struct {
	Sources []*servermetrics.Summary `json:"sources,omitempty"`
	// Exact holds the joined requests' sums by class and start.
	Exact []*ExactGroup `json:"exact,omitempty"`
	// Unmatched counts the measured requests with a server request id
	// whose record was not found (dropped by the server, or not kept).
	Unmatched int64 `json:"unmatched,omitempty"`
	// Spans holds the measured requests joined with the server's own
	// per-request spans (Target.ServerRequests: vLLM's), by class and
	// start; SpanJoin says what the join found.
	Spans    []*ExactGroup `json:"spans,omitempty"`
	SpanJoin *SpanJoin     `json:"span_join,omitempty"`
}

// SpanJoin is what the join of a target's spans file
// (Target.ServerRequests) with its measured requests found. A merged
// result adds the counts machine by machine: machines that read one
// shared file each count the others' spans among their Others.
type SpanJoin struct {
	// File is the spans file read.
	File string `json:"file"`
	// Spans counts the per-request spans read; Matched those of a
	// measured request (by its X-Request-Id).
	Spans   int64 `json:"spans"`
	Matched int64 `json:"matched"`
	// Unmatched counts the measured requests answered in full with no
	// span in the file (not exported yet, or dropped); Others the spans of
	// no measured request (the warm-up's, another client's, an earlier
	// run's).
	Unmatched int64 `json:"unmatched"`
	Others    int64 `json:"others"`
	// Estimated counts the matched spans with no prefill or decode time
	// of their own (vLLM's V0 engine): prefill is their TTFT less queue.
	Estimated int64 `json:"estimated,omitempty"`
	// Bad counts the file's lines that were not OTLP JSON.
	Bad int64 `json:"bad_lines,omitempty"`
}

func (j *SpanJoin) merge(o *SpanJoin) {
	j.Spans += o.Spans
	j.Matched += o.Matched
	j.Unmatched += o.Unmatched
	j.Others += o.Others
	j.Estimated += o.Estimated
	j.Bad += o.Bad
}

// ExactGroup is the successful measured requests of one class and start
// that were joined with the server's own record: sums in milliseconds
// (means are Sum / N), so that merged results add up.
type ExactGroup struct {
	Class string `json:"class,omitempty"`
	Start string `json:"start"`
	N     int64  `json:"n"`
	// Streamed counts the requests with a TTFT (the TTFT sums are theirs).
	Streamed int64 `json:"streamed"`
	// ClientTTFT and ClientE2E are the client's (SLA clock: a cold
	// request's from model-ready); ClientTTFTAll the E2E of the streamed
	// ones, for their decode.
	ClientTTFT   float64 `json:"client_ttft_ms"`
	ClientE2E    float64 `json:"client_e2e_ms"`
	StreamedE2E  float64 `json:"streamed_e2e_ms"`
	Queue        float64 `json:"queue_ms"`
	Prefill      float64 `json:"prefill_ms"`
	Decode       float64 `json:"decode_ms"`
	StreamedDec  float64 `json:"streamed_decode_ms"`
	StreamedQ    float64 `json:"streamed_queue_ms"`
	StreamedPref float64 `json:"streamed_prefill_ms"`
	// ServerTTFT is the server's own first-token time, from arrival, less
	// its cold start (the streamed requests').
	ServerTTFT float64 `json:"server_ttft_ms"`
}

// checkServerMetrics refuses a server metrics URL that cannot be one.
func checkServerMetrics(t *Target) error {
	for _, u := range t.ServerMetrics {
		if u == "off" {
			continue
		}
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return errcodes.Errorf(errcodes.InvalidParam, "bench: target %q: server_metrics %q: want an http(s) URL, or off", t.Name, servermetrics.PublicURL(u))
		}
	}
	return nil
}

// checkServerMetricsInterval refuses a scrape interval below the least.
func (p *Plan) checkServerMetricsInterval() error {
	if d := p.ServerMetricsInterval.D(); d < 0 || (d > 0 && d < servermetrics.MinInterval) {
		return errcodes.Errorf(errcodes.InvalidParam, "bench: server_metrics_interval %v: want at least %v", d, servermetrics.MinInterval)
	}
	return nil
}

// ServerMetricsURL returns the /metrics URL found for t by itself, "" if
// none: <base>/metrics of an OpenAI-compatible server given by URL (its
// base less a trailing /v1), or of a loopback server root with no path
// (an emulator running apart, which serves every protocol there). A cloud
// endpoint's root is never scraped unasked: its /metrics is not the
// server's, and a call there would be a surprise.
func ServerMetricsURL(t *Target) string {
	base := t.URL
	if base == "" {
		if _, ok := parseHTTPURL(t.Endpoint); ok {
			base = t.Endpoint
		}
	}
	u, ok := parseHTTPURL(base)
	if !ok || u == nil || strings.Contains(base, "{") {
		return ""
	}
	path := strings.TrimRight(u.Path, "/")
	switch {
	case t.Provider == cloudreq.ProviderOpenAI:
		if i := strings.Index(path+"/", "/v1/"); i >= 0 {
			path = path[:i]
		}
	case path != "" || !httpadapter.IsLoopbackHost(u.Hostname()):
		return ""
	}
	return u.Scheme + "://" + u.Host + path + "/metrics"
}

// serverMetricsURLs returns the URLs to scrape for t: its plan's, the
// run's (Options.ServerMetrics) and the one found by itself, each once;
// none when the plan says off.
func serverMetricsURLs(t *Target, opts Options) []string {
	if slices.Contains(t.ServerMetrics, "off") {
		return nil
	}
	var out []string
	add := func(u string) {
		if u != "" && u != "off" && !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	for _, u := range t.ServerMetrics {
		add(u)
	}
	if opts.ServerMetrics != nil {
		for _, u := range opts.ServerMetrics(t) {
			add(u)
		}
	}
	add(ServerMetricsURL(t))
	return out
}

// serverRun is a target run's server-metrics scraping: started before the
// warm-up, marked at the measured run's start, finished at its end.
type serverRun struct {
	scrapers []*servermetrics.Scraper
	mu       sync.Mutex
	byServer pairs // by the emulator's request id
	bySent   pairs // by the X-Request-Id sent (a spans file's join)
	warn     []string
	// spans is the target's spans file ("": none), spansWait how long
	// the end waits for its missing spans.
	spans     string
	spansWait time.Duration
}

// pairs are measured requests by id, the oldest dropped past maxPairs.
type pairs struct {
	m     map[string]pair
	order []string
}

func (ps *pairs) put(id string, p pair) {
	if ps.m == nil {
		ps.m = map[string]pair{}
	}
	if len(ps.order) >= maxPairs {
		delete(ps.m, ps.order[0])
		ps.order = ps.order[1:]
	}
	ps.m[id] = p
	ps.order = append(ps.order, id)
}

// pair is one measured request as the client saw it.
type pair struct {
	class, start string
	ttft, e2e    float64 // ms; ttft < 0: none
}

// maxPairs bounds the requests kept for the per-request join.
const maxPairs = 100000

// startServerMetrics starts t's scrapers (their baseline scrapes) and
// hooks the per-request join into col; nil when there is nothing to
// scrape.
func startServerMetrics(ctx context.Context, p *Plan, t *Target, opts Options, col *collector) *serverRun {
	urls := serverMetricsURLs(t, opts)
	if len(urls) == 0 && t.ServerRequests == "" {
		return nil
	}
	sr := &serverRun{spans: t.ServerRequests, spansWait: t.ServerRequestsWait.D()}
	if sr.spansWait == 0 {
		sr.spansWait = DefaultServerRequestsWait
	}
	var models []string
	for _, m := range []string{t.Endpoint, t.Model} {
		if _, isURL := parseHTTPURL(m); m != "" && !isURL {
			models = append(models, m)
		}
	}
	for _, u := range urls {
		s, err := servermetrics.Start(ctx, servermetrics.Options{URL: u, Interval: p.ServerMetricsInterval.D(), Models: models})
		if err != nil {
			sr.warn = append(sr.warn, errcodes.From(err).Message)
			continue
		}
		sr.scrapers = append(sr.scrapers, s)
	}
	col.onSample = sr.sample
	return sr
}

// DefaultServerRequestsWait is how long the end of a run waits, at most,
// for the spans of its measured requests to reach the spans file: vLLM's
// span exporter sends a batch every 5 s (OTEL_BSP_SCHEDULE_DELAY), the
// collector's file exporter writes it within about a second.
const DefaultServerRequestsWait = 10 * time.Second

// newRequestID returns a fresh client request id: 32 hex digits.
func newRequestID() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	return hex.EncodeToString(b[:])
}

// sample keeps a measured request answered by a server that names it (the
// emulator's id), and, for a spans file's join, by the X-Request-Id sent.
func (sr *serverRun) sample(s *latency.Sample, resp *cloudreq.CloudResponse, sent string) {
	if s.Err != "" || resp == nil {
		return
	}
	id := resp.Metadata[emulatorRequestID]
	if sr.spans == "" {
		sent = ""
	}
	if id == "" && sent == "" {
		return
	}
	e2e, ok := s.Value(latency.E2E)
	if !ok {
		return
	}
	p := pair{class: s.Class, start: string(s.Start), ttft: -1, e2e: float64(e2e) / 1e6}
	if v, ok := s.Value(latency.TTFT); ok && s.Streamed {
		p.ttft = float64(v) / 1e6
	}
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if id != "" {
		sr.byServer.put(id, p)
	}
	if sent != "" {
		sr.bySent.put(sent, p)
	}
}

// emulatorRequestID is the response metadata key of the emulator's
// request id (emulator.HeaderRequestID, as its StartReport hook keeps it).
const emulatorRequestID = "X-Emulator-Request-Id"

// mark starts the measured window.
func (sr *serverRun) mark(ctx context.Context) {
	if sr == nil {
		return
	}
	for _, s := range sr.scrapers {
		s.Mark(ctx)
	}
}

// finish stops the scrapers and files what they found in tr: the
// summaries, their warnings, and the per-request join where a server
// keeps records.
func (sr *serverRun) finish(ctx context.Context, tr *TargetResult) {
	if sr == nil {
		return
	}
	res := &ServerResult{}
	tr.Warnings = append(tr.Warnings, sr.warn...)
	for _, s := range sr.scrapers {
		sum := s.Stop(ctx)
		if sum == nil {
			continue
		}
		res.Sources = append(res.Sources, sum)
		tr.Warnings = append(tr.Warnings, sum.Warnings...)
		if sum.Server == "emulator" && res.Exact == nil {
			sr.join(ctx, s.Source(), res, tr)
		}
	}
	sr.scrapers = nil // stopped
	if sr.spans != "" {
		sr.joinSpans(ctx, res, tr)
	}
	if len(res.Sources) > 0 || res.SpanJoin != nil {
		tr.Server = res
	}
}

// close stops scrapers a run left before its measured part (a failed
// warm-up).
func (sr *serverRun) close(ctx context.Context) {
	if sr == nil {
		return
	}
	for _, s := range sr.scrapers {
		_ = s.Stop(ctx)
	}
}

// join reads the emulator's records and sums the measured requests
// answered in full by class and start.
func (sr *serverRun) join(ctx context.Context, source string, res *ServerResult, tr *TargetResult) {
	sr.mu.Lock()
	pairs := sr.byServer.m
	sr.mu.Unlock()
	if len(pairs) == 0 {
		return
	}
	recs, err := servermetrics.FetchRequests(context.WithoutCancel(ctx), nil, servermetrics.RecordsURL(source), 10*time.Second)
	if err != nil {
		tr.Warnings = append(tr.Warnings, "server per-request records: "+errcodes.From(err).Message)
		return
	}
	groups := map[[2]string]*ExactGroup{}
	for id, p := range pairs {
		r, ok := recs[id]
		if !ok {
			res.Unmatched++
			continue
		}
		res.Exact = addExact(groups, res.Exact, p, r)
	}
	sortExact(res.Exact)
	if res.Unmatched > 0 {
		tr.Warnings = append(tr.Warnings, fmt.Sprintf("%d measured requests had no record at %s (the emulator keeps its most recent): the per-request split leaves them out", res.Unmatched, servermetrics.RecordsURL(source)))
	}
}

// addExact adds a request answered in full to its class and start's group
// (a new one appended to list), and returns list.
func addExact(groups map[[2]string]*ExactGroup, list []*ExactGroup, p pair, r servermetrics.Request) []*ExactGroup {
	if r.Outcome != "ok" || r.TokensSent == 0 {
		return list
	}
	k := [2]string{p.class, p.start}
	g := groups[k]
	if g == nil {
		g = &ExactGroup{Class: p.class, Start: p.start}
		groups[k] = g
		list = append(list, g)
	}
	g.add(p, r)
	return list
}

func sortExact(list []*ExactGroup) {
	slices.SortFunc(list, func(a, b *ExactGroup) int {
		return strings.Compare(a.Class+"\x00"+a.Start, b.Class+"\x00"+b.Start)
	})
}

// joinSpans reads the target's spans file and sums the measured requests
// that have a span by class and start. Where some have none yet, it reads
// the file again every half second, until they all have one or
// spansWait is up (or ctx ends): a server exports its spans in batches.
func (sr *serverRun) joinSpans(ctx context.Context, res *ServerResult, tr *TargetResult) {
	sr.mu.Lock()
	pairs := sr.bySent.m
	sr.mu.Unlock()
	j := &SpanJoin{File: sr.spans}
	res.SpanJoin = j
	found := map[string]*servermetrics.Span{}
	var st servermetrics.SpanStats
	var err error
	deadline := time.Now().Add(sr.spansWait)
	for {
		clear(found)
		st, err = servermetrics.ReadSpansFile(sr.spans, func(s *servermetrics.Span) {
			for _, id := range servermetrics.ClientRequestIDs(s.ID) {
				if _, ok := pairs[id]; ok {
					if found[id] == nil {
						c := *s
						found[id] = &c
					}
					return
				}
			}
		})
		if (err == nil && len(found) == len(pairs)) || ctx.Err() != nil || !time.Now().Before(deadline) {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(min(500*time.Millisecond, time.Until(deadline))):
		}
	}
	if err != nil {
		tr.Warnings = append(tr.Warnings, "server per-request spans: "+errcodes.From(err).Message)
		return
	}
	j.Spans, j.Bad = int64(st.Spans), int64(st.Bad)
	groups := map[[2]string]*ExactGroup{}
	for id, p := range pairs {
		s, ok := found[id]
		if !ok {
			j.Unmatched++
			continue
		}
		j.Matched++
		if s.Estimated {
			j.Estimated++
		}
		res.Spans = addExact(groups, res.Spans, p, s.Request)
	}
	j.Others = j.Spans - j.Matched
	sortExact(res.Spans)
	if j.Unmatched > 0 {
		tr.Warnings = append(tr.Warnings, fmt.Sprintf("%d of %d measured requests had no span in %s after %v (is the server started with --otlp-traces-endpoint, and the collector's file exporter writing there?): the vLLM-spans split leaves them out",
			j.Unmatched, len(pairs), sr.spans, sr.spansWait))
	}
}

func (g *ExactGroup) add(p pair, r servermetrics.Request) {
	g.N++
	g.ClientE2E += p.e2e
	g.Queue += r.QueueMs
	g.Prefill += r.PrefillMs
	dec := r.LastTokenMs - r.FirstTokenMs
	g.Decode += dec
	if p.ttft >= 0 {
		g.Streamed++
		g.ClientTTFT += p.ttft
		g.StreamedE2E += p.e2e
		g.StreamedDec += dec
		g.StreamedQ += r.QueueMs
		g.StreamedPref += r.PrefillMs
		g.ServerTTFT += r.FirstTokenMs - r.ColdStartMs
	}
}

func (g *ExactGroup) merge(o *ExactGroup) {
	g.N += o.N
	g.Streamed += o.Streamed
	g.ClientTTFT += o.ClientTTFT
	g.ClientE2E += o.ClientE2E
	g.StreamedE2E += o.StreamedE2E
	g.Queue += o.Queue
	g.Prefill += o.Prefill
	g.Decode += o.Decode
	g.StreamedDec += o.StreamedDec
	g.StreamedQ += o.StreamedQ
	g.StreamedPref += o.StreamedPref
	g.ServerTTFT += o.ServerTTFT
}

// mergeServer merges o into t's server result. Per-request groups add up
// (each machine's requests are its own). Summaries of one source (the
// same URL) are never summed: several machines scraping one server see
// the same counters, and adding them would count its requests once per
// machine; the merged result keeps the summary with the longest window,
// and counts the machines in its Machines. Summaries of different
// sources are kept side by side.
func (t *TargetResult) mergeServer(o *ServerResult) {
	if o == nil {
		return
	}
	if t.Server == nil {
		t.Server = &ServerResult{}
	}
	s := t.Server
	s.Unmatched += o.Unmatched
	s.Exact = mergeExact(s.Exact, o.Exact)
	s.Spans = mergeExact(s.Spans, o.Spans)
	if o.SpanJoin != nil {
		if s.SpanJoin == nil {
			s.SpanJoin = &SpanJoin{File: o.SpanJoin.File}
		}
		s.SpanJoin.merge(o.SpanJoin)
	}
	for _, sum := range o.Sources {
		i := slices.IndexFunc(s.Sources, func(m *servermetrics.Summary) bool { return m.Source == sum.Source })
		n := max(sum.Machines, 1)
		if i < 0 {
			c := *sum
			c.Machines = n
			s.Sources = append(s.Sources, &c)
			continue
		}
		kept := s.Sources[i]
		machines := kept.Machines + n
		if sum.End.Sub(sum.Begin) > kept.End.Sub(kept.Begin) {
			c := *sum
			kept = &c
			s.Sources[i] = kept
		}
		kept.Machines = machines
	}
}

// mergeExact adds o's groups into list's (each machine's requests are its
// own) and returns list.
func mergeExact(list, o []*ExactGroup) []*ExactGroup {
	for _, g := range o {
		i := slices.IndexFunc(list, func(m *ExactGroup) bool { return m.Class == g.Class && m.Start == g.Start })
		if i < 0 {
			c := *g
			list = append(list, &c)
			continue
		}
		list[i].merge(g)
	}
	return list
}

// Decomposition is where a group's latency went (means, milliseconds; NaN:
// unknown): client TTFT = Residual (network + client) + Queue + Prefill +
// ServerOther, client E2E = TTFT + client decode, client decode =
// ServerDecode + DecodeResidual (transit of the stream's tail).
type Decomposition struct {
	Target string
	// Class and Start are the group ("" for all).
	Class, Start string
	// Method says how the server's parts were read: MethodExact (per
	// request, the emulator's records joined with the client's
	// measurements), MethodSpans (per request, vLLM's spans joined with
	// them) or MethodHistogram (the server's histogram means over the
	// window, the whole server's, with no class or start split).
	Method string
	// Source is the server metrics, records or spans file the parts came from.
	Source string
	N      float64
	// ClientTTFT and ClientE2E are the client's means.
	ClientTTFT, ClientE2E float64
	// Queue, Prefill and ServerDecode are the server's means; ServerTTFT
	// its own first-token time (from arrival, less a cold start).
	Queue, Prefill, ServerDecode, ServerTTFT float64
	// ServerOther is the server's first-token time past its queue and
	// prefill (writing the token, its own scheduling): ServerTTFT − Queue
	// − Prefill; 0 when the server has no TTFT of its own.
	ServerOther float64
	// Residual is the part of TTFT the server does not explain: the
	// network and the client, ClientTTFT − ServerTTFT (the transit,
	// measured: the server's first-token time against the client's), or
	// ClientTTFT − Queue − Prefill for a server with no TTFT. For a target
	// not streamed, it is E2E's: ClientE2E − the server's whole time.
	Residual float64
	// DecodeResidual is the client's decode less the server's.
	DecodeResidual float64
	// Streamed says TTFT is known (a streamed target).
	Streamed bool
}

// Share returns the residual's share of the TTFT (of E2E for a target not
// streamed), NaN when unknown.
func (d *Decomposition) Share() float64 {
	if d.Streamed {
		return d.Residual / d.ClientTTFT
	}
	return d.Residual / d.ClientE2E
}

// Decompose returns the target's "where the time went" rows: one per
// class and start from each per-request join (the emulator's records,
// then a spans file's), and one for all requests from the first scraped
// server with the histograms for it.
func (t *TargetResult) Decompose() []Decomposition {
	var out []Decomposition
	if t.Server == nil {
		return nil
	}
	var records string
	if len(t.Server.Sources) > 0 {
		records = servermetrics.RecordsURL(t.Server.Sources[0].Source)
	}
	out = exactRows(out, t, t.Server.Exact, MethodExact, records)
	if j := t.Server.SpanJoin; j != nil {
		out = exactRows(out, t, t.Server.Spans, MethodSpans, j.File)
	}
	for _, s := range t.Server.Sources {
		if d, ok := histogramDecomposition(t, s); ok {
			out = append(out, d)
			break
		}
	}
	return out
}

// The decomposition's methods.
const (
	// MethodExact is the emulator's records joined request by request.
	MethodExact = "exact"
	// MethodSpans is vLLM's per-request spans joined request by request.
	MethodSpans = "exact (vLLM spans)"
	// MethodHistogram is the server's histogram means.
	MethodHistogram = "histogram"
)

// exactRows appends the rows of per-request groups.
func exactRows(out []Decomposition, t *TargetResult, groups []*ExactGroup, method, source string) []Decomposition {
	nan := math.NaN()
	for _, g := range groups {
		if g.N == 0 {
			continue
		}
		d := Decomposition{Target: t.Name, Class: g.Class, Start: g.Start, Method: method, Source: source, N: float64(g.N),
			ClientTTFT: nan, ServerTTFT: nan, Streamed: g.Streamed > 0}
		if d.Streamed {
			n := float64(g.Streamed)
			d.N = n
			d.ClientTTFT, d.ClientE2E = g.ClientTTFT/n, g.StreamedE2E/n
			d.Queue, d.Prefill, d.ServerDecode = g.StreamedQ/n, g.StreamedPref/n, g.StreamedDec/n
			d.ServerTTFT = g.ServerTTFT / n
			d.ServerOther = d.ServerTTFT - d.Queue - d.Prefill
			d.Residual = d.ClientTTFT - d.ServerTTFT
			d.DecodeResidual = d.ClientE2E - d.ClientTTFT - d.ServerDecode
		} else {
			n := float64(g.N)
			d.ClientE2E = g.ClientE2E / n
			d.Queue, d.Prefill, d.ServerDecode = g.Queue/n, g.Prefill/n, g.Decode/n
			d.Residual = d.ClientE2E - d.Queue - d.Prefill - d.ServerDecode
			d.DecodeResidual = nan
		}
		out = append(out, d)
	}
	return out
}

// histogramDecomposition is the distribution-level split of all the
// target's requests from one server's histograms.
func histogramDecomposition(t *TargetResult, s *servermetrics.Summary) (Decomposition, bool) {
	nan := math.NaN()
	mean := func(r servermetrics.Role) float64 {
		if m, _, _, ok := s.Mean(r); ok {
			return m * 1000
		}
		return nan
	}
	q, p, ttft := mean(servermetrics.RoleQueue), mean(servermetrics.RolePrefill), mean(servermetrics.RoleTTFT)
	dec, inf, e2e := mean(servermetrics.RoleDecode), mean(servermetrics.RoleInference), mean(servermetrics.RoleE2E)
	_, n, _, _ := s.Mean(servermetrics.RoleQueue)
	if math.IsNaN(q) {
		_, n, _, _ = s.Mean(servermetrics.RoleTTFT)
	}
	if math.IsNaN(q+p) && math.IsNaN(ttft) && math.IsNaN(e2e) && math.IsNaN(q+inf) {
		return Decomposition{}, false
	}
	d := Decomposition{Target: t.Name, Method: MethodHistogram, Source: s.Source, N: n, ClientTTFT: nan, ClientE2E: nan,
		Queue: q, Prefill: p, ServerDecode: dec, ServerTTFT: ttft, Residual: nan, DecodeResidual: nan, Streamed: t.Stream}
	if math.IsNaN(d.ServerDecode) && !math.IsNaN(inf+p) {
		d.ServerDecode = inf - p
	}
	if math.IsNaN(d.ServerDecode) && !math.IsNaN(e2e+ttft) {
		d.ServerDecode = e2e - ttft
	}
	if c := t.Dist(latency.E2E, "", ""); c.Count() > 0 {
		d.ClientE2E = c.Mean() / 1e6
	}
	if c := t.Dist(latency.TTFT, "", ""); t.Stream && c.Count() > 0 {
		d.ClientTTFT = c.Mean() / 1e6
	}
	if t.Stream {
		switch {
		case !math.IsNaN(ttft):
			d.Residual = d.ClientTTFT - ttft
			if !math.IsNaN(q + p) {
				d.ServerOther = ttft - q - p
			}
		case !math.IsNaN(q + p):
			d.Residual = d.ClientTTFT - q - p
		}
		d.DecodeResidual = d.ClientE2E - d.ClientTTFT - d.ServerDecode
		return d, true
	}
	switch {
	case !math.IsNaN(q + p + d.ServerDecode):
		d.Residual = d.ClientE2E - q - p - d.ServerDecode
	case !math.IsNaN(q + inf):
		d.Residual = d.ClientE2E - q - inf
	case !math.IsNaN(e2e):
		d.Residual = d.ClientE2E - e2e
	}
	return d, true
}

// serverFigures are the compared figures of the server's side: the
// decomposition's parts (its first row: the exact join's first group, or
// the histograms') and the server's mean running and waiting requests.
func serverFigures(t *TargetResult) []figure {
	if t.Server == nil {
		return nil
	}
	var out []figure
	if ds := t.Decompose(); len(ds) > 0 {
		d := ds[0]
		for _, f := range []struct {
			name string
			v    float64
		}{{"server queue mean", d.Queue}, {"server prefill mean", d.Prefill}, {"server decode mean", d.ServerDecode}, {"network+client mean", d.Residual}} {
			out = append(out, figure{name: f.name + " (" + d.Method + ")", unit: "ms", v: f.v, ok: finite(f.v)})
		}
	}
	if len(t.Server.Sources) > 0 {
		s := t.Server.Sources[0]
		for _, r := range []servermetrics.Role{servermetrics.RoleRunning, servermetrics.RoleWaiting} {
			if g, _, ok := s.Gauge(r); ok {
				out = append(out, figure{name: "server " + string(r) + " mean", v: g.Mean, ok: true})
			}
		}
	}
	return out
}
