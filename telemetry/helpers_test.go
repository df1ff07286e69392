package telemetry

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/cloudreq/cloudreqtest"
)

// rig is an Observer wired to the SDK's in-memory span recorder and a
// manual metric reader, and a client with a fake adapter.
type rig struct {
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	obs    *Observer
	fake   *cloudreqtest.Adapter
	client *cloudreq.Client
}

func newRig(t *testing.T, opts Options, fake *cloudreqtest.Adapter, copts ...func(*cloudreq.Options)) *rig {
	t.Helper()
	r := &rig{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader(), fake: fake}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	t.Cleanup(func() {
		require.NoError(t, tp.Shutdown(context.Background()))
		require.NoError(t, mp.Shutdown(context.Background()))
	})
	opts.TracerProvider, opts.MeterProvider = tp, mp
	obs, err := New(opts)
	require.NoError(t, err)
	r.obs = obs
	copts = append([]func(*cloudreq.Options){WithObserver(obs)}, copts...)
	r.client, err = cloudreq.New(cloudreq.Options{
		Adapters: []cloudreq.Adapter{fake},
		CallOptions: cloudreq.CallOptions{
			Retry: cloudreq.RetryOptions{BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond, NoBudget: true},
		},
	}, copts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.client.Close() })
	return r
}

// callSpan returns the one ended span of kind CLIENT.
func (r *rig) callSpan(t *testing.T) sdktrace.ReadOnlySpan {
	t.Helper()
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.spans.Ended() {
		if s.Name() != AttemptSpanName {
			out = append(out, s)
		}
	}
	require.Len(t, out, 1, "one call span")
	return out[0]
}

func (r *rig) attemptSpans() []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.spans.Ended() {
		if s.Name() == AttemptSpanName {
			out = append(out, s)
		}
	}
	return out
}

func (r *rig) metrics(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

func attrMap(kvs []attribute.KeyValue) map[string]attribute.Value {
	out := map[string]attribute.Value{}
	for _, kv := range kvs {
		out[string(kv.Key)] = kv.Value
	}
	return out
}

func setMap(s attribute.Set) map[string]attribute.Value { return attrMap(s.ToSlice()) }

// floatHist returns the data points of a float64 histogram, checking its
// unit and that every point has the given bucket boundaries.
func floatHist(t *testing.T, ms map[string]metricdata.Metrics, name, unit string, bounds []float64) []metricdata.HistogramDataPoint[float64] {
	t.Helper()
	m, ok := ms[name]
	require.True(t, ok, "metric %s recorded", name)
	require.Equal(t, unit, m.Unit, name)
	h, ok := m.Data.(metricdata.Histogram[float64])
	require.True(t, ok, "%s is a float64 histogram", name)
	for _, dp := range h.DataPoints {
		require.Equal(t, bounds, dp.Bounds, "%s buckets", name)
	}
	return h.DataPoints
}

func intSum(t *testing.T, ms map[string]metricdata.Metrics, name, unit string) []metricdata.DataPoint[int64] {
	t.Helper()
	m, ok := ms[name]
	require.True(t, ok, "metric %s recorded", name)
	require.Equal(t, unit, m.Unit, name)
	s, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is an int64 sum", name)
	require.True(t, s.IsMonotonic, name)
	return s.DataPoints
}
