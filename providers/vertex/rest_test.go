package vertex

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
	"google.golang.org/api/option"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/providers/providertest"
)

// restAdapter returns a REST adapter on the emulator's HTTP listener.
func restAdapter(t *testing.T, srv *emulator.Server) *Adapter {
	t.Helper()
	ad, err := New(context.Background(), Options{Project: "p", Location: "us-central1", Endpoint: srv.URL(), Insecure: true, Transport: TransportREST})
	require.NoError(t, err)
	return ad
}

// startREST starts the emulator and a client over a REST adapter.
func startREST(t *testing.T) (*emulator.Server, *cloudreq.Client) {
	t.Helper()
	srv, err := emulator.New(emulator.Options{TimeScale: 0.01, Seed: 3})
	require.NoError(t, err)
	require.NoError(t, srv.Start("127.0.0.1:0", "127.0.0.1:0"))
	t.Cleanup(func() { _ = srv.Close() })
	o := cloudreq.Options{Adapters: []cloudreq.Adapter{restAdapter(t, srv)}}
	o.Retry.BaseDelay, o.Retry.MaxDelay = time.Millisecond, 5*time.Millisecond
	c, err := cloudreq.New(o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return srv, c
}

// TestConformanceREST runs the suite over the REST transport: every fault
// of the emulator's REST routes is mapped to the code the gRPC path gives
// it, and the cross-provider contract holds.
func TestConformanceREST(t *testing.T) {
	errs := providertest.CommonErrors()
	errs[emulator.FaultQuota] = errcodes.QuotaExceeded
	errs[emulator.FaultModelError] = errcodes.ModelError
	providertest.RunConformance(t, providertest.Harness{
		Provider: cloudreq.ProviderGCP, Service: cloudreq.ServiceVertex,
		NewAdapter: func(t *testing.T, srv *emulator.Server) cloudreq.Adapter {
			return restAdapter(t, srv) // the suite's client closes it
		},
		Target:           func(endpoint string) cloudreq.Target { return cloudreq.Target{Endpoint: endpoint} },
		InvokeBody:       []byte(`{"instances":[{"prompt":"Say hello."}],"parameters":{"max_tokens":16}}`),
		StreamInvoke:     true,
		InvokeStreamBody: []byte(`{"model":"llama-3-8b","messages":[{"role":"user","content":"Say hello."}],"max_tokens":16,"stream":true}`),
		Errors:           errs,
		NoCredentials: func(t *testing.T, srv *emulator.Server) (cloudreq.Adapter, error) {
			withoutADC(t)
			return New(context.Background(), Options{Project: "p", Location: "us-central1", Endpoint: srv.URL(), Transport: TransportREST})
		},
		Dialect: "vertex gemini",
		Features: map[providertest.Feature]bool{
			providertest.FeatureTools: true, providertest.FeatureJSON: true, providertest.FeatureJSONSchema: true, providertest.FeatureImages: true,
			providertest.FeatureLogprobs: true, providertest.FeatureChoices: true, providertest.FeatureReasoning: true, providertest.FeatureSampling: true, providertest.FeatureSeed: true, providertest.FeatureTopK: true, providertest.FeaturePenalties: true, providertest.FeatureStop: true, providertest.FeatureParallelToolCalls: false, providertest.FeatureMaxCompletionTokens: false, providertest.FeatureThinkingBudget: true, providertest.FeatureExtra: true,
		},
		HidesThoughts: true,
	})
}

// TestRESTRoutes: each method over REST reads what its gRPC twin reads.
func TestRESTRoutes(t *testing.T) {
	_, c := startREST(t)
	ctx := context.Background()

	resp, err := c.Invoke(ctx, emuInvoke(`{"instances":[{"prompt":"Say hello."},{"prompt":"And bye."}],"parameters":{"max_tokens":8}}`))
	require.NoError(t, err)
	var pr struct {
		Predictions []string `json:"predictions"`
	}
	require.NoError(t, json.Unmarshal(resp.Data, &pr))
	require.Len(t, pr.Predictions, 2)
	assert.Equal(t, pr.Predictions[0], resp.Text)
	assert.Equal(t, "1", resp.Metadata[MetaModelVersionID])
	assert.Equal(t, "llama-3-8b", resp.Metadata["x-vertex-ai-endpoint-id"])
	assert.NotEmpty(t, resp.Metadata[MetaDeployedModelID])

	raw := emuInvoke(`{"model":"llama-3-8b","messages":[{"role":"user","content":"Say hello."}],"max_tokens":8}`)
	resp, err = c.Invoke(ctx, raw)
	require.NoError(t, err, "rawPredict")
	assert.NotEmpty(t, resp.Text)
	assert.Contains(t, string(resp.Data), `"choices"`)
	assert.Equal(t, 8, resp.Usage.OutputTokens)

	gen := emuGenerate("llama-3-8b")
	resp, err = c.Invoke(ctx, gen)
	require.NoError(t, err, "generateContent")
	assert.NotEmpty(t, resp.Text)
	assert.Equal(t, 12, resp.Usage.OutputTokens)
	assert.NotEmpty(t, resp.RequestID, "the responseId")

	s, err := c.Stream(ctx, gen)
	require.NoError(t, err, "streamGenerateContent")
	var text strings.Builder
	n := 0
	for s.Next() {
		text.WriteString(s.Chunk().Text)
		n++
	}
	require.NoError(t, s.Err())
	out := s.Response()
	require.NoError(t, s.Close())
	assert.Equal(t, 12, n, "one SSE event per token")
	assert.Equal(t, "length", out.FinishReason, "maxOutputTokens reached")
	assert.NotEmpty(t, text.String())
	firstContent(t, out)

	s, err = c.Stream(ctx, emuInvoke(emuChatBody))
	require.NoError(t, err, "streamRawPredict")
	text.Reset()
	for s.Next() {
		text.WriteString(s.Chunk().Text)
	}
	require.NoError(t, s.Err())
	require.NoError(t, s.Close())
	assert.NotEmpty(t, text.String())
	assert.Equal(t, "length", s.Response().FinishReason)
}

// sspBody is a serverStreamingPredict request as Vertex's LLM streaming
// takes it.
const sspBody = `{"inputs":[{"structVal":{"prompt":{"stringVal":["Say hello."]}}}],"parameters":{"structVal":{"maxOutputTokens":{"intVal":[9]}}}}`

func sspRequest() *cloudreq.CloudRequest {
	r := emuInvoke(sspBody)
	r.Attributes.Method = MethodServerStreamingPredict
	return r
}

// TestServerStreamingPredict: over both transports, one chunk per token,
// each a StreamingPredictResponse whose content is the token; Invoke
// refuses the method.
func TestServerStreamingPredict(t *testing.T) {
	_, grpcClient := startEmulator(t)
	_, restClient := startREST(t)
	for name, c := range map[string]*cloudreq.Client{"grpc": grpcClient, "rest": restClient} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, err := c.Stream(ctx, sspRequest())
			require.NoError(t, err)
			var text strings.Builder
			n := 0
			for s.Next() {
				ch := s.Chunk()
				assert.NotEmpty(t, ch.Text)
				assert.NotEmpty(t, ch.Data)
				text.WriteString(ch.Text)
				n++
			}
			require.NoError(t, s.Err())
			out := s.Response()
			require.NoError(t, s.Close())
			assert.Equal(t, 9, n, "maxOutputTokens chunks")
			assert.NotEmpty(t, text.String())
			firstContent(t, out)

			_, err = c.Invoke(ctx, sspRequest())
			assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
			assert.ErrorContains(t, err, "send it with Stream")

			bad := sspRequest()
			bad.Payload.Body = []byte(`{"instances":[{"prompt":"x"}]}`)
			_, err = c.Stream(ctx, bad)
			assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))

			for _, f := range []emulator.Fault{emulator.FaultThrottle, emulator.FaultStreamError, emulator.FaultCloseMidStream} {
				r := sspRequest()
				r.Header.Set(emulator.HeaderInject, string(f))
				s, err := c.Stream(ctx, r, func(o *cloudreq.CallOptions) { o.Retry.MaxAttempts = 1 })
				if err == nil {
					for s.Next() {
					}
					err = s.Err()
					_ = s.Close()
				}
				want := errcodes.StreamInterrupted
				if f == emulator.FaultThrottle {
					want = errcodes.Throttled
				}
				assert.Equal(t, want, errcodes.Of(err), "fault %s: %v", f, err)
			}
		})
	}
}

