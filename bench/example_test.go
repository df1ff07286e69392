package bench_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/cloudinfer/cloudinfer/bench"
)

// The ladder's rule, step by step: climb while p95 stays under the
// low-water mark, back off when it crosses the high-water mark.
func ExampleLadder_NextRate() {
	l := bench.Ladder{}.WithDefaults() // floor 10, +50, ×0.7, target 500, 200/120 ms
	rate := l.Start
	for _, p95 := range []time.Duration{80 * time.Millisecond, 90 * time.Millisecond, 260 * time.Millisecond, 150 * time.Millisecond, 100 * time.Millisecond} {
		next, action := l.NextRate(rate, p95, true)
		fmt.Printf("%5.1f/s p95 %v: %s → %.1f/s\n", rate, p95, action, next)
		rate = next
	}
	// Output:
	//  10.0/s p95 80ms: climb → 60.0/s
	//  60.0/s p95 90ms: climb → 110.0/s
	// 110.0/s p95 260ms: back-off → 77.0/s
	//  77.0/s p95 150ms: hold → 77.0/s
	//  77.0/s p95 100ms: climb → 127.0/s
}

// A mix built from a traffic log, then drawn from: the shares are exact at
// every deck's end.
func ExampleMixFromLog() {
	log := "path,method,latency_ms,device\n" +
		strings.Repeat("/api/order/create,POST,180,mobile\n", 32) +
		strings.Repeat("/api/user/profile,GET,60,desktop\n", 45) +
		strings.Repeat("/api/product/search,GET,120,mobile\n", 23)
	recs, err := bench.ReadTrafficLog(strings.NewReader(log), "csv")
	if err != nil {
		panic(err)
	}
	mix := bench.MixFromLog(recs)
	p := bench.NewPicker(mix, 1)
	counts := map[string]int{}
	for range 1000 {
		counts[p.Next().Class.Label()]++
	}
	for _, c := range mix.Classes {
		fmt.Printf("%-20s weight %.2f drawn %d/1000\n", c.Label(), c.Weight, counts[c.Label()])
	}
	// Output:
	// /api/user/profile    weight 0.45 drawn 450/1000
	// /api/order/create    weight 0.32 drawn 320/1000
	// /api/product/search  weight 0.23 drawn 230/1000
}

// A plan in YAML: two targets side by side under Poisson arrivals.
func ExampleParsePlan() {
	p, err := bench.ParsePlan([]byte(`
targets:
  - {name: vllm, provider: openai, model: llama-3-8b, stream: true}
  - {name: sagemaker, provider: sagemaker, endpoint: llama-3-8b, stream: true}
load: {model: poisson, rate: 20}
limits: {duration: 60s, warmup: 2}
slas: ["ttft p95 150ms starts=warm"]
`))
	if err != nil {
		panic(err)
	}
	if err := p.Prepare(); err != nil {
		panic(err)
	}
	for _, t := range p.Targets {
		fmt.Println(t.Name, t.Provider, t.Service, t.Action)
	}
	fmt.Println(p.Load, "for", p.Limits.Duration, "with SLA", p.SLAs[0])
	// Output:
	// vllm openai openai-compatible generate
	// sagemaker aws sagemaker generate
	// poisson 20 req/s for 1m0s with SLA ttft p95 150ms starts=warm
}
