package telemetry

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/cloudreq/cloudreqtest"
)

// BenchmarkInvoke measures what telemetry adds to a call against the fake
// adapter: nothing, the Observer (SDK providers recording to a manual
// reader, spans sampled and dropped), and the Observer plus logging.
func BenchmarkInvoke(b *testing.B) {
	tp := sdktrace.NewTracerProvider()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	obs, err := New(Options{TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		b.Fatal(err)
	}
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	resp := &cloudreq.CloudResponse{StatusCode: 200, Text: "ok", FinishReason: "stop",
		Usage: cloudreq.Usage{InputTokens: 10, OutputTokens: 20, Source: "server"}}
	for _, bc := range []struct {
		name string
		opts []func(*cloudreq.Options)
	}{
		{"none", nil},
		{"observer", []func(*cloudreq.Options){WithObserver(obs)}},
		{"observer+logging", []func(*cloudreq.Options){WithObserver(obs), WithLogging(logger, LogOptions{})}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Response: resp}}}
			c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{fake}}, bc.opts...)
			if err != nil {
				b.Fatal(err)
			}
			req := generateReq()
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Invoke(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// redactCorpus is about 1 MB of log-like text: prose, header dumps, URLs,
// key=value pairs and JSON, with a few credentials among them.
func redactCorpus() string {
	lines := []string{
		"cloudinfer request provider=aws service=sagemaker action=invoke model=llama-3 max_tokens=256 output_tokens=12",
		"calling https://runtime.sagemaker.us-east-1.amazonaws.com/endpoints/x/invocations?sig=abcdef123456&x=1",
		"Host: runtime.example.com\r\nAuthorization: Bearer abcdefghijklmnop\r\nAccept: application/json",
		`{"model": "m", "max_tokens": 64, "api_key": "abcdef0123456789", "messages": [{"role": "user", "content": "hello there"}]}`,
		"the model supports basic completions and streaming; retry in 3 s (status: 503, code: ERR_UNAVAILABLE)",
		"client_secret=abcdef0123456789&grant_type=client_credentials&scope=openid",
		"a rather long line of ordinary prose without any credential in it, just words, numbers 12345 and punctuation.",
		"time_to_first_token=0.123 tokens_per_second=45.6 input_tokens=100 status=ok note: fine",
	}
	var b strings.Builder
	for i := 0; b.Len() < 1<<20; i++ {
		b.WriteString(lines[i%len(lines)])
		b.WriteByte('\n')
	}
	return b.String()
}

// BenchmarkRedactString measures free-text redaction of about 1 MB.
func BenchmarkRedactString(b *testing.B) {
	s := redactCorpus()
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		_ = redactString(s)
	}
}
