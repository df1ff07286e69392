package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"text/tabwriter"

	"google.golang.org/api/option"
	"google.golang.org/grpc"
	grpcstats "google.golang.org/grpc/stats"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/latency/stats"
)

// truth is what the emulator injected into one target's requests.
type truth struct {
	ttft, tpot stats.Dist
	endpoint   string // the emulator's endpoint that served them
}

// groundTruth prints, for the streamed targets served by the embedded
// emulator, what the emulator injected into their measured requests (its
// ground-truth records of the requests each target's calls succeeded
// with, as trace tied them to it) beside what the benchmark measured, and
// the profile's reference figures: the difference between measured and
// injected is the measurement's own error; between injected and reference,
// the sample's.
func groundTruth(w io.Writer, emu *emulator.Server, trace *emuTrace, res *bench.Result) {
	byTarget := injected(emu, trace)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	printed := false
	ms := func(d *stats.Dist) string {
		if d.Count() == 0 {
			return "-"
		}
		return strconv.FormatFloat(d.Mean()/1e6, 'g', 4, 64)
	}
	pct := func(a, b float64) string {
		if b == 0 {
			return "-"
		}
		return fmt.Sprintf("%+.1f%%", 100*(a-b)/b)
	}
	for _, tr := range res.Targets {
		t := byTarget[tr.Name]
		if t == nil || !tr.Stream {
			continue
		}
		if !printed {
			fmt.Fprintln(w, "Emulator ground truth (means, ms; a cold request's TTFT from model-ready; records: the emulator's records of the target's successful measured requests): measured vs injected, injected vs the profile's reference")
			if slices.ContainsFunc(res.Targets, func(tr *bench.TargetResult) bool { return tr.Network != "" }) {
				fmt.Fprintln(w, "(over an impaired network, what is measured also holds the network's delays: a TTFT at least one round trip)")
			}
			fmt.Fprintln(tw, "target\tTTFT measured\tinjected\tΔ\treference\tΔ\tTPOT measured\tinjected\tΔ\treference\tΔ\trecords\t")
			printed = true
		}
		mt, mp := tr.Dist(latency.TTFT, "", ""), tr.Dist(latency.TPOT, "", "")
		refT, refP := "-", "-"
		dT, dP := "-", "-"
		if p, ok := emulator.BuiltinProfile(t.endpoint); ok && emu.TimeScale() == 1 {
			refT, refP = strconv.FormatFloat(p.TTFTMs.Mean, 'g', 4, 64), strconv.FormatFloat(p.TPOTMs.Mean, 'g', 4, 64)
			dT, dP = pct(t.ttft.Mean()/1e6, p.TTFTMs.Mean), pct(t.tpot.Mean()/1e6, p.TPOTMs.Mean)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", tr.Name,
			ms(mt), ms(&t.ttft), pct(mt.Mean(), t.ttft.Mean()), refT, dT,
			ms(mp), ms(&t.tpot), pct(mp.Mean(), t.tpot.Mean()), refP, dP, t.ttft.Count())
	}
	_ = tw.Flush()
}

// injected returns, by target name, the TTFT and TPOT the emulator
// injected into the requests trace tied to each target, those it answered
// in full. A cold request's TTFT is taken from the end of its cold start,
// as the benchmark's TTFT is (its SLA clock starts at model-ready).
func injected(emu *emulator.Server, trace *emuTrace) map[string]*truth {
	byTarget := map[string]*truth{}
	owner := trace.owners()
	for _, r := range emu.Records() {
		name, ok := owner[r.ID]
		if !ok || r.Outcome != "ok" {
			continue
		}
		t := byTarget[name]
		if t == nil {
			t = &truth{endpoint: r.Endpoint}
			byTarget[name] = t
		}
		t.ttft.Add(int64((r.TTFTMs - r.ColdStartMs) * 1e6))
		if r.Stream && r.OutputTokens >= 2 {
			t.tpot.Add(int64(r.TPOTMs * 1e6))
		}
	}
	return byTarget
}

// groundTruthRecords is how many ground-truth records the embedded
// emulator keeps, and how many request ids an emuTrace keeps: the most
// recent of each.
const groundTruthRecords = 100000

