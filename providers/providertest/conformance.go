package providertest

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
)

// Endpoint is the built-in emulator endpoint the suite talks to.
const Endpoint = "llama-3-8b"

// Harness tells the suite how to reach one adapter.
type Harness struct {
	// Provider and Service of the adapter under test.
	Provider, Service string
	// NewAdapter returns the adapter configured to talk to srv.
	NewAdapter func(t *testing.T, srv *emulator.Server) cloudreq.Adapter
	// Target returns the request target for a built-in emulator endpoint.
	Target func(endpoint string) cloudreq.Target
	// InvokeBody is a valid ActionInvoke payload for the endpoint's LLM
	// dialect on this provider; ContentType is its media type (default
	// application/json). Attributes, when set, are sent with every request.
	InvokeBody  []byte
	ContentType string
	Attributes  cloudreq.Attributes
	// StreamInvoke says whether the adapter streams ActionInvoke too; it
	// needs InvokeStreamBody when the streaming body differs.
	StreamInvoke     bool
	InvokeStreamBody []byte
	// Errors maps emulator faults to the code the adapter must return. A
	// fault the provider cannot produce is simply left out.
	Errors map[emulator.Fault]errcodes.Code
	// TimeScale for the emulator (default 0.01).
	TimeScale float64
	// StreamErrorFirst is the code of the in-band error the provider's
	// stream carries first under emulator.FaultStreamErrorFirst (default
	// errcodes.Throttled: a rate-limit error). It is never
	// ERR_STREAM_INTERRUPTED: no content reached the caller.
	StreamErrorFirst errcodes.Code
	// NoCredentials, when set, builds the adapter as a caller would with no
	// credentials anywhere (options and environment empty). Either it fails
	// or the call does, with ERR_UNAUTHENTICATED. Providers that need no
	// credential (an OpenAI-compatible server without a key) leave it nil.
	NoCredentials func(t *testing.T, srv *emulator.Server) (cloudreq.Adapter, error)
	// Features says which features of the richer generate input the
	// dialect expresses (true: checked end to end) or refuses (false:
	// checked refused with ERR_INVALID_PARAM naming Dialect); a feature
	// left out is not checked.
	Features map[Feature]bool
	// HidesThoughts says the dialect sends reasoning text only when
	// Reasoning.IncludeThoughts is set (Gemini's includeThoughts):
	// FeatureReasoning then checks too that without it no reasoning text
	// comes, while usage still counts the reasoning tokens.
	HidesThoughts bool
	// Dialect is the dialect's name, as its refusals give it.
	Dialect string
}

// CommonErrors is the fault → code table that holds for every provider;
// a harness adds or overrides provider-specific rows.
func CommonErrors() map[emulator.Fault]errcodes.Code {
	return map[emulator.Fault]errcodes.Code{
		emulator.FaultThrottle:        errcodes.Throttled,
		emulator.FaultModelNotReady:   errcodes.ModelNotReady,
		emulator.FaultInvalid:         errcodes.InvalidParam,
		emulator.FaultNotFound:        errcodes.NotFound,
		emulator.FaultUnauthenticated: errcodes.Unauthenticated,
		emulator.FaultForbidden:       errcodes.PermissionDenied,
		emulator.FaultInternal:        errcodes.Internal,
		emulator.FaultUnavailable:     errcodes.Unavailable,
		emulator.FaultTimeout:         errcodes.Timeout,
		emulator.FaultPayloadTooLarge: errcodes.PayloadTooLarge,
		emulator.FaultStreamError:     errcodes.StreamInterrupted,
		emulator.FaultCloseMidStream:  errcodes.StreamInterrupted,
	}
}

// Contract is the cross-provider error contract: the same situation gets
// the same code, and the same retryability, on every provider. Each row is
// asserted for every adapter by RunConformance ("Contract"); no harness can
// override it. Stream says whether the situation is met by Client.Stream.
type Contract struct {
	Situation string
	Fault     emulator.Fault
	Stream    bool
	Code      errcodes.Code
	Retryable bool
}

