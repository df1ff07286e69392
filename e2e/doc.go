// Package e2e holds the end-to-end suites, which drive the real adapters
// through cloudreq against servers on loopback; it has no code of its own.
//
//   - e2e/faults: the fault suite behind the README's promises table: each
//     provider's wire form served by test servers and by the emulator's
//     fault modes, retries, timeouts, limits, credentials, concurrency.
//   - e2e/groundtruth: measurement checked against the emulator's injected
//     ground truth: per-request TTFT, each cold-start evidence case, SLA
//     attribution over a cold and warm mix.
//
// Both run with `go test ./...`; `go test -race ./e2e/...` runs them alone.
package e2e
