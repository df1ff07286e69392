package sagemaker

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
)

func startEmulator(t *testing.T) *emulator.Server {
	t.Helper()
	srv, err := emulator.New(emulator.Options{TimeScale: 0.01, Seed: 3})
	require.NoError(t, err)
	require.NoError(t, srv.Start("127.0.0.1:0", ""))
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func genRequest(dialect Dialect, maxTokens int) *cloudreq.CloudRequest {
	return &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderAWS, Service: cloudreq.ServiceSageMaker, Action: cloudreq.ActionGenerate,
		Target:     cloudreq.Target{Endpoint: "llama-3-8b"},
		Generate:   &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "Say hello."}}, MaxTokens: maxTokens},
		Attributes: cloudreq.Attributes{Dialect: string(dialect)},
		Header:     http.Header{},
	}
}

func TestEmulatorTGI(t *testing.T) {
	srv := startEmulator(t)
	client := testClient(t, emulatorAdapter(t, srv.URL()))

	resp, err := client.Invoke(context.Background(), genRequest(DialectTGI, 12))
	require.NoError(t, err)
	assert.NotEmpty(t, resp.Text)
	assert.Equal(t, "AllTraffic", resp.Metadata[HeaderInvokedVariant])
	assert.NotEmpty(t, resp.RequestID)

	s, err := client.Stream(context.Background(), genRequest(DialectTGI, 12))
	require.NoError(t, err)
	defer s.Close()
	var text strings.Builder
	for s.Next() {
		text.WriteString(s.Chunk().Text)
	}
	require.NoError(t, s.Err())
	final := s.Response()
	assert.NotEmpty(t, text.String())
	assert.Contains(t, []string{"stop", "length"}, final.FinishReason)
	assert.Equal(t, "server", final.Usage.Source)
	assert.Positive(t, final.Usage.OutputTokens)
	assert.LessOrEqual(t, final.Usage.OutputTokens, 12)
	assert.NotEmpty(t, final.RequestID)
}

func TestEmulatorStreamFaults(t *testing.T) {
	srv := startEmulator(t)
	ad := emulatorAdapter(t, srv.URL())
	cases := []struct {
		fault emulator.Fault
		code  errcodes.Code
		check func(t *testing.T, err error)
	}{
		{emulator.FaultStreamError, errcodes.StreamInterrupted, func(t *testing.T, err error) {
			var mse *types.ModelStreamError
			require.ErrorAs(t, err, &mse)
			assert.Equal(t, "StreamBroken", *mse.ErrorCode_)
		}},
		{emulator.FaultCloseMidStream, errcodes.StreamInterrupted, func(t *testing.T, err error) {
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "the cut body is detected, not taken for a clean end")
		}},
		{emulator.FaultMalformedBody, errcodes.StreamInterrupted, func(t *testing.T, err error) {}},
		{"internal-stream-failure", errcodes.StreamInterrupted, func(t *testing.T, err error) {
			var isf *types.InternalStreamFailure
			require.ErrorAs(t, err, &isf)
		}},
	}
	for _, dialect := range []Dialect{DialectMessages, DialectTGI} {
		for _, tc := range cases {
			t.Run(string(dialect)+"/"+string(tc.fault), func(t *testing.T) {
				req := genRequest(dialect, 24)
				if tc.fault == "internal-stream-failure" {
					req.Header.Set(emulator.HeaderInject, string(emulator.FaultStreamError))
					req.Header.Set(emulator.HeaderStreamError, "InternalStreamFailure")
				} else {
					req.Header.Set(emulator.HeaderInject, string(tc.fault))
				}
				p, err := ad.Encode(req, true)
				require.NoError(t, err)
				cs, err := ad.Stream(context.Background(), &cloudreq.Call{Request: req, Payload: p, Attempt: 1})
				require.NoError(t, err)
				defer cs.Close()
				chunks, err := drain(cs)
				var e *errcodes.Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, tc.code, e.Code, "%v", err)
				assert.NotEmpty(t, texts(chunks), "text before the fault is kept")
				assert.False(t, e.Retryable)
				assert.NotEmpty(t, e.RequestID)
				tc.check(t, err)
			})
		}
	}
}