// Contracts lists the rows of the cross-provider contract, in the order of
// the README's table. The in-band error before any content
// (emulator.FaultStreamErrorFirst) and missing credentials are checked
// too, from Harness.StreamErrorFirst and Harness.NoCredentials.
func Contracts() []Contract {
	return []Contract{
		{"a 2xx body that does not parse", emulator.FaultMalformedBody, false, errcodes.ModelError, false},
		{"a stream chunk that does not parse, after content", emulator.FaultMalformedBody, true, errcodes.StreamInterrupted, false},
		{"an in-band error after content", emulator.FaultStreamError, true, errcodes.StreamInterrupted, false},
		{"the connection closed after content", emulator.FaultCloseMidStream, true, errcodes.StreamInterrupted, false},
		{"the model container answered 429 (overloaded)", emulator.FaultModelOverloaded, false, errcodes.Throttled, true},
		{"the model container answered 503", emulator.FaultModelUnavailable, false, errcodes.Unavailable, true},
		{"a fronting proxy's transient 503", emulator.FaultGatewayOverflow, false, errcodes.Unavailable, true},
	}
}

type env struct {
	h      Harness
	srv    *emulator.Server
	client *cloudreq.Client
}

// RunConformance runs the suite against a fresh emulator.
func RunConformance(t *testing.T, h Harness) {
	t.Helper()
	e := newEnv(t, h)
	t.Run("Invoke", e.invoke)
	t.Run("Generate", e.generate)
	t.Run("StreamGenerate", e.streamGenerate)
	if h.StreamInvoke {
		t.Run("StreamInvoke", e.streamInvoke)
	}
	t.Run("Errors", e.errors)
	t.Run("Contract", e.contract)
	t.Run("CancelMidStream", e.cancelMidStream)
	t.Run("ColdStart", e.coldStart)
	t.Run("Unsupported", e.unsupported)
	if h.Features != nil {
		t.Run("Features", e.features)
	}
}

// RunFeatures runs only the suite's "Features" checks, for a further
// generate dialect of an adapter whose transport RunConformance checks
// already (OpenAI completions, PAI-EAS legacy, Azure ML input_data). It
// needs NewAdapter, Target, Provider, Service, Dialect and Features.
func RunFeatures(t *testing.T, h Harness) {
	t.Helper()
	t.Run("Features", newEnv(t, h).features)
}

func newEnv(t *testing.T, h Harness) *env {
	t.Helper()
	scale := h.TimeScale
	if scale == 0 {
		scale = 0.01
	}
	srv, err := emulator.New(emulator.Options{TimeScale: scale, Seed: 7})
	require.NoError(t, err)
	require.NoError(t, srv.Start("127.0.0.1:0", "127.0.0.1:0"))
	t.Cleanup(func() { _ = srv.Close() })
	ad := h.NewAdapter(t, srv)
	client, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}},
		func(o *cloudreq.Options) { o.Retry.MaxAttempts, o.Retry.ColdStartWait = 1, -1 }, // one attempt, not-ready ones too
		emulator.WithStartReport())
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	return &env{h: h, srv: srv, client: client}
}

