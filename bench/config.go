package bench

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/impair"
	"github.com/cloudinfer/cloudinfer/latency/stats"
)

// Plan is a whole benchmark: targets, load model, limits, request mix and
// SLAs. It reads from YAML or JSON (see LoadPlan); `cloudinfer bench` has
// a flag for the fields one run commonly changes (load, limits, a target's
// endpoint, URL and payload, SLAs), and takes the rest (several targets,
// Parallel, gRPC addresses, headers) from a plan file (--config).
type Plan struct {
	// Targets are benchmarked one after another, each with the same load.
	Targets []Target `json:"targets" yaml:"targets"`
	Load    Load     `json:"load" yaml:"load"`
	Limits  Limits   `json:"limits" yaml:"limits"`
	// Mix, when set, picks each request's class and tags.
	Mix *Mix `json:"mix,omitempty" yaml:"mix,omitempty"`
	// SLAs apply to every target (with a class, to that class only; with
	// an endpoint, to the target of that name only), in stats.SLA's text
	// form: "ttft p95 150ms starts=warm".
	SLAs []stats.SLA `json:"slas,omitempty" yaml:"slas,omitempty"`
	// Seed makes Poisson arrivals and the mix repeatable (default 1).
	Seed uint64 `json:"seed,omitempty" yaml:"seed,omitempty"`
	// Parallel runs the targets at the same time instead of one after
	// another, each with the plan's load (a sequential closed loop stays
	// sequential per target). Use it for independent endpoints; the live
	// progress bar shows them as one, with their sums.
	Parallel bool `json:"parallel,omitempty" yaml:"parallel,omitempty"`
	// FailOn lists the gates a result must pass, in Gate's text form
	// ("sla", "errors>1%"): Result.CheckGates checks them, and cloudinfer
	// bench exits 1 when one fails. Without any, failed requests and SLAs
	// are results, not a failure.
	FailOn []Gate `json:"fail_on,omitempty" yaml:"fail_on,omitempty"`
	// ServerMetricsInterval is the time between two scrapes of the
	// targets' server metrics during a run (default 1 s; see
	// Target.ServerMetrics).
	ServerMetricsInterval Duration `json:"server_metrics_interval,omitempty" yaml:"server_metrics_interval,omitempty"`
}

