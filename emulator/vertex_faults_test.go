package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
	"github.com/googleapis/gax-go/v2/apierror"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// rawCodec sends proto messages and receives the bytes of the answer as
// they came, into a *[]byte.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return proto.Marshal(v.(proto.Message)) }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

func vertexGenRequest() *aiplatformpb.GenerateContentRequest {
	return &aiplatformpb.GenerateContentRequest{
		Model:            "projects/demo/locations/us-central1/publishers/google/models/phi-3-mini",
		Contents:         []*aiplatformpb.Content{{Role: "user", Parts: []*aiplatformpb.Part{{Data: &aiplatformpb.Part_Text{Text: "Hello"}}}}},
		GenerationConfig: &aiplatformpb.GenerationConfig{MaxOutputTokens: ptr(int32(6))},
	}
}

// recvAll reads a server stream to its end: the messages before the end,
// and the end (nil for a clean one).
func recvAll[M any](recv func() (M, error)) (int, error) {
	n := 0
	for {
		_, err := recv()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n++
	}
}

// TestVertexGRPCContractFaults: the faults of the cross-provider contract
// over gRPC, in the form a client of the real service meets them.
func TestVertexGRPCContractFaults(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 11})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pc := predictionClient(ctx, t, s)
	inject := func(f Fault) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "x-emulator-inject", string(f))
	}
	chat := []byte(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":6,"stream":true}`)

	t.Run("stream-error-first", func(t *testing.T) {
		st, err := pc.StreamGenerateContent(inject(FaultStreamErrorFirst), vertexGenRequest())
		require.NoError(t, err)
		n, err := recvAll(st.Recv)
		assert.Zero(t, n, "no message before the status")
		ae, ok := apierror.FromError(err)
		require.True(t, ok, "%T %v", err, err)
		assert.Equal(t, codes.ResourceExhausted, ae.GRPCStatus().Code())
		assert.Equal(t, "RATE_LIMIT_EXCEEDED", ae.Reason())
		require.NotNil(t, ae.Details().RetryInfo)
		assert.Positive(t, ae.Details().RetryInfo.GetRetryDelay().AsDuration())

		raw, err := pc.StreamRawPredict(inject(FaultStreamErrorFirst), &aiplatformpb.StreamRawPredictRequest{Endpoint: vertexEndpoint,
			HttpBody: &httpbody.HttpBody{ContentType: "application/json", Data: chat}})
		require.NoError(t, err)
		n, err = recvAll(raw.Recv)
		assert.Zero(t, n)
		assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)

		// A unary call gets the throttle answer.
		_, err = pc.GenerateContent(inject(FaultStreamErrorFirst), vertexGenRequest())
		assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	})

	t.Run("malformed-body", func(t *testing.T) {
		// The answer is sent (status OK), and its bytes do not unmarshal.
		conn, err := grpc.NewClient(s.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		defer conn.Close()
		var raw []byte
		err = conn.Invoke(inject(FaultMalformedBody), "/google.cloud.aiplatform.v1.PredictionService/GenerateContent",
			vertexGenRequest(), &raw, grpc.ForceCodec(rawCodec{}))
		require.NoError(t, err, "the server answered")
		require.NotEmpty(t, raw)
		assert.Error(t, proto.Unmarshal(raw, &aiplatformpb.GenerateContentResponse{}), "the answer does not unmarshal")

		_, err = pc.GenerateContent(inject(FaultMalformedBody), vertexGenRequest())
		assert.Equal(t, codes.Internal, status.Code(err), "%v", err)
		assert.Contains(t, status.Convert(err).Message(), "grpc: failed to unmarshal the received message")
		_, err = pc.Predict(inject(FaultMalformedBody), &aiplatformpb.PredictRequest{Endpoint: vertexEndpoint, Instances: llmInstances(t, "x", 4)})
		assert.Contains(t, status.Convert(err).Message(), "failed to unmarshal the received message")

		st, err := pc.StreamGenerateContent(inject(FaultMalformedBody), vertexGenRequest())
		require.NoError(t, err)
		n, err := recvAll(st.Recv)
		assert.Equal(t, 3, n, "the unreadable message comes after about half")
		assert.Equal(t, codes.Internal, status.Code(err), "%v", err)
		assert.Contains(t, status.Convert(err).Message(), "failed to unmarshal the received message")
	})

	for _, tc := range []struct {
		fault Fault
		code  codes.Code
		msg   string
	}{
		{FaultModelOverloaded, codes.ResourceExhausted, "(status 429)"},
		{FaultModelUnavailable, codes.Unavailable, "(status 503)"},
		{FaultGatewayOverflow, codes.Unavailable, "unexpected HTTP status code received from server: 503 (Service Unavailable)"},
	} {
		t.Run(string(tc.fault), func(t *testing.T) {
			_, err := pc.GenerateContent(inject(tc.fault), vertexGenRequest())
			ae, ok := apierror.FromError(err)
			require.True(t, ok, "%T %v", err, err)
			assert.Equal(t, tc.code, ae.GRPCStatus().Code())
			assert.Contains(t, ae.GRPCStatus().Message(), tc.msg)
			assert.Empty(t, ae.Reason(), "no ErrorInfo: the service only relays the container's or the proxy's answer")
			assert.Nil(t, ae.Details().QuotaFailure)
		})
	}

	t.Run("throttle is a rate quota", func(t *testing.T) {
		_, err := pc.GenerateContent(inject(FaultThrottle), vertexGenRequest())
		ae, ok := apierror.FromError(err)
		require.True(t, ok, "%T %v", err, err)
		assert.Equal(t, "RATE_LIMIT_EXCEEDED", ae.Reason())
		qf := ae.Details().QuotaFailure
		require.NotNil(t, qf)
		require.Len(t, qf.GetViolations(), 1)
		v := qf.GetViolations()[0]
		assert.Contains(t, v.GetQuotaId(), "PerMinute")
		assert.Equal(t, "phi-3-mini", v.GetQuotaDimensions()["base_model"])
		assert.NotNil(t, ae.Details().RetryInfo)
	})
}

