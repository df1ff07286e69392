package telemetry

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/cloudreq/cloudreqtest"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/hooks"
	"github.com/cloudinfer/cloudinfer/latency"
)

func generateReq() *cloudreq.CloudRequest {
	temp := 0.5
	return &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderOpenAI, Service: cloudreq.ServiceOpenAICompatible, Action: cloudreq.ActionGenerate,
		Target:    cloudreq.Target{Endpoint: "http://127.0.0.1:8000/v1", Model: "llama-3-8b"},
		RequestID: "req-1",
		Class:     "chat-short",
		Generate: &cloudreq.GenerateInput{
			Messages:  []cloudreq.Message{{Role: "user", Content: "the secret prompt"}},
			MaxTokens: 64, Temperature: &temp,
		},
	}
}

func TestPlainCall(t *testing.T) {
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Response: &cloudreq.CloudResponse{
		StatusCode: 200, Text: "the secret completion", FinishReason: "stop", RequestID: "prov-9",
		Usage: cloudreq.Usage{InputTokens: 12, OutputTokens: 7, Source: "server"},
	}}}}
	r := newRig(t, Options{}, fake)
	resp, err := r.client.Invoke(context.Background(), generateReq())
	require.NoError(t, err)
	require.Equal(t, "the secret completion", resp.Text)

	span := r.callSpan(t)
	assert.Equal(t, "chat llama-3-8b", span.Name())
	assert.Equal(t, trace.SpanKindClient, span.SpanKind())
	assert.Equal(t, codes.Unset, span.Status().Code)
	a := attrMap(span.Attributes())
	for k, want := range map[string]attribute.Value{
		"gen_ai.operation.name":          attribute.StringValue("chat"),
		"gen_ai.provider.name":           attribute.StringValue("openai"),
		"gen_ai.request.model":           attribute.StringValue("llama-3-8b"),
		"gen_ai.request.stream":          attribute.BoolValue(false),
		"gen_ai.request.max_tokens":      attribute.IntValue(64),
		"gen_ai.request.temperature":     attribute.Float64Value(0.5),
		"gen_ai.response.finish_reasons": attribute.StringSliceValue([]string{"stop"}),
		"gen_ai.usage.input_tokens":      attribute.IntValue(12),
		"gen_ai.usage.output_tokens":     attribute.IntValue(7),
		"server.address":                 attribute.StringValue("127.0.0.1"),
		"server.port":                    attribute.IntValue(8000),
		"http.response.status_code":      attribute.IntValue(200),
		"cloudinfer.endpoint":            attribute.StringValue("http://127.0.0.1:8000/v1"),
		"cloudinfer.request.id":          attribute.StringValue("req-1"),
		"cloudinfer.request.class":       attribute.StringValue("chat-short"),
		"cloudinfer.response.request_id": attribute.StringValue("prov-9"),
		"cloudinfer.attempts":            attribute.IntValue(1),
		"cloudinfer.usage.source":        attribute.StringValue("server"),
		"cloudinfer.start.kind":          attribute.StringValue("warm"),
	} {
		assert.Equal(t, want, a[k], k)
	}
	assert.GreaterOrEqual(t, a["cloudinfer.phase.queue"].AsFloat64(), 0.0)
	assert.Contains(t, a, "cloudinfer.phase.queue")
	for _, k := range []string{"gen_ai.input.messages", "gen_ai.output.messages", "error.type", "gen_ai.response.time_to_first_chunk", "cloudinfer.ttft"} {
		assert.NotContains(t, a, k, "content is off by default; no error; no stream")
	}

	atts := r.attemptSpans()
	require.Len(t, atts, 1)
	assert.Equal(t, span.SpanContext().SpanID(), atts[0].Parent().SpanID(), "attempt is a child of the call")
	assert.Equal(t, trace.SpanKindInternal, atts[0].SpanKind())
	assert.Equal(t, attribute.IntValue(1), attrMap(atts[0].Attributes())["cloudinfer.attempt.number"])

	ms := r.metrics(t)
	dur := floatHist(t, ms, MetricOperationDuration, "s", DurationBuckets)
	require.Len(t, dur, 1)
	assert.EqualValues(t, 1, dur[0].Count)
	assert.Greater(t, dur[0].Sum, 0.0)
	assert.Equal(t, map[string]attribute.Value{
		"gen_ai.operation.name": attribute.StringValue("chat"),
		"gen_ai.provider.name":  attribute.StringValue("openai"),
		"gen_ai.request.model":  attribute.StringValue("llama-3-8b"),
		"server.address":        attribute.StringValue("127.0.0.1"),
		"server.port":           attribute.IntValue(8000),
		"cloudinfer.endpoint":   attribute.StringValue("http://127.0.0.1:8000/v1"),
		"cloudinfer.start.kind": attribute.StringValue("warm"),
	}, setMap(dur[0].Attributes))

	m, ok := ms[MetricTokenUsage]
	require.True(t, ok)
	assert.Equal(t, "{token}", m.Unit)
	th := m.Data.(metricdata.Histogram[int64])
	got := map[string]int64{}
	for _, dp := range th.DataPoints {
		assert.Equal(t, TokenBuckets, dp.Bounds)
		got[setMap(dp.Attributes)["gen_ai.token.type"].AsString()] = dp.Sum
	}
	assert.Equal(t, map[string]int64{"input": 12, "output": 7}, got)

	for _, name := range []string{MetricTimeToFirstChunk, MetricTimePerOutputChunk, MetricRetries, MetricThrottles, MetricColdStartOverhead} {
		assert.NotContains(t, ms, name, "a plain warm call records no %s", name)
	}
}

