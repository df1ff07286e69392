package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/hooks"
	"github.com/cloudinfer/cloudinfer/impair"
	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/providers/azureml"
	"github.com/cloudinfer/cloudinfer/providers/openai"
	"github.com/cloudinfer/cloudinfer/providers/paieas"
	"github.com/cloudinfer/cloudinfer/providers/sagemaker"
	"github.com/cloudinfer/cloudinfer/providers/vertex"
	"github.com/cloudinfer/cloudinfer/telemetry"
)

// benchCmd is the `cloudinfer bench` command.
type benchCmd struct {
	Config string `help:"Plan file (YAML or JSON) with targets, load, limits, mix and SLAs; load and limit flags given here override it." type:"existingfile" placeholder:"FILE" group:"Targets"`

	Provider string   `help:"Provider of the flag-built targets: openai, aws (sagemaker), azure (azureml), gcp (vertex), alibaba (pai-eas)." placeholder:"NAME" group:"Targets"`
	Endpoint []string `help:"Endpoint to benchmark, or the URL of an Azure ML endpoint, a PAI-EAS service or an OpenAI-compatible server (which it then goes to); repeat for side-by-side targets." placeholder:"NAME" group:"Targets"`
	Model    string   `help:"Model name (OpenAI-compatible model, SageMaker target model, Vertex publisher model)." group:"Targets"`
	Variant  string   `help:"SageMaker production variant or Azure ML deployment." group:"Targets"`
	Path     string   `help:"Sub-path under the endpoint (PAI-EAS)." group:"Targets"`
	URL      string   `name:"url" help:"HTTP root of the server to send to instead of the cloud's own or the embedded emulator (an OpenAI-compatible server, a gateway, a cloudinfer emulate running apart). For azure, a root on this machine with no path is an emulator's: requests go to ROOT/azureml/ENDPOINT. Vertex (gcp) speaks gRPC: give --grpc-addr (with or without --url)." placeholder:"URL" group:"Targets"`
	GRPCAddr string   `name:"grpc-addr" help:"HOST:PORT of the Vertex (gcp) gRPC server to send to instead of Google's or the embedded emulator (cloudinfer emulate prints it as \"Vertex gRPC:\"; default 127.0.0.1:8081). On this machine: plain text, no Google credential; elsewhere: TLS and Application Default Credentials." placeholder:"HOST:PORT" group:"Targets"`
	Region   string   `help:"AWS region." group:"Targets"`
	Project  string   `help:"GCP project." group:"Targets"`
	Location string   `help:"GCP location." group:"Targets"`
	Cloud    bool     `help:"Send targets without a URL to the real cloud instead of the embedded emulator. Credentials: AWS and GCP default chains, AZUREML_API_KEY or Azure's default chain, EAS_TOKEN, OPENAI_API_KEY." group:"Targets"`

	Action       string `help:"generate (portable text generation) or invoke (the payload's bytes as they are)." enum:",generate,invoke" default:"" group:"Payload"`
	NoStream     bool   `help:"Read whole responses instead of streams (no TTFT/TPOT)." group:"Payload"`
	Payload      string `help:"Raw request body file (implies invoke)." type:"existingfile" placeholder:"FILE" group:"Payload"`
	ContentType  string `help:"Content type of --payload." group:"Payload"`
	Prompt       string `help:"Prompt text (generate); default: a generated prompt of --prompt-tokens." group:"Payload"`
	PromptTokens int    `help:"Length of the generated prompt in tokens." default:"512" group:"Payload"`
	OutputTokens int    `help:"Maximum output tokens (0: the server's default)." group:"Payload"`

	Load        string        `help:"Load model: closed, constant, poisson or ladder." enum:",closed,constant,poisson,ladder" default:"" group:"Load"`
	Concurrency int           `help:"Closed loop: concurrent workers (1: sequential)." group:"Load"`
	Rate        float64       `help:"Open loop: requests per second (at most 1e6)." group:"Load"`
	MaxInFlight int           `help:"Open loop: cap on requests in flight (sends past it are late, never dropped)." group:"Load"`
	LateAfter   time.Duration `help:"Schedule lag beyond which a send counts as late (default 10ms)." group:"Load"`
	Requests    int           `help:"Measured requests per target (default 100 when no --duration; the default run: as many as take about a minute, --requests 100 for the full reference run)." group:"Load"`
	Duration    time.Duration `help:"Measured duration per target." group:"Load"`
	Warmup      int           `help:"Warm-up requests per target, left out of the results (default 1 for the default run)." default:"-1" group:"Load"`
	Seed        uint64        `help:"Seed for Poisson arrivals and the mix (give each machine of a merged run its own)." group:"Load"`

	LadderStart      float64       `help:"Ladder: first step's rate (default: the floor)." group:"Ladder"`
	LadderStep       float64       `help:"Ladder: rate added on a climb (default 50)." group:"Ladder"`
	LadderStepLength time.Duration `help:"Ladder: how long each rate is held (default 10s, at least 10ms)." group:"Ladder"`
	LadderHighWater  time.Duration `help:"Ladder: p95 above which the rate backs off (default 200ms)." group:"Ladder"`
	LadderLowWater   time.Duration `help:"Ladder: p95 below which the rate climbs (default 120ms)." group:"Ladder"`
	LadderBackoff    float64       `help:"Ladder: back-off factor (default 0.7)." group:"Ladder"`
	LadderFloor      float64       `help:"Ladder: lowest rate (default 10)." group:"Ladder"`
	LadderTarget     float64       `help:"Ladder: highest rate (default 500, at most 1e6)." group:"Ladder"`
	LadderMetric     string        `help:"Ladder: latency watched, e2e or ttft." enum:",e2e,ttft" default:"" group:"Ladder"`

	Mix        string   `help:"Weighted request mix file (YAML or JSON: classes, dimensions)." type:"existingfile" placeholder:"FILE" group:"Mix"`
	TrafficLog string   `help:"Build the mix from a traffic log (CSV or JSONL: path, method, headers, latency_ms, tag columns)." type:"existingfile" placeholder:"FILE" group:"Mix"`
	SLA        []string `name:"sla" help:"SLA, e.g. \"ttft p95 150ms starts=warm\" (repeatable)." placeholder:"SPEC" group:"Mix"`
	FailOn     []string `name:"fail-on" help:"Exit 1 when the result fails this gate (repeatable; a plan's fail_on adds more): \"sla\" (every SLA passed, on every target), \"errors>N%\" (no target had more than N% of its measured requests fail) or \"errors>N\" (no more than N failed); \"errors>0\": none may fail. Without a gate, failed requests and SLAs are results and the command exits 0." placeholder:"GATE" group:"Mix"`

	TimeScale float64 `help:"Embedded emulator's time scale (1: real time; 0 means 1)." default:"1" group:"Emulator"`

	Retries int           `help:"Retries per request (0: none, so every failure is seen)." group:"Client"`
	Network string        `help:"Impair every target's connections, e.g. \"delay=20ms,jitter=2ms,loss=0.1%,rate=100mbit\" (each direction; up./down. prefixes for one; seed=N). See go doc ./impair." placeholder:"SPEC" group:"Client"`
	Timeout time.Duration `help:"Per-request timeout." default:"2m" group:"Client"`

	Out      string `help:"Result JSON file (default: bench-results/bench-TIME.json)." placeholder:"FILE" group:"Output"`
	Format   string `help:"What to print: text, markdown, csv, json or html." enum:"text,markdown,csv,json,html" default:"text" group:"Output"`
	HTML     string `name:"html" help:"Also write the HTML report here." placeholder:"FILE" group:"Output"`
	CSV      string `name:"csv" help:"Also write CSV here." placeholder:"FILE" group:"Output"`
	Markdown string `help:"Also write Markdown here." placeholder:"FILE" group:"Output"`
	Detail   bool   `help:"Add the full per-group latency report to the text output." group:"Output"`
	Quiet    bool   `help:"No progress bar." group:"Output"`

	MetricsAddr string `help:"Serve Prometheus metrics of the run on this address (e.g. :9464)." group:"Telemetry"`
	OTLP        string `name:"otlp" help:"Export spans and metrics over OTLP/HTTP to this endpoint." group:"Telemetry"`

	abort <-chan struct{} // closed by a second interrupt
	// metricsAt, when set, is told the Prometheus URL once it listens
	// (tests listen on port 0 and learn the port here).
	metricsAt func(url string)
}

