// Command openai streams one chat completion from an OpenAI-compatible
// server through cloudinfer, and prints the text, the usage and the
// latency breakdown.
//
// By default it starts the cloudinfer emulator in-process and talks to its
// built-in "llama-3-8b" model, so it runs with no server and no account:
//
//	go run ./examples/openai
//
// Point it at a real server (vLLM, SGLang, TGI, OpenAI) with flags or the
// usual environment variables:
//
//	OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_MODEL=meta-llama/Meta-Llama-3-8B-Instruct go run ./examples/openai
//	OPENAI_API_KEY=sk-… go run ./examples/openai -model gpt-4o-mini -base-url https://api.openai.com/v1
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/hooks"
	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/providers/openai"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "openai example:", err)
		os.Exit(1)
	}
}

func run() error {
	baseURL := flag.String("base-url", os.Getenv("OPENAI_BASE_URL"), "server base URL (env OPENAI_BASE_URL); empty starts the embedded emulator")
	apiKey := flag.String("api-key", os.Getenv("OPENAI_API_KEY"), "API key (env OPENAI_API_KEY)")
	model := flag.String("model", envOr("OPENAI_MODEL", "llama-3-8b"), "model name (env OPENAI_MODEL)")
	prompt := flag.String("prompt", "Write a haiku about latency.", "user prompt")
	maxTokens := flag.Int("max-tokens", 64, "output token limit")
	timeout := flag.Duration("timeout", 60*time.Second, "overall timeout")
	flag.Parse()

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
	ad, err := openai.New(opts)
	if err != nil {
		return err
	}
	client, err := cloudreq.New(cloudreq.Options{
		Adapters: []cloudreq.Adapter{ad},
		CallOptions: cloudreq.CallOptions{
			Hooks:             set,
			Timeout:           *timeout,
			FirstChunkTimeout: 30 * time.Second,
			StreamIdleTimeout: 15 * time.Second,
		},
	})
	if err != nil {
		return err
	}
	defer client.Close()

	s, err := client.Stream(ctx, &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderOpenAI, Service: cloudreq.ServiceOpenAICompatible,
		Action: cloudreq.ActionGenerate, Target: cloudreq.Target{Model: *model},
		Generate: &cloudreq.GenerateInput{
			Messages:  []cloudreq.Message{{Role: "user", Content: *prompt}},
			MaxTokens: *maxTokens,
		},
	})
	if err != nil {
		return err
	}
	defer s.Close()
	for s.Next() {
		fmt.Print(s.Chunk().Text)
	}
	fmt.Println()
	if err := s.Err(); err != nil {
		return err
	}
	report(s.Response())
	return nil
}

// report prints usage, the start verdict and latency.Measure's figures.
func report(resp *cloudreq.CloudResponse) {
	fmt.Printf("finish=%s usage: in=%d out=%d (%s) start=%s (%s) request id=%s\n",
		resp.FinishReason, resp.Usage.InputTokens, resp.Usage.OutputTokens, resp.Usage.Source,
		resp.Start.Kind, resp.Start.Reason, resp.RequestID)
	tl := resp.Timing
	if tl == nil || len(tl.Attempts) == 0 {
		return
	}
	s := latency.Measure(tl, latency.Outcome{Start: resp.Start, OutputTokens: resp.Usage.OutputTokens})
	fmt.Printf("%s conn-reused=%t\n", s.String(), tl.LastAttempt().ConnReused)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
