package vertex

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
	"github.com/tidwall/gjson"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
)

// restStream is Stream over REST: streamGenerateContent?alt=sse (SSE
// events of GenerateContentResponse), serverStreamingPredict (Google's
// JSON-array stream of StreamingPredictResponse) or streamRawPredict (the
// model container's own stream, framed by its Content-Type). A stream
// answered in the other framing (a JSON array for alt=sse, SSE for an
// array) is read as it came.
func (a *Adapter) restStream(ctx context.Context, call *cloudreq.Call) (cloudreq.ChunkStream, error) {
	_, res, err := a.prepare(ctx, call)
	if err != nil {
		return nil, err
	}
	b, err := body(call)
	if err != nil {
		return nil, err
	}
	r := a.rest
	req := call.Request
	var method, query, accept string
	var dec frameDecoder
	switch {
	case serverStreaming(req):
		if _, e := decodeStreamingPredict(b, res.String()); e != nil {
			return nil, e
		}
		method, dec = MethodServerStreamingPredict, &sspDecoder{frames{what: "StreamingPredictResponse"}}
	case req.Action == cloudreq.ActionGenerate || rawGemini(req):
		method, query, accept = MethodStreamGenerateContent, "alt=sse", "text/event-stream"
		dec = &genDecoder{frames: frames{what: "GenerateContentResponse"}}
	default:
		method, dec = "streamRawPredict", &rawDecoder{frames: frames{what: "JSON event"}}
	}
	resp, err := r.do(ctx, call, res, method, query, accept, b)
	if err != nil {
		return nil, err
	}
	head := restHead(r.core.Head(resp))
	ct := head.ContentType
	if _, raw := dec.(*rawDecoder); !raw && !httpadapter.IsEventStream(ct) {
		return newArrayStream(head, resp.Body, dec, r.core.Limits().MaxEventBytes), nil
	}
	dec.setHead(head)
	return r.core.Stream(resp, func(*cloudreq.CloudResponse) (httpadapter.Framing, httpadapter.Decoder) {
		return httpadapter.FramingOf(ct), dec
	}), nil
}

// frameDecoder is an httpadapter.Decoder told the stream's head.
type frameDecoder interface {
	httpadapter.Decoder
	setHead(*cloudreq.CloudResponse)
	// badFrame is the error of a frame that does not parse.
	badFrame(err error) error
}

// frames counts a stream's messages and ends it on an error object or a
// frame that does not parse: before the first message the error is the
// answer's (an in-band refusal, or ERR_MODEL_ERROR for an answer that is
// not the method's), after it ERR_STREAM_INTERRUPTED, not retryable, as
// the gRPC path ends a stream.
type frames struct {
	head *cloudreq.CloudResponse
	n    int
	what string // the message the frames hold
}

func (f *frames) setHead(h *cloudreq.CloudResponse) { f.head = h }

// inBand ends the stream with an error object that came as a frame.
func (f *frames) inBand(e *errcodes.Error) error {
	if e.RequestID == "" {
		e.RequestID = f.head.RequestID
	}
	if f.n == 0 {
		return e
	}
	return interrupted(e, "vertex: stream ended with "+e.ProviderCode+" after "+strconv.Itoa(f.n)+" messages: "+e.Message)
}

// badFrame ends the stream with a frame that does not parse.
func (f *frames) badFrame(err error) error {
	if f.n == 0 {
		return malformed(f.head, f.what, err)
	}
	e := httpadapter.Interrupted(cloudreq.ProviderGCP, "vertex: malformed stream message after "+strconv.Itoa(f.n)+" messages: "+err.Error(), err)
	e.Retryable, e.RequestID = false, f.head.RequestID
	return e
}

// genDecoder reads streamGenerateContent frames as the gRPC stream reads
// its messages (chunkStream.genChunk).
type genDecoder struct {
	frames
	cs chunkStream
}

func (d *genDecoder) setHead(h *cloudreq.CloudResponse) {
	d.head = h
	d.cs.resp = h
	d.cs.cancel = func() {}
}

// richMarks are members whose frames the fast path leaves to protojson:
// the parts and fields it does not read (a function call, a thought or
// its signature, logprobs, thought tokens, prompt feedback) and errors.
var richMarks = [][]byte{[]byte(`"functionCall"`), []byte(`"thought`), []byte(`"logprobsResult"`),
	[]byte(`"thoughtsTokenCount"`), []byte(`"promptFeedback"`), []byte(`"error"`)}

