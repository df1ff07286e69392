package cloudreqtest

import (
	"context"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// Outcome is what one attempt yields. For Invoke: Response or Err. For
// Stream: Err fails the open; otherwise Chunks are yielded in order, then
// StreamErr (or a clean end when it is nil).
//
// Err and StreamErr are returned as the adapter's error: an *errcodes.Error
// (errcodes.New) fails with its code, Retryable and RetryAfter, and a bare
// errcodes.Code (errcodes.Throttled) with its code and default
// retryability; the client classifies any other error as a transport error
// (io.ErrUnexpectedEOF is ERR_UNAVAILABLE, and ERR_STREAM_INTERRUPTED once
// a chunk was read).
//
// As with a real transport, an attempt or a stream read whose context has
// ended fails with the context's error, and a stream's Close makes a read
// that waits return. Each attempt gets its own copy of Response and of the
// chunks' Data and Usage. The attempt reports to the client's timeline when
// the request was written (as it starts) and when the answer began (after
// Delay), so that a measured call has its server wait and, for a stream,
// its first-token phase.
type Outcome struct {
	Response  *cloudreq.CloudResponse
	Err       error
	Chunks    []cloudreq.StreamChunk
	StreamErr error
	// Delay is how long the attempt takes before answering (it returns
	// early with the context's error if the context ends first).
	Delay time.Duration
	// ChunkDelay is the pause before each chunk.
	ChunkDelay time.Duration
	// Block makes an Invoke attempt, or a stream's read after its Chunks,
	// wait until its context ends (or, for a stream, until it is closed).
	Block bool
	// BlockOpen makes a Stream attempt wait, before it opens, until its
	// context ends.
	BlockOpen bool
}

// Adapter is a fake cloudreq.Adapter, Streamer and Encoder. It plays
// Outcomes in order, one per attempt; after the last, it repeats the last.
// The order is that of the attempts as they reach the fake, whatever their
// call: concurrent calls share it (Respond scripts each call apart).
// With no Outcomes every attempt succeeds with status 200 and the request
// body echoed. It records every attempt. Safe for concurrent use.
type Adapter struct {
	// Provider and Service default to "openai" / "openai-compatible".
	Provider, Service string
	// Actions defaults to invoke and generate.
	Actions  []string
	Outcomes []Outcome
	// Respond, when set, chooses each attempt's Outcome instead of
	// Outcomes, from what the attempt sent: to script concurrent calls
	// each apart, or to answer by request. It is called from the calling
	// goroutines, concurrently, with no lock held (it may call Calls),
	// and must not modify the request. A panic in it fails the attempt,
	// as an adapter's panic does: the client returns ERR_INTERNAL.
	Respond func(Recorded) Outcome

	mu    sync.Mutex
	calls []Recorded
}

// Recorded is one attempt the fake saw.
type Recorded struct {
	// Request is the request as the adapter got it, after the client's
	// PreSerialize hooks (Header holds the headers sent). It must not be
	// modified.
	Request *cloudreq.CloudRequest
	// Body is the payload sent: the request's Payload for ActionInvoke, or
	// what Encode wrote for ActionGenerate.
	Body []byte
	// Attempt counts the call's attempts from 1.
	Attempt int
}

// Describe implements cloudreq.Adapter.
func (a *Adapter) Describe() cloudreq.Description {
	d := cloudreq.Description{Provider: a.Provider, Service: a.Service, Actions: a.Actions}
	if d.Provider == "" {
		d.Provider = cloudreq.ProviderOpenAI
	}
	if d.Service == "" {
		d.Service = cloudreq.ServiceOpenAICompatible
	}
	if d.Actions == nil {
		d.Actions = []string{cloudreq.ActionInvoke, cloudreq.ActionGenerate}
	}
	return d
}

// Encode implements cloudreq.Encoder: the messages' contents, one per line.
func (a *Adapter) Encode(req *cloudreq.CloudRequest, _ bool) (cloudreq.Payload, error) {
	var b []byte
	for _, m := range req.Generate.Messages {
		b = append(b, m.Content...)
		b = append(b, '\n')
	}
	return cloudreq.Payload{Body: b, ContentType: "text/plain"}, nil
}

// Calls returns the attempts seen so far.
func (a *Adapter) Calls() []Recorded {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Recorded(nil), a.calls...)
}