// TestRESTErrorTable: Google's REST error object maps as its gRPC status
// does (status name, ErrorInfo reason, QuotaFailure, RetryInfo), other
// bodies by their HTTP status.
func TestRESTErrorTable(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		code   errcodes.Code
		retry  time.Duration
		reason string
	}{
		{"rate quota", 429, `{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"RATE_LIMIT_EXCEEDED","domain":"aiplatform.googleapis.com"},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"2s"}]}}`, errcodes.Throttled, 2 * time.Second, "RATE_LIMIT_EXCEEDED"},
		{"daily quota", 429, `{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"subject":"s","description":"d","quotaId":"GenerateRequestsPerDayPerProject"}]}]}}`, errcodes.QuotaExceeded, 0, ""},
		{"not ready", 503, `{"error":{"code":503,"message":"scaling","status":"UNAVAILABLE","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"MODEL_NOT_READY"}]}}`, errcodes.ModelNotReady, 0, "MODEL_NOT_READY"},
		{"model error", 400, `{"error":{"code":400,"message":"boom","status":"FAILED_PRECONDITION","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"MODEL_ERROR"}]}}`, errcodes.ModelError, 0, "MODEL_ERROR"},
		{"too large", 400, `{"error":{"code":400,"message":"big","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"PAYLOAD_TOO_LARGE"}]}}`, errcodes.PayloadTooLarge, 0, "PAYLOAD_TOO_LARGE"},
		{"unknown detail type kept out", 404, `{"error":{"code":404,"message":"no","status":"NOT_FOUND","details":[{"@type":"type.googleapis.com/google.example.Unknown","x":1}]}}`, errcodes.NotFound, 0, ""},
		{"no status name", 403, `{"error":{"code":403,"message":"denied"}}`, errcodes.PermissionDenied, 0, ""},
		{"proxy text 503", 503, `upstream connect error or disconnect/reset before headers`, errcodes.Unavailable, 0, ""},
		{"html 502", 502, `<html><title>502 Bad Gateway</title></html>`, errcodes.Unavailable, 0, ""},
		{"unauthenticated", 401, `{"error":{"code":401,"message":"bad token","status":"UNAUTHENTICATED"}}`, errcodes.Unauthenticated, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: tc.status, Header: http.Header{}}
			e := restErrorTable(resp, []byte(tc.body), "rid-1")
			assert.Equal(t, tc.code, e.Code, e.Message)
			assert.Equal(t, cloudreq.ProviderGCP, e.Provider)
			assert.Equal(t, tc.status, e.HTTPStatus)
			assert.Equal(t, tc.retry, e.RetryAfter)
			assert.Equal(t, "rid-1", e.RequestID)
			if tc.reason != "" {
				assert.Equal(t, tc.reason, e.Details["reason"])
			}
		})
	}
}

