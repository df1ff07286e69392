package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
)

// invokeCmd is the `cloudinfer invoke` command: one request, its response,
// its timeline and its start verdict. With no --url (and, for Vertex, no
// --grpc-addr) it goes to the embedded emulator.
type invokeCmd struct {
	Provider  string            `help:"Provider: aws, azure, gcp, alibaba or openai." default:"openai"`
	Endpoint  string            `help:"Endpoint name (SageMaker, Azure ML, Vertex, PAI-EAS) or URL."`
	Model     string            `help:"Model name (OpenAI-compatible servers; for the other providers the endpoint's name when --endpoint is not given)." default:"llama-3-8b"`
	Variant   string            `help:"SageMaker production variant or Azure ML deployment."`
	Path      string            `help:"Sub-path under the endpoint (PAI-EAS /v1/chat/completions, …)."`
	URL       string            `help:"Base URL to send to (an emulator, a gateway, an OpenAI-compatible server)."`
	GRPCAddr  string            `name:"grpc-addr" help:"Vertex gRPC address to dial instead of the cloud's."`
	Region    string            `help:"AWS region."`
	Project   string            `help:"Google Cloud project."`
	Location  string            `help:"Google Cloud location."`
	Prompt    string            `help:"Prompt for a generate request." default:"Say hello."`
	MaxTokens int               `name:"max-tokens" help:"Output token limit for generate." default:"64"`
	Body      string            `help:"File whose bytes are sent as they are (action invoke) instead of a prompt." type:"existingfile"`
	Type      string            `help:"Content type of --body." default:"application/json"`
	Stream    bool              `help:"Stream the response and print chunks as they arrive."`
	Header    map[string]string `help:"Extra request header (repeatable), e.g. -H X-Emulator-Inject=throttle." short:"H"`
	Network   string            `help:"Impair the connection, e.g. \"delay=20ms,jitter=2ms\" (see go doc ./impair)." placeholder:"SPEC"`
	Retries   int               `help:"Retries after the first attempt." default:"2"`
	Timeout   time.Duration     `help:"Overall deadline of the call." default:"60s"`
	TimeScale float64           `name:"time-scale" help:"Embedded emulator time scale." default:"1"`
}

// Run sends the request and prints what happened.
func (c *invokeCmd) Run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return c.run(ctx, os.Stdout)
}

func (c *invokeCmd) run(ctx context.Context, w io.Writer) error {
	t := bench.Target{
		Provider: c.Provider, Endpoint: c.Endpoint, Model: c.Model, Variant: c.Variant, Path: c.Path,
		URL: c.URL, GRPCAddr: c.GRPCAddr, Region: c.Region, Project: c.Project, Location: c.Location,
		Stream: c.Stream, Header: c.Header, Network: c.Network,
	}
	if t.Endpoint == "" && t.Provider != cloudreq.ProviderOpenAI {
		// The cloud providers address an endpoint; the model names it.
		t.Endpoint, t.Model = t.Model, ""
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

	env := &environment{cmd: &benchCmd{TimeScale: c.TimeScale, Seed: 1, Retries: c.Retries, Timeout: c.Timeout}, plan: plan}
	defer env.close()
	if toEmulator(&t) {
		if err := env.startEmulator(); err != nil {
			return err
		}
		fmt.Fprintf(w, "embedded emulator at %s (time scale %g)\n", env.emu.URL(), c.TimeScale)
	}
	client, err := env.connect(ctx, &t)
	if err != nil {
		return err
	}
	defer client.Close()
	req := t.Request()

	var resp *cloudreq.CloudResponse
	if c.Stream {
		s, err := client.Stream(ctx, req)
		if err != nil {
			return describe(err)
		}
		defer s.Close()
		for s.Next() {
			ch := s.Chunk()
			if ch.Text != "" {
				fmt.Fprint(w, ch.Text)
			} else if req.Action == cloudreq.ActionInvoke {
				fmt.Fprintf(w, "%s", ch.Data)
			}
		}
		fmt.Fprintln(w)
		if err := s.Err(); err != nil {
			return describe(err)
		}
		resp = s.Response()
	} else {
		resp, err = client.Invoke(ctx, req)
		if err != nil {
			return describe(err)
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

// describe turns a call's error into the command's error, with its code.
func describe(err error) error {
	e := errcodes.As(err)
	return fmt.Errorf("%s (retryable: %t)", e.Error(), e.Retryable)
}

// printTiming writes the response's status, usage, start verdict and the
// standard metrics of its timeline.
func printTiming(w io.Writer, resp *cloudreq.CloudResponse) {
	s := latency.Measure(resp.Timing, latency.Outcome{Start: resp.Start, OutputTokens: resp.Usage.OutputTokens})
	fmt.Fprintf(w, "\nstatus %d  request id %s  finish %s\n", resp.StatusCode, cmpOr(resp.RequestID, "-"), cmpOr(resp.FinishReason, "-"))
	if u := resp.Usage; u.Source == "" && u.InputTokens == 0 && u.OutputTokens == 0 {
		fmt.Fprintf(w, "usage   unknown (the response reported none)\n")
	} else {
		fmt.Fprintf(w, "usage   in %d  out %d (%s)\n", u.InputTokens, u.OutputTokens, cmpOr(u.Source, "server"))
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
