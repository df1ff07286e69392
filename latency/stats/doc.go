// Package stats aggregates the per-request Samples of package latency
// (latency.Measure's output) over many requests: mergeable distributions
// of every metric split by endpoint, request class and start kind
// (Recorder, Dist), request counters, goodput and throughput, SLA checks
// with cold-start attribution, LogNormal fits of token gaps, and the
// Report that summarizes them. The metrics themselves are defined in
// package latency; package bench renders Reports (bench.RenderReport).
//
// # Goodput and throughput
//
// Goodput is the successful requests that met every per-request SLA
// covering them (TTFT, TPOT, E2E, …; pooled ITL SLAs do not gate it, as in
// vLLM's benchmark), per second of the run; throughput is output tokens,
// and requests, per second. A failed call is measured as far as its
// timeline goes (a stream cut mid-way keeps its TTFT), but a Recorder
// counts it as an error by code and keeps it out of the distributions.
// Reports group requests by endpoint, class and start kind. Failed
// requests have no start kind: a group without one shows as start=failed
// when all of it failed, and as start=unclassified when it also holds
// successes recorded without a verdict (a Sample built by hand, say).
//
// # Aggregation (Recorder, Dist)
//
// A Recorder, safe for concurrent use, splits requests by endpoint, class
// and start kind. Each metric's Dist is a DataDog DDSketch of relative
// accuracy 1% for the quantiles plus exact count, sum, sum of squares, min
// and max (and the moments of ln(value) for the LogNormal fit), kept as
// 128-bit integers: count, mean ± sample sd, min, p50, p90, p95, p99,
// p99.9 and max. Quantile q is the nearest-rank value, of rank ⌈q·n⌉
// (1-based), within 1%, 0 and 1 being the exact min and max: over a few
// requests (cold starts, a short ladder step) a high percentile is the
// worst of them, never a lower one. Recorders merge exactly,
// in memory (Merge) and across machines through their JSON encoding.
//
// # SLAs
//
// An SLA is a metric, a percentile, a threshold, the starts it covers
// (warm — suspected-cold included —, cold or all) and optionally a class
// or endpoint, written for instance "ttft p95 150ms starts=warm". CheckSLA
// gives the measured value, the deviation (measured − threshold) /
// threshold and pass/fail; for an all-starts SLA it also gives the value
// without the cold requests and the share of the deviation they explain.
// A Recorder counts, per group, the values at most each of its SLAs'
// thresholds, so pass/fail on those thresholds is exact (as goodput's
// per-request check is), not subject to the sketch's 1%.
//
// # Token gaps (LogNormal)
//
// Dist.FitLogNormal fits μ and σ by maximum likelihood on ln(value). Reports
// fit the prefill gap (TTFT) and the decode gaps (per-token ITL) and show
// the fitted p99 beside the observed one.
//
// # Reports
//
// Recorder.Report summarizes everything: per group, the counters, the
// rates, each metric's Summary in milliseconds (or tokens) and the fits,
// then the SLA results. A Report is plain data with a stable JSON form;
// bench.RenderReport writes it as a text table in the reference style
// ("428 ± 31", milliseconds), Markdown, a tidy CSV or JSON.
package stats
