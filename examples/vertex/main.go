// Command vertex streams one generateContent call from Vertex AI through
// cloudinfer, and prints the text, the usage and the latency breakdown.
//
// By default it starts the cloudinfer emulator in-process (its Vertex gRPC
// listener) and talks to the built-in "llama-3-8b" endpoint, so it runs with
// no account:
//
//	go run ./examples/vertex
//
// With a project (flag or GOOGLE_CLOUD_PROJECT) it talks to real Vertex AI
// with Application Default Credentials (gcloud auth application-default
// login), a Gemini model by default or a deployed endpoint:
//
//	GOOGLE_CLOUD_PROJECT=my-project go run ./examples/vertex -model gemini-2.0-flash
//	go run ./examples/vertex -project my-project -location europe-west4 -endpoint 1234567890
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
	"github.com/cloudinfer/cloudinfer/providers/vertex"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "vertex example:", err)
		os.Exit(1)
	}
}

func run() error {
	project := flag.String("project", os.Getenv("GOOGLE_CLOUD_PROJECT"), "Google Cloud project (env GOOGLE_CLOUD_PROJECT); empty starts the embedded emulator")
	location := flag.String("location", envOr("GOOGLE_CLOUD_LOCATION", "us-central1"), "Vertex AI location (env GOOGLE_CLOUD_LOCATION)")
	model := flag.String("model", envOr("VERTEX_MODEL", "gemini-2.0-flash"), "publisher model (env VERTEX_MODEL), used when -endpoint is empty")
	endpoint := flag.String("endpoint", os.Getenv("VERTEX_ENDPOINT"), "endpoint id or resource name (env VERTEX_ENDPOINT)")
	apiEndpoint := flag.String("api-endpoint", "", "service host:port override (private or regional endpoint)")
	prompt := flag.String("prompt", "Write a haiku about latency.", "user prompt")
	maxTokens := flag.Int("max-tokens", 64, "output token limit")
	timeout := flag.Duration("timeout", 60*time.Second, "overall timeout")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	opts := vertex.Options{Project: *project, Location: *location, Endpoint: *apiEndpoint}
	target := cloudreq.Target{Endpoint: *endpoint, Model: *model}
	set := hooks.Default()
	if *project == "" && *apiEndpoint == "" {
		srv, err := emulator.New(emulator.Options{TimeScale: 1})
		if err != nil {
			return err
		}
		if err := srv.Start("127.0.0.1:0", "127.0.0.1:0"); err != nil {
			return err
		}
		defer srv.Close()
		fmt.Fprintln(os.Stderr, "using the embedded emulator's Vertex gRPC at", srv.GRPCAddr())
		// The emulator reports each request's cold start in headers of its
		// own, which no cloud sends: its hook reads them into ServerStart.
		_ = set.Deserialize.Add(emulator.NameStartReport, emulator.StartReport())
		opts = vertex.Options{Project: "emulator", Location: "us-central1", Endpoint: srv.GRPCAddr(), Insecure: true}
		target = cloudreq.Target{Endpoint: "llama-3-8b"}
	}
	ad, err := vertex.New(ctx, opts)
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
		_ = ad.Close()
		return err
	}
	defer client.Close()

	s, err := client.Stream(ctx, &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderGCP, Service: cloudreq.ServiceVertex,
		Action: cloudreq.ActionGenerate, Target: target,
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
	fmt.Printf("finish=%s usage: in=%d out=%d (%s) start=%s (%s)\n",
		resp.FinishReason, resp.Usage.InputTokens, resp.Usage.OutputTokens, resp.Usage.Source,
		resp.Start.Kind, resp.Start.Reason)
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
