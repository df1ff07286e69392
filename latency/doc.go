// Package latency is cloudinfer's per-call measurement model: the
// Timeline the client fills for every call (from net/http/httptrace, gRPC
// stats and the stream reader, never guessed), the per-request metrics
// computed from it (Measure), and the cold/warm start classification
// (Classifier). The definitions are those of vLLM's bench serve, SGLang
// and inference-perf, given below, and each formula lives in one place:
// Measure. It holds what the client needs and no more: aggregation
// (Recorder, Dist, SLAs, reports) is package latency/stats, the gRPC
// stats handler is package latency/grpctrace, and rendering is package
// bench.
//
// # Timeline
//
// cloudreq fills a Timeline for every call: the intended send time (from
// the load schedule; without one, the first attempt's send, so that a
// closed loop has no schedule lag), the call's start, each attempt's send, DNS, connect,
// TLS, request-written and first-byte times and its outcome, each chunk's
// arrival, token count and whether it carries content, the end, and for
// cold starts the time the model became ready. All times come from Go's
// monotonic clock. gRPC transports fill attempts through ContextWithTrace
// and the stats handler of package latency/grpctrace.
//
// # Per-request metrics (Measure)
//
// Send time is the final attempt's send. The SLA clock starts there, or, for
// a cold request whose model-ready time is known, at model-ready; the time
// before it is the cold-start overhead, reported on its own.
//
//   - TTFT ("ttft"): arrival of the first content chunk − SLA clock. A
//     content chunk carries text or a tool-call delta; role-only, empty and
//     usage-only chunks never count, nor does a reasoning-only chunk
//     (Timeline.AddReasoningChunk) when answer content follows. A
//     non-streamed call has none: its one content chunk is the whole body,
//     whose arrival is its E2E.
//   - TTFR ("ttfr"): arrival of the first reasoning-only chunk − SLA clock,
//     streamed calls of reasoning models. Reasoning chunks are output: they
//     count in N_out and ITL, and TPOT runs from the first content chunk,
//     reasoning or answer.
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
// A failed call is measured as far as its timeline goes (a stream cut
// mid-way keeps its TTFT); package latency/stats counts it as an error by
// code and keeps it out of the distributions, and defines what is
// computed over many requests: goodput, throughput and percentiles.
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
package latency
