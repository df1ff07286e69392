package cloudreq

import (
	"context"
	"log/slog"
	"time"

	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
)

// Options configures a Client: the client-only settings, which New reads
// once, and the defaults of every call (CallOptions, embedded). Pass it to
// New, whose option functions change a copy; a call's own option
// functions (for Invoke and Stream) change a copy of the CallOptions only,
// so that no per-call option is one a call cannot honour.
type Options struct {
	// Adapters are the provider adapters the client routes to, by
	// Provider/Service. Two adapters for the same pair are an error.
	Adapters []Adapter
	// ScaleToZeroWindow is the endpoints' scale-to-zero idle window. When
	// set, a client's first request to an endpoint, and the first after a
	// longer idle gap, are classified cold. Zero: only server reports and
	// not-ready signals make a start cold. The window belongs to the
	// client's start classifier, which all its calls share.
	ScaleToZeroWindow time.Duration
	// CallOptions are the defaults of every call.
	CallOptions
}

// CallOptions are the options honoured per call. Options holds the
// client's defaults; Invoke and Stream apply their option functions to a
// copy of them for that call alone.
type CallOptions struct {
	// Hooks run the PreValidate, PreSerialize and PostDeserialize phases.
	// hooks.Default() returns a set with the built-ins; nil runs none.
	Hooks Hooks
	// Retry configures the retry loop. A call whose options leave
	// Retry.Budget nil uses the client's budget.
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
	// Observers see every call and attempt (telemetry, benchmarks).
	Observers []Observer
	// Logger receives debug records of retries; nil discards them. Records
	// hold codes, counts and delays, never payloads or credentials.
	Logger *slog.Logger

	// clientOnly names the client-only option a PerCall function set: the
	// call fails rather than ignore it.
	clientOnly string
}

// PerCall returns f, an option function for New, as one for a single
// call (Invoke, Stream), for option functions that set only CallOptions
// fields, such as telemetry.WithObserver. f sees the call's options and
// zero client-only fields; if it sets one (Adapters, ScaleToZeroWindow),
// the call fails with ERR_INVALID_PARAM, as a call cannot change them.
func PerCall(f func(*Options)) func(*CallOptions) {
	return func(co *CallOptions) {
		o := Options{CallOptions: *co}
		f(&o)
		*co = o.CallOptions
		switch {
		case co.clientOnly != "":
		case len(o.Adapters) > 0:
			co.clientOnly = "Adapters"
		case o.ScaleToZeroWindow != 0:
			co.clientOnly = "ScaleToZeroWindow"
		}
	}
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
	// with that error (retried if it is retryable). For a Stream it runs
	// when an attempt opens, on the response known then (status, Header,
	// request id; usage and finish reason come with the chunks): that
	// response is the one Stream.Response returns at the end. It runs
	// before the call's start is classified, so a ServerStart it sets is
	// the verdict's evidence.
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

// CallObserver sees one call's attempts and its end. The client calls
// its methods one at a time, in order: each attempt's EndAttempt, then
// EndCall once.
type CallObserver interface {
	// EndAttempt is called after each attempt with what it sent and what
	// it got (see AttemptInfo).
	EndAttempt(a AttemptInfo)
	// EndCall is called once when the call ends: resp is nil when it
	// failed, and err nil when it succeeded. tl is always set.
	EndCall(resp *CloudResponse, tl *latency.Timeline, err *errcodes.Error)
}

// AttemptStarter is implemented by a CallObserver that is told when each
// attempt starts: a logger that records a request before it is sent.
// StartAttempt is called before the attempt's send time is taken, after
// the PreSerialize hooks ran; a.Attempt holds only Number and Backoff,
// and a.Response and a.Err are nil.
type AttemptStarter interface {
	StartAttempt(a AttemptInfo)
}

// AttemptInfo is what an observer learns of one attempt. What it points
// to belongs to the client: an observer reads it while it is called and
// must not modify it, nor keep the pointers past the call's end.
type AttemptInfo struct {
	// Attempt is the attempt's timing, number, status and code, as the
	// call's Timeline holds it.
	Attempt latency.Attempt
	// Request is the request the attempt sent: the client's working copy,
	// after the PreSerialize hooks.
	Request *CloudRequest
	// Response is the attempt's response when it answered (for a Stream,
	// what was known when it opened), after the PostDeserialize hooks; nil
	// when Err is set.
	Response *CloudResponse
	// Err is the attempt's error, after the PostDeserialize hooks and with
	// the credentials the attempt sent redacted; nil when it answered.
	Err *errcodes.Error

	cl   *call        // the call, for its adapter's and request's credentials
	sent *sentSecrets // the credentials the transport wrote; nil at the start
}
