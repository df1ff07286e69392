package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/alecthomas/kong"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/impair"
	"github.com/cloudinfer/cloudinfer/latency"
)

// invokeCmd is the `cloudinfer invoke` command: one request, its response,
// its timeline and its start verdict. With no --url or --endpoint URL (for
// Vertex, no --grpc-addr), it goes to the embedded emulator.
type invokeCmd struct {
	Provider  string        `help:"Provider: aws, azure, gcp, alibaba or openai (or a service name: sagemaker, sagemaker-async, sagemaker-openai, azureml, vertex, vertex-openai, pai-eas, pai-eas-queue, openai-compatible)." default:"openai"`
	Endpoint  string        `help:"Endpoint name (SageMaker, Azure ML, Vertex, PAI-EAS), or the URL of an Azure ML endpoint, a PAI-EAS service or an OpenAI-compatible server (which it then goes to)."`
	Model     string        `help:"Model to ask for: the OpenAI-compatible model, SageMaker's target model, the model member of an Azure ML or PAI-EAS body; sent only when given. With no --endpoint, the cloud providers' endpoint name. With neither, the target is llama-3-8b (an endpoint, or the OpenAI-compatible model)."`
	Variant   string        `help:"SageMaker production variant or Azure ML deployment."`
	Path      string        `help:"Sub-path under the endpoint (PAI-EAS /v1/chat/completions, …)."`
	URL       string        `help:"HTTP root of the server to send to (a cloud's, a cloudinfer emulate, a gateway, an OpenAI-compatible server); with none, nor an --endpoint URL, the request goes to the embedded emulator. For azure, a root on this machine with no path is an emulator's: the request goes to ROOT/azureml/ENDPOINT. Vertex (gcp) speaks gRPC: give --grpc-addr (with or without --url)." placeholder:"URL"`
	GRPCAddr  string        `name:"grpc-addr" help:"HOST:PORT of the Vertex (gcp) gRPC server to send to instead of Google's or the embedded emulator (cloudinfer emulate prints it as \"Vertex gRPC:\"; default 127.0.0.1:8081). On this machine: plain text, no Google credential; elsewhere: TLS and Application Default Credentials." placeholder:"HOST:PORT"`
	Transport string        `name:"transport" help:"How Vertex (gcp) calls travel: grpc (default) or rest (Vertex AI's REST API, JSON over HTTPS, for networks that block gRPC; --url is then the server's HTTP root, a cloudinfer emulate's included)." enum:",grpc,rest" default:""`
	Method    string        `name:"method" help:"Vertex (gcp) invoke RPC: predict, rawPredict, generateContent, streamGenerateContent (the body your own GenerateContentRequest JSON: safetySettings, cachedContent, labels, …) or serverStreamingPredict (streams only; the body a StreamingPredictRequest's JSON). Default: chosen from the body." placeholder:"RPC"`
	Region    string        `help:"AWS region."`
	Project   string        `help:"Google Cloud project."`
	Location  string        `help:"Google Cloud location."`
	Prompt    string        `help:"Prompt for a generate request." default:"Say hello."`
	MaxTokens int           `name:"max-tokens" help:"Output token limit for generate (0: the server's default)." default:"64"`
	Body      string        `help:"File whose bytes are sent as they are (action invoke) instead of a prompt." type:"existingfile"`
	Type      string        `help:"Content type of --body." default:"application/json"`
	Stream    bool          `help:"Stream the response and print chunks as they arrive."`
	Header    headerFlag    `help:"Extra request header, \"Name=value\" or \"Name: value\" (repeat -H for more), e.g. -H X-Emulator-Inject=throttle." short:"H" placeholder:"NAME=VALUE"`
	Network   string        `help:"Impair the connection, e.g. \"delay=20ms,jitter=2ms\" (see go doc ./impair)." placeholder:"SPEC"`
	Retries   int           `help:"Retries after the first attempt." default:"2"`
	Timeout   time.Duration `help:"Overall deadline of the call (0: none)." default:"60s"`
	TimeScale float64       `name:"time-scale" help:"Embedded emulator time scale (0 means 1)." default:"1"`
}

