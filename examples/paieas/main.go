// Command paieas streams one generation from an LLM service on Alibaba
// Cloud PAI-EAS through cloudinfer, and prints the text, the usage and the
// latency breakdown.
//
// By default it starts the cloudinfer emulator in-process and talks to its
// built-in "llama-3-8b" service, so it runs with no account:
//
//	go run ./examples/paieas
//
// Point it at a real service with flags or the environment:
//
//	EAS_ENDPOINT=https://123456789.cn-hangzhou.pai-eas.aliyuncs.com EAS_SERVICE=my_llm EAS_TOKEN=… go run ./examples/paieas
//	go run ./examples/paieas -dialect legacy -auth signature   # the EAS LLM template, signed like the EAS SDK
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
	"github.com/cloudinfer/cloudinfer/providers/paieas"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "paieas example:", err)
		os.Exit(1)
	}
}

func run() error {
	endpoint := flag.String("endpoint", os.Getenv("EAS_ENDPOINT"), "EAS endpoint root (env EAS_ENDPOINT); empty starts the embedded emulator")
	token := flag.String("token", os.Getenv("EAS_TOKEN"), "service token (env EAS_TOKEN)")
	service := flag.String("service", envOr("EAS_SERVICE", "llama-3-8b"), "service name (env EAS_SERVICE)")
	model := flag.String("model", os.Getenv("EAS_MODEL"), "model name for the OpenAI dialect (env EAS_MODEL; optional)")
	dialect := flag.String("dialect", "openai", "generate dialect: openai or legacy")
	auth := flag.String("auth", "", "auth mode: (auto), token, bearer or signature")
	prompt := flag.String("prompt", "Write a haiku about latency.", "user prompt")
	maxTokens := flag.Int("max-tokens", 64, "output token limit")
	timeout := flag.Duration("timeout", 60*time.Second, "overall timeout")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	opts := paieas.Options{Endpoint: *endpoint, Token: *token, Dialect: paieas.Dialect(*dialect), Auth: paieas.Auth(*auth)}
	set := hooks.Default()
	if *endpoint == "" {
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
		opts.Endpoint, opts.AllowInsecureHTTP = srv.URL(), true
		if opts.Token == "" {
			opts.Token = "local-token"
		}
	}
	ad, err := paieas.New(opts)
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
		Provider: cloudreq.ProviderAlibaba, Service: cloudreq.ServicePAIEAS, Action: cloudreq.ActionGenerate,
		Target: cloudreq.Target{Endpoint: *service, Model: *model},
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
	resp := s.Response()
	fmt.Printf("finish=%s usage: in=%d out=%d (%s) start=%s (%s) request id=%s\n",
		resp.FinishReason, resp.Usage.InputTokens, resp.Usage.OutputTokens, resp.Usage.Source,
		resp.Start.Kind, resp.Start.Reason, resp.RequestID)
	if tl := resp.Timing; tl != nil && len(tl.Attempts) > 0 {
		s := latency.Measure(tl, latency.Outcome{Start: resp.Start, OutputTokens: resp.Usage.OutputTokens})
		fmt.Printf("%s conn-reused=%t\n", s.String(), tl.LastAttempt().ConnReused)
	}
	return nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