// fast reads a text-only frame (one candidate's text parts, finish reason,
// usage) with one gjson pass, as streamRawPredict reads a Gemini event,
// for a fraction of protojson's cost: the chunk's arrival is stamped
// after the decoder returns. ok is false for any other frame.
func (d *genDecoder) fast(frame []byte) (cloudreq.StreamChunk, bool) {
	if !bytes.Contains(frame, []byte(`"candidates"`)) || bytes.Count(frame, []byte(`"content"`)) != 1 {
		// Not one candidate (several candidates' texts are joined).
		return cloudreq.StreamChunk{}, false
	}
	for _, m := range richMarks {
		if bytes.Contains(frame, m) {
			return cloudreq.StreamChunk{}, false
		}
	}
	rc := eventText(frame)
	if !rc.known {
		return cloudreq.StreamChunk{}, false // not JSON: protojson says why
	}
	if rc.usage != nil {
		rc.usage.Source = "server"
		if rc.usage.InputTokens == 0 && rc.usage.OutputTokens == 0 {
			rc.usage = nil
		}
	}
	if d.cs.resp.RequestID == "" {
		d.cs.resp.RequestID = gjson.GetBytes(frame, "responseId").String()
	}
	if rc.finish != "" {
		d.cs.finished = true
	}
	d.cs.chunks++
	return cloudreq.StreamChunk{Text: rc.text, FinishReason: rc.finish, Usage: rc.usage}, true
}

// Decode implements httpadapter.Decoder.
func (d *genDecoder) Decode(frame []byte) (cloudreq.StreamChunk, bool, error) {
	if ch, ok := d.fast(frame); ok {
		d.n++
		return ch, false, nil
	}
	m := &aiplatformpb.GenerateContentResponse{}
	if err := protoIn.Unmarshal(frame, m); err != nil {
		if e, ok := inBandError(frame); ok {
			return cloudreq.StreamChunk{}, false, d.inBand(e)
		}
		return cloudreq.StreamChunk{}, false, d.badFrame(err)
	}
	if len(m.GetCandidates()) == 0 && m.GetUsageMetadata() == nil && m.GetPromptFeedback() == nil {
		if e, ok := inBandError(frame); ok {
			return cloudreq.StreamChunk{}, false, d.inBand(e)
		}
	}
	d.n++
	return d.cs.genFields(m), false, nil
}

// Complete implements httpadapter.Decoder: a generate stream ends with a
// finish reason.
func (d *genDecoder) Complete() error {
	if d.cs.finished {
		return nil
	}
	e := httpadapter.Interrupted(cloudreq.ProviderGCP, "vertex: stream ended after "+strconv.Itoa(d.n)+" messages without a finish reason", nil)
	e.RequestID = d.head.RequestID
	return e
}

// sspDecoder reads serverStreamingPredict frames.
type sspDecoder struct{ frames }

// Decode implements httpadapter.Decoder.
func (d *sspDecoder) Decode(frame []byte) (cloudreq.StreamChunk, bool, error) {
	m := &aiplatformpb.StreamingPredictResponse{}
	err := protoIn.Unmarshal(frame, m)
	if err != nil || len(m.GetOutputs()) == 0 {
		if e, ok := inBandError(frame); ok {
			return cloudreq.StreamChunk{}, false, d.inBand(e)
		}
	}
	if err != nil {
		return cloudreq.StreamChunk{}, false, d.badFrame(err)
	}
	d.n++
	text := tensorText(m)
	return cloudreq.StreamChunk{Text: text, Content: text != ""}, false, nil
}

// Complete implements httpadapter.Decoder: the end of the body is the
// stream's end (it has no finish marker).
func (d *sspDecoder) Complete() error { return nil }

// rawDecoder reads the container's stream of streamRawPredict as the gRPC
// path reads its HttpBody messages (rawText), with the container's own
// in-band error objects and its [DONE].
type rawDecoder struct {
	frames
	known, done bool
}

// Decode implements httpadapter.Decoder.
func (d *rawDecoder) Decode(frame []byte) (cloudreq.StreamChunk, bool, error) {
	t := bytes.TrimSpace(frame)
	if string(t) == "[DONE]" {
		return cloudreq.StreamChunk{}, true, nil
	}
	if len(t) > 0 && t[0] == '{' {
		if !json.Valid(t) {
			return cloudreq.StreamChunk{}, false, d.badFrame(errors.New("invalid JSON"))
		}
		if e, ok := inBandError(t); ok {
			return cloudreq.StreamChunk{}, false, d.inBand(e)
		}
	}
	d.n++
	rc := rawText(frame)
	d.known = d.known || rc.known
	if rc.finish != "" {
		d.done = true
	}
	return cloudreq.StreamChunk{Text: rc.text, Content: rc.content(frame), FinishReason: rc.finish, Usage: rc.usage}, false, nil
}

// Complete implements httpadapter.Decoder: a stream in a known dialect
// ends with [DONE] or a finish reason; another ends with its body.
func (d *rawDecoder) Complete() error {
	if !d.known || d.done {
		return nil
	}
	e := httpadapter.Interrupted(cloudreq.ProviderGCP, "vertex: stream ended after "+strconv.Itoa(d.n)+" events without [DONE] or a finish reason", nil)
	e.RequestID = d.head.RequestID
	return e
}

