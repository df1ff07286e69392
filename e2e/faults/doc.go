// Package faults is cloudinfer's fault-tolerance proof: a test suite, with
// no API of its own, that drives every provider adapter through the
// failures a paid inference endpoint produces and checks that cloudinfer
// fails clearly and never makes an outage worse.
//
// Each provider is exercised on its own wire form: httptest (or in-memory)
// servers that answer as SageMaker (restJson1 errors with X-Amzn-ErrorType,
// eventstream frames), Azure ML (/score), PAI-EAS (plain-text errors, 450
// queue full, SSE and NUL-delimited streams) and OpenAI-compatible servers
// (error envelopes, SSE) do, and a fake aiplatform PredictionService for
// Vertex AI's gRPC. The tests cover:
//
//   - Retry-After in all its forms, honoured or capped, never past the deadline;
//   - the retryable-versus-terminal status matrix and its attempt counts;
//   - exhausted retries (byte-identical bodies, one-shot bodies never retried);
//   - retry budgets that stop 5xx storms from being amplified;
//   - cancellation and timeouts at every phase, without leaks;
//   - connection resets before and after a stream started;
//   - truncated and corrupt streams, SSE edge cases and size limits with
//     bounded memory;
//   - malformed, HTML and mislabelled responses;
//   - secrets that never reach errors or logs;
//   - TLS, plain-http refusal and cross-host redirects;
//   - SigV4 clock-skew correction;
//   - a thousand concurrent streams through one client under faults.
//
// Fuzz targets cover the parsers a server's bytes reach. Run the suite with
//
//	go test -race ./e2e/faults/
//
// and a fuzz target with, for example,
//
//	go test ./e2e/faults/ -run '^$' -fuzz '^FuzzRetryAfter$' -fuzztime 60s
package faults