func TestEmulatorColdStartAndErrors(t *testing.T) {
	srv := startEmulator(t)
	client := testClient(t, emulatorAdapter(t, srv.URL()), emulator.WithStartReport())

	req := genRequest(DialectMessages, 4)
	req.Header.Set(emulator.HeaderCold, "1")
	resp, err := client.Invoke(context.Background(), req)
	require.NoError(t, err)
	require.NotNil(t, resp.ServerStart)
	assert.True(t, resp.ServerStart.Cold)
	assert.Positive(t, resp.ServerStart.Setup)
	assert.Equal(t, latency.Cold, resp.Start.Kind)

	req = genRequest(DialectMessages, 4)
	req.Header.Set(emulator.HeaderInject, string(emulator.FaultModelError))
	_, err = client.Invoke(context.Background(), req)
	var me *types.ModelError
	require.ErrorAs(t, err, &me)
	var e *errcodes.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, errcodes.ModelError, e.Code)
	assert.Equal(t, 424, e.HTTPStatus)
	assert.Equal(t, "500", e.Details["OriginalStatusCode"])
	assert.NotEmpty(t, e.Details["LogStreamArn"])

	req = genRequest(DialectMessages, 4)
	req.Target.Endpoint = "no-such-endpoint"
	_, err = client.Invoke(context.Background(), req)
	assert.True(t, errors.Is(err, errcodes.NotFound), "%v", err)
}

func TestEmulatorInvokeStreamRaw(t *testing.T) {
	srv := startEmulator(t)
	ad := emulatorAdapter(t, srv.URL())
	call := invokeCall("llama-3-8b", `{"inputs":"hi","parameters":{"max_new_tokens":5},"stream":true}`)
	cs, err := ad.Stream(context.Background(), call)
	require.NoError(t, err)
	defer cs.Close()
	chunks, err := drain(cs)
	require.ErrorIs(t, err, io.EOF)
	require.NotEmpty(t, chunks)
	for _, c := range chunks {
		assert.True(t, strings.HasPrefix(string(c.Data), "data:"), "raw TGI events: %q", c.Data)
	}
}

// TestEmulatorStatefulSession opens a stateful session through the
// adapter: the new session's id comes back in Metadata, and a response
// stream cannot open one (ERR_INVALID_PARAM, not retried).
func TestEmulatorStatefulSession(t *testing.T) {
	srv := startEmulator(t)
	client := testClient(t, emulatorAdapter(t, srv.URL()))

	req := genRequest(DialectTGI, 4)
	req.Attributes.SessionID = "NEW_SESSION"
	resp, err := client.Invoke(context.Background(), req)
	require.NoError(t, err)
	assert.Contains(t, resp.Metadata[HeaderNewSessionID], "; Expires=")

	_, err = client.Stream(context.Background(), req)
	require.Error(t, err)
	var e *errcodes.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, errcodes.InvalidParam, e.Code)
	assert.Equal(t, "ValidationError", e.ProviderCode)
	assert.Equal(t, 400, e.HTTPStatus)
}

// A plain endpoint refuses a target model and a variant it does not have,
// as SageMaker does: ERR_INVALID_PARAM, not retryable.
func TestEmulatorRefusesTargetsAPlainEndpointHasNot(t *testing.T) {
	srv := startEmulator(t)
	client := testClient(t, emulatorAdapter(t, srv.URL()))
	for _, target := range []cloudreq.Target{
		{Endpoint: "llama-3-8b", Model: "model-a.tar.gz"},
		{Endpoint: "llama-3-8b", Variant: "blue"},
	} {
		req := genRequest(DialectTGI, 4)
		req.Target = target
		_, err := client.Invoke(context.Background(), req)
		var e *errcodes.Error
		require.ErrorAs(t, err, &e, "%+v", target)
		assert.Equal(t, errcodes.InvalidParam, e.Code, "%v", err)
		assert.Equal(t, "ValidationError", e.ProviderCode)
		assert.False(t, e.Retryable)
		var ve *types.ValidationError
		assert.ErrorAs(t, err, &ve)
	}
	req := genRequest(DialectTGI, 4)
	req.Target.Variant = "AllTraffic"
	resp, err := client.Invoke(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, "AllTraffic", resp.Metadata[HeaderInvokedVariant])
}