func TestStream(t *testing.T) {
	chunks := []cloudreq.StreamChunk{
		{Data: []byte(`{"role":"assistant"}`)}, // role-only: not content
		{Text: "Hel"}, {Text: "lo", Tokens: 1}, {Text: " world", Tokens: 2},
		{FinishReason: "length", Usage: &cloudreq.Usage{InputTokens: 5, OutputTokens: 4}},
	}
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Chunks: chunks, ChunkDelay: 3 * time.Millisecond}}}
	r := newRig(t, Options{}, fake)
	s, err := r.client.Stream(context.Background(), generateReq())
	require.NoError(t, err)
	var text string
	for s.Next() {
		text += s.Chunk().Text
	}
	require.NoError(t, s.Err())
	require.NoError(t, s.Close())
	require.Equal(t, "Hello world", text)
	tl := s.Response().Timing

	span := r.callSpan(t)
	a := attrMap(span.Attributes())
	assert.Equal(t, attribute.BoolValue(true), a["gen_ai.request.stream"])
	assert.Equal(t, attribute.StringSliceValue([]string{"length"}), a["gen_ai.response.finish_reasons"])
	assert.Equal(t, attribute.IntValue(4), a["gen_ai.usage.output_tokens"])
	assert.Equal(t, attribute.IntValue(5), a["gen_ai.usage.input_tokens"])
	// Expected values, from the timeline by hand: TTFT from the final
	// send to the first content chunk, and the gaps between content chunks.
	var content []time.Time
	for _, ch := range tl.Chunks {
		if ch.Content {
			content = append(content, ch.At)
		}
	}
	require.Len(t, content, 3)
	ttft := content[0].Sub(tl.Send())
	gaps := []time.Duration{content[1].Sub(content[0]), content[2].Sub(content[1])}
	assert.GreaterOrEqual(t, ttft, 2*3*time.Millisecond, "the role-only chunk is not the first content chunk")
	assert.Equal(t, attribute.Float64Value(ttft.Seconds()), a["gen_ai.response.time_to_first_chunk"])
	assert.NotContains(t, a, "gen_ai.output.messages")
	assert.Equal(t, attribute.Float64Value(ttft.Seconds()), a["cloudinfer.ttft"], "warm: the SLA clock is the send")
	assert.Equal(t, attribute.StringValue("send"), a["cloudinfer.sla_clock"])
	assert.InDelta(t, content[2].Sub(content[0]).Seconds()/3, a["cloudinfer.tpot"].AsFloat64(), 1e-6, "TPOT = (E2E − TTFT)/(N_out − 1), N_out = 4")

	ms := r.metrics(t)
	ttfc := floatHist(t, ms, MetricTimeToFirstChunk, "s", DurationBuckets)
	require.Len(t, ttfc, 1)
	assert.EqualValues(t, 1, ttfc[0].Count)
	assert.InDelta(t, ttft.Seconds(), ttfc[0].Sum, 1e-9)
	assert.Equal(t, attribute.StringValue("chat"), setMap(ttfc[0].Attributes)["gen_ai.operation.name"])
	tpoc := floatHist(t, ms, MetricTimePerOutputChunk, "s", DurationBuckets)
	require.Len(t, tpoc, 1)
	assert.EqualValues(t, 2, tpoc[0].Count, "three content chunks: two gaps")
	assert.InDelta(t, (gaps[0] + gaps[1]).Seconds(), tpoc[0].Sum, 1e-9)
	dur := floatHist(t, ms, MetricOperationDuration, "s", DurationBuckets)
	require.Len(t, dur, 1)
	assert.GreaterOrEqual(t, dur[0].Sum, tpoc[0].Sum+ttfc[0].Sum)
}

