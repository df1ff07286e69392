package httpadapter

import (
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/sse"
)

// Framing says how a response body is cut into frames.
type Framing int

// Framings.
const (
	// FramingSSE: each text/event-stream event's data is a frame.
	FramingSSE Framing = iota
	// FramingNUL: NUL-separated records (PAI-EAS legacy LLM streams).
	FramingNUL
	// FramingRaw: each read of the body is a frame (plain streamed text).
	FramingRaw
	// FramingWhole: the whole body is one frame (a server that answered a
	// stream request with a plain response).
	FramingWhole
)

// errHTMLStream ends a raw stream whose body is an HTML page.
var errHTMLStream = errors.New("the server answered with an HTML page, not a stream")

// rawReadSize is the largest frame FramingRaw yields.
const rawReadSize = 32 << 10

// Decoder turns frames into chunks. It may keep state across frames (it
// serves one stream).
type Decoder interface {
	// Decode returns the chunk one frame carries. end reports the stream's
	// end marker (OpenAI's [DONE]): that frame yields no chunk and the
	// stream ends cleanly. An error (an in-band error, as an
	// *errcodes.Error) ends the stream with it.
	Decode(frame []byte) (ch cloudreq.StreamChunk, end bool, err error)
	// Complete is called when the body ends with no end marker: nil means
	// the stream was complete; otherwise its error ends the stream
	// (ERR_STREAM_INTERRUPTED for a truncated one).
	Complete() error
}

// StreamConfig configures NewStream.
type StreamConfig struct {
	// Provider fills the errors' Provider.
	Provider string
	Framing  Framing
	Decoder  Decoder
	// MaxFrame bounds one frame: an SSE line and event, a NUL record, or a
	// whole body (defaults: the sse package's, DefaultMaxResponse).
	MaxFrame int
}

// Stream is a cloudreq.ChunkStream over an HTTP response body. Next must be
// called from one goroutine; Close from any, at any time.
type Stream struct {
	head  *cloudreq.CloudResponse
	body  io.ReadCloser
	cfg   StreamConfig
	frame func() ([]byte, error)
	err   error
	raw   []byte
	rerr  error // a raw read's error, held back until its data is used

	closed    atomic.Bool   // Close was called: a read it broke is a cancel
	endOnce   sync.Once     // the end: a drain starts, or Close comes first
	closeOnce sync.Once     // closes body
	drained   chan struct{} // closed once no drain runs or will run
}

var _ cloudreq.ChunkStream = (*Stream)(nil)

// What is read after a stream's end marker: at most maxDrain bytes, for at
// most drainWait, of which Next waits drainSync.
const (
	maxDrain  = 64 << 10
	drainWait = 500 * time.Millisecond
	drainSync = 50 * time.Millisecond
)

// drainThenClose reads what follows a stream's end marker (the chunked
// terminator, at most a little trailing data), so that net/http can reuse
// the connection (closing an unread body closes it, and the next request
// would pay a new handshake), then closes the body. The terminator usually
// came with the marker, and the drain ends at once; Next waits for it up
// to drainSync, so that the connection is back in the pool when the
// stream ends. A server that holds the connection open after its marker
// must not hold the stream's end: the drain goes on apart, closing the
// body after drainWait at the latest, or when Close is called.
func (s *Stream) drainThenClose() {
	go func() {
		defer close(s.drained)
		t := time.AfterFunc(drainWait, s.closeBody)
		_, _ = io.CopyN(io.Discard, s.body, maxDrain)
		t.Stop()
		s.closeBody()
	}()
	t := time.NewTimer(drainSync)
	defer t.Stop()
	select {
	case <-s.drained:
	case <-t.C:
	}
}

// closeBody closes the body, once.
func (s *Stream) closeBody() { s.closeOnce.Do(func() { _ = s.body.Close() }) }

// NewStream returns a Stream reading body, whose head is what the response
// headers said.
func NewStream(head *cloudreq.CloudResponse, body io.ReadCloser, cfg StreamConfig) *Stream {
	if head == nil {
		head = &cloudreq.CloudResponse{}
	}
	s := &Stream{head: head, body: body, cfg: cfg, drained: make(chan struct{})}
	switch cfg.Framing {
	case FramingSSE:
		r := sse.NewReader(body, sse.Limits{MaxLine: cfg.MaxFrame, MaxEvent: cfg.MaxFrame})
		s.frame = func() ([]byte, error) {
			ev, err := r.Next()
			return ev.Data, err
		}
	case FramingNUL:
		s.frame = sse.NewNULReader(body, cfg.MaxFrame).Next
	case FramingRaw:
		s.frame = s.rawFrame
		if strings.Contains(strings.ToLower(head.ContentType), "html") {
			// An HTML page is a proxy's or a portal's answer, never a
			// model's stream: fail rather than pass it on as text.
			s.frame = func() ([]byte, error) { return nil, errHTMLStream }
		}
	default:
		done := false
		s.frame = func() ([]byte, error) {
			if done {
				return nil, io.EOF
			}
			done = true
			b, cut, err := ReadLimited(body, int64(cfg.MaxFrame))
			if err != nil {
				return nil, err
			}
			if cut {
				return nil, sse.ErrEventTooLarge
			}
			if len(b) == 0 {
				return nil, io.EOF
			}
			return b, nil
		}
	}
	return s
}

