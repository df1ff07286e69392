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

type env struct {
	h      Harness
	srv    *emulator.Server
	client *cloudreq.Client
}

// RunConformance runs the suite against a fresh emulator.
func RunConformance(t *testing.T, h Harness) {
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
		func(o *cloudreq.Options) { o.Retry.MaxAttempts = 1 })
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	e := &env{h: h, srv: srv, client: client}

	t.Run("Invoke", e.invoke)
	t.Run("Generate", e.generate)
	t.Run("StreamGenerate", e.streamGenerate)
	if h.StreamInvoke {
		t.Run("StreamInvoke", e.streamInvoke)
	}
	t.Run("Errors", e.errors)
	t.Run("CancelMidStream", e.cancelMidStream)
	t.Run("ColdStart", e.coldStart)
	t.Run("Unsupported", e.unsupported)
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

func (e *env) errors(t *testing.T) {
	streaming := map[emulator.Fault]bool{
		emulator.FaultStreamError: true, emulator.FaultCloseMidStream: true, emulator.FaultStallMidStream: true,
	}
	for fault, want := range e.h.Errors {
		t.Run(string(fault), func(t *testing.T) {
			r := e.request(cloudreq.ActionGenerate)
			r.Header.Set(emulator.HeaderInject, string(fault))
			var err error
			if streaming[fault] {
				s, serr := e.client.Stream(ctx(t), r)
				if serr != nil {
					err = serr
				} else {
					for s.Next() {
					}
					err = s.Err()
					_ = s.Close()
				}
			} else {
				_, err = e.client.Invoke(ctx(t), r)
			}
			require.Error(t, err, "fault %s must fail", fault)
			assert.Equal(t, want, errcodes.Of(err), "fault %s: %v", fault, err)
			var ce *errcodes.Error
			require.True(t, errors.As(err, &ce))
			assert.Equal(t, e.h.Provider, ce.Provider)
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

func (e *env) coldStart(t *testing.T) {
	r := e.request(cloudreq.ActionGenerate)
	r.Header.Set(emulator.HeaderCold, "1")
	resp, err := e.client.Invoke(ctx(t), r)
	require.NoError(t, err)
	assert.Equal(t, latency.Cold, resp.Start.Kind)
	assert.Equal(t, latency.ReasonServerReported, resp.Start.Reason)
	assert.Positive(t, resp.Start.Overhead)

	resp, err = e.client.Invoke(ctx(t), e.request(cloudreq.ActionGenerate))
	require.NoError(t, err)
	assert.Equal(t, latency.Warm, resp.Start.Kind)
}

func (e *env) unsupported(t *testing.T) {
	r := e.request(cloudreq.ActionGenerate)
	r.Action = "train"
	_, err := e.client.Invoke(ctx(t), r)
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
	assert.ErrorContains(t, err, e.h.Provider+"/"+e.h.Service)
}