// Target is one endpoint to benchmark.
type Target struct {
	// Name labels the target in reports (default: endpoint, an endpoint
	// URL without its user info and query, or model).
	Name string `json:"name,omitempty" yaml:"name,omitempty"`
	// Provider is aws, azure, gcp, alibaba or openai; Service defaults to
	// the provider's one service (sagemaker, azureml, vertex, pai-eas,
	// openai-compatible). A service name is accepted as provider too.
	Provider string `json:"provider" yaml:"provider"`
	Service  string `json:"service,omitempty" yaml:"service,omitempty"`
	// Endpoint, Variant, Model and Path are the request's cloudreq.Target.
	Endpoint string `json:"endpoint,omitempty" yaml:"endpoint,omitempty"`
	Variant  string `json:"variant,omitempty" yaml:"variant,omitempty"`
	Model    string `json:"model,omitempty" yaml:"model,omitempty"`
	Path     string `json:"path,omitempty" yaml:"path,omitempty"`
	// URL is the base URL to send to instead of the cloud's own endpoint
	// (an emulator, a private gateway, an OpenAI-compatible server).
	// Empty with no cloud configured: the embedded emulator.
	URL string `json:"url,omitempty" yaml:"url,omitempty"`
	// GRPCAddr is Vertex's gRPC address, when it differs from the cloud's.
	GRPCAddr string `json:"grpc_addr,omitempty" yaml:"grpc_addr,omitempty"`
	// Transport is how a Vertex (gcp) target's calls travel: grpc (the
	// default) or rest (Vertex AI's REST API; URL is then its root).
	Transport string `json:"transport,omitempty" yaml:"transport,omitempty"`
	// Method is the request's cloudreq.Attributes.Method: a Vertex invoke
	// RPC (predict, rawPredict, generateContent, streamGenerateContent,
	// serverStreamingPredict).
	Method string `json:"method,omitempty" yaml:"method,omitempty"`
	// Region, Project and Location locate the endpoint in its cloud.
	Region   string `json:"region,omitempty" yaml:"region,omitempty"`
	Project  string `json:"project,omitempty" yaml:"project,omitempty"`
	Location string `json:"location,omitempty" yaml:"location,omitempty"`
	// Action is generate (portable text generation; the default) or invoke
	// (the payload's bytes sent as they are).
	Action string `json:"action,omitempty" yaml:"action,omitempty"`
	// Stream reads the response as a stream (TTFT, TPOT and ITL need it).
	Stream bool `json:"stream,omitempty" yaml:"stream,omitempty"`
	// Payload is what each request sends.
	Payload Payload `json:"payload" yaml:"payload"`
	// Header holds extra headers sent with every request. Values are never
	// written to results.
	Header map[string]string `json:"headers,omitempty" yaml:"headers,omitempty"`
	// ScaleToZero is the endpoint's scale-to-zero window, for cold-start
	// classification of the first request and of requests after idle gaps.
	ScaleToZero Duration `json:"scale_to_zero,omitempty" yaml:"scale_to_zero,omitempty"`
	// Network impairs the target's connections (package impair's text
	// form, e.g. "delay=20ms,jitter=2ms,loss=0.1%,rate=100mbit"): the run
	// measures the endpoint as seen across such a network. Prepare
	// validates it and writes it in its canonical form.
	Network string `json:"network,omitempty" yaml:"network,omitempty"`
	// ServerMetrics are Prometheus /metrics URLs of the target's server,
	// scraped during the run (package servermetrics), besides the one
	// found by itself: <base>/metrics of an OpenAI-compatible server or an
	// emulator given by URL. "off" scrapes none, not even that one.
	ServerMetrics []string `json:"server_metrics,omitempty" yaml:"server_metrics,omitempty"`
	// ServerRequests is a file of the server's per-request OpenTelemetry
	// spans: vLLM's (started with --otlp-traces-endpoint) as an
	// OpenTelemetry Collector's file exporter writes them, OTLP JSON lines
	// (or a cloudinfer emulate --otlp-file). Each measured request is then
	// given a client request id of its own (CloudRequest.RequestID, sent
	// as X-Request-Id to an OpenAI-compatible server, which vLLM makes its
	// chatcmpl-<id>), and the run's end joins the file's spans with them by
	// that id: the exact, per-request split of a real server (MethodSpans).
	// Another provider sends the id in its own header, which a vLLM behind
	// it does not read: its spans stay unmatched.
	ServerRequests string `json:"server_requests,omitempty" yaml:"server_requests,omitempty"`
	// ServerRequestsWait bounds how long the run's end waits for the
	// spans still missing from ServerRequests (default
	// DefaultServerRequestsWait; negative: no wait, one read).
	ServerRequestsWait Duration `json:"server_requests_wait,omitempty" yaml:"server_requests_wait,omitempty"`
}

// Payload is what a request sends: a raw body (file or inline) for the
// invoke action, or a prompt for generate — given, or generated with
// PromptTokens tokens.
type Payload struct {
	// File is a raw body file, sent as it is (invoke).
	File string `json:"file,omitempty" yaml:"file,omitempty"`
	// Body is an inline raw body (invoke).
	Body        string `json:"body,omitempty" yaml:"body,omitempty"`
	ContentType string `json:"content_type,omitempty" yaml:"content_type,omitempty"`
	// Prompt is the user message (generate). Empty: a prompt of
	// PromptTokens tokens is generated.
	Prompt string `json:"prompt,omitempty" yaml:"prompt,omitempty"`
	// PromptTokens is the generated prompt's length (default 512).
	PromptTokens int `json:"prompt_tokens,omitempty" yaml:"prompt_tokens,omitempty"`
	// OutputTokens caps the output (generate); 0 leaves the server's default.
	OutputTokens int `json:"output_tokens,omitempty" yaml:"output_tokens,omitempty"`
	// IgnoreEOS asks the server to generate OutputTokens tokens, past the
	// end of sequence (vLLM's ignore_eos; see cloudreq.GenerateInput). A
	// trace replay sets it on its own for the OpenAI-compatible and
	// PAI-EAS targets.
	IgnoreEOS bool `json:"ignore_eos,omitempty" yaml:"ignore_eos,omitempty"`

	body []byte // File's content, read by Plan.Prepare
}