func TestRetriedCall(t *testing.T) {
	throttled := errcodes.New(errcodes.Throttled, "slow down")
	throttled.HTTPStatus = 429
	notReady := errcodes.New(errcodes.ModelNotReady, "model loading")
	notReady.ProviderCode = "ModelNotReadyException"
	fake := &cloudreqtest.Adapter{Provider: cloudreq.ProviderAWS, Service: cloudreq.ServiceSageMaker,
		Outcomes: []cloudreqtest.Outcome{
			{Err: throttled},
			{Err: notReady, Delay: 2 * time.Millisecond},
			{Response: &cloudreq.CloudResponse{StatusCode: 200, Data: []byte(`{}`)}},
		}}
	r := newRig(t, Options{}, fake)
	req := &cloudreq.CloudRequest{Provider: cloudreq.ProviderAWS, Service: cloudreq.ServiceSageMaker,
		Action: cloudreq.ActionInvoke, Target: cloudreq.Target{Endpoint: "my-endpoint", Variant: "AllTraffic"},
		Payload: cloudreq.Payload{Body: []byte(`{"inputs":"x"}`)}}
	resp, err := r.client.Invoke(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, latency.Cold, resp.Start.Kind)

	span := r.callSpan(t)
	assert.Equal(t, "invoke", span.Name(), "no model: the operation alone")
	a := attrMap(span.Attributes())
	assert.Equal(t, attribute.StringValue("aws.sagemaker"), a["gen_ai.provider.name"])
	assert.Equal(t, attribute.StringValue("invoke"), a["gen_ai.operation.name"])
	assert.Equal(t, attribute.StringValue("my-endpoint"), a["cloudinfer.endpoint"])
	assert.Equal(t, attribute.StringValue("AllTraffic"), a["cloudinfer.variant"])
	assert.Equal(t, attribute.IntValue(3), a["cloudinfer.attempts"])
	assert.Equal(t, attribute.StringValue("cold"), a["cloudinfer.start.kind"])
	assert.Equal(t, attribute.StringValue("not-ready-then-ready"), a["cloudinfer.start.reason"])
	assert.Greater(t, a["cloudinfer.start.overhead"].AsFloat64(), 0.0)
	assert.NotContains(t, a, "server.address", "a bare endpoint name has no server address")
	assert.NotContains(t, a, "gen_ai.usage.output_tokens", "usage unknown is not reported")
	assert.NotContains(t, a, "error.type", "the call succeeded")

	atts := r.attemptSpans()
	require.Len(t, atts, 3)
	wantErr := []string{"ERR_THROTTLED", "ERR_MODEL_NOT_READY", ""}
	for i, s := range atts {
		sa := attrMap(s.Attributes())
		assert.Equal(t, attribute.IntValue(i+1), sa["cloudinfer.attempt.number"])
		assert.Equal(t, span.SpanContext().SpanID(), s.Parent().SpanID())
		if wantErr[i] == "" {
			assert.NotContains(t, sa, "error.type")
			assert.Equal(t, codes.Unset, s.Status().Code)
		} else {
			assert.Equal(t, attribute.StringValue(wantErr[i]), sa["error.type"])
			assert.Equal(t, codes.Error, s.Status().Code)
		}
	}
	assert.Equal(t, attribute.IntValue(429), attrMap(atts[0].Attributes())["http.response.status_code"])
	assert.Equal(t, attribute.StringValue("ModelNotReadyException"), attrMap(atts[1].Attributes())["cloudinfer.error.provider_code"])
	assert.False(t, atts[1].StartTime().Before(atts[0].EndTime()), "attempts are sequential")

	ms := r.metrics(t)
	retries := intSum(t, ms, MetricRetries, "{retry}")
	byType := map[string]int64{}
	for _, dp := range retries {
		byType[setMap(dp.Attributes)["error.type"].AsString()] += dp.Value
		assert.Equal(t, attribute.StringValue("aws.sagemaker"), setMap(dp.Attributes)["gen_ai.provider.name"])
	}
	assert.Equal(t, map[string]int64{"ERR_THROTTLED": 1, "ERR_MODEL_NOT_READY": 1}, byType)
	throttles := intSum(t, ms, MetricThrottles, "{throttle}")
	require.Len(t, throttles, 1)
	assert.EqualValues(t, 1, throttles[0].Value)
	cold := floatHist(t, ms, MetricColdStartOverhead, "s", DurationBuckets)
	require.Len(t, cold, 1)
	assert.EqualValues(t, 1, cold[0].Count)
	assert.InDelta(t, resp.Start.Overhead.Seconds(), cold[0].Sum, 1e-9)
	assert.Equal(t, attribute.StringValue("not-ready-then-ready"), setMap(cold[0].Attributes)["cloudinfer.start.reason"])
	dur := floatHist(t, ms, MetricOperationDuration, "s", DurationBuckets)
	require.Len(t, dur, 1)
	assert.Equal(t, attribute.StringValue("cold"), setMap(dur[0].Attributes)["cloudinfer.start.kind"])
	assert.NotContains(t, ms, MetricTokenUsage, "no usage known: no token metric")
}

func TestFailedCall(t *testing.T) {
	nf := errcodes.New(errcodes.NotFound, "endpoint my-endpoint not found")
	nf.HTTPStatus, nf.ProviderCode = 404, "ResourceNotFound"
	fake := &cloudreqtest.Adapter{Provider: cloudreq.ProviderAzure, Service: cloudreq.ServiceAzureML,
		Outcomes: []cloudreqtest.Outcome{{Err: nf}}}
	r := newRig(t, Options{}, fake)
	req := &cloudreq.CloudRequest{Provider: cloudreq.ProviderAzure, Service: cloudreq.ServiceAzureML,
		Action: cloudreq.ActionGenerate, Target: cloudreq.Target{Endpoint: "https://my-endpoint.eastus.inference.ml.azure.com/score"},
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "hi"}}}}
	_, err := r.client.Stream(context.Background(), req)
	require.ErrorIs(t, err, errcodes.NotFound)

	span := r.callSpan(t)
	assert.Equal(t, "chat", span.Name())
	assert.Equal(t, codes.Error, span.Status().Code)
	assert.Equal(t, "ERR_NOT_FOUND", span.Status().Description, "the message is content: not without CaptureContent")
	a := attrMap(span.Attributes())
	assert.Equal(t, attribute.StringValue("ERR_NOT_FOUND"), a["error.type"])
	assert.Equal(t, attribute.StringValue("azure.ml"), a["gen_ai.provider.name"])
	assert.Equal(t, attribute.StringValue("my-endpoint.eastus.inference.ml.azure.com"), a["server.address"])
	assert.Equal(t, attribute.IntValue(443), a["server.port"])
	assert.Equal(t, attribute.IntValue(404), a["http.response.status_code"])
	assert.Equal(t, attribute.StringValue("ResourceNotFound"), a["cloudinfer.error.provider_code"])
	assert.Equal(t, attribute.BoolValue(false), a["cloudinfer.error.retryable"])
	require.Len(t, r.attemptSpans(), 1, "not retryable: one attempt")

	ms := r.metrics(t)
	dur := floatHist(t, ms, MetricOperationDuration, "s", DurationBuckets)
	require.Len(t, dur, 1)
	da := setMap(dur[0].Attributes)
	assert.Equal(t, attribute.StringValue("ERR_NOT_FOUND"), da["error.type"])
	assert.NotContains(t, da, "cloudinfer.start.kind")
	for _, name := range []string{MetricTokenUsage, MetricTimeToFirstChunk, MetricTimePerOutputChunk, MetricRetries} {
		assert.NotContains(t, ms, name)
	}
}

