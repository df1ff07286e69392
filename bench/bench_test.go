package bench_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/latency"
)

// BenchmarkEmulatorNonStreaming measures the highest sustained
// non-streaming rate of the generator against the emulator on loopback: a
// closed loop of C workers, b.N requests, to an endpoint that answers at
// once (zero injected latency, one output token). Client and emulator
// share the machine's cores. It reports requests per second.
func BenchmarkEmulatorNonStreaming(b *testing.B) {
	ep := emulator.Endpoint{Name: "instant", Providers: []emulator.Provider{emulator.OpenAI}, Profile: emulator.Profile{
		Name: "instant", OutputTokens: emulator.Dist{Mean: 1}, Slots: 4096, MaxQueue: -1,
	}}
	srv := startEmulator(b, 1, []emulator.Endpoint{ep})
	for _, c := range []int{8, 32, 128} {
		b.Run(fmt.Sprintf("closed-c%d", c), func(b *testing.B) {
			p := &bench.Plan{Targets: []bench.Target{target("instant", false)}, Load: bench.Load{Concurrency: c},
				Limits: bench.Limits{Requests: b.N}}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			res, err := bench.Run(context.Background(), p, bench.Options{Connect: emulatorConnect(srv)})
			el := time.Since(start)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			cn := res.Targets[0].Counts()
			if cn.Failed > 0 {
				b.Fatalf("%d of %d failed: %v", cn.Failed, cn.Requests, res.Targets[0].ErrorExamples)
			}
			b.ReportMetric(float64(b.N)/el.Seconds(), "req/s")
			b.ReportMetric(100*res.Targets[0].CPU, "%cpu")
		})
	}
}

// BenchmarkEmulatorOpenLoop offers b.N requests at a constant rate to
// the same instant endpoint; a rate is sustained when the achieved send
// rate stays within 2% of it and under 1% of sends are late (lag > 10 ms).
// It reports the achieved rate, the late share and the p99 schedule lag.
func BenchmarkEmulatorOpenLoop(b *testing.B) {
	ep := emulator.Endpoint{Name: "instant", Providers: []emulator.Provider{emulator.OpenAI}, Profile: emulator.Profile{
		Name: "instant", OutputTokens: emulator.Dist{Mean: 1}, Slots: 4096, MaxQueue: -1,
	}}
	srv := startEmulator(b, 1, []emulator.Endpoint{ep})
	for _, rate := range []float64{500, 1000, 2000, 4000} {
		b.Run(fmt.Sprintf("rate-%.0f", rate), func(b *testing.B) {
			p := &bench.Plan{Targets: []bench.Target{target("instant", false)},
				Load: bench.Load{Model: bench.LoadConstant, Rate: rate}, Limits: bench.Limits{Requests: b.N}}
			b.ReportAllocs()
			b.ResetTimer()
			res, err := bench.Run(context.Background(), p, bench.Options{Connect: emulatorConnect(srv)})
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			tr := res.Targets[0]
			b.ReportMetric(tr.SendRate, "send/s")
			b.ReportMetric(100*float64(tr.Late)/float64(max(tr.Sent, 1)), "%late")
			b.ReportMetric(tr.Dist(latency.ScheduleLag, "", "").Quantile(0.99)/1e6, "lag-p99-ms")
			b.ReportMetric(100*tr.MachineCPU, "%machine")
		})
	}
}

// BenchmarkOpenLoopDispatch measures the generator alone: an open loop
// far above what it can send, to an adapter that answers at once, so the
// send rate is the dispatcher's, client and hooks' own capacity.
func BenchmarkOpenLoopDispatch(b *testing.B) {
	res, el := runNoop(b, bench.Load{Model: bench.LoadConstant, Rate: 1e6, MaxInFlight: 256})
	b.ReportMetric(float64(b.N)/el.Seconds(), "req/s")
	b.ReportMetric(res.Targets[0].SendRate, "send/s")
}

// runNoop runs b.N requests of ld to the noop adapter, timing the run
// alone, and returns its result and its wall time.
func runNoop(b *testing.B, ld bench.Load) (*bench.Result, time.Duration) {
	b.Helper()
	p := &bench.Plan{Targets: []bench.Target{{Name: "noop", Provider: "openai", Model: "m"}},
		Load: ld, Limits: bench.Limits{Requests: b.N}}
	connect := func(context.Context, *bench.Target) (*cloudreq.Client, error) {
		return cloudreq.New(cloudreq.Options{
			Adapters:    []cloudreq.Adapter{noop{}},
			CallOptions: cloudreq.CallOptions{Retry: cloudreq.RetryOptions{MaxAttempts: 1}},
		})
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	res, err := bench.Run(context.Background(), p, bench.Options{Connect: connect})
	el := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	return res, el
}

// BenchmarkOpenLoopPaced is the open loop's own cost per send at rates
// the machine holds: constant and Poisson schedules to an adapter that
// answers at once, so the figures are the pacing's, the hand-over's to a worker and
// the client's and recording's. It reports the process CPU per send (µs)
// and the schedule lag's p50 and p99 (µs). Run it with a count of sends
// (-benchtime 8000x: a send takes 1/rate), on an idle machine. The
// collector is tuned as cloudinfer bench tunes it (TuneGC).
func BenchmarkOpenLoopPaced(b *testing.B) {
	defer bench.TuneGC()()
	for _, tc := range []struct {
		model string
		rate  float64
	}{{bench.LoadConstant, 1000}, {bench.LoadConstant, 4000}, {bench.LoadConstant, 8000}, {bench.LoadConstant, 12000}, {bench.LoadPoisson, 1000}} {
		b.Run(fmt.Sprintf("%s-%.0f", tc.model, tc.rate), func(b *testing.B) {
			res, wall := runNoop(b, bench.Load{Model: tc.model, Rate: tc.rate})
			tr := res.Targets[0]
			cpu := tr.CPU * wall.Seconds() * float64(runtime.NumCPU())
			b.ReportMetric(cpu*1e6/float64(max(tr.Sent, 1)), "cpu-us/send")
			b.ReportMetric(tr.Dist(latency.ScheduleLag, "", "").Quantile(0.5)/1e3, "lag-p50-us")
			b.ReportMetric(tr.Dist(latency.ScheduleLag, "", "").Quantile(0.99)/1e3, "lag-p99-us")
		})
	}
}

type noop struct{}

func (noop) Describe() cloudreq.Description {
	return cloudreq.Description{Provider: cloudreq.ProviderOpenAI, Service: cloudreq.ServiceOpenAICompatible,
		Actions: []string{cloudreq.ActionInvoke, cloudreq.ActionGenerate}}
}

func (noop) Encode(*cloudreq.CloudRequest, bool) (cloudreq.Payload, error) {
	return cloudreq.Payload{Body: []byte("{}")}, nil
}

func (noop) Invoke(context.Context, *cloudreq.Call) (*cloudreq.CloudResponse, error) {
	return &cloudreq.CloudResponse{StatusCode: 200, Usage: cloudreq.Usage{OutputTokens: 1}}, nil
}