// ReferenceModels are the default run's endpoints: the emulator's A10
// reference profiles.
var referenceModels = []string{"llama-3-8b", "phi-3-mini", "qwen2-7b"}

// defaultRequests bounds a run given no duration or request count.
const defaultRequests = 100

// referenceBudget is the default run's target wall time.
const referenceBudget = 60 * time.Second

// Run runs the command. A first interrupt (Ctrl-C, SIGTERM) stops the
// sending and waits for the requests in flight; a second one cancels them.
// The partial result is saved either way.
func (c *benchCmd) Run() error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	abort := make(chan struct{})
	c.abort = abort
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-sigs:
		case <-done:
			return
		}
		fmt.Fprintln(os.Stderr, "\ninterrupted: no more requests are sent; waiting for those in flight (interrupt again to cancel them)")
		cancel()
		select {
		case <-sigs:
			close(abort)
		case <-done:
		}
	}()
	return c.run(ctx, os.Stdout, os.Stderr)
}

func (c *benchCmd) run(ctx context.Context, stdout io.Writer, stderr *os.File) error {
	plan, reference, err := c.plan()
	if err != nil {
		return err
	}
	if err := c.checkOutputs(); err != nil {
		return err
	}
	if reference && c.Requests == 0 && c.Duration == 0 && plan.Load.Model != bench.LoadLadder {
		// About a minute of requests; a ladder runs by time (its steps).
		plan.Limits.Requests = referenceRequests(c.TimeScale, plan.Limits.Warmup)
	}
	// A plan that cannot run is reported before anything starts.
	if err := plan.Prepare(); err != nil {
		return err
	}
	if err := endpointURLs(plan); err != nil {
		return err
	}
	env := &environment{cmd: c, plan: plan}
	defer env.close()
	if c.needsEmulator(plan) {
		if err := env.startEmulator(); err != nil {
			return err
		}
	}
	if err := env.telemetry(ctx); err != nil {
		return err
	}
	opts := bench.Options{Connect: env.connect, Abort: c.abort}
	opts.Observers = env.obs // the measured calls only, as the results
	if env.emu != nil {
		env.trace = newEmuTrace()
		opts.Observers = append(slices.Clip(opts.Observers), env.trace)
	}
	if !c.Quiet {
		opts.Progress = bench.NewProgress(stderr)
	}
	if env.emu != nil && stderr != nil {
		fmt.Fprintf(stderr, "embedded emulator at %s (time scale %g)\n", env.emu.URL(), env.emu.TimeScale())
	}
	res, err := bench.Run(ctx, plan, opts)
	if err != nil {
		return err
	}
	out := c.Out
	if out == "" {
		if err := os.MkdirAll("bench-results", 0o755); err != nil {
			return errcodes.Wrap(err, errcodes.InvalidParam, "bench: create bench-results: "+err.Error())
		}
		out = filepath.Join("bench-results", "bench-"+res.Begin.Format("20060102-150405")+".json")
	}
	if err := res.Save(out); err != nil {
		return err
	}
	for _, extra := range []struct {
		path string
		f    bench.Format
	}{{c.HTML, bench.FormatHTML}, {c.CSV, bench.FormatCSV}, {c.Markdown, bench.FormatMarkdown}} {
		if extra.path != "" {
			if err := writeFile(extra.path, func(w io.Writer) error { return res.Render(w, extra.f, bench.RenderOptions{}) }); err != nil {
				return err
			}
		}
	}
	if err := res.Render(stdout, bench.Format(c.Format), bench.RenderOptions{Detail: c.Detail}); err != nil {
		return err
	}
	if env.emu != nil && c.Format == "text" {
		groundTruth(stdout, env.emu, env.trace, res)
	}
	if c.Format == "text" || c.Format == "markdown" {
		fmt.Fprintf(stdout, "\nresult: %s\n", out)
	} else if stderr != nil {
		fmt.Fprintf(stderr, "result: %s\n", out)
	}
	if res.Interrupted {
		return errcodes.Errorf(errcodes.Canceled, "bench: interrupted: the partial result is in %s", out)
	}
	if err := notRun(res); err != nil {
		return err
	}
	var notes io.Writer // nil: no notes (a nil *os.File is not a nil io.Writer)
	if stderr != nil {
		notes = stderr
	}
	return checkGates(res, out, notes)
}