// Run sends the request and prints what happened.
func (c *invokeCmd) Run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return c.run(ctx, os.Stdout)
}

func (c *invokeCmd) run(ctx context.Context, w io.Writer) error {
	if err := c.check(); err != nil {
		return err
	}
	t := bench.Target{
		Provider: c.Provider, Endpoint: c.Endpoint, Model: c.Model, Variant: c.Variant, Path: c.Path,
		URL: c.URL, GRPCAddr: c.GRPCAddr, Transport: c.Transport, Method: c.Method, Region: c.Region, Project: c.Project, Location: c.Location,
		Stream: c.Stream, Header: c.Header, Network: c.Network,
	}
	// A model goes out only when given: with no --endpoint, the cloud
	// providers address an endpoint, which the model (or the default
	// target) names; an OpenAI-compatible server is asked for the model,
	// the endpoint's name or the default target.
	prov, _, _ := bench.ProviderOf(c.Provider)
	switch {
	case t.Endpoint == "" && prov != cloudreq.ProviderOpenAI:
		t.Endpoint, t.Model = cmpOr(c.Model, defaultInvokeTarget), ""
	case t.Endpoint == "" && t.Model == "":
		t.Model = defaultInvokeTarget
	}
	if c.Body != "" {
		t.Payload = bench.Payload{File: c.Body, ContentType: c.Type}
	} else {
		t.Payload = bench.Payload{Prompt: c.Prompt, OutputTokens: c.MaxTokens}
	}
	plan := &bench.Plan{Targets: []bench.Target{t}, Limits: bench.Limits{Requests: 1}}
	if err := plan.Prepare(); err != nil {
		return invokeError(err)
	}
	t = plan.Targets[0]
	if err := endpointURL(&t, "invoke: --endpoint: ", "give the server with --grpc-addr"); err != nil {
		return err
	}

	env := &environment{cmd: &benchCmd{TimeScale: c.TimeScale, Seed: 1, Retries: c.Retries, Timeout: c.Timeout}, plan: plan}
	defer env.close()
	if toEmulator(&t) {
		if err := env.startEmulator(); err != nil {
			return err
		}
		fmt.Fprintf(w, "embedded emulator at %s (time scale %g)\n", env.emu.URL(), env.emu.TimeScale())
	}
	client, err := env.connect(ctx, &t)
	if err != nil {
		return err
	}
	defer client.Close()
	req := t.Request()
	var n attemptCounter
	count := func(o *cloudreq.CallOptions) { o.Observers = append(o.Observers, &n) }

	var resp *cloudreq.CloudResponse
	if c.Stream {
		s, err := client.Stream(ctx, req, count)
		if err != nil {
			return describe(err, n.n.Load())
		}
		defer s.Close()
		printed := false
		for s.Next() {
			ch := s.Chunk()
			switch {
			case ch.Text != "":
				fmt.Fprint(w, ch.Text)
			case req.Action == cloudreq.ActionInvoke && unparsedChunk(ch):
				fmt.Fprintf(w, "%s", ch.Data)
			default:
				continue
			}
			printed = true
		}
		if printed { // end the text's line; nothing printed, no empty line
			fmt.Fprintln(w)
		}
		if err := s.Err(); err != nil {
			return describe(err, n.n.Load())
		}
		resp = s.Response()
	} else {
		resp, err = client.Invoke(ctx, req, count)
		if err != nil {
			return describe(err, n.n.Load())
		}
		if resp.Text != "" {
			fmt.Fprintln(w, resp.Text)
		} else {
			fmt.Fprintf(w, "%s\n", resp.Data)
		}
	}
	printTiming(w, resp)
	return nil
}

// defaultInvokeTarget is the target of an invoke given no --endpoint or
// --model: one of the embedded emulator's endpoints.
const defaultInvokeTarget = "llama-3-8b"