// Load is the load model.
type Load struct {
	// Model is closed (default), constant, poisson, gamma, ramp, ladder,
	// trace or sessions.
	Model string `json:"model,omitempty" yaml:"model,omitempty"`
	// Concurrency is the closed loop's worker count (default 1: sequential).
	Concurrency int `json:"concurrency,omitempty" yaml:"concurrency,omitempty"`
	// Rate is the open loop's rate in requests per second.
	Rate float64 `json:"rate,omitempty" yaml:"rate,omitempty"`
	// Ladder configures the ladder.
	Ladder Ladder `json:"ladder,omitzero" yaml:"ladder,omitempty"`
	// Burstiness is the gamma model's inter-arrival shape at Rate: 1 is
	// Poisson, below 1 burstier, above 1 smoother (default 1).
	Burstiness float64 `json:"burstiness,omitempty" yaml:"burstiness,omitempty"`
	// Ramp configures the ramp model.
	Ramp *Ramp `json:"ramp,omitempty" yaml:"ramp,omitempty"`
	// Trace configures the trace model: a trace file replayed.
	Trace *TraceLoad `json:"trace,omitempty" yaml:"trace,omitempty"`
	// Sessions configures the sessions model: multi-turn conversations.
	Sessions *Sessions `json:"sessions,omitempty" yaml:"sessions,omitempty"`
	// Prefix makes groups of requests share a prompt prefix, with any
	// model but trace (whose hash ids say what is shared).
	Prefix *Prefix `json:"prefix,omitempty" yaml:"prefix,omitempty"`
	// MaxInFlight caps an open loop's requests in flight (default 4096).
	// At the cap a send waits for a slot — it is late, never dropped
	// (unless the duration ends first: then it is counted as unsent).
	MaxInFlight int `json:"max_in_flight,omitempty" yaml:"max_in_flight,omitempty"`
	// LateAfter is the schedule lag beyond which a send counts as late
	// (default 10 ms).
	LateAfter Duration `json:"late_after,omitempty" yaml:"late_after,omitempty"`
	// SendSpin is the last stretch before each open-loop send that the
	// sender spins through (reading the clock, yielding the processor)
	// instead of sleeping, for sends on time to the microsecond (default
	// 50 µs; more, up to 1 ms, where the fine timer is seen waking later
	// than the spin). A spin is at most a tenth of the time between two sends, so
	// it costs rate × spin of a core (5% at 1,000/s), never more than a
	// tenth. Negative: sleep on the runtime's timer alone at every rate,
	// no spin, no fine timer and no window (sends up to a millisecond late
	// on an idle machine).
	SendSpin Duration `json:"send_spin,omitempty" yaml:"send_spin,omitempty"`
	// SendWindow is the least time between two of an open loop's wakes
	// where its sends are closer than that on average (default 500 µs):
	// a send due less than a window after the last wake goes out at the
	// next, late by less than a window, and each wake serves all the
	// sends due by then. A wake costs the client more CPU than a send.
	// Where four mean gaps are shorter than the window, the wakes are
	// four mean gaps apart, but at least half a window.
	// Negative: a wake for each send (the lag of the fine timer and the
	// spin at every rate, at a wake's CPU each). Where four sends or
	// more fall in a window on average, the process is busy, and a wake
	// through the runtime's poller waits for its run queues: the fine
	// timer then has the runtime's timer beside it, and idle workers
	// wait on channels (see docs/measurement.md, "Crowded rates").
	SendWindow Duration `json:"send_window,omitempty" yaml:"send_window,omitempty"`

	// phase offsets a constant-rate schedule's sends: a shard's (see
	// Plan.ShardPlan), so that the shards' sends interleave.
	phase time.Duration
}

// Load models.
const (
	LoadClosed   = "closed"
	LoadConstant = "constant"
	LoadPoisson  = "poisson"
	LoadLadder   = "ladder"
	LoadGamma    = "gamma"
	LoadRamp     = "ramp"
	LoadTrace    = "trace"
	LoadSessions = "sessions"
)

// Limits end each target's run: whichever comes first.
type Limits struct {
	// Duration bounds the measured part of the run.
	Duration Duration `json:"duration,omitempty" yaml:"duration,omitempty"`
	// Requests bounds the measured requests.
	Requests int `json:"requests,omitempty" yaml:"requests,omitempty"`
	// Warmup requests are sent one at a time before the measured run and
	// left out of the results.
	Warmup int `json:"warmup,omitempty" yaml:"warmup,omitempty"`
}

