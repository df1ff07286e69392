// Package latency is cloudinfer's measurement model: the per-call Timeline
// (filled from net/http/httptrace, gRPC stats and the stream reader, never
// guessed), the per-request metrics computed from it, the cold/warm start
// classification, mergeable aggregation, SLA checks with cold-start
// attribution, LogNormal fits of token gaps, and reports. The definitions
// are those of vLLM's bench serve, SGLang and inference-perf, given below,
// and each formula lives in one place: Measure.
//
// # Timeline
//
// cloudreq fills a Timeline for every call: the intended send time (from
// the load schedule; without one, the first attempt's send, so that a
// closed loop has no schedule lag), the call's start, each attempt's send, DNS, connect,
// TLS, request-written and first-byte times and its outcome, each chunk's
// arrival, token count and whether it carries content, the end, and for
// cold starts the time the model became ready. All times come from Go's
// monotonic clock. gRPC transports fill attempts through
// NewGRPCStatsHandler and ContextWithTrace.
//
// # Per-request metrics (Measure)
//
// Send time is the final attempt's send. The SLA clock starts there, or, for
// a cold request whose model-ready time is known, at model-ready; the time
// before it is the cold-start overhead, reported on its own.
//
//   - TTFT ("ttft"): arrival of the first content chunk − SLA clock. A
//     content chunk carries text or a tool-call delta; role-only, empty and
//     usage-only chunks never count. A non-streamed call has none: its one
//     content chunk is the whole body, whose arrival is its E2E.
//   - E2E ("e2e"): arrival of the last content chunk (the whole body,
//     non-streamed) − SLA clock.
//   - N_out ("output-tokens"): the server's usage when it reported one,
//     else the sum of the content chunks' token counts (a content chunk
//     without a count is one token); Sample.TokenSource and the reports say
//     which.
//   - TPOT ("tpot"): (E2E − TTFT) / (N_out − 1), one value per streamed
//     request with N_out ≥ 2, rounded to the nanosecond. Non-streamed calls
//     have none: their tokens arrive together.
//   - ITL ("itl"): every gap between consecutive content chunks, the first
//     chunk excluded, pooled over requests; "itl-token" divides each gap by
//     the tokens of the chunk that closed it.
//   - TTFT and E2E from the intended send ("ttft-co", "e2e-co"): the same
//     arrivals − the intended send time, the coordinated-omission corrected
//     view of an open-loop run.
//   - Schedule lag ("schedule-lag"): the first attempt's send − the
//     intended send time.
//   - Cold-start overhead ("cold-start"): for a cold request, the server's
//     reported setup time, or the time from the first (refused) attempt's
//     send to the successful one's.
//   - Phases of the final attempt: "queue" (call start → final send:
//     hooks, client-side queueing, earlier attempts and backoff), "dns",
//     "connect", "tls" (when they happened), "write" (signing and request
//     write: send → request written, less DNS, connect and TLS),
//     "server-wait" (request written → first response byte),
//     "first-token" (first response byte → first content chunk) and
//     "decode" (first → last content chunk). Sample.AttemptPhases keeps
//     every attempt's own split, its queue measured from the previous
//     attempt's end.
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
// # Cold and warm starts (Classifier)
//
// Evidence, strongest first, kept as the Start's reason: the server said
// so (ReasonServerReported); a not-ready refusal followed by success
// (ReasonNotReadyThenReady); the first request to the endpoint, or the
// first after an idle gap beyond the scale-to-zero window (ReasonFirstRequest,
// ReasonIdleGap); a time to first byte beyond k × the endpoint's warm p50
// (ReasonSlowFirstByte, reported as SuspectedCold and never mixed with
// Cold). A new connection is reported apart, as Start.ConnectionCold.
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
// Recorder.Report summarizes everything; Report.Render writes it as a text
// table in the reference style ("428 ± 31", milliseconds), Markdown, a tidy
// CSV or JSON.
package latency
