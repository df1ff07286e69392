package telemetry_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/cloudreq/cloudreqtest"
	"github.com/cloudinfer/cloudinfer/telemetry"
)

// A client whose calls become GenAI spans. The fake adapter stands in for a
// provider; a real program passes its exporters' TracerProvider (or none,
// for the global one).
func Example() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()

	obs, err := telemetry.New(telemetry.Options{TracerProvider: tp})
	if err != nil {
		log.Fatal(err)
	}
	client, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{&cloudreqtest.Adapter{}}},
		telemetry.WithObserver(obs))
	if err != nil {
		log.Fatal(err)
	}
	_, err = client.Invoke(context.Background(), &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderOpenAI, Service: cloudreq.ServiceOpenAICompatible, Action: cloudreq.ActionGenerate,
		Target:   cloudreq.Target{Endpoint: "http://127.0.0.1:8000/v1", Model: "qwen2-7b"},
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "hi"}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range rec.Ended() {
		fmt.Println(s.SpanKind(), s.Name())
	}
	// Output:
	// internal cloudinfer.attempt
	// client chat qwen2-7b
}

// Serving the metrics of a benchmark run to Prometheus.
func ExampleServePrometheus() {
	ctx := context.Background()
	prom, err := telemetry.ServePrometheus(ctx, "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = prom.Shutdown(ctx) }()
	obs, err := telemetry.New(telemetry.Options{MeterProvider: prom.MeterProvider})
	if err != nil {
		log.Fatal(err)
	}
	_ = obs // give it to cloudreq.New with telemetry.WithObserver
	fmt.Println(prom.URL() != "")
	// Output: true
}

// Logging requests and responses: a fixed set of fields, the endpoint as
// host and path, header values of allow-listed headers only.
func ExampleWithLogging() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "elapsed" || a.Key == "duration" {
				return slog.Attr{} // keep the output stable
			}
			return a
		},
	}))
	client, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{&cloudreqtest.Adapter{}}},
		telemetry.WithLogging(logger, telemetry.LogOptions{}))
	if err != nil {
		log.Fatal(err)
	}
	_, err = client.Invoke(context.Background(), &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderOpenAI, Service: cloudreq.ServiceOpenAICompatible, Action: cloudreq.ActionInvoke,
		Target:    cloudreq.Target{Endpoint: "https://llm.example.com/v1?api-key=abc123", Model: "m"},
		Header:    map[string][]string{"Authorization": {"Bearer abc123"}, "X-Request-Id": {"x-1"}},
		RequestID: "r-1",
		Payload:   cloudreq.Payload{Body: []byte(`{}`)},
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// level=INFO msg="cloudinfer request" provider=openai service=openai-compatible action=invoke endpoint=https://llm.example.com/v1 model=m request_id=r-1 payload_bytes=2 header.Authorization=[REDACTED] header.X-Request-Id=x-1
	// level=INFO msg="cloudinfer response" provider=openai service=openai-compatible action=invoke endpoint=https://llm.example.com/v1 model=m request_id=r-1 attempt=1 status=200 body_bytes=2
}

func ExampleProviderName() {
	for _, p := range []string{cloudreq.ProviderAWS, cloudreq.ProviderAzure, cloudreq.ProviderGCP, cloudreq.ProviderAlibaba, cloudreq.ProviderOpenAI} {
		fmt.Println(p, telemetry.ProviderName(p, ""))
	}
	// Output:
	// aws aws.sagemaker
	// azure azure.ml
	// gcp gcp.vertex_ai
	// alibaba alibaba.pai_eas
	// openai openai
}
