package sagemaker

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime/types"
	"github.com/aws/smithy-go"
	"github.com/tidwall/gjson"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// eventSource is the SDK's response event stream, as the chunk stream reads
// it (*sagemakerruntime.InvokeEndpointWithResponseStreamEventStream).
type eventSource interface {
	Events() <-chan types.ResponseStream
	Close() error
	Err() error
}

// bodyWatch wraps the HTTP response body under the SDK's event stream
// decoder and remembers how reading it failed. The decoder reports a body
// cut mid-message (io.ErrUnexpectedEOF) as a clean end of stream, and
// trusts each frame's length prefix (a frame claiming 4 GiB is buffered as
// it arrives); the watch follows the frame boundaries, so that a body that
// ends inside a frame, or a frame outside the protocol's bounds, fails the
// stream instead.
type bodyWatch struct {
	rc   io.ReadCloser
	mu   sync.Mutex
	err  error
	pre  [8]byte // the current frame's total and headers lengths, as read so far
	npre int
	left uint32 // bytes of the current frame still to come after its prefix
}

// Frame bounds: a 12-byte prelude and a 4-byte CRC at least; at most the
// protocol's 16 MiB payload and 128 KiB of headers.
const (
	minFrame = 16
	maxFrame = 16<<20 + 128<<10 + minFrame
)

// Read implements io.Reader.
func (w *bodyWatch) Read(p []byte) (int, error) {
	n, err := w.rc.Read(p)
	if ferr := w.frames(p[:n]); ferr != nil {
		err = ferr
	} else if err == io.EOF && (w.npre > 0 || w.left > 0) {
		err = io.ErrUnexpectedEOF
	}
	if err != nil && err != io.EOF {
		w.mu.Lock()
		if w.err == nil {
			w.err = err
		}
		w.mu.Unlock()
	}
	return n, err
}

// frames follows the frame boundaries through b, checking each frame's
// prelude lengths.
func (w *bodyWatch) frames(b []byte) error {
	for len(b) > 0 {
		if w.left > 0 {
			k := min(uint32(len(b)), w.left)
			w.left, b = w.left-k, b[k:]
			continue
		}
		k := copy(w.pre[w.npre:], b)
		w.npre, b = w.npre+k, b[k:]
		if w.npre == len(w.pre) {
			w.npre = 0
			total, headers := binary.BigEndian.Uint32(w.pre[:4]), binary.BigEndian.Uint32(w.pre[4:])
			if total < minFrame || total > maxFrame || headers > total-minFrame {
				return fmt.Errorf("an event stream frame of %d bytes with %d bytes of headers (allowed: %d to %d bytes)", total, headers, minFrame, maxFrame)
			}
			w.left = total - uint32(len(w.pre))
		}
	}
	return nil
}

// Close implements io.Closer.
func (w *bodyWatch) Close() error { return w.rc.Close() }

func (w *bodyWatch) failure() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// chunkStream is one attempt's response stream. For ActionInvoke it yields
// each PayloadPart's bytes; for ActionGenerate it reassembles the model's
// lines across parts and yields one chunk per chunk line (text delta,
// finish reason, usage).
type chunkStream struct {
	ctx      context.Context // the attempt's; ends a blocked Next
	src      eventSource
	events   <-chan types.ResponseStream
	watch    *bodyWatch
	head     *cloudreq.CloudResponse
	generate bool
	// logprobs is whether the request asked for logprobs: only then are a
	// TGI event's token logprob and top tokens read (TGI sends them in
	// every event).
	logprobs bool

	split lineSplitter
	// event holds a data field spread over several lines, joined so far;
	// nil when none is open.
	event    []byte
	usage    cloudreq.Usage
	complete bool  // a finish reason, [DONE] or final TGI event was seen
	yielded  bool  // a chunk was returned
	content  bool  // a chunk with content (text, or a part's bytes) was returned
	err      error // the terminal result, once known

	closed    atomic.Bool
	closeOnce sync.Once
}

var _ cloudreq.ChunkStream = (*chunkStream)(nil)

func newChunkStream(ctx context.Context, src eventSource, watch *bodyWatch, head *cloudreq.CloudResponse, generate bool) *chunkStream {
	return &chunkStream{ctx: ctx, src: src, events: src.Events(), watch: watch, head: head, generate: generate}
}

