package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// emulateCmd is the `cloudinfer emulate` command: it serves every
// provider's wire protocol locally until SIGINT or SIGTERM.
type emulateCmd struct {
	Addr     string `default:"127.0.0.1:8080" help:"HTTP listen address (SageMaker, Azure ML, Vertex REST, PAI-EAS, OpenAI-compatible, /metrics)."`
	GRPCAddr string `name:"grpc-addr" default:"127.0.0.1:8081" help:"gRPC listen address (Vertex AI PredictionService); empty disables gRPC."`
	Config   string `type:"existingfile" help:"Endpoint configuration (JSON or YAML; schema in the emulator package documentation)."`
	// The flags below are pointers so that a value given, zero included,
	// overrides the config's.
	TimeScale *float64 `help:"Multiply every injected duration by this (default: the config's, else 1; 0 means 1)."`
	Seed      *uint64  `help:"Seed of every random draw (default: the config's, else 0)."`
	SpinWaits *int     `name:"spin-waits" help:"How many waits may spin on the clock at once so that tokens leave on time to the microsecond (default: the config's, else one per four CPUs; 0: that default; -1: none, timers only, up to about 1 ms late)."`
	// The slow-client bounds (emulator.Options), in real time.
	ReadBodyTimeout   *time.Duration `name:"read-body-timeout" help:"How long a request's body may take to arrive after its headers before a 408 (default: the config's, else 30s; negative: no bound)."`
	WriteStallTimeout *time.Duration `name:"write-stall-timeout" help:"How long a client may take none of a response's bytes before the response is ended (default: the config's, else 1m; negative: no bound)."`
	OTLPFile          string         `name:"otlp-file" type:"path" placeholder:"PATH" help:"Append vLLM's per-request OpenTelemetry span (llm_request, gen_ai.latency.* from the request's ground truth) of every request answered in full to PATH, as OTLP JSON lines (an OpenTelemetry Collector file exporter's form): what bench --server-requests reads."`
}

// Run runs the command.
func (c *emulateCmd) Run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return c.run(ctx, os.Stdout)
}

// run serves until ctx ends, printing the quickstart to out.
func (c *emulateCmd) run(ctx context.Context, out io.Writer) error {
	opts, err := c.options()
	if err != nil {
		return err
	}
	if c.OTLPFile != "" {
		f, err := os.OpenFile(c.OTLPFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return usageError{errcodes.Errorf(errcodes.InvalidParam, "emulate: --otlp-file: %v", err)}
		}
		defer f.Close()
		opts.OTLPWriter = f
	}
	srv, err := emulator.New(opts)
	if err != nil {
		return err
	}
	if err := srv.Start(c.Addr, c.GRPCAddr); err != nil {
		return err
	}
	printQuickstart(out, srv)
	<-ctx.Done()
	fmt.Fprintln(out, "cloudinfer emulate: shutting down")
	return srv.Close()
}

// options returns the emulator's options: the config file's, with the
// flags given in place of its values.
func (c *emulateCmd) options() (emulator.Options, error) {
	var opts emulator.Options
	if c.Config != "" {
		var err error
		if opts, err = emulator.LoadConfig(c.Config); err != nil {
			return opts, err
		}
	}
	if c.TimeScale != nil {
		if v := *c.TimeScale; v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return opts, usageError{errcodes.Errorf(errcodes.InvalidParam, "emulate: --time-scale must be a finite number, 0 or more (got %g)", v)}
		}
		opts.TimeScale = *c.TimeScale
	}
	if c.Seed != nil {
		opts.Seed = *c.Seed
	}
	if c.SpinWaits != nil {
		opts.SpinWaits = *c.SpinWaits
	}
	if c.ReadBodyTimeout != nil {
		opts.ReadBodyTimeout = *c.ReadBodyTimeout
	}
	if c.WriteStallTimeout != nil {
		opts.WriteStallTimeout = *c.WriteStallTimeout
	}
	return opts, nil
}

func printQuickstart(out io.Writer, srv *emulator.Server) {
	var names []string
	for _, e := range srv.Endpoints() {
		names = append(names, e.Name)
	}
	fmt.Fprintf(out, "cloudinfer emulator (time scale %g) serving %d endpoints: %s\n", srv.TimeScale(), len(names), strings.Join(names, ", "))
	fmt.Fprintf(out, "ground truth: %s/emulator/requests   metrics: %s/metrics\n", srv.URL(), srv.URL())
	if a := srv.GRPCAddr(); a != "" {
		fmt.Fprintf(out, "Vertex gRPC:  %s\n", a)
	}
	for _, q := range srv.Quickstarts() {
		fmt.Fprintf(out, "\n%s\n  base URL: %s\n  (%s)\n  %s\n", q.Title, q.BaseURL, q.Note, q.Curl)
	}
	fmt.Fprintln(out, "\nPress Ctrl-C to stop.")
}