func TestRefusedBeforeSending(t *testing.T) {
	r := newRig(t, Options{}, &cloudreqtest.Adapter{})
	req := generateReq()
	req.Generate.MaxTokens = -1
	_, err := r.client.Invoke(context.Background(), req)
	require.ErrorIs(t, err, errcodes.InvalidParam)
	span := r.callSpan(t)
	assert.Equal(t, codes.Error, span.Status().Code)
	assert.Equal(t, attribute.IntValue(0), attrMap(span.Attributes())["cloudinfer.attempts"])
	assert.Empty(t, r.attemptSpans())
}

func TestCaptureContent(t *testing.T) {
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Response: &cloudreq.CloudResponse{
		StatusCode: 200, Text: "four", FinishReason: "stop"}}}}
	r := newRig(t, Options{CaptureContent: true, NoAttemptSpans: true}, fake)
	req := generateReq()
	req.Generate.Stop = []string{"\n"}
	_, err := r.client.Invoke(context.Background(), req)
	require.NoError(t, err)
	a := attrMap(r.callSpan(t).Attributes())
	assert.JSONEq(t, `[{"role":"user","parts":[{"type":"text","content":"the secret prompt"}]}]`, a["gen_ai.input.messages"].AsString())
	assert.JSONEq(t, `[{"role":"assistant","parts":[{"type":"text","content":"four"}],"finish_reason":"stop"}]`, a["gen_ai.output.messages"].AsString())
	assert.Equal(t, []string{"\n"}, a["gen_ai.request.stop_sequences"].AsStringSlice())
	assert.Empty(t, r.attemptSpans(), "NoAttemptSpans")
}

func TestDefaultsToGlobalProviders(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prevT, prevM := otel.GetTracerProvider(), otel.GetMeterProvider()
	otel.SetTracerProvider(tp)
	otel.SetMeterProvider(noop.NewMeterProvider())
	t.Cleanup(func() {
		otel.SetTracerProvider(prevT)
		otel.SetMeterProvider(prevM)
		_ = tp.Shutdown(context.Background())
	})
	obs, err := New(Options{NoAttemptSpans: true})
	require.NoError(t, err)
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{&cloudreqtest.Adapter{}}}, WithObserver(obs))
	require.NoError(t, err)
	_, err = c.Invoke(context.Background(), generateReq())
	require.NoError(t, err)
	require.Len(t, rec.Ended(), 1)
	assert.Equal(t, "chat llama-3-8b", rec.Ended()[0].Name())
}

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		provider, service, action string
		wantProvider, wantOp      string
	}{
		{cloudreq.ProviderAWS, cloudreq.ServiceSageMaker, cloudreq.ActionInvoke, "aws.sagemaker", "invoke"},
		{cloudreq.ProviderAWS, cloudreq.ServiceSageMaker, cloudreq.ActionGenerate, "aws.sagemaker", "chat"},
		{cloudreq.ProviderAzure, cloudreq.ServiceAzureML, cloudreq.ActionGenerate, "azure.ml", "chat"},
		{cloudreq.ProviderGCP, cloudreq.ServiceVertex, cloudreq.ActionGenerate, "gcp.vertex_ai", "generate_content"},
		{cloudreq.ProviderGCP, cloudreq.ServiceVertex, cloudreq.ActionInvoke, "gcp.vertex_ai", "invoke"},
		{cloudreq.ProviderAlibaba, cloudreq.ServicePAIEAS, cloudreq.ActionGenerate, "alibaba.pai_eas", "chat"},
		{cloudreq.ProviderOpenAI, cloudreq.ServiceOpenAICompatible, cloudreq.ActionGenerate, "openai", "chat"},
		{"acme", "llm", "summarize", "acme", "summarize"},
	} {
		assert.Equal(t, tc.wantProvider, ProviderName(tc.provider, tc.service), tc.provider)
		assert.Equal(t, tc.wantOp, OperationName(tc.provider, tc.action), tc.action)
	}
	assert.Equal(t, "chat gpt-4o", SpanName("chat", "gpt-4o"))
	assert.Equal(t, "invoke", SpanName("invoke", ""))
}

func TestServerOf(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want server
	}{
		{"my-endpoint", server{endpoint: "my-endpoint"}},
		{"projects/p/locations/us-central1/endpoints/123", server{endpoint: "projects/p/locations/us-central1/endpoints/123"}},
		{"https://u:pw@x.example.com/score?key=abc&sig=def#frag", server{address: "x.example.com", port: 443, endpoint: "https://x.example.com/score"}},
		{"http://127.0.0.1:9000", server{address: "127.0.0.1", port: 9000, endpoint: "http://127.0.0.1:9000"}},
		{"http://[::1]/v1", server{address: "::1", port: 80, endpoint: "http://[::1]/v1"}},
		{"http://%zz", server{endpoint: "[unparsable endpoint URL]"}},
	} {
		assert.Equal(t, tc.want, serverOf(tc.in), tc.in)
	}
}

func TestModelSetByHook(t *testing.T) {
	set := &hooks.Set{}
	require.NoError(t, set.Serialize.Add("default-model", hooks.PreSerializeFunc(func(_ context.Context, r *cloudreq.CloudRequest) error {
		if r.Target.Model == "" {
			r.Target.Model = "phi-3-mini"
		}
		return nil
	})))
	r := newRig(t, Options{}, &cloudreqtest.Adapter{}, func(o *cloudreq.Options) { o.Hooks = set })
	req := generateReq()
	req.Target.Model = ""
	_, err := r.client.Invoke(context.Background(), req)
	require.NoError(t, err)
	span := r.callSpan(t)
	assert.Equal(t, "chat phi-3-mini", span.Name())
	assert.Equal(t, attribute.StringValue("phi-3-mini"), attrMap(span.Attributes())["gen_ai.request.model"])
	dur := floatHist(t, r.metrics(t), MetricOperationDuration, "s", DurationBuckets)
	require.Len(t, dur, 1)
	assert.Equal(t, attribute.StringValue("phi-3-mini"), setMap(dur[0].Attributes)["gen_ai.request.model"])
}

