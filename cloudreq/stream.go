package cloudreq

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
)

// Stream is a streamed response. Read it with Next and Chunk, then check Err:
//
//	s, err := client.Stream(ctx, req)
//	if err != nil { return err }
//	defer s.Close()
//	for s.Next() {
//		fmt.Print(s.Chunk().Text)
//	}
//	if err := s.Err(); err != nil { return err }
//	usage := s.Response().Usage
//
// A Stream is retried transparently only until its first chunk reaches the
// caller. A stream that breaks once content reached it ends with
// ERR_STREAM_INTERRUPTED, and the chunks already read stay valid; an error
// met before any content (after a role-only chunk, say) keeps its own code. Next and Chunk must be called from one
// goroutine; Close may be called from any goroutine, at any point, and
// releases the connection.
type Stream struct {
	cl *call
	// ctx is the call's context, kept (like an http.Response body keeps
	// its request's) to reopen the stream before the first chunk.
	ctx    context.Context
	cancel context.CancelCauseFunc
	stop   context.CancelFunc // releases the call's own timeout

	mu         sync.Mutex
	cs         ChunkStream
	tr         *latency.AttemptTrace // the open attempt, until it ends
	actx       context.Context       // the open attempt's context
	acancel    context.CancelCauseFunc
	firstTimer *time.Timer
	idleTimer  *time.Timer
	n          int          // the open attempt's number
	sent       *sentSecrets // the credentials the open attempt sent
	reading    bool
	closed     bool
	done       bool
	delivered  bool
	cur        StreamChunk
	err        *errcodes.Error
	resp       *CloudResponse
	usage      *Usage
	counted    int
	finish     string
	calls      ToolCallAssembler
}

// Causes that end a stream attempt from the client side.
var (
	errFirstChunkTimeout = errors.New("no first chunk within FirstChunkTimeout")
	errIdleTimeout       = errors.New("no chunk within StreamIdleTimeout")
	errClosed            = errors.New("stream closed")
)

// Stream sends req and returns once the response stream is open. The caller
// must read it to the end or Close it. On failure the error is an
// *errcodes.Error and the Stream is nil. Option functions change a copy
// of the client's CallOptions for this call.
func (c *Client) Stream(ctx context.Context, req *CloudRequest, optFns ...func(*CallOptions)) (*Stream, error) {
	cl, ctx, stop, err := c.prepare(ctx, req, true, optFns)
	if err != nil {
		stop()
		return nil, cl.fail(err)
	}
	s := &Stream{cl: cl, stop: stop}
	s.ctx, s.cancel = context.WithCancelCause(ctx)
	if e := s.open(1); e != nil {
		if e = s.reopen(1, e); e != nil {
			s.cancel(errClosed)
			stop()
			return nil, cl.fail(e)
		}
	}
	return s, nil
}

// reopen retries after attempt n failed with e, until an attempt opens
// (nil) or the retry loop gives up (the final error).
func (s *Stream) reopen(n int, e *errcodes.Error) *errcodes.Error {
	for ; ; n++ {
		if e = s.cl.backoff(s.ctx, n, e); e != nil {
			return e
		}
		if e = s.open(n + 1); e == nil {
			return nil
		}
	}
}

