package latency

import (
	"sync/atomic"
	"time"
)

// Timeline is everything cloudinfer timed for one call: the intended and the
// actual send time, each attempt's phases, each content chunk's arrival, the
// end, and — for cold starts — when the model became ready. cloudreq fills
// it for every call; all times come from Go's monotonic clock.
//
// A Timeline belongs to one call. It is complete once Invoke returns, or once
// a Stream has been drained or closed; read it only then.
type Timeline struct {
	// IntendedSend is when the load schedule wanted the request sent.
	// cloudreq sets it to the first attempt's send time (Start if no
	// attempt was made) unless the caller set CloudRequest.IntendedSend.
	IntendedSend time.Time `json:"intended_send"`
	// Start is when the call entered the client (before hooks and queueing).
	Start time.Time `json:"start"`
	// Attempts holds one entry per attempt, in order. The last one is the
	// attempt whose outcome the caller saw.
	Attempts []Attempt `json:"attempts"`
	// Chunks holds each chunk of the final attempt's stream (or, for a
	// non-streaming call, one chunk for the whole body).
	Chunks []Chunk `json:"chunks,omitempty"`
	// End is when the call finished: the body was read, or the stream ended.
	End time.Time `json:"end"`
	// ModelReady is when the model became ready to serve this request; zero
	// for warm requests. SLA clocks of cold requests start here.
	ModelReady time.Time `json:"model_ready,omitzero"`
	// Streamed is true when the call was a Stream.
	Streamed bool `json:"streamed"`
}

// Attempt is the timing of one try at sending the request. Zero times mean
// the phase did not happen (a reused connection has no DNS, connect or TLS).
type Attempt struct {
	// Number counts from 1.
	Number int `json:"number"`
	// Backoff is how long the client waited before this attempt.
	Backoff time.Duration `json:"backoff,omitempty"`
	// Send is when this attempt was handed to the transport.
	Send         time.Time `json:"send"`
	DNSStart     time.Time `json:"dns_start,omitzero"`
	DNSDone      time.Time `json:"dns_done,omitzero"`
	ConnectStart time.Time `json:"connect_start,omitzero"`
	ConnectDone  time.Time `json:"connect_done,omitzero"`
	TLSStart     time.Time `json:"tls_start,omitzero"`
	TLSDone      time.Time `json:"tls_done,omitzero"`
	// GotConn is when the transport had a connection for the request.
	GotConn time.Time `json:"got_conn,omitzero"`
	// WroteRequest is when the request (headers and body) was fully
	// written. A transport that reported the write only after the response
	// began (HTTP/2 and gRPC report it from their writer goroutines) had
	// written it by then: WroteRequest is then the FirstByte time, so that
	// the phases are always in order.
	WroteRequest time.Time `json:"wrote_request,omitzero"`
	// FirstByte is when the first byte of the response arrived.
	FirstByte time.Time `json:"first_byte,omitzero"`
	// End is when the attempt finished (successfully or not).
	End time.Time `json:"end"`
	// ConnReused is true when the attempt used a pooled connection.
	ConnReused bool `json:"conn_reused"`
	// Status is the HTTP (or mapped) status of the attempt, 0 if none.
	Status int `json:"status,omitempty"`
	// Code is the portable error code of a failed attempt, "" on success.
	Code string `json:"code,omitempty"`
}

// Chunk is one piece of a response as it reached the caller.
type Chunk struct {
	// At is when the chunk arrived.
	At time.Time `json:"at"`
	// Tokens is the number of output tokens the chunk carries (0 if unknown
	// or none).
	Tokens int `json:"tokens,omitempty"`
	// Content is true when the chunk carries generated content; role-only,
	// empty and usage-only chunks are false and never count as first token.
	Content bool `json:"content"`
	// Reasoning is true for a content chunk that carries reasoning only
	// (no answer text, no tool call): it counts as output, for TTFR,
	// ITL and TPOT, but not as the first token of the answer (TTFT).
	Reasoning bool `json:"reasoning,omitempty"`
}

