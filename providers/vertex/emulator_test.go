package vertex

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/googleapis/gax-go/v2/apierror"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
)

// startEmulator starts the emulator (HTTP and Vertex gRPC) on loopback and
// returns a client over an adapter dialing its gRPC listener.
func startEmulator(t *testing.T, fns ...func(*cloudreq.Options)) (*emulator.Server, *cloudreq.Client) {
	t.Helper()
	srv, err := emulator.New(emulator.Options{TimeScale: 0.01, Seed: 3})
	require.NoError(t, err)
	require.NoError(t, srv.Start("127.0.0.1:0", "127.0.0.1:0"))
	t.Cleanup(func() { _ = srv.Close() })
	ad, err := New(context.Background(), Options{Project: "p", Location: "us-central1", Endpoint: srv.GRPCAddr(), Insecure: true})
	require.NoError(t, err)
	o := cloudreq.Options{Adapters: []cloudreq.Adapter{ad}}
	o.Retry.BaseDelay, o.Retry.MaxDelay = time.Millisecond, 5*time.Millisecond
	for _, f := range fns {
		f(&o)
	}
	c, err := cloudreq.New(o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return srv, c
}

func emuGenerate(endpoint string) *cloudreq.CloudRequest {
	return &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderGCP, Service: cloudreq.ServiceVertex, Action: cloudreq.ActionGenerate,
		Target: cloudreq.Target{Endpoint: endpoint}, Header: http.Header{},
		Generate: &cloudreq.GenerateInput{
			Messages:  []cloudreq.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Say hello."}},
			MaxTokens: 12,
		},
	}
}

func emuInvoke(body string) *cloudreq.CloudRequest {
	return &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderGCP, Service: cloudreq.ServiceVertex, Action: cloudreq.ActionInvoke,
		Target: cloudreq.Target{Endpoint: "llama-3-8b"}, Header: http.Header{},
		Payload: cloudreq.Payload{Body: []byte(body)},
	}
}

const emuChatBody = `{"model":"llama-3-8b","messages":[{"role":"user","content":"Say hello."}],"max_tokens":12,"stream":true}`

func TestEmulatorPredict(t *testing.T) {
	_, c := startEmulator(t)
	resp, err := c.Invoke(context.Background(), emuInvoke(`{"instances":[{"prompt":"Say hello."},{"prompt":"And bye."}],"parameters":{"max_tokens":8}}`))
	require.NoError(t, err)
	var out struct {
		Predictions []string `json:"predictions"`
	}
	require.NoError(t, json.Unmarshal(resp.Data, &out))
	assert.Len(t, out.Predictions, 2)
	assert.NotEmpty(t, out.Predictions[0])
	assert.Equal(t, out.Predictions[0], resp.Text, "the first prediction's text")
	assert.NotEmpty(t, resp.Metadata[MetaDeployedModelID])
	assert.NotEmpty(t, resp.Metadata[MetaModelVersionID])
	assert.Equal(t, "llama-3-8b", resp.Metadata["x-vertex-ai-endpoint-id"])
}

func TestEmulatorRawPredict(t *testing.T) {
	_, c := startEmulator(t)
	body := strings.Replace(emuChatBody, `,"stream":true`, "", 1)
	resp, err := c.Invoke(context.Background(), emuInvoke(body))
	require.NoError(t, err)
	var out struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	require.NoError(t, json.Unmarshal(resp.Data, &out), string(resp.Data))
	require.Len(t, out.Choices, 1)
	assert.NotEmpty(t, out.Choices[0].Message.Content)
	assert.Equal(t, out.Choices[0].Message.Content, resp.Text)
	assert.Contains(t, []string{"stop", "length"}, resp.FinishReason)
	assert.Positive(t, resp.Usage.OutputTokens)
	assert.Equal(t, "application/json", resp.ContentType)
	assert.NotEmpty(t, resp.Metadata[MetaDeployedModelID])
}

func TestEmulatorGenerate(t *testing.T) {
	_, c := startEmulator(t)
	for _, target := range []cloudreq.Target{
		{Endpoint: "llama-3-8b"},
		{Endpoint: "projects/p/locations/us-central1/endpoints/llama-3-8b"},
		{Model: "llama-3-8b"}, // a publisher model of the same name
	} {
		req := emuGenerate("")
		req.Target = target
		resp, err := c.Invoke(context.Background(), req)
		require.NoError(t, err, "%+v", target)
		assert.NotEmpty(t, resp.Text)
		assert.Contains(t, []string{"stop", "length"}, resp.FinishReason)
		assert.Positive(t, resp.Usage.InputTokens)
		assert.Positive(t, resp.Usage.OutputTokens)
		assert.LessOrEqual(t, resp.Usage.OutputTokens, 12)
		assert.NotEmpty(t, resp.RequestID)
		a := resp.Timing.LastAttempt()
		assert.False(t, a.FirstByte.IsZero())
		assert.False(t, a.WroteRequest.IsZero())
	}
}