func (s *Stream) rawFrame() ([]byte, error) {
	if s.rerr != nil {
		return nil, s.rerr
	}
	if s.raw == nil {
		s.raw = make([]byte, rawReadSize)
	}
	for range 100 {
		n, err := s.body.Read(s.raw)
		if n > 0 {
			s.rerr = err
			return s.raw[:n], nil
		}
		if err != nil {
			return nil, err
		}
	}
	return nil, io.ErrNoProgress
}

// Response implements cloudreq.ChunkStream.
func (s *Stream) Response() *cloudreq.CloudResponse { return s.head }

// Next implements cloudreq.ChunkStream.
func (s *Stream) Next() (cloudreq.StreamChunk, error) {
	if s.err != nil {
		return cloudreq.StreamChunk{}, s.err
	}
	if s.closed.Load() {
		return cloudreq.StreamChunk{}, s.fail(s.closedError(nil))
	}
	frame, err := s.frame()
	if err != nil {
		return cloudreq.StreamChunk{}, s.fail(s.endError(err))
	}
	ch, end, err := s.cfg.Decoder.Decode(frame)
	if err != nil {
		return cloudreq.StreamChunk{}, s.fail(err)
	}
	if end {
		s.err = io.EOF
		s.endOnce.Do(s.drainThenClose)
		return cloudreq.StreamChunk{}, io.EOF
	}
	ch.Data = frame
	return ch, nil
}

// fail ends the stream with err and releases the connection.
func (s *Stream) fail(err error) error {
	var e *errcodes.Error
	if errors.As(err, &e) {
		if e.Provider == "" {
			e.Provider = s.cfg.Provider
		}
		if e.RequestID == "" {
			e.RequestID = s.head.RequestID
		}
	}
	s.err = err
	_ = s.Close()
	return err
}

// closedError is the error of a read that Close ended or came after:
// ERR_CANCELED, as the caller gave up on the stream.
func (s *Stream) closedError(err error) error {
	e := errcodes.Wrap(err, errcodes.Canceled, "stream closed")
	e.Provider = s.cfg.Provider
	return e
}

// endError maps the error that ended reading.
func (s *Stream) endError(err error) error {
	if s.closed.Load() {
		// A clean end that Close raced stays one; any other end is Close's.
		if errors.Is(err, io.EOF) && s.cfg.Decoder.Complete() == nil {
			return io.EOF
		}
		return s.closedError(err)
	}
	switch {
	case errors.Is(err, io.EOF):
		if c := s.cfg.Decoder.Complete(); c != nil {
			return c
		}
		return io.EOF
	case errors.Is(err, io.ErrUnexpectedEOF):
		// A body cut inside a chunk, or an SSE stream ended inside an event.
		return Interrupted(s.cfg.Provider, "stream ended before its end (truncated)", err)
	case errors.Is(err, errHTMLStream):
		// Found before the first frame: a 2xx answer that is no stream.
		return Malformed(s.cfg.Provider, errHTMLStream.Error(), nil)
	case errors.Is(err, sse.ErrLineTooLong), errors.Is(err, sse.ErrEventTooLarge):
		e := errcodes.Wrap(err, errcodes.PayloadTooLarge, "stream frame too large: "+err.Error())
		e.Provider = s.cfg.Provider
		return e
	}
	e := errcodes.FromTransport(err)
	if e.Provider == "" {
		e.Provider = s.cfg.Provider
	}
	if e.Code == errcodes.Canceled || e.Code == errcodes.Timeout {
		return e
	}
	return Interrupted(s.cfg.Provider, "stream broke: "+e.Message, err)
}

// Close implements cloudreq.ChunkStream. It closes the body, which ends
// a blocked Next and a drain still running after the end marker, and
// returns once the drain's goroutine has ended.
func (s *Stream) Close() error {
	s.closed.Store(true)
	s.endOnce.Do(func() { close(s.drained) })
	s.closeBody()
	<-s.drained
	return nil
}

// Interrupted returns an ERR_STREAM_INTERRUPTED error. It is retryable:
// the client retries it only while no chunk has reached the caller.
func Interrupted(provider, msg string, cause error) *errcodes.Error {
	e := errcodes.Wrap(cause, errcodes.StreamInterrupted, msg)
	e.Provider = provider
	e.Retryable = true
	return e
}

// Malformed returns the error of a successful answer whose body (or the
// first frame of its stream) does not parse as the protocol's answer:
// ERR_MODEL_ERROR, not retryable. The server answered, wrongly: the same
// request would get the same answer. msg names what was expected; cause is
// the parse error. The caller sets HTTPStatus and RequestID. After content
// reached the caller a frame that does not parse interrupts the stream
// instead (Interrupted).
func Malformed(provider, msg string, cause error) *errcodes.Error {
	if cause != nil {
		msg += ": " + cause.Error()
	}
	e := errcodes.Wrap(cause, errcodes.ModelError, msg)
	e.Provider = provider
	e.Retryable = false
	return e
}

// TextDecoder yields each frame as text; any end of the body is clean.
type TextDecoder struct{}

// Decode implements Decoder.
func (TextDecoder) Decode(frame []byte) (cloudreq.StreamChunk, bool, error) {
	return cloudreq.StreamChunk{Text: string(frame), Content: len(frame) > 0}, false, nil
}

// Complete implements Decoder.
func (TextDecoder) Complete() error { return nil }