// Response implements cloudreq.ChunkStream.
func (s *chunkStream) Response() *cloudreq.CloudResponse { return s.head }

// Close implements cloudreq.ChunkStream: it closes the SDK's event stream,
// which closes the response body and ends the SDK's reader goroutines.
func (s *chunkStream) Close() error {
	s.closed.Store(true)
	s.closeOnce.Do(func() { _ = s.src.Close() })
	return nil
}

// Next implements cloudreq.ChunkStream. The loop ends when a chunk is
// ready, the event stream ends, or the context ends; each turn consumes a
// line or an event.
func (s *chunkStream) Next() (cloudreq.StreamChunk, error) {
	if s.err != nil {
		return cloudreq.StreamChunk{}, s.err
	}
	for {
		if s.closed.Load() {
			return s.fail(errcodes.New(errcodes.Canceled, "sagemaker: stream closed"))
		}
		if s.generate {
			if b, ok := s.split.next(); ok {
				if ch, ok, err := s.line(b); err != nil || ok {
					return ch, err
				}
				continue
			}
			if s.split.pending() > maxLine {
				return s.fail(errcodes.Errorf(errcodes.PayloadTooLarge, "sagemaker: a stream line is longer than %d bytes", maxLine))
			}
		}
		var ev types.ResponseStream
		var ok bool
		select {
		case ev, ok = <-s.events:
		case <-s.ctx.Done():
			return s.fail(s.contextError())
		}
		if !ok {
			return s.end()
		}
		p, isPart := ev.(*types.ResponseStreamMemberPayloadPart)
		if !isPart {
			continue // an event type this SDK version does not know
		}
		if !s.generate {
			s.yielded = true
			s.content = s.content || len(p.Value.Bytes) > 0
			return cloudreq.StreamChunk{Data: p.Value.Bytes, Content: len(p.Value.Bytes) > 0}, nil
		}
		s.split.push(p.Value.Bytes)
	}
}

// line turns one stream line into a chunk (true), nothing (false), or the
// stream's error.
func (s *chunkStream) line(b []byte) (cloudreq.StreamChunk, bool, error) {
	var l line
	if s.event != nil {
		t := bytes.TrimSpace(b)
		payload, isData := bytes.CutPrefix(t, dataPrefix)
		switch {
		case isData:
			s.event = append(append(s.event, '\n'), bytes.TrimSpace(payload)...)
			if len(s.event) > maxLine {
				_, err := s.fail(errcodes.Errorf(errcodes.PayloadTooLarge, "sagemaker: a stream data field is longer than %d bytes", maxLine))
				return cloudreq.StreamChunk{}, false, err
			}
			if !gjson.ValidBytes(s.event) {
				return cloudreq.StreamChunk{}, false, nil // more lines to come
			}
		case len(t) == 0:
			// The blank line ends the event, whole or not.
		default:
			return cloudreq.StreamChunk{}, false, nil // a comment or another field
		}
		ev := s.event
		s.event = nil
		if l = parseEvent(ev, true); l.kind == linePartial {
			l = malformedData(ev)
		}
	} else if l = parseLine(b); l.kind == linePartial {
		s.event = bytes.Clone(l.data) // the splitter reuses its buffer
		return cloudreq.StreamChunk{}, false, nil
	}
	switch l.kind {
	case lineDone:
		s.complete = true
	case lineError:
		e := errcodes.Wrap(l.err, l.err.Portable, "sagemaker: the model reported an error in its stream: "+l.err.Message)
		e.ProviderCode = l.err.Code
		_, err := s.fail(s.inband(e))
		return cloudreq.StreamChunk{}, false, err
	case lineChunk:
		if l.finish != "" || l.final {
			s.complete = true
		}
		ch := cloudreq.StreamChunk{Data: l.data, Text: l.text, Tokens: l.tokens, FinishReason: l.finish}
		richChunk(&ch, s.logprobs)
		if l.hasUsage {
			s.usage = cloudreq.Usage{InputTokens: l.input, OutputTokens: l.output, Source: "server"}
			ch.Usage = &s.usage
		}
		s.yielded = true
		s.content = s.content || ch.Text != ""
		return ch, true, nil
	}
	return cloudreq.StreamChunk{}, false, nil
}

