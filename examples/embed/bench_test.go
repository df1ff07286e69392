package main

import (
	"context"
	"testing"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/hooks"
	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/latency/stats"
	"github.com/cloudinfer/cloudinfer/providers/openai"
)

// BenchmarkStreamedGenerate embeds cloudinfer in a go test benchmark:
// each iteration streams one chat completion, and the benchmark reports
// the latency figures of its calls beside ns/op, from a stats.Recorder
// (TTFT and TPOT p50/p95 in milliseconds). Here the calls go to the
// embedded emulator at a twentieth of real time; point the adapter at
// your own endpoint to benchmark it:
//
//	go test -run XXX -bench StreamedGenerate -benchtime 50x ./examples/embed
func BenchmarkStreamedGenerate(b *testing.B) {
	srv, err := emulator.New(emulator.Options{TimeScale: 0.05, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Start("127.0.0.1:0", ""); err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	ad, err := openai.New(openai.Options{BaseURL: srv.URL(), AllowInsecureHTTP: true})
	if err != nil {
		b.Fatal(err)
	}
	client, err := cloudreq.New(cloudreq.Options{
		Adapters:    []cloudreq.Adapter{ad},
		CallOptions: cloudreq.CallOptions{Hooks: hooks.Default()},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	rec, err := stats.NewRecorder(stats.RecorderOptions{})
	if err != nil {
		b.Fatal(err)
	}
	req := &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderOpenAI, Service: cloudreq.ServiceOpenAICompatible,
		Action: cloudreq.ActionGenerate, Target: cloudreq.Target{Model: "llama-3-8b"},
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "Say hello."}}, MaxTokens: 16},
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		s, err := client.Stream(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		for s.Next() {
		}
		if err := s.Err(); err != nil {
			b.Fatal(err)
		}
		resp := s.Response()
		smp := latency.Measure(resp.Timing, latency.Outcome{Start: resp.Start, OutputTokens: resp.Usage.OutputTokens})
		rec.Add(&smp)
		_ = s.Close()
	}
	for _, m := range []struct {
		metric latency.Metric
		name   string
	}{{latency.TTFT, "ttft"}, {latency.TPOT, "tpot"}} {
		d := rec.Dist(m.metric, stats.Filter{})
		if d.Count() == 0 {
			b.Fatalf("no %s was measured", m.name)
		}
		b.ReportMetric(d.Quantile(0.5)/1e6, m.name+"-p50-ms")
		b.ReportMetric(d.Quantile(0.95)/1e6, m.name+"-p95-ms")
	}
}
