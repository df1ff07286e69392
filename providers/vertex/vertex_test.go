package vertex

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
	"github.com/googleapis/gax-go/v2/apierror"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
)

const epName = "projects/p/locations/us-central1/endpoints/ep1"

func invokeReq(body string, ct string) *cloudreq.CloudRequest {
	return &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderGCP, Service: cloudreq.ServiceVertex, Action: cloudreq.ActionInvoke,
		Target:  cloudreq.Target{Endpoint: "ep1"},
		Payload: cloudreq.Payload{Body: []byte(body), ContentType: ct},
	}
}

func genReq() *cloudreq.CloudRequest {
	temp, topP := 0.5, 0.9
	return &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderGCP, Service: cloudreq.ServiceVertex, Action: cloudreq.ActionGenerate,
		Target: cloudreq.Target{Model: "gemini-2.0-flash"},
		Generate: &cloudreq.GenerateInput{
			Messages: []cloudreq.Message{
				{Role: "system", Content: "be brief"},
				{Role: "user", Content: "hi"},
				{Role: "assistant", Content: "hello"},
				{Role: "user", Content: "how are you?"},
			},
			MaxTokens: 16, Temperature: &temp, TopP: &topP, Stop: []string{"\n\n"},
		},
	}
}

func TestInvokePredict(t *testing.T) {
	f, addr := startFake(t)
	c, _ := newFakeClient(t, addr)
	resp, err := c.Invoke(context.Background(), invokeReq(`{"instances":[{"x":1},{"x":2}],"parameters":{"t":0.5}}`, ""))
	require.NoError(t, err)

	calls := f.Calls()
	require.Len(t, calls, 1)
	assert.Equal(t, "Predict", calls[0].Method)
	assert.Equal(t, epName, calls[0].Name)
	pr := calls[0].Req.(*aiplatformpb.PredictRequest)
	require.Len(t, pr.GetInstances(), 2)
	assert.Equal(t, 2.0, pr.GetInstances()[1].GetStructValue().GetFields()["x"].GetNumberValue())
	assert.Equal(t, 0.5, pr.GetParameters().GetStructValue().GetFields()["t"].GetNumberValue())

	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "application/json", resp.ContentType)
	var out struct {
		Predictions     []any  `json:"predictions"`
		DeployedModelID string `json:"deployedModelId"`
	}
	require.NoError(t, json.Unmarshal(resp.Data, &out))
	assert.Equal(t, []any{"ok", map[string]any{"x": 1.0}, map[string]any{"x": 2.0}}, out.Predictions)
	assert.Equal(t, "dm-1", out.DeployedModelID)
	assert.Equal(t, map[string]string{
		MetaDeployedModelID: "dm-1", MetaModelVersionID: "3", MetaModel: "projects/p/locations/us-central1/models/m",
	}, resp.Metadata)
}

func TestInvokeRawPredict(t *testing.T) {
	f, addr := startFake(t)
	c, _ := newFakeClient(t, addr)
	resp, err := c.Invoke(context.Background(), invokeReq("a,b,c", "text/csv"))
	require.NoError(t, err)
	calls := f.Calls()
	require.Len(t, calls, 1)
	assert.Equal(t, "RawPredict", calls[0].Method)
	rp := calls[0].Req.(*aiplatformpb.RawPredictRequest)
	assert.Equal(t, epName, rp.GetEndpoint())
	assert.Equal(t, "text/csv", rp.GetHttpBody().GetContentType())
	assert.Equal(t, []byte("a,b,c"), rp.GetHttpBody().GetData())
	assert.Equal(t, "echo:a,b,c", string(resp.Data))
	assert.Equal(t, "text/plain", resp.ContentType)
	assert.Empty(t, resp.Text, "not a generation")
	assert.Equal(t, "dm-raw", resp.Metadata[MetaDeployedModelID])
	assert.Equal(t, "ep", resp.Metadata["x-vertex-ai-endpoint-id"])
}

func TestInvokeOneShotReader(t *testing.T) {
	f, addr := startFake(t)
	c, _ := newFakeClient(t, addr)
	req := invokeReq("", "application/octet-stream")
	req.Payload.Body = nil
	req.Payload.Reader = bytes.NewReader([]byte{0, 1, 2})
	resp, err := c.Invoke(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, "echo:\x00\x01\x02", string(resp.Data))
	require.Len(t, f.Calls(), 1)
}

