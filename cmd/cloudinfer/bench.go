package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	exectrace "runtime/trace"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/telemetry"
)

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
	defer bench.TuneGC()()
	if c.CPUProfile != "" {
		stop, err := startProfile("--cpuprofile", c.CPUProfile, pprof.StartCPUProfile, pprof.StopCPUProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if c.ExecTrace != "" {
		stop, err := startProfile("--exectrace", c.ExecTrace, exectrace.Start, exectrace.Stop)
		if err != nil {
			return err
		}
		defer stop()
	}
	if c.MemProfile != "" {
		stop, err := startMemProfile(c.MemProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	return c.run(ctx, os.Stdout, os.Stderr)
}

// startProfile starts a profile or trace (start, stop: the runtime's)
// written to path, named by flag in errors, and returns its stop, which
// ends it and closes the file.
func startProfile(flag, path string, start func(io.Writer) error, stop func()) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, usageError{errcodes.Wrap(err, errcodes.InvalidParam, "bench: "+flag+": "+err.Error())}
	}
	if err := start(f); err != nil {
		_ = f.Close()
		return nil, errcodes.Wrap(err, errcodes.Internal, "bench: "+flag+": "+err.Error())
	}
	return func() {
		stop()
		_ = f.Close()
	}, nil
}

// startMemProfile makes the --memprofile file and returns the stop that
// writes the allocation profile (counted from the process's start) to it
// and closes it.
func startMemProfile(path string) (func(), error) {
	var w io.Writer
	return startProfile("--memprofile", path, func(f io.Writer) error { w = f; return nil }, func() {
		// The profile is as of the last collection: one now brings in
		// what was allocated since (as go test -memprofile does).
		runtime.GC()
		if err := pprof.Lookup("allocs").WriteTo(w, 0); err != nil {
			fmt.Fprintln(os.Stderr, "bench: --memprofile:", err)
		}
	})
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
	var barrier *startBarrier
	if c.Shards > 0 {
		// A plan its shards cannot split is refused before any waits.
		if _, err := plan.ShardPlan(c.shardIndex, c.Shards); err != nil {
			return err
		}
		hash, err := bench.PlanHash(plan)
		if err != nil {
			return err
		}
		if c.Coordinator != "" && c.Shards > 1 {
			barrier = &startBarrier{addr: c.Coordinator, index: c.shardIndex, count: c.Shards, plan: hash, timeout: c.StartTimeout}
			if stderr != nil {
				barrier.notes = stderr
			}
		} else if c.Shards > 1 && stderr != nil {
			fmt.Fprintf(stderr, "shard %d of %d of plan %s: no --coordinator, so it starts now; the merge reports how far apart the shards started\n",
				c.shardIndex, c.Shards, hash)
		}
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
		opts.ServerMetrics = func(t *bench.Target) []string { // the embedded emulator's
			if !env.emulated(t) {
				return nil
			}
			return []string{env.emu.URL() + "/metrics"}
		}
	}
	if !c.Quiet {
		opts.Progress = bench.NewProgress(stderr)
	}
	if env.emu != nil && stderr != nil {
		fmt.Fprintf(stderr, "embedded emulator at %s (time scale %g)\n", env.emu.URL(), env.emu.TimeScale())
	}
	var res *bench.Result
	if c.Shards > 0 {
		if barrier != nil {
			if err := barrier.wait(ctx); err != nil {
				return err
			}
		}
		res, err = bench.RunShard(ctx, plan, c.shardIndex, c.Shards, opts)
	} else {
		res, err = bench.Run(ctx, plan, opts)
	}
	if err != nil {
		return err
	}
	out, err := c.outPath(res)
	if err != nil {
		return err
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

// outPath returns where the result goes: --out, or a file in the
// directory it names (an existing one), or in bench-results; a shard's
// file is named shard-I-of-N.json, what report --merge DIR reads.
func (c *benchCmd) outPath(res *bench.Result) (string, error) {
	name := "bench-" + res.Begin.Format("20060102-150405") + ".json"
	if res.Shard != nil {
		name = fmt.Sprintf("shard-%d-of-%d.json", res.Shard.Index, res.Shard.Count)
		if c.Out == "" {
			name = "bench-" + res.Begin.Format("20060102-150405") + "-" + name
		}
	}
	if c.Out != "" {
		if st, err := os.Stat(c.Out); err == nil && st.IsDir() {
			return filepath.Join(c.Out, name), nil
		}
		return c.Out, nil
	}
	if err := os.MkdirAll("bench-results", 0o755); err != nil {
		return "", errcodes.Wrap(err, errcodes.InvalidParam, "bench: create bench-results: "+err.Error())
	}
	return filepath.Join("bench-results", name), nil
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