// NewTimeline returns a Timeline that starts now. A zero intended time means
// "now".
func NewTimeline(intended time.Time) *Timeline {
	now := time.Now()
	if intended.IsZero() {
		intended = now
	}
	return &Timeline{IntendedSend: intended, Start: now}
}

// LastAttempt returns the final attempt, or nil if none was made.
func (t *Timeline) LastAttempt() *Attempt {
	if len(t.Attempts) == 0 {
		return nil
	}
	return &t.Attempts[len(t.Attempts)-1]
}

// Send returns the send time of the final attempt (the "send time" of the
// metrics), or zero if no attempt was made.
func (t *Timeline) Send() time.Time {
	if a := t.LastAttempt(); a != nil {
		return a.Send
	}
	return time.Time{}
}

// AddChunk records the arrival of a chunk.
func (t *Timeline) AddChunk(at time.Time, tokens int, content bool) {
	t.Chunks = append(t.Chunks, Chunk{At: at, Tokens: tokens, Content: content})
}

// AddReasoningChunk records the arrival of a content chunk that carries
// reasoning only.
func (t *Timeline) AddReasoningChunk(at time.Time, tokens int) {
	t.Chunks = append(t.Chunks, Chunk{At: at, Tokens: tokens, Content: true, Reasoning: true})
}

// AttemptTrace collects one attempt's phase times, and copies them into the
// Attempt when Finish is called. HTTP requests made with the context from
// Context are timed through net/http/httptrace; other transports report
// through GotConn, Connected, WroteRequest and FirstByte (the gRPC stats
// handler does). Events may come from any goroutine; those after Finish are
// ignored.
//
// Events run on the request's critical path (the transport calls its hooks
// before it writes, flushes or parses), so each costs a monotonic clock
// read and an atomic store or two: no lock, no wall-clock read, no
// allocation.
//
// Its zero value is ready for Start, so that a caller can keep one inside a
// larger per-call struct instead of allocating it; NewAttemptTrace allocates
// and starts one. An AttemptTrace must not be copied or reused once started.
type AttemptTrace struct {
	send    time.Time // carries a monotonic reading: stamps are offsets from it
	number  int
	backoff time.Duration
	done    atomic.Bool
	reused  atomic.Bool
	// end, status and code are set once, by the first Finish.
	end    time.Duration
	status int
	code   string
	// stamps holds each phase time as a stamp (see encode), 0 when unset.
	stamps [numStamps]atomic.Int64
	hooks  *hookSet       // the httptrace hooks attached by Context
	hdr    HeaderObserver // sees the header fields written
	tctx   traceCtx       // the context Context returns
}

// The phase times an AttemptTrace stamps.
const (
	stDNSStart = iota
	stDNSDone
	stConnectStart
	stConnectDone
	stTLSStart
	stTLSDone
	stGotConn
	stWroteRequest
	stFirstByte
	numStamps
)

// unset is a stamp not taken: the zero value, so that a zero AttemptTrace
// needs no initialization.
const unset = 0

// encode turns an offset from the send time into a stamp: offsets ≥ 0 are
// shifted by one so that none is 0 (unset).
func encode(d time.Duration) int64 {
	if d >= 0 {
		return int64(d) + 1
	}
	return int64(d)
}

// decode is the inverse of encode, for a stamp that is set.
func decode(v int64) time.Duration {
	if v > 0 {
		return time.Duration(v - 1)
	}
	return time.Duration(v)
}

// NewAttemptTrace starts tracing attempt number n, sent now.
func NewAttemptTrace(n int, backoff time.Duration) *AttemptTrace {
	t := new(AttemptTrace)
	t.Start(n, backoff)
	return t
}

// Start starts tracing attempt number n of a zero AttemptTrace, sent now.
func (t *AttemptTrace) Start(n int, backoff time.Duration) { t.StartAt(n, backoff, time.Now()) }

// StartAt is Start with the send time given; it must carry a monotonic
// clock reading (come from time.Now, or be derived from one with Add).
func (t *AttemptTrace) StartAt(n int, backoff time.Duration, send time.Time) {
	t.send, t.number, t.backoff = send, n, backoff
}