func TestForcedMethod(t *testing.T) {
	f, addr := startFake(t)
	c, _ := newFakeClient(t, addr)
	req := invokeReq(`{"instances":[1]}`, "")
	req.Attributes.Method = MethodRawPredict
	_, err := c.Invoke(context.Background(), req)
	require.NoError(t, err)
	req = invokeReq(`{"instances":[1],"other":true}`, "")
	req.Attributes.Method = MethodPredict
	_, err = c.Invoke(context.Background(), req)
	assert.ErrorIs(t, err, errcodes.InvalidParam)
	calls := f.Calls()
	require.Len(t, calls, 1, "a refused forced predict must send nothing")
	assert.Equal(t, "RawPredict", calls[0].Method)
}

func TestInvokeMethodRule(t *testing.T) {
	tests := []struct {
		name, body, ct, forced string
		want                   string
		wantErr                bool
	}{
		{"predict", `{"instances":[{"a":1}],"parameters":{"k":2}}`, "", "", MethodPredict, false},
		{"predict json type", ` {"instances":[]}`, "application/json; charset=utf-8", "", MethodPredict, false},
		{"predict +json type", `{"instances":[1]}`, "application/vnd.x+json", "", MethodPredict, false},
		{"extra member", `{"instances":[1],"labels":{}}`, "", "", MethodRawPredict, false},
		{"instances not array", `{"instances":{"a":1}}`, "", "", MethodRawPredict, false},
		{"no instances", `{"parameters":{}}`, "", "", MethodRawPredict, false},
		{"openai body", `{"model":"m","messages":[]}`, "", "", MethodRawPredict, false},
		{"not json", `a,b`, "", "", MethodRawPredict, false},
		{"csv type", `{"instances":[1]}`, "text/csv", "", MethodRawPredict, false},
		{"bad media type", `{"instances":[1]}`, ";;", "", MethodRawPredict, false},
		{"parameters wrong type", `{"instances":[1],"parameters":"x"}`, "", "", MethodPredict, false},
		{"forced raw", `{"instances":[1]}`, "", MethodRawPredict, MethodRawPredict, false},
		{"forced predict", `{"instances":[1]}`, "text/plain", MethodPredict, MethodPredict, false},
		{"forced predict bad", `nope`, "", MethodPredict, "", true},
		{"unknown method", `{}`, "", "explain", "", true},
		{"extra is not read", `{"instances":[1]}`, "", "", MethodPredict, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := invokeReq(tt.body, tt.ct)
			if tt.forced != "" {
				req.Attributes.Method = tt.forced
			}
			req.Attributes.Extra = map[string]string{"vertex.method": MethodRawPredict}
			m, pr, err := invokeMethod(req, req.Payload)
			if tt.wantErr {
				require.Error(t, err)
				assert.Equal(t, errcodes.InvalidParam, err.Code)
				assert.Contains(t, err.Error(), "Attributes.Method")
				assert.Equal(t, "gcp", err.Provider)
				return
			}
			require.Nil(t, err)
			assert.Equal(t, tt.want, m)
			assert.Equal(t, m == MethodPredict, pr != nil)
		})
	}
}

func TestEncode(t *testing.T) {
	a := &Adapter{}
	p, err := a.Encode(genReq(), false)
	require.NoError(t, err)
	want := `{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"text":"hello"}]},` +
		`{"role":"user","parts":[{"text":"how are you?"}]}],"systemInstruction":{"parts":[{"text":"be brief"}]},` +
		`"generationConfig":{"maxOutputTokens":16,"temperature":0.5,"topP":0.9,"stopSequences":["\n\n"]}}`
	assert.Equal(t, want, string(p.Body))
	assert.Equal(t, "application/json", p.ContentType)
	p2, err := a.Encode(genReq(), true)
	require.NoError(t, err)
	assert.Equal(t, p.Body, p2.Body, "the body does not depend on streaming")

	plain := genReq()
	plain.Generate = &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "x"}}}
	p3, err := a.Encode(plain, false)
	require.NoError(t, err)
	assert.Equal(t, `{"contents":[{"role":"user","parts":[{"text":"x"}]}]}`, string(p3.Body))

	for _, msgs := range [][]cloudreq.Message{
		{{Role: "tool", Content: "x"}},
		{{Role: "system", Content: "only system"}},
	} {
		r := genReq()
		r.Generate.Messages = msgs
		_, err := a.Encode(r, false)
		assert.ErrorIs(t, err, errcodes.InvalidParam)
	}
}

