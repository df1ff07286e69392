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
// An in-stream error object ends the stream with ERR_STREAM_INTERRUPTED,
// the server's code in ProviderCode and its portable class in
// Details["code"].
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
		e := httpadapter.Interrupted(d.Provider, "malformed stream chunk: "+err.Error(), err)
		e.RequestID = d.RequestID
		return cloudreq.StreamChunk{}, false, e
	}
	if r.Error != nil {
		return cloudreq.StreamChunk{}, false, d.inStream(*r.Error)
	}
	if r.FinishReason != "" {
		d.finished = true
	}
	return cloudreq.StreamChunk{Text: r.Text, Content: r.Content, FinishReason: r.FinishReason, Usage: r.Usage}, false, nil
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
	e := errcodes.Wrap(native, errcodes.StreamInterrupted, msg)
	e.Provider = d.Provider
	e.ProviderCode = eb.ProviderCode()
	e.RequestID = d.RequestID
	e.Retryable = class.Retryable()
	e.Details = map[string]string{"code": string(class)}
	return e
}
