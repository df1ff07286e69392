package cloudreq

import (
	"context"
	"log/slog"
	"time"

	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
)

// Options configures a Client. Pass it to New; per-call option functions
// change a copy for one call only.
type Options struct {
	// Adapters are the provider adapters the client routes to, by
	// Provider/Service. Two adapters for the same pair are an error.
	Adapters []Adapter
	// Hooks run the PreValidate, PreSerialize and PostDeserialize phases.
	// hooks.Default() returns a set with the built-ins; nil runs none.
	Hooks Hooks
	// Retry configures the retry loop.
	Retry RetryOptions
	// Timeout bounds a whole call, retries and backoff included (for a
	// Stream, until it ends). Zero: no limit beyond the caller's context.
	Timeout time.Duration
	// AttemptTimeout bounds one attempt until its response is complete (for
	// a Stream, until its headers arrived). An attempt that times out may
	// be retried. Zero: no limit.
	AttemptTimeout time.Duration
	// FirstChunkTimeout bounds each Stream attempt's wait, from its start,
	// for its first chunk (the response headers included: some servers send
	// them only with the first chunk). An attempt that times out before
	// any chunk reached the caller may be retried. Zero: no limit.
	FirstChunkTimeout time.Duration
	// StreamIdleTimeout bounds the gap between two chunks of a Stream: a
	// stalled stream fails with ERR_TIMEOUT, a slow but progressing one is
	// never cut. It times Next's wait for the next chunk, not the caller's
	// own time between Next calls. Zero: no limit.
	StreamIdleTimeout time.Duration
	// ScaleToZeroWindow is the endpoints' scale-to-zero idle window. When
	// set, a client's first request to an endpoint, and the first after a
	// longer idle gap, are classified cold. Zero: only server reports and
	// not-ready signals make a start cold.
	ScaleToZeroWindow time.Duration
	// Observers see every call and attempt (telemetry, benchmarks).
	Observers []Observer
	// Logger receives debug records of retries; nil discards them. Records
	// hold codes, counts and delays, never payloads or credentials.
	Logger *slog.Logger
}

// Hooks is what the client calls at each hook phase. hooks.Set implements
// it with named, ordered chains; see package hooks for each phase's contract.
type Hooks interface {
	// PreValidate runs first, on a read-only view of the request. An error
	// is final: the call fails with it (normalized to ERR_INVALID_PARAM
	// unless it is an *errcodes.Error) and nothing is sent.
	PreValidate(ctx context.Context, req *CloudRequest) error
	// PreSerialize runs once, before the adapter serializes; it may rewrite
	// the request (a copy of the caller's). An error is final, as above.
	PreSerialize(ctx context.Context, req *CloudRequest) error
	// PostDeserialize runs after each attempt with the normalized response
	// or error. It may enrich resp; a non-nil return replaces the outcome
	// with that error (retried if it is retryable).
	PostDeserialize(ctx context.Context, req *CloudRequest, resp *CloudResponse, err error) error
}

// Observer sees calls as they happen. Telemetry and the benchmark are
// observers; an observer must not block. A panic in an observer's method
// is dropped, and a nil context from StartCall keeps the call's own.
type Observer interface {
	// StartCall is called when a call begins. The returned context is used
	// for the call (to carry a span, say); the returned CallObserver, which
	// may be nil, sees that call's attempts and end.
	StartCall(ctx context.Context, req *CloudRequest, stream bool) (context.Context, CallObserver)
}

// CallObserver sees one call's attempts and its end.
type CallObserver interface {
	// EndAttempt is called after each attempt; err is nil on success.
	EndAttempt(a latency.Attempt, err *errcodes.Error)
	// EndCall is called once when the call ends: resp is nil when it
	// failed, and err nil when it succeeded. tl is always set.
	EndCall(resp *CloudResponse, tl *latency.Timeline, err *errcodes.Error)
}
