// Package bench runs latency benchmarks against cloudinfer targets and
// renders their results.
//
// A Plan names the targets (any provider and endpoint), the load model and
// the limits. Four load models are built in, as MEASUREMENT.md defines them:
//
//   - closed loop: N workers, each sending when its previous request ends
//     (its intended send time is its send time: no schedule lag);
//   - open loop at a constant rate, and open loop with Poisson arrivals: the
//     send times come from a Schedule of intended times, computed from the
//     run's start (never from relative sleeps that drift), and every request
//     carries its intended send time so coordinated-omission corrected
//     metrics can be computed;
//   - the dynamic QPS ladder: every step the p95 latency of the step is read
//     and the rate backs off (×0.7, not below the floor), climbs (+step, not
//     above the target) or holds (see NextRate). A run that stops inside a
//     step reports it as a partial last step (action "end"), which
//     HighestHeld leaves out.
//
// A weighted request Mix picks each request's class and tags (region,
// device, time of day…) in the given proportions; it can be built from a
// traffic log. Results are collected through a cloudreq.Observer into
// latency Recorders split by target, class and start kind; a Result is
// JSON, mergeable across machines, and renders as a table, CSV, Markdown
// or a self-contained HTML report with charts.
//
// The generator reports what might distort its figures: the schedule lag
// (actual − intended send) distribution, the count of late sends, and a
// warning when the client was CPU-bound or fell behind its schedule.
// NewProgress draws a live progress bar on a terminal; targets that run at
// once (Plan.Parallel) share one bar, with their sums.
package bench
