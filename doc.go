// Package cloudinfer is the root of the cloudinfer module: one Go API for
// model inference on AWS SageMaker, Azure ML online endpoints, Google Vertex
// AI, Alibaba Cloud PAI-EAS and OpenAI-compatible servers.
//
// The API lives in the subpackages:
//
//   - cloudreq: CloudRequest in, CloudResponse or Stream out; the Client
//     with hooks, retries, timeouts and timing.
//   - cloudreq/cloudreqtest: a scriptable fake adapter for testing code
//     that uses a Client.
//   - errcodes: the closed set of portable error codes.
//   - hooks: PreValidate, PreSerialize and PostDeserialize chains.
//   - latency: the per-call model: timelines, TTFT/TPOT/ITL/E2E, cold/warm
//     starts; latency/stats: recorders, SLAs and reports over many calls.
//   - providers/...: one adapter per cloud.
//   - emulator: a local server speaking every provider's wire protocol.
//   - telemetry: OpenTelemetry spans and metrics and slog logging, as
//     observers writing an allow-listed field set.
//   - impair: network impairment (delay, jitter, loss, bandwidth) in a
//     client's connections.
//   - bench: load generation and reports, behind `cloudinfer bench`.
//   - e2e/...: the end-to-end suites (faults, measurement ground truth).
//
// docs/architecture.md gives the path of one request and the layers.
// See the README for the quick start, which example_test.go runs.
package cloudinfer
