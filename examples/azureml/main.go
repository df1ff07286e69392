// Command azureml streams one generation from an Azure Machine Learning
// online endpoint through cloudinfer, and prints the text, the usage and the
// latency breakdown.
//
// By default it starts the cloudinfer emulator in-process and talks to its
// built-in "llama-3-8b" endpoint, so it runs with no account:
//
//	go run ./examples/azureml
//
// Point it at Azure with flags or the environment:
//
//	AZUREML_ENDPOINT=https://my-ep.westeurope.inference.ml.azure.com/score AZUREML_KEY=… go run ./examples/azureml
//	AZUREML_ENDPOINT=my-ep AZUREML_REGION=westeurope go run ./examples/azureml        # Entra ID (DefaultAzureCredential)
//	AZUREML_ENDPOINT=https://my-llm.eastus2.models.ai.azure.com AZUREML_API=chat AZUREML_KEY=… go run ./examples/azureml
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
	"github.com/cloudinfer/cloudinfer/providers/azureml"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "azureml example:", err)
		os.Exit(1)
	}
}

func run() error {
	endpoint := flag.String("endpoint", os.Getenv("AZUREML_ENDPOINT"), "endpoint name or scoring URI (env AZUREML_ENDPOINT); empty starts the embedded emulator")
	region := flag.String("region", os.Getenv("AZUREML_REGION"), "region, when -endpoint is a name (env AZUREML_REGION)")
	key := flag.String("key", os.Getenv("AZUREML_KEY"), "endpoint key (env AZUREML_KEY)")
	token := flag.String("token", os.Getenv("AZUREML_TOKEN"), "AML token (env AZUREML_TOKEN); with neither key nor token, DefaultAzureCredential")
	deployment := flag.String("deployment", os.Getenv("AZUREML_DEPLOYMENT"), "deployment to force (env AZUREML_DEPLOYMENT)")
	api := flag.String("api", envOr("AZUREML_API", "score"), "route: score or chat (serverless) (env AZUREML_API)")
	dialect := flag.String("dialect", "messages", "generate body on /score: messages or input_data")
	prompt := flag.String("prompt", "Write a haiku about latency.", "user prompt")
	maxTokens := flag.Int("max-tokens", 64, "output token limit")
	timeout := flag.Duration("timeout", 60*time.Second, "overall timeout")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	opts := azureml.Options{
		Region: *region, Key: *key, Token: *token,
		API: azureml.API(*api), ScoreDialect: azureml.ScoreDialect(*dialect),
	}
	target := *endpoint
	set := hooks.Default()
	if target == "" {
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
		target = "llama-3-8b"
		opts.EndpointURL, opts.AllowInsecureHTTP = srv.URL()+"/azureml/{endpoint}", true
		if opts.Key == "" && opts.Token == "" {
			opts.Key = "local-key"
		}
	}
	ad, err := azureml.New(opts)
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
		Provider: cloudreq.ProviderAzure, Service: cloudreq.ServiceAzureML, Action: cloudreq.ActionGenerate,
		Target: cloudreq.Target{Endpoint: target, Variant: *deployment},
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
