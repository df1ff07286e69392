package emulator

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	aiplatform "cloud.google.com/go/aiplatform/apiv1"
	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
	"github.com/googleapis/gax-go/v2"
	"github.com/googleapis/gax-go/v2/apierror"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/api/option"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

func predictionClient(ctx context.Context, t *testing.T, s *Server) *aiplatform.PredictionClient {
	t.Helper()
	pc, err := aiplatform.NewPredictionClient(ctx,
		option.WithEndpoint(s.GRPCAddr()),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	require.NoError(t, err)
	t.Cleanup(func() { _ = pc.Close() })
	return pc
}

const vertexEndpoint = "projects/demo/locations/us-central1/endpoints/llama-3-8b"

func llmInstances(t *testing.T, prompt string, maxTokens float64) []*structpb.Value {
	v, err := structpb.NewValue(map[string]any{"prompt": prompt, "max_tokens": maxTokens})
	require.NoError(t, err)
	return []*structpb.Value{v}
}

func TestVertexGRPCPredict(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 11})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pc := predictionClient(ctx, t, s)

	var md metadata.MD
	resp, err := pc.Predict(ctx, &aiplatformpb.PredictRequest{Endpoint: vertexEndpoint, Instances: llmInstances(t, "hello", 8)}, gaxHeader(&md))
	require.NoError(t, err)
	require.Len(t, resp.GetPredictions(), 1)
	assert.NotEmpty(t, resp.GetPredictions()[0].GetStringValue())
	assert.Equal(t, vertexDeployedModelID, resp.GetDeployedModelId())
	require.NotEmpty(t, md.Get("x-emulator-ttft-ms"))
	assert.Equal(t, []string{"8"}, md.Get("x-emulator-output-tokens"))

	// INVALID_ARGUMENT with an ErrorInfo reason, as *apierror.APIError.
	ictx := metadata.AppendToOutgoingContext(ctx, "x-emulator-inject", "invalid")
	_, err = pc.Predict(ictx, &aiplatformpb.PredictRequest{Endpoint: vertexEndpoint, Instances: llmInstances(t, "hello", 8)})
	var ae *apierror.APIError
	require.True(t, errors.As(err, &ae), "%T %v", err, err)
	assert.Equal(t, codes.InvalidArgument, ae.GRPCStatus().Code())
	assert.Equal(t, "INVALID_INPUT", ae.Reason())
	assert.Equal(t, vertexErrorDomain, ae.Domain())
	require.NotNil(t, ae.Details().BadRequest)

	// A body that is not an LLM instance is the real invalid-argument error.
	bad, err := structpb.NewValue(map[string]any{"image": "abc"})
	require.NoError(t, err)
	_, err = pc.Predict(ctx, &aiplatformpb.PredictRequest{Endpoint: vertexEndpoint, Instances: []*structpb.Value{bad}})
	require.True(t, errors.As(err, &ae), "%T %v", err, err)
	assert.Equal(t, codes.InvalidArgument, ae.GRPCStatus().Code())

	_, err = pc.Predict(ctx, &aiplatformpb.PredictRequest{Endpoint: "projects/demo/locations/us-central1/endpoints/nope", Instances: llmInstances(t, "x", 1)})
	require.True(t, errors.As(err, &ae), "%T %v", err, err)
	assert.Equal(t, codes.NotFound, ae.GRPCStatus().Code())

	qctx := metadata.AppendToOutgoingContext(ctx, "x-emulator-inject", "quota")
	_, err = pc.Predict(qctx, &aiplatformpb.PredictRequest{Endpoint: vertexEndpoint, Instances: llmInstances(t, "x", 1)})
	require.True(t, errors.As(err, &ae), "%T %v", err, err)
	assert.Equal(t, codes.ResourceExhausted, ae.GRPCStatus().Code())
	assert.Equal(t, "QUOTA_EXCEEDED", ae.Reason())
	assert.NotNil(t, ae.Details().QuotaFailure)
}