// checkGates returns an error listing, one line each, the gates (--fail-on,
// the plan's fail_on) the result failed, so that the command exits 1; nil
// when it passed them all, which it notes on stderr.
func checkGates(res *bench.Result, out string, stderr io.Writer) error {
	fs, err := res.CheckGates(nil)
	if err != nil {
		return err
	}
	if len(fs) == 0 {
		if len(res.Plan.FailOn) > 0 && stderr != nil {
			names := make([]string, len(res.Plan.FailOn))
			for i, g := range res.Plan.FailOn {
				names[i] = g.String()
			}
			fmt.Fprintf(stderr, "gates passed: %s\n", strings.Join(names, ", "))
		}
		return nil
	}
	var b strings.Builder
	n := "1 gate failure"
	if len(fs) > 1 {
		n = fmt.Sprintf("%d gate failures", len(fs))
	}
	fmt.Fprintf(&b, "bench: %s (the result is in %s):", n, out)
	for _, f := range fs {
		b.WriteString("\n  " + f.String())
	}
	return errors.New(b.String())
}

// checkOutputs refuses, before the run, an output file whose directory
// does not exist, rather than losing the run's result at its end.
func (c *benchCmd) checkOutputs() error {
	for _, path := range []string{c.Out, c.HTML, c.CSV, c.Markdown} {
		if path == "" {
			continue
		}
		dir := filepath.Dir(path)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return errcodes.Errorf(errcodes.InvalidParam, "bench: cannot write %s: directory %s does not exist", path, dir)
		}
	}
	return nil
}

