package emulator

import (
	"bufio"
	"context"
	"encoding/base64"
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
	restapi "google.golang.org/api/aiplatform/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

// restService is Google's discovery REST client of Vertex AI
// (google.golang.org/api/aiplatform/v1), unchanged but for its endpoint
// and authentication.
func restService(ctx context.Context, t *testing.T, s *Server) *restapi.Service {
	t.Helper()
	svc, err := restapi.NewService(ctx, option.WithEndpoint(s.URL()+"/"), option.WithoutAuthentication())
	require.NoError(t, err)
	return svc
}

// TestVertexRESTSDK drives the REST routes with Google's discovery client:
// predict, rawPredict and generateContent answer in the forms it decodes,
// and an injected fault comes back as the *googleapi.Error it parses.
func TestVertexRESTSDK(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 11})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ep := restService(ctx, t, s).Projects.Locations.Endpoints

	pr, err := ep.Predict(vertexEndpoint, &restapi.GoogleCloudAiplatformV1PredictRequest{
		Instances:  []any{map[string]any{"prompt": "hello"}},
		Parameters: map[string]any{"max_tokens": 8},
	}).Context(ctx).Do()
	require.NoError(t, err)
	require.Len(t, pr.Predictions, 1)
	assert.NotEmpty(t, pr.Predictions[0])
	assert.Equal(t, vertexDeployedModelID, pr.DeployedModelId)
	assert.Equal(t, "1", pr.ModelVersionId)

	chat := `{"model":"llama-3-8b","messages":[{"role":"user","content":"hello"}],"max_tokens":6}`
	hb, err := ep.RawPredict(vertexEndpoint, &restapi.GoogleCloudAiplatformV1RawPredictRequest{
		HttpBody: &restapi.GoogleApiHttpBody{ContentType: "application/json", Data: base64.StdEncoding.EncodeToString([]byte(chat))},
	}).Context(ctx).Do()
	require.NoError(t, err)
	// The REST reply is the container's own body (an OpenAI chat
	// completion), which the client can only read as an HttpBody without
	// data: the answer's headers say what it was.
	assert.Equal(t, http.StatusOK, hb.HTTPStatusCode)
	assert.Equal(t, "application/json", hb.Header.Get("Content-Type"))
	assert.NotEmpty(t, hb.Header.Get("X-Emulator-Ttft-Ms"))

	gc, err := ep.GenerateContent(vertexEndpoint, &restapi.GoogleCloudAiplatformV1GenerateContentRequest{
		Contents:         []*restapi.GoogleCloudAiplatformV1Content{{Role: "user", Parts: []*restapi.GoogleCloudAiplatformV1Part{{Text: "hello"}}}},
		GenerationConfig: &restapi.GoogleCloudAiplatformV1GenerationConfig{MaxOutputTokens: 7},
	}).Context(ctx).Do()
	require.NoError(t, err)
	require.Len(t, gc.Candidates, 1)
	assert.NotEmpty(t, gc.Candidates[0].Content.Parts[0].Text)
	assert.Equal(t, "MAX_TOKENS", gc.Candidates[0].FinishReason)
	assert.Equal(t, int64(7), gc.UsageMetadata.CandidatesTokenCount)

	call := ep.Predict(vertexEndpoint, &restapi.GoogleCloudAiplatformV1PredictRequest{Instances: []any{map[string]any{"prompt": "hello"}}}).Context(ctx)
	call.Header().Set(HeaderInject, string(FaultThrottle))
	_, err = call.Do()
	var ge *googleapi.Error
	require.True(t, errors.As(err, &ge), "%T %v", err, err)
	assert.Equal(t, http.StatusTooManyRequests, ge.Code)
	assert.Contains(t, ge.Message, "Quota exceeded")
	require.NotEmpty(t, ge.Details, "the google.rpc details")
}