func TestStreamInterrupted(t *testing.T) {
	broken := errcodes.New(errcodes.Unavailable, "connection reset")
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Chunks: []cloudreq.StreamChunk{{Text: "a"}, {Text: "b"}}, StreamErr: broken}}}
	r := newRig(t, Options{}, fake)
	s, err := r.client.Stream(context.Background(), generateReq())
	require.NoError(t, err)
	n := 0
	for s.Next() {
		n++
	}
	require.Equal(t, 2, n)
	require.ErrorIs(t, s.Err(), errcodes.StreamInterrupted)

	span := r.callSpan(t)
	assert.Equal(t, codes.Error, span.Status().Code)
	a := attrMap(span.Attributes())
	assert.Equal(t, attribute.StringValue("ERR_STREAM_INTERRUPTED"), a["error.type"])
	assert.NotContains(t, a, "gen_ai.response.time_to_first_chunk", "a broken stream is a failure: no latency numbers")
	ms := r.metrics(t)
	dur := floatHist(t, ms, MetricOperationDuration, "s", DurationBuckets)
	require.Len(t, dur, 1)
	assert.Equal(t, attribute.StringValue("ERR_STREAM_INTERRUPTED"), setMap(dur[0].Attributes)["error.type"])
	assert.NotContains(t, ms, MetricTimeToFirstChunk)
	atts := r.attemptSpans()
	require.Len(t, atts, 1, "never retried after the first chunk")
	assert.Equal(t, attribute.StringValue("ERR_STREAM_INTERRUPTED"), attrMap(atts[0].Attributes())["error.type"])
}

// TestSpanStatusRedacted: a failure's status description is its code;
// its message, content that may quote anything, only with
// CaptureContent, and then with the credentials the request sent
// scrubbed. A provider code or request id that is not an id is left out.
func TestSpanStatusRedacted(t *testing.T) {
	const secret = "SECRET123"
	const tok = "tok0123456789abcdef"
	withCode := func(code, msg string) *errcodes.Error {
		e := errcodes.New(errcodes.Unauthenticated, msg)
		e.ProviderCode = code
		return e
	}
	for _, tc := range []struct {
		name    string
		capture bool
		outcome cloudreqtest.Outcome
		status  string // the call span's status description, when it failed
	}{
		{"url-in-message", false, cloudreqtest.Outcome{Err: withCode("", "POST https://h.example/v1?key="+secret+" refused")},
			"ERR_UNAUTHENTICATED"},
		{"kv-in-message", false, cloudreqtest.Outcome{Err: withCode("", "bad api_key="+secret)}, "ERR_UNAUTHENTICATED"},
		{"provider-code", false, cloudreqtest.Outcome{Err: withCode("Denied token="+secret, "denied")}, "ERR_UNAUTHENTICATED"},
		{"response-request-id", false, cloudreqtest.Outcome{Response: &cloudreq.CloudResponse{StatusCode: 200, RequestID: "r-1 sig=" + secret}}, ""},
		{"message-captured", true, cloudreqtest.Outcome{Err: withCode("", "you sent "+tok)}, "ERR_UNAUTHENTICATED: you sent [REDACTED]"},
		{"request-id-echoed", true, cloudreqtest.Outcome{Response: &cloudreq.CloudResponse{StatusCode: 200, RequestID: tok}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, Options{CaptureContent: tc.capture}, &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{tc.outcome}})
			req := generateReq()
			req.RequestID = "mine api_key=" + secret
			req.Header = http.Header{"Authorization": {"Bearer " + tok}}
			_, _ = r.client.Invoke(context.Background(), req)
			span := r.callSpan(t)
			if tc.status != "" {
				assert.Equal(t, codes.Error, span.Status().Code)
				assert.Equal(t, tc.status, masked(span.Status().Description, secret), "status description")
			}
			for _, s := range r.spans.Ended() {
				assertNoToken(t, secret, "span "+s.Name(), spanStrings(s)...)
				assertNoToken(t, tok, "span "+s.Name(), spanStrings(s)...)
				a := attrMap(s.Attributes())
				for _, k := range []string{attrProviderCode, attrRequestID, attrResponseReqID} {
					assert.NotContains(t, a, k, "%s is not an id here: left out", k)
				}
			}
		})
	}
}