// open makes attempt n: it sends the request and waits for the headers.
func (s *Stream) open(n int) *errcodes.Error {
	cl := s.cl
	actx, acancel := context.WithCancelCause(s.ctx)
	var attemptTimer, firstTimer *time.Timer
	if d := cl.o.AttemptTimeout; d > 0 {
		attemptTimer = time.AfterFunc(d, func() { acancel(errAttemptTimeout) })
	}
	if d := cl.o.FirstChunkTimeout; d > 0 {
		// Started now, not when the adapter returns: an adapter may only
		// return with the first chunk (gRPC servers send their headers
		// with the first message), and the wait for it is the same wait.
		firstTimer = time.AfterFunc(d, func() { acancel(errFirstChunkTimeout) })
	}
	tr := cl.newTrace(n)
	sent := new(sentSecrets)
	tctx := cl.withTrace(actx, tr, sent)
	callv := cl.newCall(n, tr)
	var cs ChunkStream
	err := safely(func() (err error) { cs, err = cl.reg.ad.(Streamer).Stream(tctx, callv); return err })
	if attemptTimer != nil && !attemptTimer.Stop() && err == nil && cs != nil {
		// The attempt timed out as the adapter returned: its context is
		// canceled under the stream, so it is a timed-out attempt.
		closeChunks(cs)
		cs, err = nil, context.Cause(actx)
	}
	if err == nil && cs == nil {
		err = errcodes.New(errcodes.Internal, "cloudreq: adapter returned neither stream nor error")
	}
	e := cl.scrub(sent, cl.normalize(s.ctx, actx, err))
	var head *CloudResponse
	if e == nil {
		if err := safely(func() error { head = cs.Response(); return nil }); err != nil {
			e = normalizeWith(err, errcodes.Internal, cl.req.Provider)
		} else {
			if head == nil {
				head = &CloudResponse{}
			}
			e = cl.postDeserialize(s.ctx, head, nil)
		}
		if e != nil {
			closeChunks(cs)
		}
	}
	if e != nil {
		if firstTimer != nil {
			firstTimer.Stop()
		}
		acancel(errClosed)
		cl.endAttempt(tr, nil, e)
		return e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cs, s.tr, s.resp, s.n, s.sent = cs, tr, head, n, sent
	s.actx, s.acancel = actx, acancel
	s.firstTimer = firstTimer
	return nil
}

// Next advances to the next chunk. It returns false at the end of the
// stream, on error (see Err) and after Close.
func (s *Stream) Next() bool {
	for {
		s.mu.Lock()
		if s.done || s.closed {
			s.finishLocked(nil)
			s.mu.Unlock()
			return false
		}
		s.reading = true
		cs := s.cs
		s.armIdle()
		s.mu.Unlock()

		var ch StreamChunk
		err := safely(func() (err error) { ch, err = cs.Next(); return err })

		s.mu.Lock()
		s.reading = false
		if s.idleTimer != nil {
			s.idleTimer.Stop()
		}
		if err == nil && s.ctx.Err() != nil {
			// The call ended (the caller canceled it, or its deadline
			// passed): chunks the transport had buffered are not delivered,
			// so a canceled stream ends canceled however fast it arrived.
			err = context.Cause(s.ctx)
		}
		if err == nil && !s.delivered && s.actx.Err() != nil {
			// The attempt ended (its FirstChunkTimeout, the call's end)
			// before its first chunk reached the caller: a chunk the adapter
			// still returns comes from a dead attempt, which failed with
			// the attempt's cause, and is not delivered.
			err = context.Cause(s.actx)
		}
		switch {
		case s.closed:
			s.finishLocked(nil)
		case err == nil:
			s.record(ch)
			s.mu.Unlock()
			return true
		case errors.Is(err, io.EOF):
			s.finishLocked(nil)
		default:
			e := s.streamError(err)
			if s.delivered || !e.Retryable {
				s.finishLocked(e)
				break
			}
			// Nothing reached the caller yet: this attempt may be retried.
			// Next stays the reader while it reopens, so that a concurrent
			// Close only cancels (the backoff, the new attempt) and the
			// call's state is finished here, by one goroutine.
			s.endOpenAttemptLocked(e)
			n := s.n
			s.reading = true
			s.mu.Unlock()
			e = s.reopen(n, e)
			s.mu.Lock()
			s.reading = false
			switch {
			case s.closed:
				s.finishLocked(nil) // releases an attempt that opened meanwhile
			case e == nil:
				s.mu.Unlock()
				continue
			default:
				s.finishLocked(e)
			}
		}
		s.mu.Unlock()
		return false
	}
}

// record stamps and keeps a chunk; s.mu is held.
func (s *Stream) record(ch StreamChunk) {
	now := s.cl.now()
	ch.At = now
	if ch.Text != "" || ch.Reasoning != "" || len(ch.ToolCallDeltas) > 0 {
		ch.Content = true
	}
	tokens := ch.Tokens
	if ch.Content {
		if tokens <= 0 {
			tokens = 1
		}
		s.counted += tokens
	}
	if ch.Reasoning != "" && ch.Text == "" && len(ch.ToolCallDeltas) == 0 {
		s.cl.tl.AddReasoningChunk(now, tokens)
	} else {
		s.cl.tl.AddChunk(now, tokens, ch.Content)
	}
	if len(ch.ToolCallDeltas) > 0 {
		ch.ToolCalls = s.calls.Add(ch.ToolCallDeltas)
	}
	if ch.FinishReason != "" {
		ch.ToolCalls = append(ch.ToolCalls, s.calls.Flush()...)
	}
	if ch.Usage != nil {
		u := *ch.Usage
		s.usage = &u
	}
	if ch.FinishReason != "" {
		s.finish = ch.FinishReason
	}
	if !s.delivered {
		s.delivered = true
		if s.firstTimer != nil {
			s.firstTimer.Stop()
		}
	}
	s.cur = ch
}

// armIdle starts the idle timer for a read that waits for a chunk after
// the first: it runs only while Next waits, so that the caller's own time
// between Next calls is never taken for the server's silence. The attempt
// cannot change once a chunk was delivered, so the timer keeps the
// cancel of the attempt it was made for. s.mu is held.
func (s *Stream) armIdle() {
	d := s.cl.o.StreamIdleTimeout
	if d <= 0 || !s.delivered {
		return
	}
	if s.idleTimer == nil {
		acancel := s.acancel
		s.idleTimer = time.AfterFunc(d, func() { acancel(errIdleTimeout) })
		return
	}
	s.idleTimer.Reset(d)
}

// streamError normalizes a read error; s.mu is held.
func (s *Stream) streamError(err error) *errcodes.Error {
	provider := s.cl.req.Provider
	e := callEnded(s.ctx, err)
	switch cause := context.Cause(s.actx); {
	case e != nil:
	case s.actx.Err() != nil && (cause == errFirstChunkTimeout || cause == errIdleTimeout):
		e = errcodes.Wrap(err, errcodes.Timeout, cause.Error())
		e.Retryable = !s.delivered
	default:
		e = errcodes.FromTransport(err)
		// Once content reached the caller, a failure interrupts it; before
		// (a role-only chunk is no content) an error keeps its own code.
		if s.counted > 0 && (e.Code == errcodes.Unavailable || e.Code == errcodes.Unknown) {
			e = errcodes.Wrap(e, errcodes.StreamInterrupted, "stream broke after "+strconv.Itoa(s.counted)+" content tokens: "+e.Message)
		}
	}
	if s.delivered && e.Code == errcodes.StreamInterrupted && e.Retryable {
		e = amend(e)
		e.Retryable = false
	}
	return s.cl.scrub(s.sent, withProvider(e, provider))
}

// endOpenAttemptLocked closes the open attempt after it failed with e.
func (s *Stream) endOpenAttemptLocked(e *errcodes.Error) {
	s.stopTimersLocked()
	if s.cs != nil {
		closeChunks(s.cs)
	}
	if s.acancel != nil {
		s.acancel(errClosed)
	}
	if s.tr != nil {
		var resp *CloudResponse
		if e == nil {
			resp = s.resp
		}
		s.cl.endAttempt(s.tr, resp, e)
		s.tr = nil
	}
}

func (s *Stream) stopTimersLocked() {
	if s.firstTimer != nil {
		s.firstTimer.Stop()
	}
	if s.idleTimer != nil {
		s.idleTimer.Stop()
	}
}

// finishLocked ends the stream once, with e (nil for a clean end or a
// Close); s.mu is held.
func (s *Stream) finishLocked(e *errcodes.Error) {
	if s.done {
		return
	}
	s.done = true
	cl := s.cl
	cl.tl.End = cl.now()
	s.endOpenAttemptLocked(e)
	s.cancel(errClosed)
	s.stop()
	resp := s.resp
	if resp == nil {
		resp = &CloudResponse{}
		s.resp = resp
	}
	if u := s.usage; u != nil && u.OutputTokens > 0 {
		resp.Usage = *u
		resp.Usage.Source = "server"
	} else {
		if u != nil {
			resp.Usage.InputTokens = u.InputTokens
		}
		resp.Usage.OutputTokens = s.counted
		resp.Usage.Source = "counted"
	}
	resp.FinishReason = s.finish
	resp.ToolCalls = s.calls.Calls()
	switch {
	case e != nil:
		s.err = e
		cl.settle(resp, s.delivered)
		_ = cl.fail(e)
	case s.closed:
		cl.settle(resp, s.delivered)
		ce := errcodes.New(errcodes.Canceled, "stream closed by caller before its end")
		ce.Provider = cl.req.Provider
		_ = cl.fail(ce)
	default:
		cl.succeed(resp)
	}
}

// Chunk returns the chunk Next advanced to. Its Data is valid until the
// next call to Next.
func (s *Stream) Chunk() StreamChunk { return s.cur }

// Err returns the error that ended the stream, nil after a clean end or a
// Close.
func (s *Stream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		return nil
	}
	return s.err
}