func TestEmulatorStreamGenerate(t *testing.T) {
	srv, c := startEmulator(t)
	s, err := c.Stream(context.Background(), emuGenerate("llama-3-8b"))
	require.NoError(t, err)
	defer s.Close()
	var text strings.Builder
	n := 0
	for s.Next() {
		text.WriteString(s.Chunk().Text)
		n++
		require.Less(t, n, 100)
	}
	require.NoError(t, s.Err())
	resp := s.Response()
	assert.NotEmpty(t, text.String())
	assert.Equal(t, resp.Usage.OutputTokens, n, "one message per token")
	assert.Equal(t, "server", resp.Usage.Source)
	assert.NotEmpty(t, resp.FinishReason)
	// The emulator's ground truth agrees with what the client measured.
	recs := srv.Records()
	require.NotEmpty(t, recs)
	last := recs[len(recs)-1]
	assert.Equal(t, n, last.OutputTokens)
	assert.Equal(t, last.ID, resp.RequestID, "the stream's responseId")
}

func TestEmulatorStreamRaw(t *testing.T) {
	_, c := startEmulator(t)
	s, err := c.Stream(context.Background(), emuInvoke(emuChatBody))
	require.NoError(t, err)
	defer s.Close()
	var text strings.Builder
	chunks := 0
	for s.Next() {
		text.WriteString(s.Chunk().Text)
		chunks++
		require.Less(t, chunks, 100)
	}
	require.NoError(t, s.Err())
	assert.NotEmpty(t, text.String(), "text extracted from the raw SSE chunks")
	assert.Contains(t, []string{"stop", "length"}, s.Response().FinishReason)
}

func TestEmulatorColdStart(t *testing.T) {
	_, c := startEmulator(t, emulator.WithStartReport())
	req := emuGenerate("llama-3-8b")
	req.Header.Set("X-Emulator-Cold", "1")
	resp, err := c.Invoke(context.Background(), req)
	require.NoError(t, err)
	require.NotNil(t, resp.ServerStart)
	assert.True(t, resp.ServerStart.Cold)
	assert.Positive(t, resp.ServerStart.Setup)
	assert.Equal(t, latency.Cold, resp.Start.Kind)
	assert.Equal(t, latency.ReasonServerReported, resp.Start.Reason)
}

// TestEmulatorFaults: the adapter's error for each emulator fault, as one
// attempt meets it (the client's retry loop, and its wait for a model that
// is not ready, stay out of it).
func TestEmulatorFaults(t *testing.T) {
	srv, _ := startEmulator(t)
	ad, err := New(context.Background(), Options{Project: "p", Location: "us-central1", Endpoint: srv.GRPCAddr(), Insecure: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ad.Close() })
	tests := []struct {
		fault  emulator.Fault
		stream bool
		want   errcodes.Code
	}{
		{emulator.FaultThrottle, false, errcodes.Throttled},
		{emulator.FaultQuota, false, errcodes.QuotaExceeded},
		{emulator.FaultModelNotReady, false, errcodes.ModelNotReady},
		{emulator.FaultModelError, false, errcodes.ModelError},
		{emulator.FaultInvalid, false, errcodes.InvalidParam},
		{emulator.FaultNotFound, false, errcodes.NotFound},
		{emulator.FaultUnauthenticated, false, errcodes.Unauthenticated},
		{emulator.FaultForbidden, false, errcodes.PermissionDenied},
		{emulator.FaultInternal, false, errcodes.Internal},
		{emulator.FaultUnavailable, false, errcodes.Unavailable},
		{emulator.FaultTimeout, false, errcodes.Timeout},
		{emulator.FaultPayloadTooLarge, false, errcodes.PayloadTooLarge},
		{emulator.FaultQueueFull, false, errcodes.Throttled},
		{emulator.FaultResetBeforeHeaders, true, errcodes.Unavailable},
		{emulator.FaultCloseMidStream, true, errcodes.StreamInterrupted},
		{emulator.FaultStreamError, true, errcodes.StreamInterrupted},
		{emulator.FaultThrottle, true, errcodes.Throttled},
		{emulator.FaultStreamErrorFirst, true, errcodes.Throttled},
		{emulator.FaultStreamErrorFirst, false, errcodes.Throttled},
		{emulator.FaultMalformedBody, false, errcodes.ModelError},
		{emulator.FaultMalformedBody, true, errcodes.StreamInterrupted},
		{emulator.FaultModelOverloaded, false, errcodes.Throttled},
		{emulator.FaultModelUnavailable, false, errcodes.Unavailable},
		{emulator.FaultGatewayOverflow, false, errcodes.Unavailable},
	}
	for _, tt := range tests {
		name := string(tt.fault)
		if tt.stream {
			name += "/stream"
		}
		t.Run(name, func(t *testing.T) {
			req := emuGenerate("llama-3-8b")
			req.Header.Set("X-Emulator-Inject", string(tt.fault))
			p, err := ad.Encode(req, tt.stream)
			require.NoError(t, err)
			call := &cloudreq.Call{Request: req, Payload: p, Attempt: 1}
			if tt.stream {
				var cs cloudreq.ChunkStream
				if cs, err = ad.Stream(context.Background(), call); err == nil {
					for i := 0; err == nil; i++ {
						require.Less(t, i, 100)
						_, err = cs.Next()
					}
					_ = cs.Close()
					require.NotErrorIs(t, err, io.EOF)
				}
			} else {
				_, err = ad.Invoke(context.Background(), call)
			}
			require.Error(t, err)
			assert.Equal(t, tt.want, errcodes.Of(err), "%v", err)
			e := errcodes.From(err)
			assert.Equal(t, "gcp", e.Provider)
			assert.Equal(t, tt.want.Retryable(), e.Retryable, "%v", err)
			var ae *apierror.APIError
			assert.ErrorAs(t, err, &ae, "the status stays reachable")
		})
	}
}