// Defaults.
const (
	DefaultPromptTokens = 512
	DefaultMaxInFlight  = 4096
	DefaultLateAfter    = 10 * time.Millisecond
	DefaultSendSpin     = 50 * time.Microsecond
	DefaultSendWindow   = 500 * time.Microsecond
	// MaxWorkers bounds the concurrency and the requests in flight.
	MaxWorkers = 1 << 20
	// MaxPromptTokens bounds a generated prompt.
	MaxPromptTokens = 1 << 20
	// MaxRate bounds an open loop's rate, in requests per second: far
	// beyond what one client sends, and within what a schedule of
	// nanosecond offsets resolves.
	MaxRate = 1e6
)

// services maps a provider (or service name used as one) to its pair.
var services = map[string][2]string{
	cloudreq.ProviderAWS:             {cloudreq.ProviderAWS, cloudreq.ServiceSageMaker},
	cloudreq.ServiceSageMaker:        {cloudreq.ProviderAWS, cloudreq.ServiceSageMaker},
	cloudreq.ProviderAzure:           {cloudreq.ProviderAzure, cloudreq.ServiceAzureML},
	cloudreq.ServiceAzureML:          {cloudreq.ProviderAzure, cloudreq.ServiceAzureML},
	cloudreq.ProviderGCP:             {cloudreq.ProviderGCP, cloudreq.ServiceVertex},
	cloudreq.ServiceVertex:           {cloudreq.ProviderGCP, cloudreq.ServiceVertex},
	cloudreq.ProviderAlibaba:         {cloudreq.ProviderAlibaba, cloudreq.ServicePAIEAS},
	cloudreq.ServicePAIEAS:           {cloudreq.ProviderAlibaba, cloudreq.ServicePAIEAS},
	"paieas":                         {cloudreq.ProviderAlibaba, cloudreq.ServicePAIEAS},
	cloudreq.ProviderOpenAI:          {cloudreq.ProviderOpenAI, cloudreq.ServiceOpenAICompatible},
	cloudreq.ServiceOpenAICompatible: {cloudreq.ProviderOpenAI, cloudreq.ServiceOpenAICompatible},
	serviceSageMakerAsync:            {cloudreq.ProviderAWS, serviceSageMakerAsync},
	serviceVertexOpenAI:              {cloudreq.ProviderGCP, serviceVertexOpenAI},
	serviceSageMakerOpenAI:           {cloudreq.ProviderAWS, serviceSageMakerOpenAI},
	servicePAIEASQueue:               {cloudreq.ProviderAlibaba, servicePAIEASQueue},
}

// serviceSageMakerAsync is SageMaker asynchronous inference
// (sagemaker.ServiceAsync): a service of aws beside sagemaker, with no
// stream (Prepare turns Stream off).
const serviceSageMakerAsync = "sagemaker-async"

// serviceVertexOpenAI is Vertex AI's OpenAI-compatible chat
// (vertex.ServiceOpenAPI), a service of gcp beside vertex.
const serviceVertexOpenAI = "vertex-openai"

// serviceSageMakerOpenAI is SageMaker AI's OpenAI-compatible chat route
// with bearer tokens (sagemaker.ServiceOpenAI), a service of aws.
const serviceSageMakerOpenAI = "sagemaker-openai"

// servicePAIEASQueue is an asynchronous PAI-EAS service through its
// queue service (paieas.ServiceQueue): no stream (Prepare turns Stream off).
const servicePAIEASQueue = "pai-eas-queue"

// otherServices are the services a provider serves beside its default one,
// which Target.Service may name.
var otherServices = map[string][]string{cloudreq.ProviderAWS: {serviceSageMakerAsync, serviceSageMakerOpenAI}, cloudreq.ProviderGCP: {serviceVertexOpenAI}, cloudreq.ProviderAlibaba: {servicePAIEASQueue}}

// ProviderOf returns the provider and service that a provider or service
// name (as Target.Provider accepts it, in any case) stands for; ok is false
// for a name that is neither.
func ProviderOf(name string) (provider, service string, ok bool) {
	pair, ok := services[strings.ToLower(name)]
	return pair[0], pair[1], ok
}

// LoadPlan reads a plan from a YAML or JSON file (JSON is YAML). Unknown
// fields are errors, so a typo never silently changes a run. Payload
// files are resolved relative to the plan's directory.
func LoadPlan(path string) (*Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, errcodes.Wrap(err, errcodes.InvalidParam, "bench: read plan: "+err.Error())
	}
	p, err := ParsePlan(b)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	for i := range p.Targets {
		if f := p.Targets[i].Payload.File; f != "" && !filepath.IsAbs(f) {
			p.Targets[i].Payload.File = filepath.Join(dir, f)
		}
	}
	return p, nil
}

