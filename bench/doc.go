// Package bench runs latency benchmarks against cloudinfer targets and
// renders their results.
//
// A Plan names the targets (any provider and endpoint), the load model and
// the limits. Four load models are built in:
//
//   - closed loop: N workers, each sending when its previous request ends
//     (its intended send time is its send time: no schedule lag);
//   - open loop at a constant rate, and open loop with Poisson arrivals: the
//     send times come from a Schedule of intended times, computed from the
//     run's start (never from relative sleeps that drift), and every request
//     carries its intended send time so coordinated-omission corrected
//     metrics can be computed;
//   - the dynamic QPS ladder: at the end of every step the p95 latency of
//     the step's own requests (those it sent), measured from their intended
//     send times, is read, those still in flight counting at their age so
//     far, and the rate backs off (×0.7, not below the floor), climbs
//     (+step, not above the target) or holds (see NextRate). Each step's
//     reported p95 is over all of its requests once they ended, and
//     HighestHeld reads it. A run that stops inside a step reports it as a
//     partial last step (action "end"), which HighestHeld leaves out.
//
// Rate control is one interface: the open loop's sender asks a Schedule
// when each request is due, as an offset from the run's start. A Pacer
// is the constant and the Poisson schedule; the ladder is an Adaptive
// schedule, woken at each step's end to decide the next and fed each of
// its requests' outcomes (Feedback). Another load model (a trace replay,
// a ramp) is one new type that implements Schedule.
//
// Realistic workloads build on the same interfaces:
//
//   - gamma arrivals (Load.Burstiness, NewGamma): inter-arrivals of mean
//     1/rate and shape burstiness, 1 being Poisson, below 1 burstier;
//   - ramps (Ramp): the rate from From to To over Over, linear or
//     exponential, constant or Poisson arrivals, then held;
//   - trace replay (TraceLoad, ReadTrace): the arrival times and lengths
//     of the Azure LLM inference trace 2023/2024, BurstGPT, Mooncake or
//     Qwen Bailian, divided by a speed factor, over a window; each request
//     a prompt of the record's input length and max tokens its output
//     length (with IgnoreEOS where the server takes it); the trace's times
//     are the intended sends. Trace.Shard (record j to shard j mod n,
//     TraceShard) splits a trace over machines, whose results merge;
//   - shared prefixes (Prefix, and a trace's hash_ids): prompts that
//     share exactly the designed blocks, so that a prefix cache's hits
//     can be measured (the emulator models one: Profile.PrefixCacheTokens);
//   - multi-turn sessions (Sessions): users each holding conversations of
//     K turns whose prompt is the conversation so far, with think times,
//     SageMaker stateful session ids, and the figures by turn
//     (TargetResult.Turns).
//
// ScheduleOf returns the intended sends of a load without sending them.
//
// A weighted request Mix picks each request's class and tags (region,
// device, time of day…) in the given proportions; it can be built from a
// traffic log. Results are collected through a cloudreq.Observer into
// stats.Recorders (package latency/stats) split by target, class and start
// kind; a Result is JSON, mergeable across machines (Merge; a plan split
// over N workers with Plan.ShardPlan and RunShard merges back whole, its
// shards checked), and renders as a
// table, CSV, Markdown or a self-contained HTML report with charts. All
// rendering is here: RenderReport writes a recorder's stats.Report alone,
// as text, Markdown, CSV or JSON.
//
// A target's throughputs are over its wall time (TargetResult.Wall, from
// the start of its run to its last response): throughput is requests (or
// tokens) / benchmark duration. The load table's sent /s and
// ok /s are the requests sent and the successful ones over that one
// duration, so ok /s never exceeds sent /s; the open loop's achieved send
// rate (TargetResult.SendRate, over the span from the first send to the
// last) is what the offered rate is checked against.
//
// The generator reports what might distort its figures: the schedule lag
// (actual − intended send) distribution, the count of late sends, its own
// garbage collections and their longest pause (TargetResult.GCs and
// GCPauseMax), and a warning when the client was CPU-bound, fell behind
// its schedule or was stopped by its collector for over a millisecond.
// NewProgress draws a live progress bar on a terminal; targets that run at
// once (Plan.Parallel) share one bar, with their sums.
//
// Gates (Plan.FailOn, Result.CheckGates) turn a result into a pass or a
// fail for continuous integration: "sla" (every SLA passed on every
// target), "errors>N%" and "errors>N" (no target's failed requests above
// the share or the count). Without a gate, failed requests and SLAs are
// results, not a failure.
//
// Compare sets two results side by side, per target: each headline figure
// in A and B, the delta Δ = B − A and Δ%. The latency rows also get a 95%
// confidence interval for Δ, the range that holds the true difference
// between the two deployments with 95% confidence: Welch's t interval for
// the means, and for p50, p95 and p99 a distribution-free interval from
// order statistics (binomial ranks, widened by the sketch's 1% relative
// accuracy), which is conservative (coverage at least 95%) and needs
// enough requests on each side (at least 7 for p50, 72 for p95, 368 for
// p99). The verdict reads it: "B lower" or "B higher" when the interval
// excludes zero, "no clear difference" when it holds zero (the runs cannot
// tell the two apart; more requests may), "-" when there is no interval
// (too few requests, or a row such as a rate or a count that has none).
// The interval counts only the noise of sampling requests, not a
// difference in the conditions of the two runs. See CompareRow.
//
// Each target's server is read too (package servermetrics): its /metrics
// (Target.ServerMetrics, Options.ServerMetrics, and ServerMetricsURL, the
// one found by itself) is scraped before the warm-up, at the measured
// start, every Plan.ServerMetricsInterval and at the end, on a connection
// of its own; the reduction goes into TargetResult.Server, its problems
// into the warnings, never an error. Decompose splits each group's means
// into network+client, queue, prefill, the server's other time and decode:
// exactly, per class and start, where the server keeps per-request
// records (the emulator's, joined by request id) or writes per-request
// spans (Target.ServerRequests: vLLM's OpenTelemetry spans in a
// collector's OTLP JSON file, joined by the X-Request-Id each measured
// request is then sent with), and from the server's histogram means
// otherwise. Merge keeps one summary per scraped URL (the
// longest window's) rather than summing counters several machines read
// from one server.
package bench
