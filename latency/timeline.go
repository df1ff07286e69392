package latency

import (
	"crypto/tls"
	"net/http/httptrace"
	"sync"
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
	// IntendedSend is when the load schedule wanted the request sent. It
	// equals Start unless the caller set CloudRequest.IntendedSend.
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
	// WroteRequest is when the request (headers and body) was fully written.
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

// Send returns the send time of the final attempt (the "send time" of
// MEASUREMENT.md), or zero if no attempt was made.
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

// AttemptTrace collects one attempt's phase times from net/http/httptrace
// callbacks, which may run on other goroutines, and copies them into the
// Attempt when Finish is called. Callbacks after Finish are ignored.
//
// Its zero value is ready for Start, so that a caller can keep one inside a
// larger per-call struct instead of allocating it; NewAttemptTrace allocates
// and starts one. An AttemptTrace must not be copied or reused once started.
type AttemptTrace struct {
	mu       sync.Mutex
	a        Attempt
	finished bool
	ct       httptrace.ClientTrace
}

// NewAttemptTrace starts tracing attempt number n, sent now.
func NewAttemptTrace(n int, backoff time.Duration) *AttemptTrace {
	t := new(AttemptTrace)
	t.Start(n, backoff)
	return t
}

// Start starts tracing attempt number n of a zero AttemptTrace, sent now.
func (t *AttemptTrace) Start(n int, backoff time.Duration) {
	t.a = Attempt{Number: n, Backoff: backoff, Send: time.Now()}
}

func (t *AttemptTrace) set(f func(a *Attempt)) {
	t.mu.Lock()
	if !t.finished {
		f(&t.a)
	}
	t.mu.Unlock()
}

// Mark lets a non-HTTP transport (gRPC stats handlers, say) record phases.
func (t *AttemptTrace) Mark(f func(a *Attempt)) { t.set(f) }

// stampFirst sets *p to now unless it is set already; t.mu is held.
func stampFirst(p *time.Time) {
	if p.IsZero() {
		*p = time.Now()
	}
}

// ClientTrace returns httptrace callbacks that fill the attempt. Only the
// first DNS, connect and TLS events are kept (parallel dials report several).
// The returned struct belongs to t: each call returns the same one, which
// the caller may add callbacks of its own to before the attempt starts.
func (t *AttemptTrace) ClientTrace() *httptrace.ClientTrace {
	if t.ct.GotConn != nil {
		return &t.ct
	}
	t.ct = httptrace.ClientTrace{
		DNSStart:     func(httptrace.DNSStartInfo) { t.set(func(a *Attempt) { stampFirst(&a.DNSStart) }) },
		DNSDone:      func(httptrace.DNSDoneInfo) { t.set(func(a *Attempt) { stampFirst(&a.DNSDone) }) },
		ConnectStart: func(string, string) { t.set(func(a *Attempt) { stampFirst(&a.ConnectStart) }) },
		ConnectDone: func(_, _ string, err error) {
			if err == nil {
				t.set(func(a *Attempt) { stampFirst(&a.ConnectDone) })
			}
		},
		TLSHandshakeStart: func() { t.set(func(a *Attempt) { stampFirst(&a.TLSStart) }) },
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) {
			if err == nil {
				t.set(func(a *Attempt) { stampFirst(&a.TLSDone) })
			}
		},
		GotConn: func(info httptrace.GotConnInfo) {
			t.set(func(a *Attempt) { a.GotConn = time.Now(); a.ConnReused = info.Reused })
		},
		WroteRequest:         func(httptrace.WroteRequestInfo) { t.set(func(a *Attempt) { a.WroteRequest = time.Now() }) },
		GotFirstResponseByte: func() { t.set(func(a *Attempt) { stampFirst(&a.FirstByte) }) },
	}
	return &t.ct
}

// Finish ends the attempt with the given status and error code and returns
// the completed Attempt.
func (t *AttemptTrace) Finish(status int, code string) Attempt {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.finished {
		t.finished = true
		t.a.End = time.Now()
		t.a.Status = status
		t.a.Code = code
	}
	return t.a
}

// Send returns when the attempt was handed to the transport.
func (t *AttemptTrace) Send() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.a.Send
}
