// Package groundtruth checks packages latency and latency/stats against
// the cloudinfer emulator's injected ground truth, end to end through
// cloudreq and the OpenAI-compatible adapter: per-request TTFT against
// X-Emulator-Ttft-Ms, each cold-start evidence case classified with its
// reason, and SLA attribution over a cold and warm mix. It holds tests
// only.
package groundtruth