// TestHookRetargetsCall: a PreSerialize hook that changes the endpoint,
// model or variant changes the span's name and attributes and every
// metric's attributes to what the attempts sent.
func TestHookRetargetsCall(t *testing.T) {
	for _, tc := range []struct {
		name           string
		endpoint       string // "" keeps generateReq's
		model, variant string
		wantName       string
		wantSpan       map[string]attribute.Value
		wantMetric     map[string]attribute.Value // the base attributes of every metric
	}{
		{
			name: "endpoint", endpoint: "https://other.example.com:8443/v2?key=abcdefgh", model: "llama-3-8b",
			wantName: "chat llama-3-8b",
			wantSpan: map[string]attribute.Value{
				"server.address":       attribute.StringValue("other.example.com"),
				"server.port":          attribute.IntValue(8443),
				"cloudinfer.endpoint":  attribute.StringValue("https://other.example.com:8443/v2"),
				"gen_ai.request.model": attribute.StringValue("llama-3-8b"),
			},
			wantMetric: map[string]attribute.Value{
				"gen_ai.operation.name": attribute.StringValue("chat"),
				"gen_ai.provider.name":  attribute.StringValue("openai"),
				"gen_ai.request.model":  attribute.StringValue("llama-3-8b"),
				"server.address":        attribute.StringValue("other.example.com"),
				"server.port":           attribute.IntValue(8443),
				"cloudinfer.endpoint":   attribute.StringValue("https://other.example.com:8443/v2"),
			},
		},
		{
			name: "model", model: "phi-3-mini", wantName: "chat phi-3-mini",
			wantSpan: map[string]attribute.Value{
				"server.address":       attribute.StringValue("127.0.0.1"),
				"gen_ai.request.model": attribute.StringValue("phi-3-mini"),
			},
			wantMetric: map[string]attribute.Value{
				"gen_ai.operation.name": attribute.StringValue("chat"),
				"gen_ai.provider.name":  attribute.StringValue("openai"),
				"gen_ai.request.model":  attribute.StringValue("phi-3-mini"),
				"server.address":        attribute.StringValue("127.0.0.1"),
				"server.port":           attribute.IntValue(8000),
				"cloudinfer.endpoint":   attribute.StringValue("http://127.0.0.1:8000/v1"),
			},
		},
		{
			name: "to-endpoint-name", endpoint: "my-endpoint", model: "m2", variant: "Blue", wantName: "chat m2",
			wantSpan: map[string]attribute.Value{
				"server.address":       attribute.StringValue(""),
				"server.port":          attribute.IntValue(0),
				"cloudinfer.endpoint":  attribute.StringValue("my-endpoint"),
				"cloudinfer.variant":   attribute.StringValue("Blue"),
				"gen_ai.request.model": attribute.StringValue("m2"),
			},
			wantMetric: map[string]attribute.Value{
				"gen_ai.operation.name": attribute.StringValue("chat"),
				"gen_ai.provider.name":  attribute.StringValue("openai"),
				"gen_ai.request.model":  attribute.StringValue("m2"),
				"cloudinfer.endpoint":   attribute.StringValue("my-endpoint"),
			},
		},
		{
			name: "model-cleared", model: "", wantName: "chat",
			wantSpan: map[string]attribute.Value{"gen_ai.request.model": attribute.StringValue("")},
			wantMetric: map[string]attribute.Value{
				"gen_ai.operation.name": attribute.StringValue("chat"),
				"gen_ai.provider.name":  attribute.StringValue("openai"),
				"server.address":        attribute.StringValue("127.0.0.1"),
				"server.port":           attribute.IntValue(8000),
				"cloudinfer.endpoint":   attribute.StringValue("http://127.0.0.1:8000/v1"),
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := &hooks.Set{}
			require.NoError(t, set.Serialize.Add("retarget", hooks.PreSerializeFunc(func(_ context.Context, r *cloudreq.CloudRequest) error {
				if tc.endpoint != "" {
					r.Target.Endpoint = tc.endpoint
				}
				r.Target.Model, r.Target.Variant = tc.model, tc.variant
				return nil
			})))
			fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{
				{Err: errcodes.New(errcodes.Throttled, "slow down")},
				{Response: &cloudreq.CloudResponse{StatusCode: 200, Usage: cloudreq.Usage{InputTokens: 3, OutputTokens: 2, Source: "server"}}},
			}}
			r := newRig(t, Options{}, fake, func(o *cloudreq.Options) { o.Hooks = set })
			_, err := r.client.Invoke(context.Background(), generateReq())
			require.NoError(t, err)

			span := r.callSpan(t)
			assert.Equal(t, tc.wantName, span.Name())
			a := attrMap(span.Attributes())
			for k, want := range tc.wantSpan {
				assert.Equal(t, want, a[k], k)
			}
			ms := r.metrics(t)
			base := func(s attribute.Set) map[string]attribute.Value {
				m := setMap(s)
				for _, k := range []string{"error.type", "cloudinfer.start.kind", "gen_ai.token.type", "cloudinfer.usage.source"} {
					delete(m, k)
				}
				return m
			}
			dur := floatHist(t, ms, MetricOperationDuration, "s", DurationBuckets)
			require.Len(t, dur, 1)
			assert.Equal(t, tc.wantMetric, base(dur[0].Attributes), "duration")
			for _, name := range []string{MetricRetries, MetricThrottles} {
				pts := intSum(t, ms, name, map[string]string{MetricRetries: "{retry}", MetricThrottles: "{throttle}"}[name])
				require.Len(t, pts, 1, name)
				assert.Equal(t, tc.wantMetric, base(pts[0].Attributes), name)
			}
			tok := ms[MetricTokenUsage].Data.(metricdata.Histogram[int64])
			require.Len(t, tok.DataPoints, 2)
			for _, dp := range tok.DataPoints {
				assert.Equal(t, tc.wantMetric, base(dp.Attributes), "token usage")
			}
		})
	}
}