func (e *env) request(action string) *cloudreq.CloudRequest {
	r := &cloudreq.CloudRequest{
		Provider: e.h.Provider, Service: e.h.Service, Action: action,
		Target: e.h.Target(Endpoint), Attributes: e.h.Attributes, Header: http.Header{},
	}
	switch action {
	case cloudreq.ActionInvoke:
		ct := e.h.ContentType
		if ct == "" {
			ct = "application/json"
		}
		r.Payload = cloudreq.Payload{Body: e.h.InvokeBody, ContentType: ct}
	case cloudreq.ActionGenerate:
		r.Generate = &cloudreq.GenerateInput{
			Messages:  []cloudreq.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Say hello."}},
			MaxTokens: 16,
		}
	}
	return r
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func checkTiming(t *testing.T, tl *latency.Timeline) {
	t.Helper()
	require.NotNil(t, tl, "Timing filled")
	require.NotEmpty(t, tl.Attempts)
	a := tl.LastAttempt()
	assert.False(t, a.Send.IsZero(), "attempt send time")
	assert.False(t, a.FirstByte.IsZero(), "first byte time")
	assert.True(t, tl.End.After(a.Send), "end after send")
	require.NotEmpty(t, tl.Chunks)
}

func (e *env) invoke(t *testing.T) {
	resp, err := e.client.Invoke(ctx(t), e.request(cloudreq.ActionInvoke))
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
	assert.NotEmpty(t, resp.Data)
	checkTiming(t, resp.Timing)
}

func (e *env) generate(t *testing.T) {
	resp, err := e.client.Invoke(ctx(t), e.request(cloudreq.ActionGenerate))
	require.NoError(t, err)
	assert.NotEmpty(t, resp.Text, "generated text")
	assert.NotEmpty(t, resp.FinishReason, "finish reason")
	assert.Positive(t, resp.Usage.OutputTokens, "usage filled")
	assert.LessOrEqual(t, resp.Usage.OutputTokens, 16, "max tokens honoured")
	checkTiming(t, resp.Timing)
}

func (e *env) streamGenerate(t *testing.T) {
	s, err := e.client.Stream(ctx(t), e.request(cloudreq.ActionGenerate))
	require.NoError(t, err)
	defer s.Close()
	var text string
	content := 0
	for s.Next() {
		c := s.Chunk()
		text += c.Text
		if c.Content {
			content++
		}
	}
	require.NoError(t, s.Err())
	assert.NotEmpty(t, text)
	assert.Positive(t, content)
	resp := s.Response()
	require.NotNil(t, resp)
	assert.Positive(t, resp.Usage.OutputTokens)
	assert.NotEmpty(t, resp.FinishReason)
	checkTiming(t, resp.Timing)
	assert.True(t, resp.Timing.Streamed)
}

func (e *env) streamInvoke(t *testing.T) {
	r := e.request(cloudreq.ActionInvoke)
	if e.h.InvokeStreamBody != nil {
		r.Payload.Body = e.h.InvokeStreamBody
	}
	s, err := e.client.Stream(ctx(t), r)
	require.NoError(t, err)
	defer s.Close()
	n := 0
	for s.Next() {
		if len(s.Chunk().Data) > 0 {
			n++
		}
	}
	require.NoError(t, s.Err())
	assert.Positive(t, n, "raw chunks arrive")
	checkTiming(t, s.Response().Timing)
}

// fail sends a generate request with fault injected, by Stream or Invoke,
// drains it, and returns how many content chunks arrived and its error.
func (e *env) fail(t *testing.T, fault emulator.Fault, stream bool) (int, error) {
	t.Helper()
	r := e.request(cloudreq.ActionGenerate)
	r.Header.Set(emulator.HeaderInject, string(fault))
	if !stream {
		_, err := e.client.Invoke(ctx(t), r)
		return 0, err
	}
	s, err := e.client.Stream(ctx(t), r)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	content := 0
	for s.Next() {
		if s.Chunk().Content {
			content++
		}
	}
	return content, s.Err()
}

// checkCode asserts err carries want, the harness's provider and the
// code's retryability.
func (e *env) checkCode(t *testing.T, err error, want errcodes.Code, retryable bool, what string) *errcodes.Error {
	t.Helper()
	require.Error(t, err, "%s must fail", what)
	assert.Equal(t, want, errcodes.Of(err), "%s: %v", what, err)
	var ce *errcodes.Error
	require.True(t, errors.As(err, &ce), "%s: %T is no *errcodes.Error", what, err)
	assert.Equal(t, e.h.Provider, ce.Provider, what)
	assert.Equal(t, retryable, ce.Retryable, "%s: Retryable (%v)", what, err)
	return ce
}

func (e *env) errors(t *testing.T) {
	streaming := map[emulator.Fault]bool{
		emulator.FaultStreamError: true, emulator.FaultCloseMidStream: true, emulator.FaultStallMidStream: true,
		emulator.FaultStreamErrorFirst: true,
	}
	for fault, want := range e.h.Errors {
		t.Run(string(fault), func(t *testing.T) {
			_, err := e.fail(t, fault, streaming[fault])
			e.checkCode(t, err, want, want.Retryable(), "fault "+string(fault))
		})
	}
}

func (e *env) contract(t *testing.T) {
	for _, c := range Contracts() {
		mode := "invoke"
		if c.Stream {
			mode = "stream"
		}
		t.Run(string(c.Fault)+"/"+mode, func(t *testing.T) {
			_, err := e.fail(t, c.Fault, c.Stream)
			ce := e.checkCode(t, err, c.Code, c.Retryable, c.Situation)
			if c.Fault == emulator.FaultStreamError && ce != nil {
				assert.NotEmpty(t, ce.Details["code"], "%s: the in-band error's own code is kept in Details[\"code\"]", c.Situation)
			}
		})
	}
	t.Run(string(emulator.FaultStreamErrorFirst), func(t *testing.T) {
		want := e.h.StreamErrorFirst
		if want == "" {
			want = errcodes.Throttled
		}
		content, err := e.fail(t, emulator.FaultStreamErrorFirst, true)
		assert.Zero(t, content, "no content before the in-band error")
		assert.NotEqual(t, errcodes.StreamInterrupted, errcodes.Of(err), "an error before any content is the whole answer")
		e.checkCode(t, err, want, want.Retryable(), "an in-band error before any content")
	})
	if e.h.NoCredentials != nil {
		t.Run("no-credentials", func(t *testing.T) {
			ad, err := e.h.NoCredentials(t, e.srv)
			if err == nil {
				client, cerr := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}},
					func(o *cloudreq.Options) { o.Retry.MaxAttempts = 1 })
				require.NoError(t, cerr)
				defer client.Close()
				_, err = client.Invoke(ctx(t), e.request(cloudreq.ActionGenerate))
			}
			e.checkCode(t, err, errcodes.Unauthenticated, false, "no credentials found")
		})
	}
}