// firstRefused wraps the adapter so that the first attempt of every call
// asks the emulator for a model-not-ready refusal.
type firstRefused struct{ *Adapter }

func (f firstRefused) Invoke(ctx context.Context, call *cloudreq.Call) (*cloudreq.CloudResponse, error) {
	if call.Attempt == 1 {
		ctx = metadata.AppendToOutgoingContext(ctx, "x-emulator-inject", string(emulator.FaultModelNotReady))
	}
	return f.Adapter.Invoke(ctx, call)
}

// TestEmulatorNotReadyThenReady: a model-not-ready refusal is retried, and
// the call that then succeeds is classified cold.
func TestEmulatorNotReadyThenReady(t *testing.T) {
	srv, err := emulator.New(emulator.Options{TimeScale: 0.01, Seed: 3})
	require.NoError(t, err)
	require.NoError(t, srv.Start("127.0.0.1:0", "127.0.0.1:0"))
	defer srv.Close()
	ad, err := New(context.Background(), Options{Project: "p", Location: "us-central1", Endpoint: srv.GRPCAddr(), Insecure: true})
	require.NoError(t, err)
	o := cloudreq.Options{Adapters: []cloudreq.Adapter{firstRefused{ad}}}
	o.Retry.BaseDelay, o.Retry.MaxDelay = time.Millisecond, 5*time.Millisecond
	c, err := cloudreq.New(o)
	require.NoError(t, err)
	defer c.Close()

	resp, err := c.Invoke(context.Background(), emuGenerate("llama-3-8b"))
	require.NoError(t, err)
	require.Len(t, resp.Errors, 1)
	assert.Equal(t, errcodes.ModelNotReady, resp.Errors[0].Code)
	assert.Equal(t, "MODEL_NOT_READY", resp.Errors[0].Details["reason"])
	assert.Equal(t, latency.Cold, resp.Start.Kind)
	assert.Equal(t, latency.ReasonNotReadyThenReady, resp.Start.Reason)
	assert.Positive(t, resp.Start.Overhead)
}

func TestEmulatorStallIdleTimeout(t *testing.T) {
	_, c := startEmulator(t, func(o *cloudreq.Options) {
		o.Retry.MaxAttempts = 1
		// The stall lasts 300 ms here, a token gap well under 1 ms: the
		// timeout has 200 ms of room on one side, about 100 on the other.
		o.StreamIdleTimeout = 100 * time.Millisecond
	})
	req := emuGenerate("llama-3-8b")
	req.Header.Set("X-Emulator-Inject", string(emulator.FaultStallMidStream))
	s, err := c.Stream(context.Background(), req)
	require.NoError(t, err)
	defer s.Close()
	n := 0
	for s.Next() {
		n++
		require.Less(t, n, 100)
	}
	assert.ErrorIs(t, s.Err(), errcodes.Timeout)
}

func TestEmulatorCancelMidStream(t *testing.T) {
	_, c := startEmulator(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := emuGenerate("llama-3-8b")
	req.Generate.MaxTokens = 200
	s, err := c.Stream(ctx, req)
	require.NoError(t, err)
	defer s.Close()
	got := 0
	for s.Next() {
		got++
		if got == 2 {
			cancel()
		}
		require.Less(t, got, 300)
	}
	assert.ErrorIs(t, s.Err(), errcodes.Canceled)
	assert.GreaterOrEqual(t, got, 2)
}