// notRun returns an error naming the targets that could not run at all
// (their adapter or client failed to start), so that the command exits
// non-zero; nil when every target ran, whatever its requests' outcomes.
func notRun(res *bench.Result) error {
	var names []string
	for _, tr := range res.Targets {
		if tr.Fatal != "" {
			names = append(names, tr.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return errcodes.Errorf(errcodes.InvalidParam, "bench: %d of %d targets could not run: %s (see FAILED above)",
		len(names), len(res.Targets), strings.Join(names, ", "))
}

// truth is what the emulator injected into one target's requests.
type truth struct {
	ttft, tpot latency.Dist
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
	ms := func(d *latency.Dist) string {
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
func (*emuCall) EndAttempt(latency.Attempt, *errcodes.Error) {}

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

func (notingStats) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context   { return ctx }
func (notingStats) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (notingStats) HandleConn(context.Context, stats.ConnStats)                       {}

func (s notingStats) HandleRPC(ctx context.Context, st stats.RPCStats) {
	if h, ok := st.(*stats.InHeader); ok && h.Client {
		if v := h.Header.Get(emulator.HeaderRequestID); len(v) > 0 {
			note(ctx, s.target, v[0])
		}
	}
}

func writeFile(path string, render func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return errcodes.Wrap(err, errcodes.InvalidParam, "bench: create "+path+": "+err.Error())
	}
	if err := render(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// plan builds the plan from the config file and the flags, and says
// whether it is the default reference experiment.
func (c *benchCmd) plan() (*bench.Plan, bool, error) {
	if err := c.checkFlags(); err != nil {
		return nil, false, err
	}
	p := &bench.Plan{}
	if c.Config != "" {
		lp, err := bench.LoadPlan(c.Config)
		if err != nil {
			return nil, false, err
		}
		p = lp
	}
	reference := false
	switch {
	case len(c.Endpoint) > 0 || c.Model != "" || c.URL != "" || c.GRPCAddr != "":
		eps := c.Endpoint
		if len(eps) == 0 {
			eps = []string{""}
		}
		prov := cmpOr(c.Provider, cloudreq.ProviderOpenAI)
		for _, ep := range eps {
			t := bench.Target{
				Provider: prov, Endpoint: ep, Model: c.Model, Variant: c.Variant, Path: c.Path, URL: c.URL, GRPCAddr: c.GRPCAddr,
				Region: c.Region, Project: c.Project, Location: c.Location, Action: c.Action, Stream: !c.NoStream,
				Payload: bench.Payload{File: c.Payload, ContentType: c.ContentType, Prompt: c.Prompt,
					PromptTokens: c.PromptTokens, OutputTokens: c.OutputTokens},
			}
			if t.Model == "" && t.Endpoint != "" && !isURL(t.Endpoint) && prov == cloudreq.ProviderOpenAI {
				t.Model = t.Endpoint // an OpenAI-compatible server routes by model
			}
			p.Targets = append(p.Targets, t)
		}
	case c.Config == "":
		reference = true
		prov := cmpOr(c.Provider, defaultProvider())
		for _, m := range referenceModels {
			// The payload and addressing flags apply to the reference
			// models as to flag-built targets.
			t := bench.Target{
				Provider: prov, Endpoint: m, Variant: c.Variant, Path: c.Path,
				Region: c.Region, Project: c.Project, Location: c.Location, Action: c.Action, Stream: !c.NoStream,
				Payload: bench.Payload{File: c.Payload, ContentType: c.ContentType, Prompt: c.Prompt,
					PromptTokens: c.PromptTokens, OutputTokens: c.OutputTokens},
			}
			if prov == cloudreq.ProviderOpenAI {
				t.Model = m
			}
			p.Targets = append(p.Targets, t)
		}
		if c.Warmup < 0 {
			p.Limits.Warmup = 1
		}
		// The three models are independent endpoints: measuring them at
		// once (each still sequential) gives each three times the sample
		// in the same minute.
		p.Parallel = true
	default:
		if c.NoStream {
			for i := range p.Targets {
				p.Targets[i].Stream = false
			}
		}
	}
	if c.Network != "" {
		for i := range p.Targets {
			p.Targets[i].Network = c.Network // the flag wins over the file
		}
	}
	c.applyLoad(p)
	for _, s := range c.SLA {
		sla, err := latency.ParseSLA(s)
		if err != nil {
			return nil, false, usageError{err}
		}
		p.SLAs = append(p.SLAs, sla)
	}
	for _, s := range c.FailOn {
		g, err := bench.ParseGate(s)
		if err != nil {
			return nil, false, usageError{err}
		}
		p.FailOn = append(p.FailOn, g)
	}
	if err := c.applyMix(p); err != nil {
		return nil, false, err
	}
	return p, reference, nil
}

// checkFlags refuses, as usage errors, flag values that cannot mean
// anything: an unknown provider, a server flag the provider does not speak
// (see checkServerFlags), a network impairment that does not parse, and
// negative numbers (checkNumbers). The SLA and gate specs are checked as
// they are read.
func (c *benchCmd) checkFlags() error {
	if c.Provider != "" {
		if err := checkProvider(c.Provider); err != nil {
			return err
		}
	}
	if err := checkServerFlags(cmpOr(c.Provider, cloudreq.ProviderOpenAI), c.URL, c.GRPCAddr); err != nil {
		return err
	}
	if c.Network != "" {
		if _, err := impair.Parse(c.Network); err != nil {
			return usageError{errcodes.Wrap(err, errcodes.InvalidParam, "bench: --network: "+err.Error())}
		}
	}
	return c.checkNumbers()
}

// checkNumbers refuses a negative count, rate or duration among the flags,
// which would otherwise be taken as "not given" and silently ignored.
func (c *benchCmd) checkNumbers() error {
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"--prompt-tokens", float64(c.PromptTokens)}, {"--output-tokens", float64(c.OutputTokens)},
		{"--concurrency", float64(c.Concurrency)}, {"--rate", c.Rate}, {"--max-in-flight", float64(c.MaxInFlight)},
		{"--late-after", float64(c.LateAfter)}, {"--requests", float64(c.Requests)}, {"--duration", float64(c.Duration)},
		{"--ladder-start", c.LadderStart}, {"--ladder-step", c.LadderStep}, {"--ladder-step-length", float64(c.LadderStepLength)},
		{"--ladder-high-water", float64(c.LadderHighWater)}, {"--ladder-low-water", float64(c.LadderLowWater)},
		{"--ladder-backoff", c.LadderBackoff}, {"--ladder-floor", c.LadderFloor}, {"--ladder-target", c.LadderTarget},
		{"--retries", float64(c.Retries)}, {"--timeout", float64(c.Timeout)}, {"--time-scale", c.TimeScale},
	} {
		if f.v < 0 || math.IsNaN(f.v) {
			return usageError{errcodes.Errorf(errcodes.InvalidParam, "bench: %s must not be negative (got %g)", f.name, f.v)}
		}
	}
	return nil
}

func (c *benchCmd) applyLoad(p *bench.Plan) {
	l := &p.Load
	setS(&l.Model, c.Load)
	if c.Rate > 0 && l.Model == "" {
		l.Model = bench.LoadConstant // a rate and no model: an open loop at that rate
	}
	setI(&l.Concurrency, c.Concurrency)
	if c.Rate > 0 {
		l.Rate = c.Rate
	}
	setI(&l.MaxInFlight, c.MaxInFlight)
	if c.LateAfter > 0 {
		l.LateAfter = bench.Duration(c.LateAfter)
	}
	ld := &l.Ladder
	setF(&ld.Start, c.LadderStart)
	setF(&ld.Increment, c.LadderStep)
	setF(&ld.Backoff, c.LadderBackoff)
	setF(&ld.Floor, c.LadderFloor)
	setF(&ld.Target, c.LadderTarget)
	setS(&ld.Metric, c.LadderMetric)
	if c.LadderStepLength > 0 {
		ld.Step = bench.Duration(c.LadderStepLength)
	}
	if c.LadderHighWater > 0 {
		ld.HighWater = bench.Duration(c.LadderHighWater)
	}
	if c.LadderLowWater > 0 {
		ld.LowWater = bench.Duration(c.LadderLowWater)
	}
	setI(&p.Limits.Requests, c.Requests)
	if c.Duration > 0 {
		p.Limits.Duration = bench.Duration(c.Duration)
	}
	if c.Warmup >= 0 {
		p.Limits.Warmup = c.Warmup
	}
	if c.Seed > 0 {
		p.Seed = c.Seed
	}
	if l.Model != bench.LoadLadder && p.Limits.Duration == 0 && p.Limits.Requests == 0 {
		p.Limits.Requests = defaultRequests
	}
	if l.Model == bench.LoadLadder && p.Limits.Duration == 0 && p.Limits.Requests == 0 {
		// A ladder runs by time: ten steps unless told otherwise.
		step := ld.Step.D()
		if step == 0 {
			step = bench.DefaultLadderStep
		}
		p.Limits.Duration = bench.Duration(10 * step)
	}
}

func (c *benchCmd) applyMix(p *bench.Plan) error {
	switch {
	case c.Mix != "" && c.TrafficLog != "":
		return errcodes.New(errcodes.InvalidParam, "bench: give --mix or --traffic-log, not both")
	case c.Mix != "":
		b, err := os.ReadFile(c.Mix)
		if err != nil {
			return errcodes.Wrap(err, errcodes.InvalidParam, "bench: read mix: "+err.Error())
		}
		m, err := bench.ParseMix(b)
		if err != nil {
			return err
		}
		p.Mix = m
	case c.TrafficLog != "":
		f, err := os.Open(c.TrafficLog)
		if err != nil {
			return errcodes.Wrap(err, errcodes.InvalidParam, "bench: open traffic log: "+err.Error())
		}
		defer f.Close()
		format := ""
		if strings.HasSuffix(c.TrafficLog, ".jsonl") || strings.HasSuffix(c.TrafficLog, ".ndjson") {
			format = "jsonl"
		}
		recs, err := bench.ReadTrafficLog(f, format)
		if err != nil {
			return err
		}
		p.Mix = bench.MixFromLog(recs)
	}
	return nil
}

func setS(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}

func setI(dst *int, v int) {
	if v > 0 {
		*dst = v
	}
}

func setF(dst *float64, v float64) {
	if v > 0 {
		*dst = v
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// needsEmulator reports whether some target goes to the embedded emulator.
func (c *benchCmd) needsEmulator(p *bench.Plan) bool {
	if c.Cloud {
		return false
	}
	for i := range p.Targets {
		if toEmulator(&p.Targets[i]) {
			return true
		}
	}
	return false
}

// toEmulator reports whether t names no server of its own (a URL for the
// HTTP providers, a gRPC address for Vertex), and so goes to the embedded
// emulator.
func toEmulator(t *bench.Target) bool {
	if t.Provider == cloudreq.ProviderGCP {
		return t.GRPCAddr == ""
	}
	return t.URL == ""
}

// checkProvider refuses, as a usage error, a --provider that names no
// provider or service.
func checkProvider(name string) error {
	if _, _, ok := bench.ProviderOf(name); ok {
		return nil
	}
	return usageError{errcodes.Errorf(errcodes.InvalidParam,
		"--provider %q: want aws, azure, gcp, alibaba or openai (or a service: sagemaker, azureml, vertex, pai-eas, openai-compatible)", name)}
}

// checkServerFlags refuses, as a usage error, server flags that leave the
// provider without the one it speaks: --url is a server's HTTP root (the
// HTTP providers'), --grpc-addr its gRPC address (Vertex's). Both may be
// given (one server's two listeners, as cloudinfer emulate has); each
// provider uses its own. Vertex given only --url would otherwise go to
// Google's endpoint, an HTTP provider given only --grpc-addr to the
// embedded emulator.
func checkServerFlags(provider, url, grpcAddr string) error {
	prov, _, ok := bench.ProviderOf(provider)
	switch {
	case !ok:
		return nil // refused with its own words
	case prov == cloudreq.ProviderGCP && url != "" && grpcAddr == "":
		return usageError{errcodes.New(errcodes.InvalidParam,
			"gcp (Vertex) is reached over gRPC, not at --url: give the server's gRPC address with --grpc-addr HOST:PORT (cloudinfer emulate prints it as \"Vertex gRPC:\"; its default is 127.0.0.1:8081)")}
	case prov != cloudreq.ProviderGCP && grpcAddr != "" && url == "":
		return usageError{errcodes.Errorf(errcodes.InvalidParam,
			"--grpc-addr is Vertex's (gcp) gRPC server; %s speaks HTTP: give the server's root with --url", prov)}
	}
	return nil
}

// emulatorRoot returns the Azure ML endpoint template of a target whose
// base URL is a server's root on this machine, with no path (a cloudinfer
// emulate, as for the other HTTP providers): ROOT/azureml/{endpoint}, the
// emulator's Azure route. ok is false for any other target: an endpoint
// given as a URL, a URL with a path or a template, a server elsewhere (an
// Azure endpoint's own root, https://ENDPOINT.REGION.inference.ml.azure.com,
// has no path either).
func emulatorRoot(t *bench.Target) (string, bool) {
	if t.URL == "" || isURL(t.Endpoint) || strings.Contains(t.URL, "{") {
		return "", false
	}
	u, err := url.Parse(t.URL)
	if err != nil || (u.Path != "" && u.Path != "/") || !loopbackHost(u.Hostname()) {
		return "", false
	}
	root := u.Scheme + "://" + u.Host + "/azureml/{endpoint}"
	if u.RawQuery != "" {
		root += "?" + u.RawQuery
	}
	return root, true
}

// referenceRequests is the default run's request count per model: as many
// as the slowest model fits, with the warm-up, in about a minute given the
// emulator's reference profiles (mean total = TTFT + TPOT × (N_out − 1)),
// between 5 and 100. The models run at the same time.
func referenceRequests(scale float64, warmup int) int {
	if scale == 0 {
		scale = 1 // as the emulator reads it
	}
	total := 0.0 // the slowest model's mean request: the models run at once
	for _, m := range referenceModels {
		p, ok := emulator.BuiltinProfile(m)
		if !ok {
			return 100
		}
		total = max(total, (p.TTFTMs.Mean+p.TPOTMs.Mean*(p.OutputTokens.Mean-1))*scale)
	}
	if total <= 0 {
		return 100
	}
	n := int(math.Floor(float64(referenceBudget.Milliseconds())/total)) - max(warmup, 0)
	return min(max(n, 5), 100)
}

// environment holds what a run starts: the embedded emulator, telemetry.
type environment struct {
	cmd  *benchCmd
	plan *bench.Plan // its seed seeds the network impairments that set none
	emu  *emulator.Server
	obs  []cloudreq.Observer // one per metrics destination
	prom *telemetry.Prometheus
	otlp *telemetry.Providers

	// trace ties the emulator's records to the targets that sent them
	// (nil: no emulator, or no bench run).
	trace *emuTrace

	mu         sync.Mutex
	transports []*http.Transport // the impaired targets' own, closed with the run
}

func (e *environment) startEmulator() error {
	srv, err := emulator.New(emulator.Options{TimeScale: e.cmd.TimeScale, Seed: max(e.cmd.Seed, 1), MaxRecords: groundTruthRecords})
	if err != nil {
		return err
	}
	if err := srv.Start("127.0.0.1:0", "127.0.0.1:0"); err != nil {
		return err
	}
	e.emu = srv
	return nil
}

// telemetry starts the exporters the flags ask for and an Observer for
// each metrics destination: an Observer records into one MeterProvider, so
// with both --metrics-addr and --otlp set, one records for Prometheus (its
// spans dropped) and one exports spans and metrics over OTLP.
func (e *environment) telemetry(ctx context.Context) error {
	c := e.cmd
	if c.MetricsAddr != "" {
		p, err := telemetry.ServePrometheus(ctx, c.MetricsAddr)
		if err != nil {
			return err
		}
		e.prom = p
		fmt.Fprintf(os.Stderr, "metrics at %s\n", p.URL())
		if c.metricsAt != nil {
			c.metricsAt(p.URL())
		}
		var tp trace.TracerProvider // nil: the global one
		if c.OTLP != "" {
			tp = tracenoop.NewTracerProvider() // the OTLP Observer traces
		}
		if err := e.observe(telemetry.Options{TracerProvider: tp, MeterProvider: p.MeterProvider}); err != nil {
			return err
		}
	}
	if c.OTLP != "" {
		p, err := telemetry.OTLP(ctx, c.OTLP)
		if err != nil {
			return err
		}
		e.otlp = p
		if err := e.observe(telemetry.Options{TracerProvider: p.TracerProvider, MeterProvider: p.MeterProvider}); err != nil {
			return err
		}
	}
	return nil
}

// observe adds an Observer with opts to the run's.
func (e *environment) observe(opts telemetry.Options) error {
	obs, err := telemetry.New(opts)
	if err != nil {
		return err
	}
	e.obs = append(e.obs, obs)
	return nil
}

func (e *environment) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if e.prom != nil {
		_ = e.prom.Shutdown(ctx)
	}
	if e.otlp != nil {
		_ = e.otlp.Shutdown(ctx)
	}
	if e.emu != nil {
		_ = e.emu.Close()
	}
	e.mu.Lock()
	for _, t := range e.transports {
		t.CloseIdleConnections()
	}
	e.mu.Unlock()
}

// connect builds the client of one target: its provider's adapter, the
// default hooks, no retries unless asked, the per-request timeout.
func (e *environment) connect(ctx context.Context, t *bench.Target) (*cloudreq.Client, error) {
	ad, err := e.adapter(ctx, t)
	if err != nil {
		return nil, err
	}
	opts := cloudreq.Options{
		Adapters:          []cloudreq.Adapter{ad},
		Hooks:             hooks.Default(),
		Retry:             cloudreq.RetryOptions{MaxAttempts: 1 + max(e.cmd.Retries, 0)},
		Timeout:           e.cmd.Timeout,
		ScaleToZeroWindow: t.ScaleToZero.D(),
	}
	return cloudreq.New(opts)
}

// emulated reports whether t goes to the embedded emulator.
func (e *environment) emulated(t *bench.Target) bool { return e.emu != nil && toEmulator(t) }

// adapterFactories build a provider's adapter for a target; emu is the
// embedded emulator when the target goes to it.
var adapterFactories = map[string]func(ctx context.Context, t *bench.Target, emu *emulator.Server, n netOpts) (cloudreq.Adapter, error){
	cloudreq.ProviderOpenAI: func(_ context.Context, t *bench.Target, emu *emulator.Server, n netOpts) (cloudreq.Adapter, error) {
		// Credentials: OPENAI_API_KEY, over plain http only to a server on
		// this machine (a local vLLM started with --api-key, a cloudinfer
		// emulate with keys), where it does not cross a network; another
		// host is refused. The embedded emulator is sent none.
		o := openai.Options{BaseURL: t.URL, APIKey: os.Getenv("OPENAI_API_KEY"), HTTPClient: n.http}
		switch {
		case emu != nil:
			o.BaseURL, o.APIKey = emu.URL(), ""
		case loopbackHTTP(serverURL(t)):
			o.AllowInsecureHTTP = true
		case o.APIKey != "" && plainHTTP(serverURL(t)):
			return nil, inClear(t, "OPENAI_API_KEY")
		}
		return openai.New(o)
	},
	cloudreq.ProviderAzure: func(_ context.Context, t *bench.Target, emu *emulator.Server, n netOpts) (cloudreq.Adapter, error) {
		// Credentials: AZUREML_API_KEY when set, else Microsoft Entra's
		// default chain (azidentity.DefaultAzureCredential) — except for a
		// plain-http loopback URL (a local emulator), sent no credential
		// unless a key is set.
		o := azureml.Options{EndpointURL: t.URL, Region: t.Region, Key: os.Getenv("AZUREML_API_KEY"), HTTPClient: n.http}
		if root, ok := emulatorRoot(t); ok {
			o.EndpointURL = root
		}
		switch {
		case emu != nil:
			o.EndpointURL, o.Anonymous, o.Key, o.AllowInsecureHTTP = emu.URL()+"/azureml/{endpoint}", true, "", true
		case loopbackHTTP(serverURL(t)):
			o.AllowInsecureHTTP, o.Anonymous = true, o.Key == ""
		case plainHTTP(serverURL(t)):
			return nil, inClear(t, "an Azure credential")
		}
		return azureml.New(o)
	},
	cloudreq.ProviderAlibaba: func(_ context.Context, t *bench.Target, emu *emulator.Server, n netOpts) (cloudreq.Adapter, error) {
		// PAI-EAS authenticates with the service token: EAS_TOKEN, over
		// plain http only to a server on this machine (as OPENAI_API_KEY).
		o := paieas.Options{Endpoint: t.URL, Token: os.Getenv("EAS_TOKEN"), HTTPClient: n.http}
		switch {
		case emu != nil:
			o.Endpoint, o.Token, o.AllowInsecureHTTP = emu.URL(), "", true
		case loopbackHTTP(serverURL(t)):
			o.AllowInsecureHTTP = true
		case o.Token != "" && plainHTTP(serverURL(t)):
			return nil, inClear(t, "EAS_TOKEN")
		}
		return paieas.New(o)
	},
	cloudreq.ProviderAWS: func(ctx context.Context, t *bench.Target, emu *emulator.Server, n netOpts) (cloudreq.Adapter, error) {
		o := sagemaker.Options{Region: t.Region, BaseEndpoint: t.URL, HTTPClient: n.http}
		switch {
		case emu != nil:
			o.BaseEndpoint, o.AllowInsecureHTTP = emu.URL(), true
			o.Region = cmpOr(o.Region, "us-east-1")
			o.Credentials = credentials.NewStaticCredentialsProvider("emulator", "emulator", "")
		case loopbackHTTP(t.URL):
			// A local emulator: signed with placeholder keys unless the
			// environment names some (an emulator configured with keys).
			o.AllowInsecureHTTP = true
			o.Region = cmpOr(o.Region, "us-east-1")
			if os.Getenv("AWS_ACCESS_KEY_ID") == "" {
				o.Credentials = credentials.NewStaticCredentialsProvider("emulator", "emulator", "")
			}
		case plainHTTP(t.URL):
			// SigV4 keeps the secret key, but the access key id and a
			// session token would cross the network in clear.
			return nil, inClear(t, "AWS credentials")
		}
		return sagemaker.New(ctx, o)
	},
	cloudreq.ProviderGCP: func(ctx context.Context, t *bench.Target, emu *emulator.Server, n netOpts) (cloudreq.Adapter, error) {
		o := vertex.Options{Project: t.Project, Location: t.Location, Endpoint: t.GRPCAddr, ClientOptions: n.grpc}
		switch {
		case emu != nil:
			o.Endpoint, o.Insecure = emu.GRPCAddr(), true
			o.Project, o.Location = cmpOr(o.Project, "emulator"), cmpOr(o.Location, "us-central1")
		case loopbackAddr(t.GRPCAddr):
			// A local emulator: plain text, no Google credentials.
			o.Insecure = true
			o.Project, o.Location = cmpOr(o.Project, "emulator"), cmpOr(o.Location, "us-central1")
		}
		return vertex.New(ctx, o)
	},
}

// serverURL returns the URL t's requests go to: its endpoint when that is
// a URL (the Azure ML, PAI-EAS and OpenAI-compatible adapters send there),
// else its base URL.
func serverURL(t *bench.Target) string {
	if isURL(t.Endpoint) {
		return t.Endpoint
	}
	return t.URL
}

// isURL reports whether s is an http or https URL rather than a name.
func isURL(s string) bool {
	ls := strings.ToLower(s)
	return strings.HasPrefix(ls, "http://") || strings.HasPrefix(ls, "https://")
}

// plainHTTP reports whether u is a plain-http URL.
func plainHTTP(u string) bool {
	pu, err := url.Parse(u)
	return err == nil && pu.Scheme == "http"
}

// inClear is the refusal of a credential (what) that would go over plain
// http to another host than this machine.
func inClear(t *bench.Target, what string) error {
	host := serverURL(t)
	if pu, err := url.Parse(host); err == nil {
		host = pu.Host
	}
	return errcodes.Errorf(errcodes.InvalidParam, "%s: refusing to send %s over plain http to %s, which is not this machine; use https", t.Provider, what, host)
}

// endpointURLs makes every target's endpoint that is a URL its server
// (endpointURL), so that it does not go to the embedded emulator.
// SageMaker and Vertex address endpoints by name only; an
// OpenAI-compatible server given by URL needs a model. A Vertex target
// with a url and no grpc_addr is refused (it would go to Google's own
// endpoint), as is another provider's target with a grpc_addr and no url
// (it would go to the embedded emulator).
func endpointURLs(p *bench.Plan) error {
	for i := range p.Targets {
		t := &p.Targets[i]
		head := fmt.Sprintf("bench: target %q: ", t.Name)
		switch {
		case t.Provider == cloudreq.ProviderGCP && t.URL != "" && t.GRPCAddr == "":
			return errcodes.New(errcodes.InvalidParam, head+"gcp (Vertex) is reached over gRPC, not at its url: give the server's gRPC address as grpc_addr (HOST:PORT)")
		case t.Provider != cloudreq.ProviderGCP && t.GRPCAddr != "" && t.URL == "" && !isURL(t.Endpoint):
			return errcodes.New(errcodes.InvalidParam, head+"grpc_addr is Vertex's (gcp); "+t.Provider+" speaks HTTP: give the server's root as url")
		}
		if !isURL(t.Endpoint) {
			continue
		}
		if t.Provider == cloudreq.ProviderOpenAI && t.Model == "" { // the URL names the server, not the model
			return errcodes.New(errcodes.InvalidParam, head+"an OpenAI-compatible server given by URL needs the model to ask for (--model)")
		}
		if err := endpointURL(t, head, "give the server's gRPC address with --grpc-addr (grpc_addr in a plan)"); err != nil {
			return err
		}
	}
	return nil
}

// loopbackHTTP reports whether u is a plain-http URL on this machine
// (127.0.0.0/8, ::1 or localhost): a local emulator or server, which
// credentials may reach without TLS.
func loopbackHTTP(u string) bool {
	pu, err := url.Parse(u)
	return err == nil && pu.Scheme == "http" && loopbackHost(pu.Hostname())
}

// loopbackAddr reports whether a host:port address is on this machine.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && loopbackHost(host)
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// benchTransport is the transport of the HTTP adapters: as many idle
// connections per host as a run may have requests in flight, so that a
// high-rate run reuses connections instead of opening new ones (the
// standard transport keeps 2 per host).
var benchTransport = func() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 0
	tr.MaxIdleConnsPerHost = bench.DefaultMaxInFlight
	return tr
}()

// benchHTTPClient is the HTTP client of the HTTP adapters of targets
// without a network impairment: one pool for them all.
var benchHTTPClient = &http.Client{Transport: benchTransport}

// netOpts are how a target's adapter reaches the network: the HTTP
// adapters' client and Vertex's extra client options.
type netOpts struct {
	http *http.Client
	grpc []option.ClientOption
}

// netFor returns the target's network options: the shared client, or,
// when the target has a network impairment, a client and a gRPC dialer of
// its own whose connections take it. An impairment that sets no seed takes
// the plan's, so that machines of one merged run, each with its own
// --seed, draw apart.
func (e *environment) netFor(t *bench.Target) (netOpts, error) {
	if t.Network == "" {
		return netOpts{http: benchHTTPClient}, nil
	}
	p, err := impair.Parse(t.Network)
	if err != nil {
		return netOpts{}, errcodes.Wrap(err, errcodes.InvalidParam, "bench: target "+t.Name+": network: "+err.Error())
	}
	if p.Seed == 0 && e.plan != nil {
		p.Seed = e.plan.Seed
	}
	tr, err := p.Transport(benchTransport, nil)
	if err != nil {
		return netOpts{}, errcodes.Wrap(err, errcodes.InvalidParam, "bench: "+err.Error())
	}
	e.mu.Lock()
	e.transports = append(e.transports, tr)
	e.mu.Unlock()
	dial := p.Dialer(nil)
	return netOpts{
		http: &http.Client{Transport: tr},
		grpc: []option.ClientOption{option.WithGRPCDialOption(grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return dial(ctx, "tcp", addr)
		}))},
	}, nil
}

// defaultProvider is the default run's provider: OpenAI-compatible (vLLM's
// own protocol, as in the reference measurements) when built in, else the
// first one that is.
func defaultProvider() string {
	for _, p := range []string{cloudreq.ProviderOpenAI, cloudreq.ProviderAWS, cloudreq.ProviderAzure, cloudreq.ProviderAlibaba, cloudreq.ProviderGCP} {
		if _, ok := adapterFactories[p]; ok {
			return p
		}
	}
	return cloudreq.ProviderOpenAI
}

func (e *environment) adapter(ctx context.Context, t *bench.Target) (cloudreq.Adapter, error) {
	f, ok := adapterFactories[t.Provider]
	if !ok {
		return nil, errcodes.Errorf(errcodes.InvalidParam, "bench: provider %q is not built into this binary", t.Provider)
	}
	var emu *emulator.Server
	if e.emulated(t) {
		emu = e.emu
	}
	n, err := e.netFor(t)
	if err != nil {
		return nil, err
	}
	if emu != nil && e.trace != nil {
		n = e.trace.wrap(t.Name, n)
	}
	ad, err := f(ctx, t, emu, n)
	if err != nil {
		var ce *errcodes.Error
		if errors.As(err, &ce) {
			return nil, ce
		}
		return nil, errcodes.Wrap(err, errcodes.InvalidParam, "bench: "+t.Provider+" adapter")
	}
	return ad, nil
}