func TestGenerate(t *testing.T) {
	f, addr := startFake(t)
	c, _ := newFakeClient(t, addr)
	resp, err := c.Invoke(context.Background(), genReq())
	require.NoError(t, err)
	calls := f.Calls()
	require.Len(t, calls, 1)
	assert.Equal(t, "GenerateContent", calls[0].Method)
	gr := calls[0].Req.(*aiplatformpb.GenerateContentRequest)
	assert.Equal(t, "projects/p/locations/us-central1/publishers/google/models/gemini-2.0-flash", gr.GetModel())
	require.Len(t, gr.GetContents(), 3)
	assert.Equal(t, "model", gr.GetContents()[1].GetRole())
	assert.Equal(t, "how are you?", gr.GetContents()[2].GetParts()[0].GetText())
	assert.Equal(t, "be brief", gr.GetSystemInstruction().GetParts()[0].GetText())
	gc := gr.GetGenerationConfig()
	assert.Equal(t, int32(16), gc.GetMaxOutputTokens())
	assert.InDelta(t, 0.5, gc.GetTemperature(), 1e-6)
	assert.InDelta(t, 0.9, gc.GetTopP(), 1e-6)
	assert.Equal(t, []string{"\n\n"}, gc.GetStopSequences())

	assert.Equal(t, "hello world", resp.Text)
	assert.Equal(t, "stop", resp.FinishReason)
	assert.Equal(t, cloudreq.Usage{InputTokens: 7, OutputTokens: 2, Source: "server"}, resp.Usage)
	assert.Equal(t, "resp-1", resp.RequestID)
	assert.Equal(t, "v-test", resp.Metadata[MetaModelVersionID])
	assert.Contains(t, string(resp.Data), `"hello world"`)
}

// TestRetryReplaysBody checks that a retried generate call sends the same
// request on each attempt, after a retryable status.
func TestRetryReplaysBody(t *testing.T) {
	f, addr := startFake(t)
	f.set(func(f *fakeServer) { f.errs = []error{status.Error(codes.Unavailable, "try again")} })
	c, _ := newFakeClient(t, addr)
	resp, err := c.Invoke(context.Background(), genReq())
	require.NoError(t, err)
	calls := f.Calls()
	require.Len(t, calls, 2)
	assert.True(t, proto.Equal(calls[0].Req, calls[1].Req), "attempts must send identical requests")
	require.Len(t, resp.Errors, 1)
	assert.Equal(t, errcodes.Unavailable, resp.Errors[0].Code)
	require.Len(t, resp.Timing.Attempts, 2)
	assert.Equal(t, "ERR_UNAVAILABLE", resp.Timing.Attempts[0].Code)
	assert.Equal(t, 503, resp.Timing.Attempts[0].Status)
}

func TestHeadersSentAsMetadata(t *testing.T) {
	f, addr := startFake(t)
	c, _ := newFakeClient(t, addr)
	req := invokeReq("x", "text/plain")
	req.Header = http.Header{"X-Emulator-Inject": {"throttle"}, "X-Two": {"a", "b"}}
	_, err := c.Invoke(context.Background(), req)
	require.NoError(t, err)
	md := f.Calls()[0].MD
	assert.Equal(t, []string{"throttle"}, md.Get("x-emulator-inject"))
	assert.Equal(t, []string{"a", "b"}, md.Get("x-two"))
}

