package telemetry

import (
	"context"
	"io"
	"log/slog"
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
