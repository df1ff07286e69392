package openaiwire

import (
	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
)

// StreamDecoder decodes the events of an OpenAI-compatible SSE stream (or
// a whole JSON response standing in for one). It implements
// httpadapter.Decoder for one stream.
//
// The stream ends cleanly at "data: [DONE]", or at the body's end once a
// choice reported a finish_reason; any other end is ERR_STREAM_INTERRUPTED.
//
// An in-stream error object before any content (a role-only or usage-only
// chunk is not content) is the whole answer: it gets its own portable code
// (Class), as the same body would over HTTP, with that code's
// retryability. After content it ends the stream with
// ERR_STREAM_INTERRUPTED, not retryable, its portable code in
// Details["code"]. Either way the server's code is in ProviderCode. A
// chunk that does not parse is ERR_MODEL_ERROR before content (as a whole
// body that does not parse) and ERR_STREAM_INTERRUPTED after.
type StreamDecoder struct {
	// Provider and RequestID fill the errors it returns.
	Provider, RequestID string
	// Native wraps an in-stream error body into the provider's native
	// error type; nil keeps no native error.
	Native func(ErrorBody) error
	// Class gives the portable class of an in-stream error body, for a
	// provider with codes of its own; nil uses Classify(0, body).
	Class func(ErrorBody) errcodes.Code

	finished bool
	content  bool // a chunk with content was decoded
	dec      decoder
}

var _ httpadapter.Decoder = (*StreamDecoder)(nil)

// Decode implements httpadapter.Decoder.
func (d *StreamDecoder) Decode(frame []byte) (cloudreq.StreamChunk, bool, error) {
	if IsDone(frame) {
		return cloudreq.StreamChunk{}, true, nil
	}
	r, err := d.dec.decode(frame)
	if err != nil {
		var e *errcodes.Error
		if d.content {
			e = httpadapter.Interrupted(d.Provider, "malformed stream chunk: "+err.Error(), err)
			e.Retryable = false
		} else {
			e = httpadapter.Malformed(d.Provider, "the server's first chunk is not an OpenAI chunk", err)
		}
		e.RequestID = d.RequestID
		return cloudreq.StreamChunk{}, false, e
	}
	if r.Error != nil {
		return cloudreq.StreamChunk{}, false, d.inStream(*r.Error)
	}
	if r.FinishReason != "" {
		d.finished = true
	}
	if r.Content {
		d.content = true
	}
	return cloudreq.StreamChunk{
		Text: r.Text, Reasoning: r.Reasoning, ToolCallDeltas: r.ToolCalls, Logprobs: r.Logprobs,
		Content: r.Content, FinishReason: r.FinishReason, Usage: r.Usage,
	}, false, nil
}

// Complete implements httpadapter.Decoder.
func (d *StreamDecoder) Complete() error {
	if d.finished {
		return nil
	}
	e := httpadapter.Interrupted(d.Provider, "stream ended without [DONE] or a finish reason (truncated)", nil)
	e.RequestID = d.RequestID
	return e
}

func (d *StreamDecoder) inStream(eb ErrorBody) *errcodes.Error {
	var class errcodes.Code
	if d.Class != nil {
		class = d.Class(eb)
	} else {
		class = Classify(0, eb)
	}
	msg := eb.Message
	if msg == "" {
		msg = "the server reported an error mid-stream"
	}
	var native error
	if d.Native != nil {
		native = d.Native(eb)
	}
	if !d.content {
		// Nothing reached the caller: the error is the whole answer.
		e := errcodes.Wrap(native, class, msg)
		e.Provider = d.Provider
		e.ProviderCode = eb.ProviderCode()
		e.RequestID = d.RequestID
		return e
	}
	e := errcodes.Wrap(native, errcodes.StreamInterrupted, msg)
	e.Provider = d.Provider
	e.ProviderCode = eb.ProviderCode()
	e.RequestID = d.RequestID
	e.Retryable = false
	e.Details = map[string]string{"code": string(class)}
	return e
}
