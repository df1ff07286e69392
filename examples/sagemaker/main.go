// Command sagemaker generates text on an Amazon SageMaker real-time endpoint
// through cloudinfer, streaming or not, and prints the text, the usage, the
// cold/warm verdict and the latency figures.
//
// By default it starts the cloudinfer emulator in-process and talks to its
// built-in "llama-3-8b" endpoint, so it runs with no AWS account:
//
//	go run ./examples/sagemaker
//	go run ./examples/sagemaker -dialect tgi -stream=false
//
// It talks to real SageMaker when AWS settings are given: -region or an
// AWS_REGION / AWS_DEFAULT_REGION / AWS_PROFILE / AWS_ACCESS_KEY_ID
// variable, or -endpoint-url. Credentials come from the default chain
// (environment, shared files, SSO, IMDS):
//
//	AWS_PROFILE=ml AWS_REGION=us-east-1 go run ./examples/sagemaker -endpoint my-llm-endpoint
//	go run ./examples/sagemaker -region eu-west-1 -endpoint my-tgi-endpoint -dialect tgi
//	go run ./examples/sagemaker -endpoint-url http://127.0.0.1:8080 -insecure -endpoint llama-3-8b
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/hooks"
	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/providers/sagemaker"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "sagemaker example:", err)
		os.Exit(1)
	}
}

// awsConfigured reports whether the environment names an AWS setup.
func awsConfigured() bool {
	for _, k := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ACCESS_KEY_ID"} {
		if os.Getenv(k) != "" {
			return true
		}
	}
	return false
}

func run() error {
	endpointURL := flag.String("endpoint-url", "", "SageMaker Runtime base URL (default: the AWS endpoint of the region, or the embedded emulator)")
	region := flag.String("region", "", "AWS region (default: from the AWS configuration)")
	insecure := flag.Bool("insecure", false, "allow a plain-http -endpoint-url (an emulator)")
	endpoint := flag.String("endpoint", "llama-3-8b", "SageMaker endpoint name")
	variant := flag.String("variant", "", "target production variant")
	component := flag.String("inference-component", "", "inference component name")
	dialect := flag.String("dialect", "messages", `request dialect of the endpoint's container: "messages" (LMI/TGI Messages API) or "tgi"`)
	prompt := flag.String("prompt", "Write a haiku about latency.", "user prompt")
	maxTokens := flag.Int("max-tokens", 64, "output token limit")
	stream := flag.Bool("stream", true, "stream the response (InvokeEndpointWithResponseStream)")
	timeout := flag.Duration("timeout", 90*time.Second, "overall timeout")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	opts := sagemaker.Options{
		Region:            *region,
		BaseEndpoint:      *endpointURL,
		AllowInsecureHTTP: *insecure,
		Dialect:           sagemaker.Dialect(*dialect),
	}
	set := hooks.Default()
	if *endpointURL == "" && *region == "" && !awsConfigured() {
		srv, err := emulator.New(emulator.Options{TimeScale: 1})
		if err != nil {
			return err
		}
		if err := srv.Start("127.0.0.1:0", ""); err != nil {
			return err
		}
		defer srv.Close()
		fmt.Fprintln(os.Stderr, "no AWS settings: using the embedded emulator at", srv.URL())
		// The emulator reports each request's cold start in headers of its
		// own, which no cloud sends: its hook reads them into ServerStart.
		_ = set.Deserialize.Add(emulator.NameStartReport, emulator.StartReport())
		opts.BaseEndpoint, opts.AllowInsecureHTTP, opts.Region = srv.URL(), true, "us-east-1"
		opts.Credentials = credentials.NewStaticCredentialsProvider("AKIDEMULATOR", "emulator-secret", "")
	}
	ad, err := sagemaker.New(ctx, opts)
	if err != nil {
		return err
	}
	client, err := cloudreq.New(cloudreq.Options{
		Adapters: []cloudreq.Adapter{ad},
		CallOptions: cloudreq.CallOptions{
			Hooks:             set,
			Timeout:           *timeout,
			FirstChunkTimeout: 60 * time.Second,
			StreamIdleTimeout: 30 * time.Second,
		},
	})
	if err != nil {
		return err
	}
	defer client.Close()

	req := &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderAWS, Service: cloudreq.ServiceSageMaker, Action: cloudreq.ActionGenerate,
		Target:     cloudreq.Target{Endpoint: *endpoint, Variant: *variant},
		Attributes: cloudreq.Attributes{InferenceComponent: *component},
		Generate: &cloudreq.GenerateInput{
			Messages:  []cloudreq.Message{{Role: "user", Content: *prompt}},
			MaxTokens: *maxTokens,
		},
	}
	var resp *cloudreq.CloudResponse
	if *stream {
		s, err := client.Stream(ctx, req)
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
		resp = s.Response()
	} else {
		if resp, err = client.Invoke(ctx, req); err != nil {
			return err
		}
		fmt.Println(resp.Text)
	}
	report(*endpoint, resp)
	return nil
}

// report prints the outcome and the latency figures of one response.
func report(endpoint string, resp *cloudreq.CloudResponse) {
	fmt.Printf("finish=%s usage: in=%d out=%d (%s) start=%s (%s) variant=%s request id=%s\n",
		resp.FinishReason, resp.Usage.InputTokens, resp.Usage.OutputTokens, resp.Usage.Source,
		resp.Start.Kind, resp.Start.Reason, resp.Metadata[sagemaker.HeaderInvokedVariant], resp.RequestID)
	if resp.Timing == nil {
		return
	}
	src := latency.TokensFromServer
	if resp.Usage.Source != "server" {
		src = latency.TokensCounted
	}
	s := latency.Measure(resp.Timing, latency.Outcome{
		Endpoint: endpoint, Start: resp.Start, OutputTokens: resp.Usage.OutputTokens, TokenSource: src,
	})
	parts := []string{fmt.Sprintf("attempts=%d", s.Attempts)}
	for _, m := range []struct {
		name string
		m    latency.Metric
	}{{"ttft", latency.TTFT}, {"tpot", latency.TPOT}, {"e2e", latency.E2E}} {
		if v, ok := s.Value(m.m); ok {
			parts = append(parts, m.name+"="+time.Duration(v).Round(time.Microsecond).String())
		}
	}
	if s.ColdStart > 0 {
		parts = append(parts, "cold-start="+s.ColdStart.Round(time.Millisecond).String())
	}
	fmt.Println(strings.Join(parts, " "))
}