// ParsePlan parses a plan from YAML or JSON bytes.
func ParsePlan(b []byte) (*Plan, error) {
	var p Plan
	if err := parseStrict(b, &p, "plan"); err != nil {
		return nil, err
	}
	return &p, nil
}

// ParseMix parses a request mix (a plan's "mix" section on its own) from
// YAML or JSON bytes; errors give the line in b.
func ParseMix(b []byte) (*Mix, error) {
	var m Mix
	if err := parseStrict(b, &m, "mix"); err != nil {
		return nil, err
	}
	return &m, nil
}

// parseStrict decodes JSON (when b starts with '{') or YAML into v,
// refusing unknown fields; what names v in errors.
func parseStrict(b []byte, v any, what string) error {
	var err error
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err = dec.Decode(v); err != nil {
			if line, ok := jsonErrLine(b, err); ok {
				err = fmt.Errorf("line %d: %w", line, err)
			}
		}
	} else {
		err = decodeYAML(b, v)
	}
	if err != nil {
		var e *errcodes.Error
		if errors.As(err, &e) {
			return e
		}
		return errcodes.Wrap(err, errcodes.InvalidParam, "bench: parse "+what+": "+firstLine(err.Error()))
	}
	return nil
}

// jsonErrLine returns the line of b that err, from decoding b, is about:
// at the error's offset when it has one; for an unknown field, that of
// its first key of that name. ok is false when the line is not known.
func jsonErrLine(b []byte, err error) (line int, ok bool) {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	default:
		// "json: unknown field \"name\"": where the key is.
		if name, found := strings.CutPrefix(err.Error(), "json: unknown field "); found {
			if uq, qerr := strconv.Unquote(name); qerr == nil {
				re := regexp.MustCompile(regexp.QuoteMeta(strconv.Quote(uq)) + `\s*:`)
				if loc := re.FindIndex(b); loc != nil {
					off = int64(loc[0])
				}
			}
		}
	}
	if off < 0 {
		return 0, false
	}
	off = min(off, int64(len(b)))
	return 1 + bytes.Count(b[:off], []byte("\n")), true
}