// inband settles the code of an error the stream itself carried (an
// exception frame, or an error object in the model's stream), whose own
// code e holds. Before any content reached the caller it is the whole
// answer: e as it is (its code's retryability). After content it
// interrupted the answer: ERR_STREAM_INTERRUPTED, not retryable, with the
// error's own code in Details["code"].
func (s *chunkStream) inband(e *errcodes.Error) *errcodes.Error {
	if !s.content {
		return e
	}
	if e.Details == nil {
		e.Details = map[string]string{}
	}
	e.Details["code"] = string(e.Code)
	e.Code, e.Retryable = errcodes.StreamInterrupted, false
	return e
}

// end handles the end of the event stream: an in-stream exception, a body
// cut short, an unterminated last line, a truncated generation, or io.EOF.
func (s *chunkStream) end() (cloudreq.StreamChunk, error) {
	if s.closed.Load() {
		return s.fail(errcodes.New(errcodes.Canceled, "sagemaker: stream closed"))
	}
	if s.ctx.Err() != nil {
		return s.fail(s.contextError())
	}
	if err := s.src.Err(); err != nil {
		return s.fail(s.streamError(err))
	}
	if err := s.watch.failure(); err != nil {
		return s.fail(s.streamError(err))
	}
	if s.generate {
		if b, ok := s.split.flush(); ok {
			if ch, ok, err := s.line(b); err != nil || ok {
				return ch, err
			}
		}
		if s.event != nil {
			// The stream ended inside an event, which ends with it.
			if ch, ok, err := s.line(nil); err != nil || ok {
				return ch, err
			}
		}
		if !s.complete {
			return s.fail(errcodes.New(errcodes.StreamInterrupted,
				"sagemaker: the stream ended without a finish reason (truncated)"))
		}
	}
	s.err = io.EOF
	return cloudreq.StreamChunk{}, io.EOF
}

// streamError classifies an error that ended the event stream: a SageMaker
// exception event is mapped like any API error, then settled by inband; a
// transport failure before the first chunk keeps its (retryable) transport
// code, after it is an interruption.
func (s *chunkStream) streamError(err error) *errcodes.Error {
	if s.ctx.Err() != nil {
		return s.contextError()
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		e := mapError(err)
		if e.Code == errcodes.Unknown {
			// An error frame this adapter has no row for: the service's
			// own failure.
			e.Code, e.Retryable = errcodes.Internal, errcodes.Internal.Retryable()
		}
		return s.inband(e)
	}
	e := errcodes.FromTransport(err)
	if !s.yielded && e.Code == errcodes.Unknown {
		// Not a frame could be read: the 2xx answer is no event stream,
		// a body that does not parse (ERR_MODEL_ERROR, as on every provider).
		m := errcodes.Wrap(err, errcodes.ModelError, "sagemaker: the answer is not an event stream: "+err.Error())
		m.Retryable = false
		return m
	}
	if s.yielded || e.Code == errcodes.Unknown {
		msg := "sagemaker: the response stream broke"
		if e.Message != "" {
			msg += ": " + e.Message
		}
		return errcodes.Wrap(err, errcodes.StreamInterrupted, msg)
	}
	return e
}

func (s *chunkStream) contextError() *errcodes.Error {
	if e := errcodes.FromContext(s.ctx); e != nil {
		return e
	}
	return errcodes.New(errcodes.Canceled, "sagemaker: stream canceled")
}

// fail records e as the stream's terminal error. Nothing is retryable once
// a chunk reached the caller; before that, an interruption is.
func (s *chunkStream) fail(e *errcodes.Error) (cloudreq.StreamChunk, error) {
	if e.Provider == "" {
		e.Provider = cloudreq.ProviderAWS
	}
	if e.RequestID == "" {
		e.RequestID = s.head.RequestID
	}
	if s.yielded {
		e.Retryable = false
	} else if e.Code == errcodes.StreamInterrupted {
		e.Retryable = true
	}
	s.err = e
	return cloudreq.StreamChunk{}, e
}