func (e *env) cancelMidStream(t *testing.T) {
	c, cancel := context.WithCancel(ctx(t))
	defer cancel()
	r := e.request(cloudreq.ActionGenerate)
	r.Generate.MaxTokens = 200
	s, err := e.client.Stream(c, r)
	require.NoError(t, err)
	defer s.Close()
	got := 0
	for s.Next() {
		if s.Chunk().Content {
			got++
			if got == 2 {
				cancel()
			}
		}
	}
	assert.Equal(t, errcodes.Canceled, errcodes.Of(s.Err()), "%v", s.Err())
	assert.GreaterOrEqual(t, got, 2)
}

// coldStart checks that the adapter hands on the response's headers
// (CloudResponse.Header, a stream's at open) and that the emulator's
// report in them, read by its StartReport hook, decides the start.
func (e *env) coldStart(t *testing.T) {
	r := e.request(cloudreq.ActionGenerate)
	r.Header.Set(emulator.HeaderCold, "1")
	resp, err := e.client.Invoke(ctx(t), r)
	require.NoError(t, err)
	assert.Equal(t, "true", resp.Header.Get(emulator.HeaderColdStart), "the response's headers")
	assert.Equal(t, latency.Cold, resp.Start.Kind)
	assert.Equal(t, latency.ReasonServerReported, resp.Start.Reason)
	assert.Positive(t, resp.Start.Overhead)

	resp, err = e.client.Invoke(ctx(t), e.request(cloudreq.ActionGenerate))
	require.NoError(t, err)
	assert.Equal(t, latency.Warm, resp.Start.Kind)

	s, err := e.client.Stream(ctx(t), e.request(cloudreq.ActionGenerate))
	require.NoError(t, err)
	defer s.Close()
	for s.Next() {
	}
	require.NoError(t, s.Err())
	resp = s.Response()
	assert.Equal(t, "false", resp.Header.Get(emulator.HeaderColdStart), "the stream's headers")
	assert.Equal(t, latency.Warm, resp.Start.Kind)
	assert.Equal(t, latency.ReasonServerReported, resp.Start.Reason, "a stream's start is the server's word too")
}

func (e *env) unsupported(t *testing.T) {
	r := e.request(cloudreq.ActionGenerate)
	r.Action = "train"
	_, err := e.client.Invoke(ctx(t), r)
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
	assert.ErrorContains(t, err, e.h.Provider+"/"+e.h.Service)
}