// next records the attempt and returns its Outcome.
func (a *Adapter) next(call *cloudreq.Call) (Outcome, error) {
	body, err := io.ReadAll(call.Body())
	if err != nil {
		return Outcome{}, err
	}
	if call.Trace != nil {
		call.Trace.WroteRequest(time.Now())
	}
	r := Recorded{Request: call.Request, Body: body, Attempt: call.Attempt}
	a.mu.Lock()
	a.calls = append(a.calls, r)
	n := len(a.calls)
	respond, outcomes := a.Respond, a.Outcomes
	a.mu.Unlock()
	switch {
	case respond != nil:
		return respond(r), nil
	case len(outcomes) == 0:
		return Outcome{Response: &cloudreq.CloudResponse{StatusCode: 200, Data: body}}, nil
	}
	return outcomes[min(n, len(outcomes))-1], nil
}

// answered reports to the attempt's trace that the answer began.
func answered(call *cloudreq.Call) {
	if call.Trace != nil {
		call.Trace.FirstByte(time.Now())
	}
}

// errClosed returns what a stream's read returns once the stream was
// closed.
func errClosed() error { return errcodes.New(errcodes.Canceled, "closed") }

// wait waits d, or until ctx ends when block is set, and fails at once
// when ctx has ended or closed (nil for none) is closed.
func wait(ctx context.Context, closed <-chan struct{}, d time.Duration, block bool) error {
	select {
	case <-closed:
		return errClosed()
	default:
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if !block && d <= 0 {
		return nil
	}
	var timeout <-chan time.Time
	if !block {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-closed:
		return errClosed()
	case <-timeout:
		return nil
	}
}

// response returns a copy of r that shares no map or slice with it, as a
// real adapter's response shares none with another's.
func response(r *cloudreq.CloudResponse) *cloudreq.CloudResponse {
	c := *r
	c.Data = slices.Clone(r.Data)
	c.Errors = slices.Clone(r.Errors)
	c.Metadata = maps.Clone(r.Metadata)
	c.Header = r.Header.Clone()
	if r.ServerStart != nil {
		ss := *r.ServerStart
		c.ServerStart = &ss
	}
	return &c
}

// Invoke implements cloudreq.Adapter.
func (a *Adapter) Invoke(ctx context.Context, call *cloudreq.Call) (*cloudreq.CloudResponse, error) {
	o, err := a.next(call)
	if err != nil {
		return nil, err
	}
	if err := wait(ctx, nil, o.Delay, o.Block); err != nil {
		return nil, err
	}
	answered(call)
	if o.Err != nil {
		return nil, o.Err
	}
	if o.Response == nil {
		return &cloudreq.CloudResponse{StatusCode: 200}, nil
	}
	return response(o.Response), nil
}

// Stream implements cloudreq.Streamer.
func (a *Adapter) Stream(ctx context.Context, call *cloudreq.Call) (cloudreq.ChunkStream, error) {
	o, err := a.next(call)
	if err != nil {
		return nil, err
	}
	if err := wait(ctx, nil, o.Delay, o.BlockOpen); err != nil {
		return nil, err
	}
	answered(call)
	if o.Err != nil {
		return nil, o.Err
	}
	head := &cloudreq.CloudResponse{StatusCode: 200}
	if o.Response != nil {
		head = response(o.Response)
	}
	return &stream{ctx: ctx, o: o, head: head, closed: make(chan struct{})}, nil
}

type stream struct {
	ctx    context.Context
	o      Outcome
	head   *cloudreq.CloudResponse
	i      int
	once   sync.Once
	closed chan struct{} // closed by Close, which may come from any goroutine
}

func (s *stream) Response() *cloudreq.CloudResponse { return s.head }

func (s *stream) Next() (cloudreq.StreamChunk, error) {
	if s.i < len(s.o.Chunks) {
		if err := wait(s.ctx, s.closed, s.o.ChunkDelay, false); err != nil {
			return cloudreq.StreamChunk{}, err
		}
		c := s.o.Chunks[s.i]
		s.i++
		c.Data = slices.Clone(c.Data)
		if c.Usage != nil {
			u := *c.Usage
			c.Usage = &u
		}
		return c, nil
	}
	if err := wait(s.ctx, s.closed, 0, s.o.Block); err != nil {
		return cloudreq.StreamChunk{}, err
	}
	if s.o.StreamErr != nil {
		return cloudreq.StreamChunk{}, s.o.StreamErr
	}
	return cloudreq.StreamChunk{}, io.EOF
}

func (s *stream) Close() error {
	s.once.Do(func() { close(s.closed) })
	return nil
}
