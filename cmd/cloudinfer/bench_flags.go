package main

import (
	"math"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/bench/servermetrics"
	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/impair"
	"github.com/cloudinfer/cloudinfer/providers/vertex"
)

// benchCmd is the `cloudinfer bench` command.
type benchCmd struct {
	Config string `help:"Plan file (YAML or JSON) with targets, load, limits, mix and SLAs; load and limit flags given here override it." type:"existingfile" placeholder:"FILE" group:"Targets"`

	Provider  string   `help:"Provider of the flag-built targets: openai, aws (sagemaker), azure (azureml), gcp (vertex), alibaba (pai-eas); or a service: sagemaker-async (SageMaker asynchronous inference), sagemaker-openai (SageMaker AI's OpenAI-compatible route, bearer tokens), vertex-openai (Vertex AI's OpenAI-compatible chat), pai-eas-queue (an asynchronous PAI-EAS service through its queue)." placeholder:"NAME" group:"Targets"`
	Endpoint  []string `help:"Endpoint to benchmark, or the URL of an Azure ML endpoint, a PAI-EAS service or an OpenAI-compatible server (which it then goes to); repeat for side-by-side targets." placeholder:"NAME" group:"Targets"`
	Model     string   `help:"Model name (OpenAI-compatible model, SageMaker target model, Vertex publisher model)." group:"Targets"`
	Variant   string   `help:"SageMaker production variant or Azure ML deployment." group:"Targets"`
	Path      string   `help:"Sub-path under the endpoint (PAI-EAS)." group:"Targets"`
	URL       string   `name:"url" help:"HTTP root of the server to send to instead of the cloud's own or the embedded emulator (an OpenAI-compatible server, a gateway, a cloudinfer emulate running apart). For azure, a root on this machine with no path is an emulator's: requests go to ROOT/azureml/ENDPOINT. Vertex (gcp) speaks gRPC: give --grpc-addr (with or without --url)." placeholder:"URL" group:"Targets"`
	GRPCAddr  string   `name:"grpc-addr" help:"HOST:PORT of the Vertex (gcp) gRPC server to send to instead of Google's or the embedded emulator (cloudinfer emulate prints it as \"Vertex gRPC:\"; default 127.0.0.1:8081). On this machine: plain text, no Google credential; elsewhere: TLS and Application Default Credentials." placeholder:"HOST:PORT" group:"Targets"`
	Transport string   `name:"transport" help:"How Vertex (gcp) calls travel: grpc (default) or rest (Vertex AI's REST API, JSON over HTTPS, for networks that block gRPC; --url is then the server's HTTP root, a cloudinfer emulate's included)." enum:",grpc,rest" default:"" group:"Targets"`
	Method    string   `name:"method" help:"Vertex (gcp) invoke RPC: predict, rawPredict, generateContent, streamGenerateContent (the body your own GenerateContentRequest JSON: safetySettings, cachedContent, labels, …) or serverStreamingPredict (streams only; the body a StreamingPredictRequest's JSON). Default: chosen from the body." placeholder:"RPC" group:"Targets"`
	Region    string   `help:"AWS region." group:"Targets"`
	Project   string   `help:"GCP project." group:"Targets"`
	Location  string   `help:"GCP location." group:"Targets"`
	Cloud     bool     `help:"Send targets without a URL to the real cloud instead of the embedded emulator. Credentials: AWS and GCP default chains, AZUREML_API_KEY or Azure's default chain, EAS_TOKEN, OPENAI_API_KEY." group:"Targets"`

	Action       string `help:"generate (portable text generation) or invoke (the payload's bytes as they are)." enum:",generate,invoke" default:"" group:"Payload"`
	NoStream     bool   `help:"Read whole responses instead of streams (no TTFT/TPOT)." group:"Payload"`
	Payload      string `help:"Raw request body file (implies invoke)." type:"existingfile" placeholder:"FILE" group:"Payload"`
	ContentType  string `help:"Content type of --payload." group:"Payload"`
	Prompt       string `help:"Prompt text (generate); default: a generated prompt of --prompt-tokens." group:"Payload"`
	PromptTokens int    `help:"Length of the generated prompt in tokens." default:"512" group:"Payload"`
	OutputTokens int    `help:"Maximum output tokens (0: the server's default)." group:"Payload"`
	IgnoreEOS    bool   `name:"ignore-eos" help:"Ask for exactly --output-tokens tokens, past the end of sequence (vLLM's ignore_eos; OpenAI-compatible and PAI-EAS targets, set by itself for a trace replay there)." group:"Payload"`

	Load        string        `help:"Load model: closed, constant, poisson, gamma (--rate, --burstiness), ramp (--ramp-*), ladder, trace (--trace) or sessions (--users, --turns). See go doc ./bench." enum:",closed,constant,poisson,gamma,ramp,ladder,trace,sessions" default:"" group:"Load"`
	Concurrency int           `help:"Closed loop: concurrent workers (1: sequential)." group:"Load"`
	Rate        float64       `help:"Open loop: requests per second (at most 1e6)." group:"Load"`
	MaxInFlight int           `help:"Open loop: cap on requests in flight (sends past it are late, never dropped)." group:"Load"`
	LateAfter   time.Duration `help:"Schedule lag beyond which a send counts as late (default 10ms)." group:"Load"`
	SendSpin    time.Duration `help:"Open loop: the last stretch before each send spun through instead of slept, for sends on time to the microsecond (default 50us, more where the timer is seen waking later than that; at most a tenth of the time between sends: rate x spin of a core); negative: the runtime's timer alone." group:"Load"`
	SendWindow  time.Duration `help:"Open loop: where sends are closer than this on average, wake at most once per window and send all that are due, each late by less than a window (above four sends a window, every four sends, at least half a window apart); a wake costs more CPU than a send (default 500us); negative: a wake for each send." group:"Load"`
	HTTPClient  string        `name:"http-client" help:"HTTP/1.1 client for cleartext (http://) targets: sync (requests written and read on the sending goroutine: less client CPU per request) or std (net/http's Transport). https and proxied targets always use net/http's." enum:"sync,std" default:"sync" group:"Load"`
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

	Burstiness   float64       `help:"Gamma: inter-arrival shape at --rate; 1 is Poisson, below 1 burstier, above 1 smoother (default 1)." group:"Workloads"`
	RampFrom     float64       `help:"Ramp: first rate, requests/s." group:"Workloads"`
	RampTo       float64       `help:"Ramp: last rate, requests/s, held after --ramp-over." group:"Workloads"`
	RampOver     time.Duration `help:"Ramp: how long the rate takes from --ramp-from to --ramp-to." group:"Workloads"`
	RampShape    string        `help:"Ramp: linear or exponential (default linear)." enum:",linear,exponential" default:"" group:"Workloads"`
	RampArrivals string        `help:"Ramp: constant or poisson arrivals (default constant)." enum:",constant,poisson" default:"" group:"Workloads"`
	Trace        string        `help:"Replay this trace (implies --load trace): the Azure LLM inference trace 2023/2024 or BurstGPT (CSV), Mooncake or Qwen Bailian (JSONL), told apart by their header or first record. Each request: a prompt of the record's input length, max tokens its output length. Without --requests or --duration the whole trace is sent." type:"existingfile" placeholder:"FILE" group:"Workloads"`
	TraceSpeed   float64       `help:"Trace: speed factor (10: ten times as fast; default 1)." group:"Workloads"`
	TraceStart   time.Duration `help:"Trace: replay from this far into the trace." group:"Workloads"`
	TraceLength  time.Duration `help:"Trace: replay this much of the trace (0: to its end)." group:"Workloads"`
	Users        int           `help:"Sessions: concurrent users, each holding one conversation after another (default 1; implies --load sessions)." group:"Workloads"`
	Turns        int           `help:"Sessions: turns per conversation; turn k's prompt holds the conversation so far (default 3)." group:"Workloads"`
	TurnTokens   int           `help:"Sessions: length of each user message after the first (default --prompt-tokens)." group:"Workloads"`
	Think        time.Duration `help:"Sessions: mean think time between turns." group:"Workloads"`
	ThinkDist    string        `help:"Sessions: think-time distribution: constant, exponential or uniform (default constant)." enum:",constant,exponential,uniform" default:"" group:"Workloads"`
	Stateful     bool          `help:"Sessions: carry SageMaker stateful session ids (opened with NEW_SESSION, closed after the last turn)." group:"Workloads"`
	PrefixGroups int           `help:"Shared prefixes: how many groups (request i is in group i mod N; default 1 with --prefix-tokens)." group:"Workloads"`
	PrefixTokens int           `help:"Shared prefixes: each group's prompt prefix, in tokens (at most --prompt-tokens)." group:"Workloads"`

	Mix        string   `help:"Weighted request mix file (YAML or JSON: classes, dimensions)." type:"existingfile" placeholder:"FILE" group:"Mix"`
	TrafficLog string   `help:"Build the mix from a traffic log (CSV or JSONL: path, method, headers, latency_ms, tag columns)." type:"existingfile" placeholder:"FILE" group:"Mix"`
	SLA        []string `name:"sla" help:"SLA, e.g. \"ttft p95 150ms starts=warm\" (repeatable)." placeholder:"SPEC" group:"Mix"`
	FailOn     []string `name:"fail-on" help:"Exit 1 when the result fails this gate (repeatable; a plan's fail_on adds more): \"sla\" (every SLA passed, on every target), \"errors>N%\" (no target had more than N% of its measured requests fail) or \"errors>N\" (no more than N failed); \"errors>0\": none may fail. Without a gate, failed requests and SLAs are results and the command exits 0." placeholder:"GATE" group:"Mix"`

	Shards       int           `help:"Run one shard of the plan split over N workers (concurrency, rates and request limits split exactly; see docs/kubernetes.md); merge the shards' results with report --merge DIR." placeholder:"N" group:"Shards"`
	Shard        int           `help:"This worker's shard, 0 to N-1 (default: $JOB_COMPLETION_INDEX, which a Kubernetes Indexed Job sets)." default:"-1" placeholder:"I" group:"Shards"`
	Coordinator  string        `help:"HOST:PORT of shard 0, which waits there for every other shard and then starts them all at once (shard 0 listens on the port); without it each shard starts as it comes up." placeholder:"HOST:PORT" group:"Shards"`
	StartTimeout time.Duration `help:"How long the shards wait for each other at --coordinator; past it none runs, and each exits 1." default:"5m" group:"Shards"`

	TimeScale float64 `help:"Embedded emulator's time scale (1: real time; 0 means 1)." default:"1" group:"Emulator"`

	Retries int           `help:"Retries per request (0: none, so every failure is seen)." group:"Client"`
	Network string        `help:"Impair every target's connections, e.g. \"delay=20ms,jitter=2ms,loss=0.1%,rate=100mbit\" (each direction; up./down. prefixes for one; seed=N). See go doc ./impair." placeholder:"SPEC" group:"Client"`
	Timeout time.Duration `help:"Per-request timeout." default:"2m" group:"Client"`

	Out      string `help:"Result JSON file, or an existing directory to write it in (default: bench-results/bench-TIME.json; a shard's file is named shard-I-of-N.json)." placeholder:"FILE" group:"Output"`
	Format   string `help:"What to print: text, markdown, csv, json or html." enum:"text,markdown,csv,json,html" default:"text" group:"Output"`
	HTML     string `name:"html" help:"Also write the HTML report here." placeholder:"FILE" group:"Output"`
	CSV      string `name:"csv" help:"Also write CSV here." placeholder:"FILE" group:"Output"`
	Markdown string `help:"Also write Markdown here." placeholder:"FILE" group:"Output"`
	Detail   bool   `help:"Add the full per-group latency report to the text output." group:"Output"`
	Quiet    bool   `help:"No progress bar." group:"Output"`

	// CPUProfile writes a Go CPU profile of the whole command here (for
	// profiling the load generator itself; not in --help).
	CPUProfile string `name:"cpuprofile" hidden:"" type:"path"`
	// ExecTrace writes a Go execution trace of the whole command here
	// (go tool trace: where the load generator's goroutines waited; not
	// in --help).
	ExecTrace string `name:"exectrace" hidden:"" type:"path"`
	// MemProfile writes a Go allocation profile of the whole command
	// here at its end (go tool pprof -sample_index=alloc_space: where
	// the load generator's garbage comes from; not in --help).
	MemProfile string `name:"memprofile" hidden:"" type:"path"`

	MetricsAddr string `help:"Serve Prometheus metrics of the run on this address (e.g. :9464)." group:"Telemetry"`
	OTLP        string `name:"otlp" help:"Export spans and metrics over OTLP/HTTP to this endpoint." group:"Telemetry"`

	ServerMetrics         []string      `name:"server-metrics" help:"Prometheus /metrics URL of the targets' server, scraped during the run (repeatable): a baseline before the warm-up, every --server-metrics-interval, once at the end; counters as deltas, histograms as delta buckets, gauges over time, in the result and the report's \"where the time went\". Found by itself: BASE/metrics of an OpenAI-compatible server or emulator given by URL, and the embedded emulator's. \"off\": none at all. A failing /metrics is a warning, never a failed run." placeholder:"URL" group:"Server metrics"`
	ServerMetricsInterval time.Duration `name:"server-metrics-interval" help:"Time between two scrapes of the server metrics during the run (default 1s, at least 50ms)." group:"Server metrics"`
	ServerRequests        string        `name:"server-requests" type:"path" help:"File of the server's per-request OpenTelemetry spans: vLLM's (--otlp-traces-endpoint) as an OpenTelemetry Collector's file exporter writes them, OTLP JSON lines (or emulate --otlp-file). Each measured request is sent with an X-Request-Id of its own; at the end the spans are joined with them by that id (chatcmpl-<id>) for the exact, per-request split, method \"exact (vLLM spans)\". Unmatched requests and spans are counted." placeholder:"FILE" group:"Server metrics"`
	ServerRequestsWait    time.Duration `name:"server-requests-wait" help:"How long the end of the run waits, at most, for spans still missing from --server-requests (default 10s: vLLM exports a batch every 5s; negative: read once)." group:"Server metrics"`

	shardIndex int // the shard this worker runs (with Shards), from --shard or $JOB_COMPLETION_INDEX

	abort <-chan struct{} // closed by a second interrupt
	// metricsAt, when set, is told the Prometheus URL once it listens
	// (tests listen on port 0 and learn the port here).
	metricsAt func(url string)
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
	if err := checkServerFlags(cmpOr(c.Provider, cloudreq.ProviderOpenAI), c.URL, c.GRPCAddr, c.Transport); err != nil {
		return err
	}
	if c.Network != "" {
		if _, err := impair.Parse(c.Network); err != nil {
			return usageError{errcodes.Wrap(err, errcodes.InvalidParam, "bench: --network: "+err.Error())}
		}
	}
	if err := c.checkNumbers(); err != nil {
		return err
	}
	return c.checkShards()
}