// stamp sets phase i to at, or to now when at is zero, unless the attempt
// finished; first keeps an earlier stamp.
func (t *AttemptTrace) stamp(i int, at time.Time, first bool) {
	if t.done.Load() || (first && t.stamps[i].Load() != unset) {
		return
	}
	var d int64
	if at.IsZero() {
		d = encode(time.Since(t.send)) // one monotonic read, no wall clock
	} else {
		d = encode(at.Sub(t.send))
	}
	if first {
		t.stamps[i].CompareAndSwap(unset, d)
	} else {
		t.stamps[i].Store(d)
	}
}

// now stamps phase i with the current time; first keeps an earlier stamp.
func (t *AttemptTrace) now(i int, first bool) { t.stamp(i, time.Time{}, first) }

// GotConn records when a non-HTTP transport (gRPC stats handlers, say) had
// a connection for the attempt, and whether it was reused. HTTP requests
// made with Context report it themselves.
func (t *AttemptTrace) GotConn(at time.Time, reused bool) {
	if t.done.Load() {
		return
	}
	t.reused.Store(reused)
	t.stamp(stGotConn, at, false)
}

// Connected records the connection setup (dial start and end) a non-HTTP
// transport made for the attempt.
func (t *AttemptTrace) Connected(start, done time.Time) {
	t.stamp(stConnectStart, start, false)
	t.stamp(stConnectDone, done, false)
}

// WroteRequest records when a non-HTTP transport finished writing the
// request.
func (t *AttemptTrace) WroteRequest(at time.Time) { t.stamp(stWroteRequest, at, false) }

// FirstByte records when the first byte of the response reached a
// non-HTTP transport; only the first call counts.
func (t *AttemptTrace) FirstByte(at time.Time) { t.stamp(stFirstByte, at, true) }

// Finish ends the attempt with the given status and error code and returns
// the completed Attempt. Call it when the attempt's requests are done (the
// response read or abandoned): later events are ignored, and later calls
// return the same Attempt.
func (t *AttemptTrace) Finish(status int, code string) Attempt {
	var a Attempt
	t.FinishInto(&a, status, code)
	return a
}

// FinishInto is Finish writing the Attempt to *dst (a timeline's own slot,
// say), which saves copying it.
func (t *AttemptTrace) FinishInto(dst *Attempt, status int, code string) {
	if t.done.CompareAndSwap(false, true) {
		t.end, t.status, t.code = time.Since(t.send), status, code
		t.releaseHooks()
	}
	a := Attempt{Number: t.number, Backoff: t.backoff, Send: t.send, End: t.send.Add(t.end),
		ConnReused: t.reused.Load(), Status: t.status, Code: t.code}
	// One loop over the stamps, rather than a conversion per field, keeps
	// this code short: it runs on every attempt.
	phases := [numStamps]*time.Time{stDNSStart: &a.DNSStart, stDNSDone: &a.DNSDone,
		stConnectStart: &a.ConnectStart, stConnectDone: &a.ConnectDone, stTLSStart: &a.TLSStart,
		stTLSDone: &a.TLSDone, stGotConn: &a.GotConn, stWroteRequest: &a.WroteRequest, stFirstByte: &a.FirstByte}
	first := 0
	if a.ConnReused {
		// A dial this attempt started before a pooled connection came
		// free (net/http dials and waits for an idle connection at once)
		// set up another connection, not the one it used.
		first = stGotConn
	}
	for i := first; i < numStamps; i++ {
		if d := t.stamps[i].Load(); d != unset {
			*phases[i] = t.send.Add(decode(d))
		}
	}
	if !a.FirstByte.IsZero() && a.FirstByte.Before(a.WroteRequest) {
		a.WroteRequest = a.FirstByte // the write was reported late (see Attempt)
	}
	*dst = a
}

// Send returns when the attempt was handed to the transport.
func (t *AttemptTrace) Send() time.Time { return t.send }