// arrayStream reads Google's JSON-array stream, `[{…}\n,\r\n{…}]`: each
// element is a frame, handed to the decoder as it is complete.
type arrayStream struct {
	head    *cloudreq.CloudResponse
	body    io.ReadCloser
	lim     *frameLimit
	js      *json.Decoder
	dec     frameDecoder
	started bool
	err     error

	closed atomic.Bool
	once   sync.Once
}

// frameLimit bounds what one element may read.
type frameLimit struct {
	r    io.Reader
	left int
	max  int
}

// errFrameTooLarge ends a stream whose element exceeds the bound.
var errFrameTooLarge = errors.New("stream message exceeds the bound")

func (l *frameLimit) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errFrameTooLarge
	}
	if len(p) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= n
	return n, err
}

func newArrayStream(head *cloudreq.CloudResponse, body io.ReadCloser, dec frameDecoder, maxFrame int) *arrayStream {
	l := &frameLimit{r: body, max: maxFrame + 4096, left: maxFrame + 4096}
	dec.setHead(head)
	return &arrayStream{head: head, body: body, lim: l, js: json.NewDecoder(l), dec: dec}
}

// Response implements cloudreq.ChunkStream.
func (s *arrayStream) Response() *cloudreq.CloudResponse { return s.head }

// frame returns the next element, io.EOF after the closing bracket.
func (s *arrayStream) frame() ([]byte, error) {
	s.lim.left = s.lim.max
	if !s.started {
		tok, err := s.js.Token()
		if errors.Is(err, io.EOF) {
			return nil, io.ErrUnexpectedEOF // an empty body: no stream at all
		}
		if err != nil {
			return nil, err
		}
		if d, ok := tok.(json.Delim); !ok || d != '[' {
			return nil, &json.SyntaxError{Offset: s.js.InputOffset()}
		}
		s.started = true
	}
	if !s.js.More() {
		tok, err := s.js.Token()
		if d, ok := tok.(json.Delim); err == nil && ok && d == ']' {
			return nil, io.EOF
		}
		if err == nil || errors.Is(err, io.EOF) {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	var raw json.RawMessage
	if err := s.js.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return raw, nil
}

// Next implements cloudreq.ChunkStream.
func (s *arrayStream) Next() (cloudreq.StreamChunk, error) {
	if s.err != nil {
		return cloudreq.StreamChunk{}, s.err
	}
	if s.closed.Load() {
		return cloudreq.StreamChunk{}, s.fail(s.canceled(nil))
	}
	f, err := s.frame()
	if err != nil {
		return cloudreq.StreamChunk{}, s.fail(s.endError(err))
	}
	ch, end, err := s.dec.Decode(f)
	if err != nil {
		return cloudreq.StreamChunk{}, s.fail(err)
	}
	if end {
		return cloudreq.StreamChunk{}, s.fail(io.EOF)
	}
	ch.Data = f
	return ch, nil
}

func (s *arrayStream) canceled(err error) error {
	e := errcodes.Wrap(err, errcodes.Canceled, "vertex: stream closed")
	e.Provider = cloudreq.ProviderGCP
	return e
}

// endError maps what ended the reading of the array.
func (s *arrayStream) endError(err error) error {
	var syn *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF):
		if c := s.dec.Complete(); c != nil {
			return c
		}
		return io.EOF
	case s.closed.Load():
		return s.canceled(err)
	case errors.As(err, &syn):
		// Not JSON: a message that does not parse.
		return s.dec.badFrame(err)
	case errors.Is(err, errFrameTooLarge):
		e := errcodes.Wrap(err, errcodes.PayloadTooLarge, "vertex: "+err.Error())
		e.Provider = cloudreq.ProviderGCP
		return e
	case errors.Is(err, io.ErrUnexpectedEOF):
		return httpadapter.Interrupted(cloudreq.ProviderGCP, "vertex: stream ended before its end (truncated)", err)
	}
	e := errcodes.FromTransport(err)
	if e.Provider == "" {
		e.Provider = cloudreq.ProviderGCP
	}
	if e.Code == errcodes.Canceled || e.Code == errcodes.Timeout {
		return e
	}
	return httpadapter.Interrupted(cloudreq.ProviderGCP, "vertex: stream broke: "+e.Message, err)
}

// fail ends the stream with err and closes the body.
func (s *arrayStream) fail(err error) error {
	var e *errcodes.Error
	if errors.As(err, &e) && e.RequestID == "" {
		e.RequestID = s.head.RequestID
	}
	s.err = err
	_ = s.Close()
	return err
}

// Close implements cloudreq.ChunkStream.
func (s *arrayStream) Close() error {
	s.closed.Store(true)
	s.once.Do(func() { _ = s.body.Close() })
	return nil
}