// checkShards refuses, as usage errors, shard flags that name no shard,
// and resolves the shard's index (--shard, else $JOB_COMPLETION_INDEX).
func (c *benchCmd) checkShards() error {
	bad := func(format string, args ...any) error {
		return usageError{errcodes.Errorf(errcodes.InvalidParam, "bench: "+format, args...)}
	}
	switch {
	case c.Shards < 0 || c.Shards > bench.MaxShards:
		return bad("--shards %d: want 1 to %d", c.Shards, bench.MaxShards)
	case c.Shards == 0 && c.Shard >= 0:
		return bad("--shard %d needs --shards N", c.Shard)
	case c.Shards == 0 && c.Coordinator != "":
		return bad("--coordinator starts the shards of a sharded run: give --shards N")
	case c.Shard < -1:
		return bad("--shard must not be negative (got %d)", c.Shard)
	case c.Shards == 0:
		return nil
	}
	c.shardIndex = c.Shard
	if c.shardIndex < 0 {
		v, ok := os.LookupEnv("JOB_COMPLETION_INDEX")
		if !ok {
			return bad("--shards %d needs this worker's index: --shard I, or JOB_COMPLETION_INDEX as an Indexed Job sets it", c.Shards)
		}
		i, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || i < 0 {
			return bad("JOB_COMPLETION_INDEX=%q is no shard index", v)
		}
		c.shardIndex = i
	}
	if c.shardIndex >= c.Shards {
		return bad("shard %d of %d: want an index from 0 to %d", c.shardIndex, c.Shards, c.Shards-1)
	}
	if c.Coordinator != "" {
		host, port, err := net.SplitHostPort(c.Coordinator)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return bad("--coordinator %q: want HOST:PORT (shard 0's address; it listens on the port)", c.Coordinator)
		}
	}
	return nil
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
		{"--start-timeout", float64(c.StartTimeout)},
		{"--burstiness", c.Burstiness}, {"--ramp-from", c.RampFrom}, {"--ramp-to", c.RampTo}, {"--ramp-over", float64(c.RampOver)},
		{"--trace-speed", c.TraceSpeed}, {"--trace-start", float64(c.TraceStart)}, {"--trace-length", float64(c.TraceLength)},
		{"--users", float64(c.Users)}, {"--turns", float64(c.Turns)}, {"--turn-tokens", float64(c.TurnTokens)},
		{"--think", float64(c.Think)}, {"--prefix-groups", float64(c.PrefixGroups)}, {"--prefix-tokens", float64(c.PrefixTokens)},
	} {
		if f.v < 0 || math.IsNaN(f.v) {
			return usageError{errcodes.Errorf(errcodes.InvalidParam, "bench: %s must not be negative (got %g)", f.name, f.v)}
		}
	}
	return nil
}