// TestResponseHeader checks that the RPC's header metadata, then its
// trailer metadata, become CloudResponse.Header with canonical keys, from
// which the emulator's StartReport hook reads a server's start report; the
// adapter reads none itself.
func TestResponseHeader(t *testing.T) {
	f, addr := startFake(t)
	f.set(func(f *fakeServer) {
		f.header = metadata.Pairs("x-emulator-cold-start", "true", "x-emulator-cold-start-ms", "12.5", "x-two", "a", "x-two", "b")
		f.trailer = metadata.Pairs("x-two", "c", "x-only-trailer", "t")
	})
	plain, _ := newFakeClient(t, addr)
	resp, err := plain.Invoke(context.Background(), genReq())
	require.NoError(t, err)
	assert.Equal(t, "true", resp.Header.Get("X-Emulator-Cold-Start"))
	assert.Equal(t, []string{"a", "b", "c"}, resp.Header["X-Two"], "header values before trailer values")
	assert.Equal(t, "t", resp.Header.Get("X-Only-Trailer"))
	assert.Nil(t, resp.ServerStart, "the adapter reads no server's start report")

	f.set(func(f *fakeServer) { f.trailer = nil })
	c, _ := newFakeClient(t, addr, emulator.WithStartReport())
	resp, err = c.Invoke(context.Background(), genReq())
	require.NoError(t, err)
	require.NotNil(t, resp.ServerStart)
	assert.Equal(t, cloudreq.ServerStart{Cold: true, Setup: 12500 * time.Microsecond}, *resp.ServerStart)
	assert.Equal(t, latency.Cold, resp.Start.Kind)
	assert.Equal(t, latency.ReasonServerReported, resp.Start.Reason)
	assert.Equal(t, 12500*time.Microsecond, resp.Start.Overhead)

	f.set(func(f *fakeServer) { f.header = metadata.Pairs("x-emulator-cold-start", "false") })
	resp, err = c.Invoke(context.Background(), genReq())
	require.NoError(t, err)
	assert.Equal(t, &cloudreq.ServerStart{Cold: false}, resp.ServerStart)
	assert.Equal(t, latency.Warm, resp.Start.Kind)

	f.set(func(f *fakeServer) { f.header, f.trailer = nil, metadata.Pairs("x-emulator-cold-start", "true") })
	resp, err = c.Invoke(context.Background(), genReq())
	require.NoError(t, err)
	assert.Equal(t, &cloudreq.ServerStart{Cold: true}, resp.ServerStart, "a unary call's trailer metadata counts too")
}

// TestTiming checks that the stats handler fills the attempt's phases, in
// order, and that a fresh connection is told from a reused one.
func TestTiming(t *testing.T) {
	_, addr := startFake(t)
	c, _ := newFakeClient(t, addr)
	// Let the connection the client opened at New come up first.
	for i := 0; i < 2; i++ {
		resp, err := c.Invoke(context.Background(), genReq())
		require.NoError(t, err)
		at := resp.Timing.LastAttempt()
		require.NotNil(t, at)
		for name, ts := range map[string]time.Time{"GotConn": at.GotConn, "WroteRequest": at.WroteRequest, "FirstByte": at.FirstByte} {
			assert.False(t, ts.IsZero(), "%s not recorded", name)
		}
		assert.False(t, at.GotConn.Before(at.Send) && !at.ConnReused, "a reused connection is got after send")
		assert.False(t, at.WroteRequest.Before(at.Send))
		assert.False(t, at.FirstByte.Before(at.WroteRequest))
		assert.False(t, at.End.Before(at.FirstByte))
		if i == 1 {
			assert.True(t, at.ConnReused, "second call reuses the connection")
		}
	}
}

// TestTimingFreshConnection breaks the connection between two calls: the
// second call waits for a new one and says so.
func TestTimingFreshConnection(t *testing.T) {
	f, addr := startFake(t)
	c, _ := newFakeClient(t, addr)
	_, err := c.Invoke(context.Background(), genReq())
	require.NoError(t, err)
	f.lis.breakAll()
	var at *latency.Attempt
	for i := 0; i < 50; i++ { // the client notices the break asynchronously
		resp, err := c.Invoke(context.Background(), genReq())
		if err == nil && !resp.Timing.LastAttempt().ConnReused {
			at = resp.Timing.LastAttempt()
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.NotNil(t, at, "no attempt reported a fresh connection after the break")
	assert.Equal(t, at.Send, at.ConnectStart)
	assert.False(t, at.ConnectDone.Before(at.ConnectStart))
	assert.False(t, at.GotConn.Before(at.ConnectDone))
}

func TestErrorsAsAPIError(t *testing.T) {
	f, addr := startFake(t)
	f.set(func(f *fakeServer) { f.errs = []error{status.Error(codes.NotFound, "no such endpoint")} })
	c, _ := newFakeClient(t, addr)
	_, err := c.Invoke(context.Background(), invokeReq("x", "text/plain"))
	require.Error(t, err)
	assert.ErrorIs(t, err, errcodes.NotFound)
	var ae *apierror.APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, codes.NotFound, ae.GRPCStatus().Code())
	var e *errcodes.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "gcp", e.Provider)
	assert.Equal(t, "NOT_FOUND", e.ProviderCode)
	assert.Equal(t, 404, e.HTTPStatus)
	assert.Equal(t, "no such endpoint", e.Message)
}