// TestVertexRESTContractFaults: the same faults over REST.
func TestVertexRESTContractFaults(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 11})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	post := func(path, body string, f Fault) *http.Response {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/v1/"+path, bytes.NewReader([]byte(body)))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(HeaderInject, string(f))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { _ = resp.Body.Close() })
		return resp
	}
	contents := `{"contents":[{"role":"user","parts":[{"text":"Hello"}]}],"generationConfig":{"maxOutputTokens":6}}`
	type rpcStatus struct {
		Code    int    `json:"code"`
		Status  string `json:"status"`
		Message string `json:"message"`
		Details []struct {
			Type       string `json:"@type"`
			Reason     string `json:"reason"`
			RetryDelay string `json:"retryDelay"`
			Violations []struct {
				QuotaID string `json:"quotaId"`
			} `json:"violations"`
		} `json:"details"`
	}
	type errorBody struct {
		Error *rpcStatus `json:"error"`
	}

	t.Run("stream-error-first/sse", func(t *testing.T) {
		resp := post(vertexEndpoint+":streamGenerateContent?alt=sse", contents, FaultStreamErrorFirst)
		require.Equal(t, 200, resp.StatusCode)
		events := readSSE(t, resp.Body)
		require.Len(t, events, 1, "the error is the only event")
		var e errorBody
		require.NoError(t, json.Unmarshal([]byte(events[0]), &e))
		require.NotNil(t, e.Error)
		assert.Equal(t, 429, e.Error.Code)
		assert.Equal(t, "RESOURCE_EXHAUSTED", e.Error.Status)
		require.NotEmpty(t, e.Error.Details)
		assert.Equal(t, "RATE_LIMIT_EXCEEDED", e.Error.Details[0].Reason)
	})

	t.Run("stream-error-first/array", func(t *testing.T) {
		resp := post(vertexEndpoint+":streamGenerateContent", contents, FaultStreamErrorFirst)
		require.Equal(t, 200, resp.StatusCode)
		var arr []errorBody
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&arr))
		require.Len(t, arr, 1)
		require.NotNil(t, arr[0].Error)
		assert.Equal(t, "RESOURCE_EXHAUSTED", arr[0].Error.Status)
	})

	t.Run("stream-error-first/streamRawPredict", func(t *testing.T) {
		resp := post(vertexEndpoint+":streamRawPredict", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":4,"stream":true}`, FaultStreamErrorFirst)
		require.Equal(t, 200, resp.StatusCode)
		events := readSSE(t, resp.Body)
		require.NotEmpty(t, events)
		assert.Contains(t, events[0], `"error"`, "the container's own in-band error comes first")
		assert.NotContains(t, strings.Join(events, "\n"), `"delta"`)
	})

	t.Run("gateway-overflow", func(t *testing.T) {
		resp := post(vertexEndpoint+":generateContent", contents, FaultGatewayOverflow)
		assert.Equal(t, 503, resp.StatusCode)
		assert.Equal(t, "text/plain", resp.Header.Get("Content-Type"))
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, gatewayOverflowText, string(b))
	})

	for _, tc := range []struct {
		fault  Fault
		status int
		name   string
	}{
		{FaultModelOverloaded, 429, "RESOURCE_EXHAUSTED"},
		{FaultModelUnavailable, 503, "UNAVAILABLE"},
	} {
		t.Run(string(tc.fault), func(t *testing.T) {
			resp := post(vertexEndpoint+":generateContent", contents, tc.fault)
			assert.Equal(t, tc.status, resp.StatusCode)
			var e errorBody
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
			require.NotNil(t, e.Error)
			assert.Equal(t, tc.name, e.Error.Status)
			assert.Empty(t, e.Error.Details)
		})
	}

	t.Run("throttle is a rate quota", func(t *testing.T) {
		resp := post(vertexEndpoint+":generateContent", contents, FaultThrottle)
		assert.Equal(t, 429, resp.StatusCode)
		var e errorBody
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
		require.NotNil(t, e.Error)
		var ids []string
		var delay string
		for _, d := range e.Error.Details {
			for _, v := range d.Violations {
				ids = append(ids, v.QuotaID)
			}
			if d.RetryDelay != "" {
				delay = d.RetryDelay
			}
		}
		require.Len(t, ids, 1)
		assert.Contains(t, ids[0], "PerMinute")
		assert.NotEmpty(t, delay, "a RetryInfo detail")
	})
}