// emuTrace ties the embedded emulator's records to the targets whose
// measured calls they served. It is an Observer of the measured calls: each
// call's context carries an emuCall, into which the target's connections
// (see wrap) write the X-Emulator-Request-Id of each response; a call that
// succeeds gives its target the id of its last attempt, the one it
// succeeded with.
type emuTrace struct {
	mu    sync.Mutex
	owner map[string]string // emulator request id → target name
	order []string          // the ids in owner, oldest first (from head)
	head  int
}

func newEmuTrace() *emuTrace { return &emuTrace{owner: map[string]string{}} }

// emuCallKey is the context key of a measured call's *emuCall.
type emuCallKey struct{}

// emuCall is one measured call: its target and the emulator's id of its
// latest attempt's response.
type emuCall struct {
	trace *emuTrace

	mu     sync.Mutex
	target string
	id     string
}

// StartCall implements cloudreq.Observer.
func (e *emuTrace) StartCall(ctx context.Context, _ *cloudreq.CloudRequest, _ bool) (context.Context, cloudreq.CallObserver) {
	c := &emuCall{trace: e}
	return context.WithValue(ctx, emuCallKey{}, c), c
}

// EndAttempt implements cloudreq.CallObserver.
func (*emuCall) EndAttempt(cloudreq.AttemptInfo) {}

// EndCall implements cloudreq.CallObserver: a successful call's last id
// becomes its target's.
func (c *emuCall) EndCall(_ *cloudreq.CloudResponse, _ *latency.Timeline, err *errcodes.Error) {
	c.mu.Lock()
	target, id := c.target, c.id
	c.mu.Unlock()
	if err == nil && target != "" && id != "" {
		c.trace.own(id, target)
	}
}

// note gives the measured call in ctx, if there is one, the emulator's
// request id of a response that came through target's connections.
func note(ctx context.Context, target, id string) {
	c, ok := ctx.Value(emuCallKey{}).(*emuCall)
	if !ok || id == "" {
		return
	}
	c.mu.Lock()
	c.target, c.id = target, id
	c.mu.Unlock()
}

// own gives the request id to target, dropping the oldest ids beyond
// groundTruthRecords.
func (e *emuTrace) own(id, target string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.owner[id] = target
	e.order = append(e.order, id)
	for len(e.order)-e.head > groundTruthRecords {
		delete(e.owner, e.order[e.head])
		e.order[e.head] = ""
		e.head++
	}
	if e.head > 0 && e.head >= len(e.order)-e.head {
		n := copy(e.order, e.order[e.head:])
		clear(e.order[n:])
		e.order, e.head = e.order[:n], 0
	}
}

// owners returns a copy of the ids' targets.
func (e *emuTrace) owners() map[string]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.owner)
}

// wrap returns n with the target's responses noted (see note): its HTTP
// client's round trips and its gRPC calls' header metadata.
func (e *emuTrace) wrap(target string, n netOpts) netOpts {
	hc := *n.http
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = &notingTransport{base: base, target: target}
	n.http = &hc
	n.grpc = append(slices.Clip(n.grpc), option.WithGRPCDialOption(grpc.WithStatsHandler(notingStats{target: target})))
	return n
}

// notingTransport notes each response's emulator request id.
type notingTransport struct {
	base   http.RoundTripper
	target string
}

func (t *notingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err == nil {
		note(req.Context(), t.target, resp.Header.Get(emulator.HeaderRequestID))
	}
	return resp, err
}

// notingStats notes each gRPC call's emulator request id, from the header
// metadata it receives.
type notingStats struct{ target string }

func (notingStats) TagRPC(ctx context.Context, _ *grpcstats.RPCTagInfo) context.Context   { return ctx }
func (notingStats) TagConn(ctx context.Context, _ *grpcstats.ConnTagInfo) context.Context { return ctx }
func (notingStats) HandleConn(context.Context, grpcstats.ConnStats)                       {}

func (s notingStats) HandleRPC(ctx context.Context, st grpcstats.RPCStats) {
	if h, ok := st.(*grpcstats.InHeader); ok && h.Client {
		if v := h.Header.Get(emulator.HeaderRequestID); len(v) > 0 {
			note(ctx, s.target, v[0])
		}
	}
}
