package cloudreq

import (
	"bytes"
	"context"
	"io"
	"time"

	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
)

// Adapter is the driver boundary: what a provider package implements. An
// adapter only translates — request to wire, wire to CloudResponse, native
// error to *errcodes.Error. Hooks, retries, timeouts, timing and start
// classification live once, in Client; adapters must turn off their SDK's
// own retries.
//
// Optional capabilities are separate one-method interfaces: Streamer,
// Encoder, Validator, CredentialSource and io.Closer.
type Adapter interface {
	// Describe names the adapter's provider, service and actions.
	Describe() Description
	// Invoke performs one attempt of a non-streaming call. It returns an
	// *errcodes.Error for every failure it can classify; the client maps
	// anything else (transport and context errors) itself. ctx times the
	// attempt's HTTP requests (httptrace): an adapter must not use it, nor
	// leave a request running, once it returned.
	Invoke(ctx context.Context, call *Call) (*CloudResponse, error)
}

// Streamer is implemented by adapters that can stream responses.
type Streamer interface {
	// Stream performs one attempt of a streaming call. It returns once the
	// response headers arrived (or the attempt failed); the ChunkStream then
	// reads the body, and must release the connection when closed. As with
	// Invoke, ctx must not start requests once the attempt ended.
	Stream(ctx context.Context, call *Call) (ChunkStream, error)
}

// Validator is implemented by adapters that know which request fields their
// provider needs (SageMaker an endpoint name, say, where Target.Model alone
// names none). The client runs Validate once per call, after routing the
// request to the adapter and before its own checks and the PreValidate
// hooks, so that a request the adapter cannot send fails before anything is
// sent, with a message that names the field and the provider.
//
// An error is final: never retried, and ERR_INVALID_PARAM unless it is an
// *errcodes.Error with another code. Validate must not modify req, nor
// block or make a request.
type Validator interface {
	Validate(req *CloudRequest) error
}

// validateFor runs ad's Validate, if it is a Validator, and returns its
// error as the call's final error: of provider, never retryable.
func validateFor(ad Adapter, req *CloudRequest) *errcodes.Error {
	v, ok := ad.(Validator)
	if !ok {
		return nil
	}
	err := safely(func() error { return v.Validate(req) })
	if err == nil {
		return nil
	}
	e := normalizeWith(err, errcodes.InvalidParam, req.Provider)
	if e.Retryable {
		e = amend(e)
		e.Retryable = false
	}
	return e
}

// CredentialSource is implemented by adapters that know the credentials
// their requests carry. When an attempt fails, the client redacts each of
// them from the error, since a server may quote a credential back, and
// AttemptInfo.Scrub replaces them for observers. For an adapter without
// it, the client records instead the credential headers
// (CredentialHeaders) the HTTP transport writes, through httptrace: the
// same protection, at the cost of a few allocations per request.
type CredentialSource interface {
	// Credentials returns the secret values the adapter's requests may
	// carry: keys, tokens, session tokens. It is called after a failed
	// attempt and when an observer scrubs a value, and must neither block
	// nor make a request. Values shorter than eight bytes are not
	// redacted.
	Credentials() []string
}

// Encoder is implemented by adapters that serve ActionGenerate: it writes
// the provider's LLM dialect for req.Generate. It runs once per call, before
// the retry loop; the result is replayed on every attempt.
type Encoder interface {
	Encode(req *CloudRequest, stream bool) (Payload, error)
}

// ChunkStream is one attempt's open response stream, as an adapter yields it.
type ChunkStream interface {
	// Response returns what was known when the stream opened (status,
	// metadata, request id, server start signal). It is never nil.
	Response() *CloudResponse
	// Next returns the next chunk, io.EOF at a clean, complete end, or an
	// *errcodes.Error (ERR_STREAM_INTERRUPTED for a stream that broke or
	// ended without its end marker).
	Next() (StreamChunk, error)
	// Close releases the connection. It is safe to call at any point and
	// more than once, from any goroutine; called while Next is blocked, it
	// makes Next return.
	Close() error
}

// StreamChunk is one chunk of a streamed response.
type StreamChunk struct {
	// Data is the chunk's raw bytes as the provider framed them (an SSE data
	// field, an eventstream payload, a NUL-delimited JSON object, …). It is
	// only valid until the next call to Next.
	Data []byte
	// Text is the text delta this chunk carries, if the adapter parsed one.
	Text string
	// Reasoning is the reasoning-text delta this chunk carries, kept apart
	// from Text. A chunk with reasoning is content, timed as reasoning
	// (latency's TTFR) rather than answer (TTFT).
	Reasoning string
	// ToolCallDeltas are the tool-call fragments the chunk carries, as the
	// adapter parsed them.
	ToolCallDeltas []ToolCall
	// ToolCalls are the calls this chunk completed, whole: the client
	// assembles ToolCallDeltas across chunks and sets it on the chunk that
	// completes a call (the first fragment of the next call, or the chunk
	// that finishes the stream).
	ToolCalls []ToolCall
	// Logprobs are the chunk's tokens' log probabilities, when asked for.
	Logprobs []TokenLogprob
	// Tokens is the number of output tokens in the chunk, if known.
	Tokens int
	// Content is true when the chunk carries generated content. Role-only,
	// empty and usage-only chunks are not content. The client sets it when
	// Text is not empty.
	Content bool
	// FinishReason is set on the chunk that ends generation.
	FinishReason string
	// Usage is set on a chunk that reports token usage.
	Usage *Usage
	// At is when the chunk arrived; the client sets it.
	At time.Time
}

// Description names what an adapter serves.
type Description struct {
	// Provider and Service are the CloudRequest values the adapter serves
	// ("aws" and "sagemaker", say); a Client routes on the pair.
	Provider string
	Service  string
	// Actions lists the supported actions (ActionInvoke, ActionGenerate).
	Actions []string
}

// Call is one attempt of a request, as the client hands it to an adapter.
type Call struct {
	// Request is the request after the PreSerialize hooks. Adapters must not
	// modify it.
	Request *CloudRequest
	// Payload is the wire body: the request's Payload for ActionInvoke, or
	// what the adapter's Encoder wrote for ActionGenerate. The same bytes are
	// sent on every attempt; adapters must not modify them.
	Payload Payload
	// Attempt counts from 1.
	Attempt int
	// Trace receives phase times from transports that httptrace does not
	// see (gRPC). HTTP transports are traced through the context already.
	Trace *latency.AttemptTrace
}

// Body returns a reader over the payload: a fresh reader over Body on every
// attempt, or the one-shot Reader.
func (c *Call) Body() io.Reader {
	if c.Payload.Body == nil && c.Payload.Reader != nil {
		return c.Payload.Reader
	}
	return bytes.NewReader(c.Payload.Body)
}