func TestInvalidTargets(t *testing.T) {
	_, addr := startFake(t)
	c, _ := newFakeClient(t, addr)
	for _, ep := range []string{"projects/p/locations/l", "bad id", "a/b"} {
		req := invokeReq("x", "")
		req.Target.Endpoint = ep
		_, err := c.Invoke(context.Background(), req)
		assert.ErrorIs(t, err, errcodes.InvalidParam, ep)
	}
}

func TestLocationMismatch(t *testing.T) {
	a := &Adapter{opts: Options{Project: "p", Location: "us-central1"}}
	call := &cloudreq.Call{Request: invokeReq("x", "")}
	call.Request.Target.Endpoint = "projects/p/locations/europe-west4/endpoints/e"
	_, _, err := a.prepare(context.Background(), call)
	assert.ErrorIs(t, err, errcodes.InvalidParam)
	call.Request.Target.Endpoint = "projects/p/locations/us-central1/endpoints/e"
	_, res, err := a.prepare(context.Background(), call)
	require.NoError(t, err)
	assert.Equal(t, "e", res.Endpoint)
	// With an explicit service endpoint, any location may be addressed.
	a.opts.Endpoint = "127.0.0.1:1"
	call.Request.Target.Endpoint = "projects/p/locations/europe-west4/endpoints/e"
	_, _, err = a.prepare(context.Background(), call)
	assert.NoError(t, err)
}

func TestNewOptions(t *testing.T) {
	_, err := New(context.Background(), Options{Insecure: true})
	assert.ErrorIs(t, err, errcodes.InvalidParam)
	_, err = New(context.Background(), Options{Location: "bad/loc", Endpoint: ""}, func(o *Options) { o.Insecure = false })
	assert.ErrorIs(t, err, errcodes.InvalidParam)
	a, err := New(context.Background(), Options{}, func(o *Options) { o.Endpoint, o.Insecure = "127.0.0.1:1", true })
	require.NoError(t, err)
	assert.Equal(t, cloudreq.Description{Provider: "gcp", Service: "vertex", Actions: []string{"invoke", "generate"}}, a.Describe())
	assert.NotNil(t, a.Client())
	require.NoError(t, a.Close())
}

// TestUnreachable checks that a refused connection is a retryable
// ERR_UNAVAILABLE.
func TestUnreachable(t *testing.T) {
	a2, err := New(context.Background(), Options{Project: "p", Location: "l", Endpoint: "127.0.0.1:1", Insecure: true})
	require.NoError(t, err)
	defer a2.Close()
	_, err = a2.Invoke(context.Background(), &cloudreq.Call{Request: invokeReq("x", "text/plain"), Payload: invokeReq("x", "text/plain").Payload, Attempt: 1})
	require.Error(t, err)
	assert.Equal(t, errcodes.Unavailable, errcodes.Of(err))
	assert.True(t, errcodes.From(err).Retryable)
}

// TestInsecureSendsNoCredentials: over plain text, credentials given in
// ClientOptions are refused at New rather than sent.
func TestInsecureSendsNoCredentials(t *testing.T) {
	f, addr := startFake(t)
	_, err := New(context.Background(), Options{Endpoint: addr, Insecure: true,
		ClientOptions: []option.ClientOption{option.WithAPIKey("secret-key-123")}})
	if err == nil {
		t.Fatal("New accepted credentials over plain text")
	}
	assert.ErrorIs(t, err, errcodes.InvalidParam)
	assert.NotContains(t, err.Error(), "secret-key-123")

	c, _ := newFakeClient(t, addr)
	_, err = c.Invoke(context.Background(), invokeReq("x", "text/plain"))
	require.NoError(t, err)
	md := f.Calls()[0].MD
	assert.Empty(t, md.Get("authorization"))
	assert.Empty(t, md.Get("x-goog-api-key"))
}