// check refuses, as usage errors, what the flags cannot mean: an unknown
// provider, a server flag the provider does not speak, an OpenAI-compatible
// server given by URL with no model to ask for, a network impairment that
// does not parse, a negative count or duration (which would be read as
// "none") and an empty prompt (which the plan would replace by a generated
// one).
func (c *invokeCmd) check() error {
	if err := checkProvider(c.Provider); err != nil {
		return err
	}
	if err := checkServerFlags(c.Provider, c.URL, c.GRPCAddr, c.Transport); err != nil {
		return err
	}
	if prov, _, _ := bench.ProviderOf(c.Provider); prov == cloudreq.ProviderOpenAI && isURL(c.Endpoint) && c.Model == "" {
		return usageError{errcodes.New(errcodes.InvalidParam, "invoke: an OpenAI-compatible server given by URL needs the model to ask for (--model)")}
	}
	if c.Network != "" {
		if _, err := impair.Parse(c.Network); err != nil {
			return usageError{errcodes.Wrap(err, errcodes.InvalidParam, "invoke: network: "+err.Error())}
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"--retries", float64(c.Retries)}, {"--timeout", float64(c.Timeout)},
		{"--time-scale", c.TimeScale}, {"--max-tokens", float64(c.MaxTokens)},
	} {
		if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return usageError{errcodes.Errorf(errcodes.InvalidParam, "invoke: %s must not be negative (got %g)", f.name, f.v)}
		}
	}
	if c.Body == "" && strings.TrimSpace(c.Prompt) == "" {
		return usageError{errcodes.New(errcodes.InvalidParam, "invoke: --prompt is empty (give some text, or --body FILE)")}
	}
	return nil
}

// endpointURL makes an endpoint given as a URL (an OpenAI-compatible base,
// an Azure ML scoring root, a PAI-EAS service URL) the target's server,
// unless a base URL is set already. SageMaker and Vertex address endpoints
// by name only: for them a URL is refused, with grpcHint saying where
// Vertex's server goes instead. Errors begin with head (the command's and
// target's words).
func endpointURL(t *bench.Target, head, grpcHint string) error {
	if !isURL(t.Endpoint) {
		return nil
	}
	switch t.Provider {
	case cloudreq.ProviderAWS:
		return errcodes.New(errcodes.InvalidParam, head+"aws takes an endpoint name, not a URL; give the server with --url")
	case cloudreq.ProviderGCP:
		return errcodes.New(errcodes.InvalidParam, head+"gcp takes an endpoint name, not a URL; "+grpcHint)
	}
	if t.URL != "" {
		return nil
	}
	u, err := url.Parse(t.Endpoint)
	if err != nil || u.Host == "" {
		return errcodes.New(errcodes.InvalidParam, head+"the endpoint is neither an endpoint name nor a valid http(s) URL")
	}
	t.URL = u.Scheme + "://" + u.Host
	return nil
}