// TestRESTToken: the token source's token goes as a bearer token over
// https, a failing source is ERR_UNAUTHENTICATED before anything is sent,
// and no token goes over plain http to a remote host.
func TestRESTToken(t *testing.T) {
	var got string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Authorization")
		assert.Equal(t, "/v1/projects/p/locations/us-central1/endpoints/e1:predict", r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"predictions":["hi"],"deployedModelId":"7"}`)
	}))
	defer srv.Close()
	ts := oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "tok-123456789", Expiry: time.Now().Add(time.Hour)})
	ad, err := New(context.Background(), Options{Project: "p", Location: "us-central1", Endpoint: srv.URL, Transport: TransportREST,
		HTTPClient: srv.Client(), ClientOptions: []option.ClientOption{option.WithTokenSource(ts)}})
	require.NoError(t, err)
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}})
	require.NoError(t, err)
	defer c.Close()
	req := emuInvoke(`{"instances":[{"prompt":"x"}]}`)
	req.Target.Endpoint = "e1"
	resp, err := c.Invoke(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, "Bearer tok-123456789", got)
	assert.Equal(t, "hi", resp.Text)
	assert.Equal(t, "7", resp.Metadata[MetaDeployedModelID])
	assert.Equal(t, []string{"tok-123456789"}, ad.Credentials())

	bad, err := New(context.Background(), Options{Project: "p", Location: "us-central1", Endpoint: srv.URL, Transport: TransportREST,
		HTTPClient: srv.Client(), ClientOptions: []option.ClientOption{option.WithTokenSource(failingSource{})}})
	require.NoError(t, err)
	c2, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{bad}})
	require.NoError(t, err)
	defer c2.Close()
	got = ""
	_, err = c2.Invoke(context.Background(), req)
	assert.Equal(t, errcodes.Unauthenticated, errcodes.Of(err), "%v", err)
	assert.Empty(t, got, "nothing sent")

	_, err = New(context.Background(), Options{Project: "p", Location: "us-central1", Endpoint: "http://192.0.2.1:8080", Transport: TransportREST,
		ClientOptions: []option.ClientOption{option.WithTokenSource(ts)}})
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err), "a token over plain http: %v", err)

	_, err = New(context.Background(), Options{Transport: "soap"})
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
}

type failingSource struct{}

func (failingSource) Token() (*oauth2.Token, error) {
	return nil, errors.New("metadata server unreachable")
}

// TestRESTBase: the host REST calls go to.
func TestRESTBase(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Location: "us-central1"}, "https://us-central1-aiplatform.googleapis.com"},
		{Options{Location: "global"}, "https://aiplatform.googleapis.com"},
		{Options{DedicatedEndpoint: "123.us-central1-456.prediction.vertexai.goog"}, "https://123.us-central1-456.prediction.vertexai.goog"},
		{Options{DedicatedEndpoint: "https://123.us-central1-456.prediction.vertexai.goog:8443/"}, "https://123.us-central1-456.prediction.vertexai.goog:8443"},
		{Options{Endpoint: "127.0.0.1:8080", Insecure: true}, "http://127.0.0.1:8080"},
		{Options{Endpoint: "proxy.internal:443"}, "https://proxy.internal:443"},
	} {
		got, err := restBase(tc.o)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got)
	}
	_, err := restBase(Options{Location: "us central"})
	assert.Error(t, err)
}

// firstContent checks that the timeline holds the stream's chunks, the
// first (TTFT's) after the response's first byte.
func firstContent(t *testing.T, out *cloudreq.CloudResponse) {
	t.Helper()
	require.NotEmpty(t, out.Timing.Chunks)
	a := out.Timing.LastAttempt()
	require.False(t, a.FirstByte.IsZero())
	assert.False(t, out.Timing.Chunks[0].At.Before(a.FirstByte))
}