// decodeYAML decodes strictly, turning a panic of the YAML library (it has
// panicked on some malformed documents) into an error.
func decodeYAML(b []byte, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed YAML (%v)", r) // parseStrict says what was parsed
		}
	}()
	return yaml.UnmarshalWithOptions(b, v, yaml.DisallowUnknownField())
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Prepare fills defaults, reads payload files and validates the plan. It
// must be called (Run does) before the plan is used.
func (p *Plan) Prepare() error {
	bad := func(format string, args ...any) error {
		return errcodes.Errorf(errcodes.InvalidParam, "bench: "+format, args...)
	}
	if p.Seed == 0 {
		p.Seed = 1
	}
	if len(p.Targets) == 0 {
		return bad("no targets")
	}
	names := map[string]bool{}
	for i := range p.Targets {
		t := &p.Targets[i]
		if err := t.prepare(); err != nil {
			return err
		}
		if names[t.Name] {
			return bad("two targets named %q; give them distinct names", t.Name)
		}
		names[t.Name] = true
	}
	if err := p.checkServerMetricsInterval(); err != nil {
		return err
	}
	l := &p.Load
	if l.Model == "" {
		l.Model = LoadClosed
		switch {
		case l.Trace != nil:
			l.Model = LoadTrace
		case l.Ramp != nil:
			l.Model = LoadRamp
		case l.Sessions != nil:
			l.Model = LoadSessions
		case l.Rate != 0:
			l.Model = LoadConstant // a rate and no model: an open loop at that rate
		}
	}
	if l.MaxInFlight == 0 {
		l.MaxInFlight = DefaultMaxInFlight
	}
	if l.LateAfter == 0 {
		l.LateAfter = Duration(DefaultLateAfter)
	}
	if l.SendSpin == 0 {
		l.SendSpin = Duration(DefaultSendSpin)
	}
	if l.SendWindow == 0 {
		l.SendWindow = Duration(DefaultSendWindow)
	}
	if l.MaxInFlight < 0 || l.MaxInFlight > MaxWorkers {
		return bad("max in flight %d must lie in [1, %d]", l.MaxInFlight, MaxWorkers)
	}
	if l.LateAfter < 0 {
		return bad("late after %v must not be negative", l.LateAfter)
	}
	switch l.Model {
	case LoadClosed:
		if l.Concurrency == 0 {
			l.Concurrency = 1
		}
		if l.Concurrency < 0 || l.Concurrency > MaxWorkers {
			return bad("concurrency %d must lie in [1, %d]", l.Concurrency, MaxWorkers)
		}
	case LoadConstant, LoadPoisson, LoadGamma:
		if l.Model == LoadGamma {
			if l.Burstiness == 0 {
				l.Burstiness = 1
			}
			if !(l.Burstiness >= MinBurstiness && l.Burstiness <= MaxBurstiness) {
				return bad("load gamma: burstiness %g must lie in [%g, %g]", l.Burstiness, MinBurstiness, float64(MaxBurstiness))
			}
		}
		if !(l.Rate > 0) || math.IsInf(l.Rate, 0) {
			return bad("load %s needs a positive --rate (got %g)", l.Model, l.Rate)
		}
		if l.Rate > MaxRate {
			return bad("load %s: rate %g must be at most %g requests/s; split a higher load over several machines", l.Model, l.Rate, float64(MaxRate))
		}
	case LoadLadder:
		l.Ladder = l.Ladder.WithDefaults()
		if err := l.Ladder.Validate(); err != nil {
			return err
		}
		if l.Ladder.Metric == MetricTTFT {
			for _, t := range p.Targets {
				if !t.Stream {
					return bad("ladder metric ttft needs streamed targets; %q is not (a whole body has no first token): use --ladder-metric e2e or stream", t.Name)
				}
			}
		}
	case LoadRamp:
		if l.Ramp == nil {
			return bad("load ramp needs a ramp (from, to, over)")
		}
		if err := l.Ramp.prepare(); err != nil {
			return err
		}
	case LoadTrace:
		if l.Trace == nil {
			return bad("load trace needs a trace file (--trace)")
		}
		if err := l.Trace.prepare(&p.Limits); err != nil {
			return err
		}
	case LoadSessions:
		if l.Sessions == nil {
			l.Sessions = &Sessions{}
		}
		if err := l.Sessions.prepare(); err != nil {
			return err
		}
	default:
		return bad("load model %q: want closed, constant, poisson, gamma, ramp, ladder, trace or sessions", l.Model)
	}
	if l.Prefix != nil {
		if l.Model == LoadTrace {
			return bad("load trace: a prefix does not apply (the trace's hash ids say what is shared)")
		}
		if err := l.Prefix.validate(p.Targets); err != nil {
			return err
		}
	}
	lim := p.Limits
	if lim.Duration < 0 || lim.Requests < 0 || lim.Warmup < 0 {
		return bad("limits must not be negative")
	}
	if lim.Duration == 0 && lim.Requests == 0 {
		return bad("set a duration or a request count (or both)")
	}
	if p.Mix != nil {
		if err := p.Mix.Validate(); err != nil {
			return err
		}
		for i := range p.Mix.Classes {
			if pl := p.Mix.Classes[i].Payload; pl != nil {
				if err := pl.read(); err != nil {
					return err
				}
			}
		}
	}
	for _, s := range p.SLAs {
		if err := s.Validate(); err != nil {
			return err
		}
	}
	for _, g := range p.FailOn {
		if _, err := ParseGate(g.String()); err != nil {
			return err
		}
	}
	return nil
}

// slas returns every SLA of the plan: its own and its classes'.
func (p *Plan) slas() []stats.SLA {
	out := slices.Clone(p.SLAs)
	if p.Mix != nil {
		for i := range p.Mix.Classes {
			c := &p.Mix.Classes[i]
			for _, s := range c.SLAs {
				s.Class = c.Label()
				out = append(out, s)
			}
		}
	}
	return out
}