// unparsedChunk reports whether a chunk without text is bytes its adapter
// did not read, which a raw stream prints as they are: not a chunk the
// adapter parsed and found no content in (an OpenAI-compatible role-only,
// empty or usage-only chunk, one with a finish reason or a token count).
func unparsedChunk(ch cloudreq.StreamChunk) bool {
	if ch.Content || ch.FinishReason != "" || ch.Usage != nil || ch.Tokens > 0 || len(ch.Data) == 0 {
		return false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(ch.Data, &obj) == nil {
		if _, ok := obj["choices"]; ok {
			return false // an OpenAI-compatible chunk
		}
	}
	return true
}

// describe turns a call's error into the command's error, with its code
// and the number of attempts made (0: none was).
func describe(err error, attempts int32) error {
	e := errcodes.From(err)
	switch attempts {
	case 0:
		return fmt.Errorf("%s (retryable: %t)", e.Error(), e.Retryable)
	case 1:
		return fmt.Errorf("%s (retryable: %t, after 1 attempt)", e.Error(), e.Retryable)
	}
	return fmt.Errorf("%s (retryable: %t, after %d attempts)", e.Error(), e.Retryable, attempts)
}

// attemptCounter is a cloudreq.Observer that counts a call's attempts.
type attemptCounter struct{ n atomic.Int32 }

func (a *attemptCounter) StartCall(ctx context.Context, _ *cloudreq.CloudRequest, _ bool) (context.Context, cloudreq.CallObserver) {
	return ctx, a
}

func (a *attemptCounter) EndAttempt(cloudreq.AttemptInfo) { a.n.Add(1) }

func (a *attemptCounter) EndCall(*cloudreq.CloudResponse, *latency.Timeline, *errcodes.Error) {}

// headerFlag is -H: one request header per flag, "Name=value" or
// "Name: value", the value kept whole. Its errors never repeat the flag's
// text, which may hold a credential.
type headerFlag map[string]string

// Decode implements kong.MapperValue.
func (h *headerFlag) Decode(ctx *kong.DecodeContext) error {
	var s string
	if err := ctx.Scan.PopValueInto("header", &s); err != nil {
		return err
	}
	i := strings.IndexAny(s, "=:")
	if i < 0 {
		return errors.New(`want "Name=value" or "Name: value" (the flag's text is not repeated here)`)
	}
	name, value := strings.TrimSpace(s[:i]), strings.Trim(s[i+1:], " \t")
	if !validHeaderName(name) {
		return errors.New("the part before '=' or ':' is not a header name (letters, digits and !#$%&'*+-.^_`|~)")
	}
	if strings.ContainsFunc(value, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
		return fmt.Errorf("the value of %s holds a control character (CR, LF, …)", name)
	}
	if *h == nil {
		*h = headerFlag{}
	}
	(*h)[http.CanonicalHeaderKey(name)] = value
	return nil
}

// validHeaderName reports whether s is an HTTP field name (RFC 9110 token).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// printTiming writes the response's status, usage, start verdict and the
// standard metrics of its timeline.
func printTiming(w io.Writer, resp *cloudreq.CloudResponse) {
	s := latency.Measure(resp.Timing, latency.Outcome{Start: resp.Start, OutputTokens: resp.Usage.OutputTokens})
	fmt.Fprintf(w, "\nstatus %d  request id %s  finish %s\n", resp.StatusCode, cmpOr(resp.RequestID, "-"), cmpOr(resp.FinishReason, "-"))
	if u := resp.Usage; u.Source == "" && u.InputTokens == 0 && u.OutputTokens == 0 {
		fmt.Fprintf(w, "usage   unknown (the response reported none)\n")
	} else {
		// 0 is a count the response did not give; a count of the stream's
		// chunks is one even when 0.
		in, out := "unknown", "unknown"
		if u.InputTokens > 0 {
			in = strconv.Itoa(u.InputTokens)
		}
		if u.OutputTokens > 0 || u.Source == "counted" {
			out = strconv.Itoa(u.OutputTokens)
		}
		fmt.Fprintf(w, "usage   tokens in %s  out %s (%s)\n", in, out, cmpOr(u.Source, "server"))
	}
	start := string(resp.Start.Kind) + " (" + string(resp.Start.Reason) + ")"
	if resp.Start.ConnectionCold {
		start += ", new connection"
	}
	if resp.Start.Overhead > 0 {
		start += fmt.Sprintf(", cold-start overhead %s", resp.Start.Overhead.Round(time.Microsecond))
	}
	fmt.Fprintf(w, "start   %s\n", start)
	var parts []string
	for _, m := range []struct {
		name string
		m    latency.Metric
	}{{"ttft", latency.TTFT}, {"tpot", latency.TPOT}, {"e2e", latency.E2E}} {
		if v, ok := s.Value(m.m); ok { // a whole body has no TTFT, one token no TPOT
			parts = append(parts, fmt.Sprintf("%s %s", m.name, time.Duration(v).Round(time.Microsecond)))
		}
	}
	fmt.Fprintf(w, "timing  attempts %d  %s\n", s.Attempts, strings.Join(parts, "  "))
}

// benchTarget is the head of a plan error about one of its targets.
var benchTarget = regexp.MustCompile(`^bench: (target "[^"]*":? )?`)

// invokeError words an error of the one-target plan invoke builds as
// invoke's own: "invoke: provider …", not "bench: target "…": provider …".
func invokeError(err error) error {
	var e *errcodes.Error
	if !errors.As(err, &e) {
		return err
	}
	m := benchTarget.FindString(e.Message)
	if m == "" {
		return err
	}
	c := *e
	c.Message = "invoke: " + e.Message[len(m):]
	return &c
}