// Response returns the final response (usage, finish reason, timing, start
// verdict, the errors of the attempts before the one that opened) once the
// stream ended or was closed, and nil before. A stream that broke or was
// closed before its first chunk has no start verdict: the endpoint did not
// serve it. A Close made while Next runs
// in another goroutine ends the stream when that Next returns.
func (s *Stream) Response() *CloudResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.done {
		return nil
	}
	return s.resp
}

// Close ends the stream and releases its connection. It is safe to call at
// any point, from any goroutine, more than once.
func (s *Stream) Close() error {
	s.mu.Lock()
	if s.done || s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	if s.reading {
		// Next is blocked in a read, a backoff or a reopening attempt:
		// cancel them all, and let Next finish the stream. Closing the
		// adapter's stream too unblocks a read that does not watch the
		// context; outside the lock, as that Close may wait for the read.
		s.cancel(errClosed)
		cs := s.cs
		s.mu.Unlock()
		if cs != nil {
			closeChunks(cs)
		}
		return nil
	}
	s.finishLocked(nil)
	s.mu.Unlock()
	return nil
}

// closeChunks closes an adapter's stream; its error, or a panic in its
// Close, is dropped: the stream is done with either way.
func closeChunks(cs ChunkStream) { _ = safely(cs.Close) }