// TestTokenUsageSource: the output-token count is recorded only when it is
// known, and says where it came from.
func TestTokenUsageSource(t *testing.T) {
	type point struct {
		typ, source string
		sum         int64
	}
	for _, tc := range []struct {
		name      string
		stream    bool
		outcome   cloudreqtest.Outcome
		wantAttrs map[string]attribute.Value // span
		absent    []string                   // span attributes that must not be set
		wantPts   []point
	}{
		{
			name: "opaque-invoke-stream", stream: true,
			outcome: cloudreqtest.Outcome{Chunks: []cloudreq.StreamChunk{{Data: []byte(`{"x":1}`)}, {Data: []byte(`{"x":2}`)}}},
			absent:  []string{"gen_ai.usage.output_tokens", "cloudinfer.usage.source", "gen_ai.usage.input_tokens"},
		},
		{
			name: "counted-stream", stream: true,
			outcome: cloudreqtest.Outcome{Chunks: []cloudreq.StreamChunk{{Text: "a", Tokens: 1}, {Text: "b", Tokens: 2}}},
			wantAttrs: map[string]attribute.Value{
				"gen_ai.usage.output_tokens": attribute.IntValue(3), "cloudinfer.usage.source": attribute.StringValue("counted"),
			},
			wantPts: []point{{"output", "counted", 3}},
		},
		{
			name: "server-stream", stream: true,
			outcome: cloudreqtest.Outcome{Chunks: []cloudreq.StreamChunk{{Text: "a"}, {Text: "b", Usage: &cloudreq.Usage{InputTokens: 5, OutputTokens: 4}}}},
			wantAttrs: map[string]attribute.Value{
				"gen_ai.usage.output_tokens": attribute.IntValue(4), "cloudinfer.usage.source": attribute.StringValue("server"),
				"gen_ai.usage.input_tokens": attribute.IntValue(5),
			},
			wantPts: []point{{"input", "", 5}, {"output", "server", 4}},
		},
		{
			name:    "server-zero",
			outcome: cloudreqtest.Outcome{Response: &cloudreq.CloudResponse{StatusCode: 200, Usage: cloudreq.Usage{InputTokens: 2, Source: "server"}}},
			wantAttrs: map[string]attribute.Value{
				"gen_ai.usage.output_tokens": attribute.IntValue(0), "cloudinfer.usage.source": attribute.StringValue("server"),
			},
			wantPts: []point{{"input", "", 2}, {"output", "server", 0}},
		},
		{
			name:    "unknown",
			outcome: cloudreqtest.Outcome{Response: &cloudreq.CloudResponse{StatusCode: 200}},
			absent:  []string{"gen_ai.usage.output_tokens", "cloudinfer.usage.source"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, Options{}, &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{tc.outcome}})
			req := generateReq()
			if tc.stream {
				req.Action, req.Generate, req.Payload = cloudreq.ActionInvoke, nil, cloudreq.Payload{Body: []byte(`{}`)}
				s, err := r.client.Stream(context.Background(), req)
				require.NoError(t, err)
				for s.Next() {
				}
				require.NoError(t, s.Err())
			} else {
				_, err := r.client.Invoke(context.Background(), req)
				require.NoError(t, err)
			}
			a := attrMap(r.callSpan(t).Attributes())
			for k, want := range tc.wantAttrs {
				assert.Equal(t, want, a[k], k)
			}
			for _, k := range tc.absent {
				assert.NotContains(t, a, k)
			}
			var got []point
			if m, ok := r.metrics(t)[MetricTokenUsage]; ok {
				for _, dp := range m.Data.(metricdata.Histogram[int64]).DataPoints {
					sa := setMap(dp.Attributes)
					got = append(got, point{sa["gen_ai.token.type"].AsString(), sa["cloudinfer.usage.source"].AsString(), dp.Sum})
				}
			}
			assert.ElementsMatch(t, tc.wantPts, got)
		})
	}
}

// panickyMeter is a meter whose float histograms panic when they record.
type panickyMeter struct{ noop.Meter }

func (panickyMeter) Float64Histogram(string, ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	return panickyHistogram{}, nil
}

type panickyHistogram struct{ noop.Float64Histogram }

func (panickyHistogram) Enabled(context.Context) bool { return true }

func (panickyHistogram) Record(context.Context, float64, ...metric.RecordOption) {
	panic("recording failed")
}

type panickyMeterProvider struct{ noop.MeterProvider }

func (panickyMeterProvider) Meter(string, ...metric.MeterOption) metric.Meter { return panickyMeter{} }

// TestCallSpanEndsWhenRecordingPanics: the client drops a panic from an
// observer; the call's span is ended all the same.
func TestCallSpanEndsWhenRecordingPanics(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { require.NoError(t, tp.Shutdown(context.Background())) }()
	obs, err := New(Options{TracerProvider: tp, MeterProvider: panickyMeterProvider{}, NoAttemptSpans: true})
	require.NoError(t, err)
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{&cloudreqtest.Adapter{}}}, WithObserver(obs))
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Invoke(context.Background(), generateReq())
	require.NoError(t, err)
	require.Len(t, rec.Started(), 1)
	require.Len(t, rec.Ended(), 1, "the call span was ended")
	assert.Equal(t, "chat llama-3-8b", rec.Ended()[0].Name())
}

// TestErrorTypeBounded: error.type is the same on attempt spans, the call
// span and every metric; an error without a code is ERR_UNKNOWN (as
// errcodes writes it), and a code outside errcodes' closed set is _OTHER,
// so that a metric label stays bounded whatever a hook or adapter returns.
func TestErrorTypeBounded(t *testing.T) {
	for _, tc := range []struct {
		code       errcodes.Code
		errorType  string
		descPrefix string
	}{
		{"", "ERR_UNKNOWN", "ERR_UNKNOWN: "},
		{"custom-7f3a9c", "_OTHER", "custom-7f3a9c: "},
		{errcodes.Unavailable, "ERR_UNAVAILABLE", "ERR_UNAVAILABLE: "},
		{"custom code=x", "_OTHER", "_OTHER: "}, // a code that is not a code is not written
	} {
		t.Run(string(tc.code), func(t *testing.T) {
			fails := &errcodes.Error{Code: tc.code, Message: "refused", Retryable: true}
			fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Err: fails}, {Err: fails}}}
			r := newRig(t, Options{CaptureContent: true}, fake, func(o *cloudreq.Options) { o.Retry.MaxAttempts = 2 })
			_, err := r.client.Invoke(context.Background(), generateReq())
			require.Error(t, err)

			span := r.callSpan(t)
			assert.Equal(t, attribute.StringValue(tc.errorType), attrMap(span.Attributes())["error.type"], "call span")
			assert.Equal(t, tc.descPrefix+"refused", span.Status().Description)
			atts := r.attemptSpans()
			require.Len(t, atts, 2)
			for _, s := range atts {
				assert.Equal(t, attribute.StringValue(tc.errorType), attrMap(s.Attributes())["error.type"], "attempt span")
				assert.Equal(t, codes.Error, s.Status().Code)
			}
			ms := r.metrics(t)
			retries := intSum(t, ms, MetricRetries, "{retry}")
			require.Len(t, retries, 1)
			assert.Equal(t, attribute.StringValue(tc.errorType), setMap(retries[0].Attributes)["error.type"], "retries")
			dur := floatHist(t, ms, MetricOperationDuration, "s", DurationBuckets)
			require.Len(t, dur, 1)
			assert.Equal(t, attribute.StringValue(tc.errorType), setMap(dur[0].Attributes)["error.type"], "duration")
		})
	}
}

