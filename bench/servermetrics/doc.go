// Package servermetrics reads an inference server's own Prometheus metrics
// during a benchmark and reduces them to the benchmark's measured window:
// counters as deltas, histograms as delta buckets (exact means, quantiles
// as bucket estimates), gauges as minimum, mean and maximum over time.
//
// A Scraper scrapes one /metrics URL on a connection of its own, with a
// bounded timeout: a baseline when started (before the warm-up), one at
// Mark (the measured run's start: the window's), every interval after it
// (default 1 s) and one at Stop. Each exposition is parsed by the
// Prometheus text parser (github.com/prometheus/common/expfmt), never by
// hand. Its failures (unreachable, slow, not Prometheus) are warnings in
// the Summary, never errors; a counter that goes back between two scrapes
// is a server restart, reported, and counted from zero after it, as
// Prometheus's increase() does.
//
// Families lists the families of vLLM, SGLang, TGI, Triton/TensorRT-LLM and
// the cloudinfer emulator by Role (queue, prefill, decode, TTFT, E2E,
// running, waiting, KV cache, …), so that Summary.Mean(RoleQueue) is a
// server's mean queue time whatever it calls it. Families it does not know
// are kept in the Summary as they were reduced (raw), marked unknown.
//
// What a histogram can and cannot tell: its mean over the window is exact
// (the delta of _sum over the delta of _count), its quantiles are bucket
// estimates, no finer than the bucket they fall in; and it is the whole
// server's, over every request it served in the window (another client's
// too), with no class or cold/warm split. Per-request truth needs the
// server's per-request records (FetchRequests reads the emulator's) or
// spans: ReadSpans reads vLLM's per-request OpenTelemetry spans (its
// llm_request span's gen_ai.latency.* attributes) from the OTLP JSON
// lines an OpenTelemetry Collector's file exporter writes, with the
// official OTLP types, and ClientRequestIDs turns their vLLM request ids
// back into the X-Request-Id the client sent.
package servermetrics