// applyServerMetrics gives every target the --server-metrics URLs (or
// off) and the --server-requests file, and the plan the scrape interval.
func (c *benchCmd) applyServerMetrics(p *bench.Plan) error {
	for _, u := range c.ServerMetrics {
		if u == "off" {
			continue
		}
		if pu, err := url.Parse(u); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return usageError{errcodes.Errorf(errcodes.InvalidParam, "bench: --server-metrics %q: want an http(s) URL, or off", servermetrics.PublicURL(u))}
		}
	}
	if d := c.ServerMetricsInterval; d < 0 || (d > 0 && d < servermetrics.MinInterval) {
		return usageError{errcodes.Errorf(errcodes.InvalidParam, "bench: --server-metrics-interval %v: want at least %v", d, servermetrics.MinInterval)}
	}
	if c.ServerMetricsInterval > 0 {
		p.ServerMetricsInterval = bench.Duration(c.ServerMetricsInterval)
	}
	for i := range p.Targets {
		t := &p.Targets[i]
		for _, u := range c.ServerMetrics {
			if !slices.Contains(t.ServerMetrics, u) {
				t.ServerMetrics = append(t.ServerMetrics, u)
			}
		}
		if c.ServerRequests != "" {
			t.ServerRequests = c.ServerRequests
		}
		if c.ServerRequestsWait != 0 {
			t.ServerRequestsWait = bench.Duration(c.ServerRequestsWait)
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
	if c.SendSpin != 0 {
		l.SendSpin = bench.Duration(c.SendSpin)
	}
	if c.SendWindow != 0 {
		l.SendWindow = bench.Duration(c.SendWindow)
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
	c.applyWorkloads(p)
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
	if l.Model != bench.LoadLadder && l.Model != bench.LoadTrace && l.Trace == nil && p.Limits.Duration == 0 && p.Limits.Requests == 0 {
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

// applyWorkloads sets the gamma, ramp, trace, sessions and prefix fields
// the flags give (a flag that names a model's own settings implies the
// model when no --load is given), and --ignore-eos on every target.
func (c *benchCmd) applyWorkloads(p *bench.Plan) {
	l := &p.Load
	setF(&l.Burstiness, c.Burstiness)
	if c.RampFrom > 0 || c.RampTo > 0 || c.RampOver > 0 || c.RampShape != "" || c.RampArrivals != "" {
		if l.Ramp == nil {
			l.Ramp = &bench.Ramp{}
		}
		setF(&l.Ramp.From, c.RampFrom)
		setF(&l.Ramp.To, c.RampTo)
		if c.RampOver > 0 {
			l.Ramp.Over = bench.Duration(c.RampOver)
		}
		setS(&l.Ramp.Shape, c.RampShape)
		setS(&l.Ramp.Arrivals, c.RampArrivals)
		if c.Load == "" && l.Model == "" {
			l.Model = bench.LoadRamp
		}
	}
	if c.Trace != "" || c.TraceSpeed > 0 || c.TraceStart > 0 || c.TraceLength > 0 {
		if l.Trace == nil {
			l.Trace = &bench.TraceLoad{}
		}
		setS(&l.Trace.File, c.Trace)
		setF(&l.Trace.Speed, c.TraceSpeed)
		if c.TraceStart > 0 {
			l.Trace.Start = bench.Duration(c.TraceStart)
		}
		if c.TraceLength > 0 {
			l.Trace.Length = bench.Duration(c.TraceLength)
		}
		if c.Load == "" {
			l.Model = bench.LoadTrace
		}
	}
	if c.Users > 0 || c.Turns > 0 || c.TurnTokens > 0 || c.Think > 0 || c.ThinkDist != "" || c.Stateful {
		if l.Sessions == nil {
			l.Sessions = &bench.Sessions{}
		}
		ss := l.Sessions
		setI(&ss.Users, c.Users)
		setI(&ss.Turns, c.Turns)
		setI(&ss.TurnTokens, c.TurnTokens)
		if c.Think > 0 {
			ss.Think = bench.Duration(c.Think)
		}
		setS(&ss.ThinkDist, c.ThinkDist)
		ss.Stateful = ss.Stateful || c.Stateful
		if c.Load == "" && l.Model == "" {
			l.Model = bench.LoadSessions
		}
	}
	if c.PrefixTokens > 0 || c.PrefixGroups > 0 {
		if l.Prefix == nil {
			l.Prefix = &bench.Prefix{}
		}
		setI(&l.Prefix.Groups, c.PrefixGroups)
		setI(&l.Prefix.Tokens, c.PrefixTokens)
	}
	if c.IgnoreEOS {
		for i := range p.Targets {
			p.Targets[i].Payload.IgnoreEOS = true
		}
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
func checkServerFlags(provider, url, grpcAddr, transport string) error {
	prov, _, ok := bench.ProviderOf(provider)
	rest := transport == string(vertex.TransportREST)
	switch {
	case !ok:
		return nil // refused with its own words
	case transport != "" && prov != cloudreq.ProviderGCP:
		return usageError{errcodes.Errorf(errcodes.InvalidParam, "--transport is Vertex's (gcp); %s speaks HTTP only", prov)}
	case rest && grpcAddr != "":
		return usageError{errcodes.New(errcodes.InvalidParam, "--transport rest sends to --url (the server's HTTP root), not to --grpc-addr")}
	case rest:
		return nil
	case prov == cloudreq.ProviderGCP && url != "" && grpcAddr == "":
		return usageError{errcodes.New(errcodes.InvalidParam,
			"gcp (Vertex) is reached over gRPC, not at --url: give the server's gRPC address with --grpc-addr HOST:PORT (cloudinfer emulate prints it as \"Vertex gRPC:\"; its default is 127.0.0.1:8081)")}
	case prov != cloudreq.ProviderGCP && grpcAddr != "" && url == "":
		return usageError{errcodes.Errorf(errcodes.InvalidParam,
			"--grpc-addr is Vertex's (gcp) gRPC server; %s speaks HTTP: give the server's root with --url", prov)}
	}
	return nil
}