// TestVertexRESTServerStreamingPredict: POST …:serverStreamingPredict
// answers Google's JSON-array stream of StreamingPredictResponse (SSE with
// alt=sse), one per token. The discovery client's
// ServerStreamingPredict call decodes one JSON object, not a stream, so
// the request is its own (the request type is the client's).
func TestVertexRESTServerStreamingPredict(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 11})
	body, err := json.Marshal(&restapi.GoogleCloudAiplatformV1StreamingPredictRequest{
		Inputs: []*restapi.GoogleCloudAiplatformV1Tensor{{StructVal: map[string]restapi.GoogleCloudAiplatformV1Tensor{
			"prompt": {StringVal: []string{"hello"}},
		}}},
		Parameters: &restapi.GoogleCloudAiplatformV1Tensor{StructVal: map[string]restapi.GoogleCloudAiplatformV1Tensor{
			"maxOutputTokens": {IntVal: []int64{5}},
		}},
	})
	require.NoError(t, err)
	url := s.URL() + "/v1/" + vertexEndpoint + ":serverStreamingPredict"

	resp, err := http.Post(url, "application/json", strings.NewReader(string(body)))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var msgs []*restapi.GoogleCloudAiplatformV1StreamingPredictResponse
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&msgs))
	require.Len(t, msgs, 5)
	for _, m := range msgs {
		require.Len(t, m.Outputs, 1)
		c := m.Outputs[0].StructVal["content"]
		require.Len(t, c.StringVal, 1)
		assert.NotEmpty(t, c.StringVal[0])
	}

	resp2, err := http.Post(url+"?alt=sse", "application/json", strings.NewReader(string(body)))
	require.NoError(t, err)
	defer resp2.Body.Close()
	assert.Equal(t, "text/event-stream", resp2.Header.Get("Content-Type"))
	n := 0
	sc := bufio.NewScanner(resp2.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			m := &aiplatformpb.StreamingPredictResponse{}
			require.NoError(t, protojson.Unmarshal([]byte(d), m))
			n++
		}
	}
	assert.Equal(t, 5, n)

	bad, err := http.Post(url, "application/json", strings.NewReader(`{"inputs":[]}`))
	require.NoError(t, err)
	b, _ := io.ReadAll(bad.Body)
	_ = bad.Body.Close()
	assert.Equal(t, http.StatusBadRequest, bad.StatusCode)
	assert.Contains(t, string(b), `"INVALID_ARGUMENT"`)
}

// TestVertexGRPCServerStreamingPredict drives ServerStreamingPredict with
// the aiplatform gRPC client: one StreamingPredictResponse per token, the
// ground-truth header metadata, and a fault as the status the client
// parses.
func TestVertexGRPCServerStreamingPredict(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 11})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pc := predictionClient(ctx, t, s)
	req := &aiplatformpb.StreamingPredictRequest{
		Endpoint: vertexEndpoint,
		Inputs: []*aiplatformpb.Tensor{{StructVal: map[string]*aiplatformpb.Tensor{
			"prompt": {Dtype: aiplatformpb.Tensor_STRING, StringVal: []string{"hello"}},
		}}},
		Parameters: &aiplatformpb.Tensor{StructVal: map[string]*aiplatformpb.Tensor{
			"maxOutputTokens": {IntVal: []int32{6}},
		}},
	}
	st, err := pc.ServerStreamingPredict(ctx, req)
	require.NoError(t, err)
	md, err := st.Header()
	require.NoError(t, err)
	assert.Equal(t, []string{"6"}, md.Get("x-emulator-output-tokens"))
	n := 0
	for {
		m, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		require.Len(t, m.GetOutputs(), 1)
		assert.NotEmpty(t, m.GetOutputs()[0].GetStructVal()["content"].GetStringVal())
		n++
	}
	assert.Equal(t, 6, n)

	fctx := metadata.AppendToOutgoingContext(ctx, "x-emulator-inject", string(FaultModelNotReady))
	st, err = pc.ServerStreamingPredict(fctx, req)
	require.NoError(t, err)
	_, err = st.Recv()
	ae, ok := apierror.FromError(err)
	require.True(t, ok, "%T %v", err, err)
	assert.Equal(t, codes.Unavailable, ae.GRPCStatus().Code())
	assert.Equal(t, "MODEL_NOT_READY", ae.Reason())

	st, err = pc.ServerStreamingPredict(ctx, &aiplatformpb.StreamingPredictRequest{Endpoint: vertexEndpoint})
	require.NoError(t, err)
	_, err = st.Recv()
	assert.Equal(t, codes.InvalidArgument, status.Code(err), "no inputs: %v", err)
}
