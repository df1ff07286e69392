// Command embed runs cloudinfer's benchmark from a Go program, as a
// latency gate in a CI pipeline: it benchmarks an OpenAI-compatible
// endpoint under a closed loop, prints the summary with its SLA verdicts,
// saves the mergeable JSON result, and exits 1 when an SLA fails.
//
// By default it starts the cloudinfer emulator in-process and benchmarks
// its built-in "llama-3-8b" model, so it runs with no server and no
// account:
//
//	go run ./examples/embed
//	go run ./examples/embed -requests 200 -concurrency 8 -sla "ttft p95 300ms starts=warm" -sla "e2e p99 3s"
//
// Point it at a real server (vLLM, SGLang, TGI) with flags or the usual
// environment variables:
//
//	OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_MODEL=meta-llama/Meta-Llama-3-8B-Instruct go run ./examples/embed
//
// The benchmark in bench_test.go shows the other way to embed cloudinfer:
// latency figures of your own calls reported by go test -bench.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/hooks"
	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/latency/stats"
	"github.com/cloudinfer/cloudinfer/providers/openai"
)

// errSLAFailed is run's error when the benchmark ran and an SLA failed.
var errSLAFailed = errors.New("an SLA failed")

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "embed example:", err)
		os.Exit(1)
	}
}

// slaFlags collects repeated -sla flags.
type slaFlags []stats.SLA

func (s *slaFlags) String() string {
	var parts []string
	for _, v := range *s {
		parts = append(parts, v.String())
	}
	return strings.Join(parts, "; ")
}

func (s *slaFlags) Set(v string) error {
	sla, err := stats.ParseSLA(v)
	if err != nil {
		return err
	}
	*s = append(*s, sla)
	return nil
}

func run() error {
	baseURL := flag.String("base-url", os.Getenv("OPENAI_BASE_URL"), "server base URL (env OPENAI_BASE_URL); empty starts the embedded emulator")
	apiKey := flag.String("api-key", os.Getenv("OPENAI_API_KEY"), "API key (env OPENAI_API_KEY)")
	model := flag.String("model", envOr("OPENAI_MODEL", "llama-3-8b"), "model name (env OPENAI_MODEL)")
	requests := flag.Int("requests", 40, "measured requests")
	concurrency := flag.Int("concurrency", 4, "closed-loop workers")
	maxTokens := flag.Int("max-tokens", 64, "output token limit per request")
	out := flag.String("out", "", "write the JSON result to this file (merge or compare it with cloudinfer report)")
	var slas slaFlags
	flag.Var(&slas, "sla", `an SLA, repeatable (default "ttft p95 1s starts=warm" and "e2e p95 5s")`)
	flag.Parse()
	if len(slas) == 0 {
		for _, s := range []string{"ttft p95 1s starts=warm", "e2e p95 5s"} {
			_ = slas.Set(s)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	opts := openai.Options{BaseURL: *baseURL, APIKey: *apiKey}
	set := hooks.Default()
	if *baseURL == "" {
		srv, err := emulator.New(emulator.Options{TimeScale: 1})
		if err != nil {
			return err
		}
		if err := srv.Start("127.0.0.1:0", ""); err != nil {
			return err
		}
		defer srv.Close()
		fmt.Fprintln(os.Stderr, "using the embedded emulator at", srv.URL())
		// The emulator reports each request's cold start in headers of its
		// own, which no cloud sends: its hook reads them into ServerStart.
		_ = set.Deserialize.Add(emulator.NameStartReport, emulator.StartReport())
		opts.BaseURL, opts.AllowInsecureHTTP = srv.URL(), true
	}

	plan := &bench.Plan{
		Targets: []bench.Target{{
			Name: *model, Provider: cloudreq.ProviderOpenAI, Model: *model, Stream: true,
			Payload: bench.Payload{PromptTokens: 512, OutputTokens: *maxTokens},
		}},
		Load:   bench.Load{Model: bench.LoadClosed, Concurrency: *concurrency},
		Limits: bench.Limits{Requests: *requests, Warmup: 1},
		SLAs:   slas,
	}
	// Connect builds the client each target's requests go through: here
	// one OpenAI-compatible adapter; any cloudreq adapter works the same.
	connect := func(context.Context, *bench.Target) (*cloudreq.Client, error) {
		ad, err := openai.New(opts)
		if err != nil {
			return nil, err
		}
		return cloudreq.New(cloudreq.Options{
			Adapters: []cloudreq.Adapter{ad},
			CallOptions: cloudreq.CallOptions{
				Hooks:             set,
				Timeout:           60 * time.Second,
				FirstChunkTimeout: 30 * time.Second,
			},
		})
	}
	res, err := bench.Run(ctx, plan, bench.Options{Connect: connect})
	if err != nil {
		return err
	}
	if err := res.Render(os.Stdout, bench.FormatText, bench.RenderOptions{}); err != nil {
		return err
	}
	if *out != "" {
		if err := writeJSON(*out, res); err != nil {
			return err
		}
	}
	return gate(res)
}

// gate checks the plan's SLAs against the result: a line per SLA, and
// errSLAFailed when one failed or had no data.
func gate(res *bench.Result) error {
	rep, err := res.Report()
	if err != nil {
		return err
	}
	failed := 0
	for _, r := range rep.SLAs {
		verdict := "PASS"
		if !r.Pass {
			verdict, failed = "FAIL", failed+1
		}
		fmt.Printf("gate: %s: %s (measured %s over %d requests)\n", r.SLA, verdict, format(r.SLA.Metric, r.Measured), r.Count)
	}
	if res.Interrupted {
		return errors.New("the run was interrupted")
	}
	if failed > 0 {
		return fmt.Errorf("%w: %d of %d", errSLAFailed, failed, len(rep.SLAs))
	}
	return nil
}

// writeJSON saves the result's mergeable JSON form to path.
func writeJSON(path string, res *bench.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := res.WriteJSON(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// format prints an SLA's measured value in its metric's unit.
func format(m latency.Metric, v float64) string {
	if m.Info().Unit == latency.Nanoseconds {
		return time.Duration(v).Round(10 * time.Microsecond).String()
	}
	return fmt.Sprintf("%.0f tokens", v)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