func (t *Target) prepare() error {
	if t.Name == "" {
		// Its errors name it from here on: an endpoint URL without what may
		// be a credential.
		t.Name = cmp.Or(urlName(t.Endpoint), t.Model)
	}
	pair, ok := services[strings.ToLower(t.Provider)]
	if !ok {
		return errcodes.Errorf(errcodes.InvalidParam, "bench: target %q: provider %q: want aws, azure, gcp, alibaba or openai", t.Name, t.Provider)
	}
	other := slices.Contains(otherServices[pair[0]], t.Service)
	if t.Service != "" && t.Service != pair[1] && !other {
		return errcodes.Errorf(errcodes.InvalidParam, "bench: target %q: provider %s serves %s, not %q", t.Name, pair[0], strings.Join(append([]string{pair[1]}, otherServices[pair[0]]...), ", "), t.Service)
	}
	if !other {
		t.Service = pair[1]
	}
	t.Provider = pair[0]
	switch {
	case t.Transport != "" && t.Transport != "grpc" && t.Transport != "rest":
		return errcodes.Errorf(errcodes.InvalidParam, "bench: target %q: transport %q: want grpc or rest", t.Name, t.Transport)
	case t.Transport != "" && t.Service != pair[1] || t.Transport != "" && t.Provider != cloudreq.ProviderGCP:
		return errcodes.Errorf(errcodes.InvalidParam, "bench: target %q: transport is Vertex's (gcp, service vertex)", t.Name)
	}
	if t.Service == serviceSageMakerAsync || t.Service == servicePAIEASQueue {
		t.Stream = false // asynchronous inference answers whole
	}
	if t.Endpoint == "" && t.Model == "" {
		return errcodes.Errorf(errcodes.InvalidParam, "bench: target %q needs an endpoint or a model", t.Name)
	}
	if t.Action == "" {
		t.Action = cloudreq.ActionGenerate
		if t.Payload.File != "" || t.Payload.Body != "" {
			t.Action = cloudreq.ActionInvoke
		}
	}
	if t.Action != cloudreq.ActionGenerate && t.Action != cloudreq.ActionInvoke {
		return errcodes.Errorf(errcodes.InvalidParam, "bench: target %q: action %q: want generate or invoke", t.Name, t.Action)
	}
	if err := t.Payload.read(); err != nil {
		return err
	}
	if t.Network != "" {
		np, err := impair.Parse(t.Network)
		if err != nil {
			return errcodes.Wrap(err, errcodes.InvalidParam, fmt.Sprintf("bench: target %q: network: %v", t.Name, err))
		}
		t.Network = np.String()
	}
	if t.Action == cloudreq.ActionInvoke && len(t.Payload.body) == 0 {
		return errcodes.Errorf(errcodes.InvalidParam, "bench: target %q: invoke needs a payload file or body", t.Name)
	}
	return checkServerMetrics(t)
}

func (pl *Payload) read() error {
	switch {
	case pl.File != "" && pl.Body != "":
		return errcodes.New(errcodes.InvalidParam, "bench: payload: give a file or a body, not both")
	case pl.File != "":
		b, err := os.ReadFile(pl.File)
		if err != nil {
			return errcodes.Wrap(err, errcodes.InvalidParam, "bench: payload file: "+err.Error())
		}
		pl.body = b
	case pl.Body != "":
		pl.body = []byte(pl.Body)
	}
	if pl.PromptTokens < 0 || pl.OutputTokens < 0 || pl.PromptTokens > MaxPromptTokens {
		return errcodes.Errorf(errcodes.InvalidParam, "bench: payload: token counts must lie in [0, %d]", MaxPromptTokens)
	}
	if pl.PromptTokens == 0 {
		pl.PromptTokens = DefaultPromptTokens
	}
	return nil
}

// String describes the load model in one line.
func (l Load) String() string {
	switch l.Model {
	case LoadConstant, LoadPoisson:
		return fmt.Sprintf("%s %.4g req/s", l.Model, l.Rate)
	case LoadGamma:
		return fmt.Sprintf("gamma %.4g req/s, burstiness %.4g", l.Rate, l.Burstiness)
	case LoadRamp:
		return l.Ramp.String()
	case LoadTrace:
		return l.Trace.String()
	case LoadSessions:
		return l.Sessions.String()
	case LoadLadder:
		ld := l.Ladder
		return fmt.Sprintf("ladder %.4g→%.4g req/s (+%.4g, ×%.2g, floor %.4g), step %v, p95 %s high %v / low %v",
			ld.Start, ld.Target, ld.Increment, ld.Backoff, ld.Floor, ld.Step, ld.Metric, ld.HighWater, ld.LowWater)
	default:
		return fmt.Sprintf("closed loop, concurrency %d", l.Concurrency)
	}
}