func TestVertexGRPCStreams(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 11})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pc := predictionClient(ctx, t, s)

	req := &aiplatformpb.GenerateContentRequest{
		Model:            "projects/demo/locations/us-central1/publishers/google/models/phi-3-mini",
		Contents:         []*aiplatformpb.Content{{Role: "user", Parts: []*aiplatformpb.Part{{Data: &aiplatformpb.Part_Text{Text: "Hello"}}}}},
		GenerationConfig: &aiplatformpb.GenerationConfig{MaxOutputTokens: ptr(int32(10))},
	}
	st, err := pc.StreamGenerateContent(ctx, req)
	require.NoError(t, err)
	var chunks []*aiplatformpb.GenerateContentResponse
	for {
		r, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		chunks = append(chunks, r)
	}
	require.Len(t, chunks, 10)
	last := chunks[len(chunks)-1]
	assert.Equal(t, aiplatformpb.Candidate_MAX_TOKENS, last.GetCandidates()[0].GetFinishReason())
	assert.Equal(t, int32(10), last.GetUsageMetadata().GetCandidatesTokenCount())

	// A mid-stream error after some chunks.
	ectx := metadata.AppendToOutgoingContext(ctx, "x-emulator-inject", "stream-error")
	st, err = pc.StreamGenerateContent(ectx, req)
	require.NoError(t, err)
	n := 0
	for {
		_, err = st.Recv()
		if err != nil {
			break
		}
		n++
	}
	assert.Equal(t, 5, n)
	// Server streams are not wrapped by gax: the status comes as is.
	ae, ok := apierror.FromError(err)
	require.True(t, ok, "%T %v", err, err)
	assert.Equal(t, codes.Internal, ae.GRPCStatus().Code())

	gc, err := pc.GenerateContent(ctx, req)
	require.NoError(t, err)
	assert.NotEmpty(t, gc.GetCandidates()[0].GetContent().GetParts()[0].GetText())

	raw, err := pc.RawPredict(ctx, &aiplatformpb.RawPredictRequest{Endpoint: vertexEndpoint,
		HttpBody: &httpbody.HttpBody{ContentType: "application/json", Data: []byte(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":3}`)}})
	require.NoError(t, err)
	var chat struct {
		Usage usage `json:"usage"`
	}
	require.NoError(t, json.Unmarshal(raw.GetData(), &chat))
	assert.Equal(t, 3, chat.Usage.CompletionTokens)

	srp, err := pc.StreamRawPredict(ctx, &aiplatformpb.StreamRawPredictRequest{Endpoint: vertexEndpoint,
		HttpBody: &httpbody.HttpBody{ContentType: "application/json", Data: []byte(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":4,"stream":true}`)}})
	require.NoError(t, err)
	var sse bytes.Buffer
	for {
		hb, err := srp.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		sse.Write(hb.GetData())
	}
	events := readSSE(t, &sse)
	require.Len(t, events, 6) // role, 4 tokens, [DONE]
	assert.Equal(t, "[DONE]", events[5])
}

func TestVertexREST(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 11})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	post := func(path, body string, hdr map[string]string) *http.Response {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/v1/"+path, bytes.NewReader([]byte(body)))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { _ = resp.Body.Close() })
		return resp
	}
	contents := `{"contents":[{"role":"user","parts":[{"text":"Hello"}]}],"generationConfig":{"maxOutputTokens":6}}`

	resp := post(vertexEndpoint+":predict", `{"instances":[{"prompt":"a","max_tokens":4},{"prompt":"b"}]}`, nil)
	require.Equal(t, 200, resp.StatusCode)
	var pred struct {
		Predictions     []string `json:"predictions"`
		DeployedModelID string   `json:"deployedModelId"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&pred))
	assert.Len(t, pred.Predictions, 2)
	assert.Equal(t, vertexDeployedModelID, resp.Header.Get("X-Vertex-AI-Deployed-Model-Id"))

	// SSE: data frames, no [DONE].
	resp = post(vertexEndpoint+":streamGenerateContent?alt=sse", contents, nil)
	require.Equal(t, 200, resp.StatusCode)
	events := readSSE(t, resp.Body)
	require.Len(t, events, 6)
	var last aiplatformpb.GenerateContentResponse
	require.NoError(t, protojson.Unmarshal([]byte(events[5]), &last), "the REST JSON of a GenerateContentResponse")
	assert.Equal(t, aiplatformpb.Candidate_MAX_TOKENS, last.GetCandidates()[0].GetFinishReason())
	assert.EqualValues(t, 6, last.GetUsageMetadata().GetCandidatesTokenCount())

	// JSON array framing.
	resp = post(vertexEndpoint+":streamGenerateContent", contents, nil)
	var arr []json.RawMessage
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&arr))
	assert.Len(t, arr, 6)
	for _, el := range arr {
		require.NoError(t, protojson.Unmarshal(el, &aiplatformpb.GenerateContentResponse{}))
	}

	// Mid-stream error in SSE.
	resp = post(vertexEndpoint+":streamGenerateContent?alt=sse", contents, map[string]string{HeaderInject: "stream-error"})
	events = readSSE(t, resp.Body)
	require.Len(t, events, 4)
	assert.Contains(t, events[3], `"status":"INTERNAL"`)

	// rawPredict, GAPIC httpBody form.
	inner := base64.StdEncoding.EncodeToString([]byte(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}`))
	resp = post(vertexEndpoint+":rawPredict", `{"httpBody":{"contentType":"application/json","data":"`+inner+`"}}`, nil)
	require.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "2", resp.Header.Get(HeaderOutputTokens))

	// Errors: google.rpc.Status JSON with details.
	for _, tc := range []struct {
		path, body, inject string
		status             int
		name, reason       string
	}{
		{vertexEndpoint + ":generateContent", `{"prompt":"x"}`, "", 400, "INVALID_ARGUMENT", "INVALID_INPUT"},
		{vertexEndpoint + ":generateContent", contents, "throttle", 429, "RESOURCE_EXHAUSTED", "RATE_LIMIT_EXCEEDED"},
		{vertexEndpoint + ":generateContent", contents, "forbidden", 403, "PERMISSION_DENIED", "IAM_PERMISSION_DENIED"},
		{"projects/p/locations/l/endpoints/nope:predict", `{"instances":[{"prompt":"a"}]}`, "", 404, "NOT_FOUND", "ENDPOINT_NOT_FOUND"},
	} {
		hdr := map[string]string{}
		if tc.inject != "" {
			hdr[HeaderInject] = tc.inject
		}
		resp = post(tc.path, tc.body, hdr)
		assert.Equal(t, tc.status, resp.StatusCode, tc.path)
		var e struct {
			Error struct {
				Code    int    `json:"code"`
				Status  string `json:"status"`
				Details []struct {
					Type   string `json:"@type"`
					Reason string `json:"reason"`
				} `json:"details"`
			} `json:"error"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
		assert.Equal(t, tc.status, e.Error.Code)
		assert.Equal(t, tc.name, e.Error.Status)
		require.NotEmpty(t, e.Error.Details)
		assert.Equal(t, "type.googleapis.com/google.rpc.ErrorInfo", e.Error.Details[0].Type)
		assert.Equal(t, tc.reason, e.Error.Details[0].Reason)
		if tc.inject == "throttle" {
			assert.Empty(t, resp.Header.Get("Retry-After"), "Vertex REST sends no retry delay header")
		}
	}
}

func ptr[T any](v T) *T { return &v }

// gaxHeader captures the response header metadata of a gax call.
func gaxHeader(md *metadata.MD) gax.CallOption { return gax.WithGRPCOptions(grpc.Header(md)) }

// TestVertexGRPCRecordsStream: a record says whether the gRPC method
// streamed, whatever the body's own "stream" field says, and a streamed
// call feeds the inter-token metrics.
func TestVertexGRPCRecordsStream(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 11})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pc := predictionClient(ctx, t, s)

	req := &aiplatformpb.GenerateContentRequest{
		Model:            "projects/demo/locations/us-central1/publishers/google/models/phi-3-mini",
		Contents:         []*aiplatformpb.Content{{Role: "user", Parts: []*aiplatformpb.Part{{Data: &aiplatformpb.Part_Text{Text: "Hello"}}}}},
		GenerationConfig: &aiplatformpb.GenerationConfig{MaxOutputTokens: ptr(int32(4))},
	}
	st, err := pc.StreamGenerateContent(ctx, req)
	require.NoError(t, err)
	for {
		_, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
	}
	srp, err := pc.StreamRawPredict(ctx, &aiplatformpb.StreamRawPredictRequest{Endpoint: vertexEndpoint,
		HttpBody: &httpbody.HttpBody{ContentType: "application/json", Data: []byte(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":4}`)}})
	require.NoError(t, err)
	for {
		_, err := srp.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
	}
	_, err = pc.RawPredict(ctx, &aiplatformpb.RawPredictRequest{Endpoint: vertexEndpoint,
		HttpBody: &httpbody.HttpBody{ContentType: "application/json", Data: []byte(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":4,"stream":true}`)}})
	require.NoError(t, err)

	recs := waitRecords(t, s, 3)
	byRoute := map[string]Record{}
	for _, r := range recs {
		byRoute[r.Route] = r
	}
	assert.True(t, byRoute["StreamGenerateContent"].Stream)
	assert.True(t, byRoute["StreamRawPredict"].Stream)
	assert.False(t, byRoute["RawPredict"].Stream)

	req2, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req2)
	require.NoError(t, err)
	defer resp.Body.Close()
	m, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var itl []string
	for line := range strings.SplitSeq(string(m), "\n") {
		if strings.HasPrefix(line, "vllm:inter_token_latency_seconds_count") {
			itl = append(itl, line)
		}
	}
	// Three gaps from each stream; none from the unary call.
	assert.ElementsMatch(t, []string{
		`vllm:inter_token_latency_seconds_count{model_name="llama-3-8b"} 3`,
		`vllm:inter_token_latency_seconds_count{model_name="phi-3-mini"} 3`,
	}, itl)
}