// TestTypedNilProviders: a nil *sdktrace.TracerProvider or
// *sdkmetric.MeterProvider (a Providers literal that sets only one) is
// taken as no provider, like a nil interface: the global one is used.
func TestTypedNilProviders(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	prevT, prevM := otel.GetTracerProvider(), otel.GetMeterProvider()
	otel.SetTracerProvider(tp)
	otel.SetMeterProvider(mp)
	t.Cleanup(func() {
		otel.SetTracerProvider(prevT)
		otel.SetMeterProvider(prevM)
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	var p Providers // neither set
	obs, err := New(Options{TracerProvider: p.TracerProvider, MeterProvider: p.MeterProvider, NoAttemptSpans: true})
	require.NoError(t, err)
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{&cloudreqtest.Adapter{}}}, WithObserver(obs))
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Invoke(context.Background(), generateReq())
	require.NoError(t, err)
	require.Len(t, rec.Ended(), 1)
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	require.Len(t, rm.ScopeMetrics, 1, "metrics went to the global provider")
}

// TestHookSetsGenerateDefaults: a PreSerialize hook that sets generation
// defaults or adds a message changes the gen_ai.request.* attributes and
// the captured input to what the attempts sent.
func TestHookSetsGenerateDefaults(t *testing.T) {
	set := &hooks.Set{}
	require.NoError(t, set.Serialize.Add("defaults", hooks.PreSerializeFunc(func(_ context.Context, r *cloudreq.CloudRequest) error {
		g := r.Generate
		if g.MaxTokens == 0 {
			g.MaxTokens = 256
		}
		if g.TopP == nil {
			topP := 0.9
			g.TopP = &topP
		}
		g.Messages = append([]cloudreq.Message{{Role: "system", Content: "be brief"}}, g.Messages...)
		return nil
	})))
	r := newRig(t, Options{CaptureContent: true, NoAttemptSpans: true}, &cloudreqtest.Adapter{},
		func(o *cloudreq.Options) { o.Hooks = set })
	req := generateReq()
	req.Generate.MaxTokens = 0
	_, err := r.client.Invoke(context.Background(), req)
	require.NoError(t, err)
	require.Zero(t, req.Generate.MaxTokens, "the caller's request is not changed")
	a := attrMap(r.callSpan(t).Attributes())
	assert.Equal(t, attribute.IntValue(256), a["gen_ai.request.max_tokens"])
	assert.Equal(t, attribute.Float64Value(0.9), a["gen_ai.request.top_p"])
	assert.Equal(t, attribute.Float64Value(0.5), a["gen_ai.request.temperature"], "left as the caller set it")
	assert.JSONEq(t, `[{"role":"system","parts":[{"type":"text","content":"be brief"}]},{"role":"user","parts":[{"type":"text","content":"the secret prompt"}]}]`,
		a["gen_ai.input.messages"].AsString())
}

// TestWithObserverTwice: an Observer given both to the client and to a
// call (or twice to either) observes the call once: one span, one
// duration.
func TestWithObserverTwice(t *testing.T) {
	r := newRig(t, Options{NoAttemptSpans: true}, &cloudreqtest.Adapter{}, WithObserver(nil))
	_, err := r.client.Invoke(context.Background(), generateReq(), cloudreq.PerCall(WithObserver(r.obs)), cloudreq.PerCall(WithObserver(r.obs)))
	require.NoError(t, err)
	r.callSpan(t)
	dur := floatHist(t, r.metrics(t), MetricOperationDuration, "s", DurationBuckets)
	require.Len(t, dur, 1)
	assert.EqualValues(t, 1, dur[0].Count)
}

// TestCompletionsRouteIsTextCompletion: a generate request sent to a
// legacy completions route is a text_completion operation, on the span
// and in the metrics, also when a PreSerialize hook routes it there.
func TestCompletionsRouteIsTextCompletion(t *testing.T) {
	for _, byHook := range []bool{false, true} {
		set := &hooks.Set{}
		req := generateReq()
		if byHook {
			require.NoError(t, set.Serialize.Add("route", hooks.PreSerializeFunc(func(_ context.Context, r *cloudreq.CloudRequest) error {
				r.Target.Path = "/v1/completions"
				return nil
			})))
		} else {
			req.Target.Path = "/v1/completions"
		}
		r := newRig(t, Options{NoAttemptSpans: true}, &cloudreqtest.Adapter{}, func(o *cloudreq.Options) { o.Hooks = set })
		_, err := r.client.Invoke(context.Background(), req)
		require.NoError(t, err)
		s := r.callSpan(t)
		assert.Equal(t, "text_completion llama-3-8b", s.Name(), "by hook %v", byHook)
		assert.Equal(t, attribute.StringValue("text_completion"), attrMap(s.Attributes())["gen_ai.operation.name"], "by hook %v", byHook)
		dur := floatHist(t, r.metrics(t), MetricOperationDuration, "s", DurationBuckets)
		require.Len(t, dur, 1)
		op, _ := dur[0].Attributes.Value("gen_ai.operation.name")
		assert.Equal(t, "text_completion", op.AsString(), "by hook %v", byHook)
	}
}
