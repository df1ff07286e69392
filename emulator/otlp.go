package emulator

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"hash/fnv"
	"io"
	"strings"
	"sync"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// The attributes of vLLM's per-request span (vllm/tracing.py
// SpanAttributes), which the emulator writes (Options.OTLPWriter). Times
// are in seconds.
const (
	SpanName                  = "llm_request"
	SpanAttrRequestID         = "gen_ai.request.id"
	SpanAttrResponseModel     = "gen_ai.response.model"
	SpanAttrMaxTokens         = "gen_ai.request.max_tokens"
	SpanAttrPromptTokens      = "gen_ai.usage.prompt_tokens"
	SpanAttrCompletionTokens  = "gen_ai.usage.completion_tokens"
	SpanAttrQueue             = "gen_ai.latency.time_in_queue"
	SpanAttrTTFT              = "gen_ai.latency.time_to_first_token"
	SpanAttrE2E               = "gen_ai.latency.e2e"
	SpanAttrPrefill           = "gen_ai.latency.time_in_model_prefill"
	SpanAttrDecode            = "gen_ai.latency.time_in_model_decode"
	SpanAttrInference         = "gen_ai.latency.time_in_model_inference"
	SpanAttrEmulatorRequestID = "cloudinfer.emulator.request_id"
)

// HeaderClientRequestID is the client's request id, which vLLM makes its
// own (a chat request's is chatcmpl-<X-Request-Id>) and the emulator keeps
// in Record.ClientRequestID and its spans.
const HeaderClientRequestID = "X-Request-Id"

// maxClientRequestID bounds a kept X-Request-Id.
const maxClientRequestID = 256

// spanWriter writes vLLM's per-request spans as OTLP JSON lines.
type spanWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
	err bool // a write failed (logged once)
}

// SpanRequestID returns the gen_ai.request.id vLLM would give r: on the
// OpenAI routes chatcmpl-<id> for a chat and cmpl-<id>-0 for a completion,
// where id is the client's X-Request-Id (else the emulator's id, as vLLM
// makes one up); on the other routes the client's X-Request-Id, else the
// emulator's id.
func SpanRequestID(r *Record) string {
	id := r.ClientRequestID
	if id == "" {
		id = r.ID
	}
	switch {
	case r.Provider != OpenAI:
		return id
	case strings.HasSuffix(r.Route, "chat/completions"):
		return "chatcmpl-" + id
	case strings.HasSuffix(r.Route, "completions"):
		return "cmpl-" + id + "-0"
	}
	return id
}

// span returns the record's span, as vLLM's do_tracing builds it from the
// same request's times: queue, prefill (the injected one), decode (first
// to last token), TTFT and E2E from arrival.
func recordSpan(r *Record) *tracepb.Span {
	dbl := func(k string, v float64) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v}}}
	}
	num := func(k string, v int) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(v)}}}
	}
	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	attrs := []*commonpb.KeyValue{
		str(SpanAttrRequestID, SpanRequestID(r)),
		str(SpanAttrResponseModel, r.Endpoint),
		num(SpanAttrPromptTokens, r.PromptTokens),
		num(SpanAttrCompletionTokens, r.TokensSent),
		dbl(SpanAttrQueue, r.QueueMs/1000),
		dbl(SpanAttrTTFT, r.FirstTokenMs/1000),
		dbl(SpanAttrE2E, r.LastTokenMs/1000),
		dbl(SpanAttrPrefill, r.PrefillMs/1000),
		dbl(SpanAttrDecode, (r.LastTokenMs-r.FirstTokenMs)/1000),
		dbl(SpanAttrInference, (r.LastTokenMs-r.ColdStartMs-r.QueueMs)/1000),
		str(SpanAttrEmulatorRequestID, r.ID),
	}
	if r.MaxTokens > 0 {
		attrs = append(attrs, num(SpanAttrMaxTokens, r.MaxTokens))
	}
	h := fnv.New128a()
	_, _ = h.Write([]byte(r.ID))
	trace := h.Sum(nil)
	span := make([]byte, 8)
	binary.BigEndian.PutUint64(span, binary.BigEndian.Uint64(trace[8:])^binary.BigEndian.Uint64(trace[:8]))
	start := r.Arrival
	return &tracepb.Span{
		TraceId:           otlpJSONID(trace),
		SpanId:            otlpJSONID(span),
		Name:              SpanName,
		Kind:              tracepb.Span_SPAN_KIND_SERVER,
		StartTimeUnixNano: uint64(start.UnixNano()),
		EndTimeUnixNano:   uint64(start.Add(time.Duration(r.LastTokenMs * float64(time.Millisecond))).UnixNano()),
		Attributes:        attrs,
	}
}

// otlpJSONID returns the bytes that protojson writes as id's hex text:
// OTLP/JSON writes trace and span ids in hex where the protobuf JSON
// mapping writes bytes in base64, and the hex text read as base64 (every
// hex digit is a base64 one, and an id's 32 or 16 digits are whole
// base64 groups) is those bytes.
func otlpJSONID(id []byte) []byte {
	b, _ := base64.StdEncoding.DecodeString(hex.EncodeToString(id))
	return b
}

// spansJSON is the marshaling of an OTLP JSON line: lowerCamelCase names
// and enums as numbers, as OTLP/JSON wants them.
var spansJSON = protojson.MarshalOptions{UseEnumNumbers: true}

// write writes r's span, a TracesData (the JSON of an
// ExportTraceServiceRequest) on a line of its own; a record not answered
// in full has none (vLLM traces the requests it finishes).
func (sw *spanWriter) write(s *Server, r *Record) {
	if r.Outcome != "ok" || r.TokensSent == 0 {
		return
	}
	td := &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
			{Key: "service.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "cloudinfer-emulator"}}},
		}},
		ScopeSpans: []*tracepb.ScopeSpans{{
			Scope: &commonpb.InstrumentationScope{Name: "github.com/cloudinfer/cloudinfer/emulator"},
			Spans: []*tracepb.Span{recordSpan(r)},
		}},
	}}}
	sw.mu.Lock()
	defer sw.mu.Unlock()
	b, err := spansJSON.MarshalAppend(sw.buf[:0], td)
	if err == nil {
		b = append(b, '\n')
		_, err = sw.w.Write(b)
		sw.buf = b
	}
	if err != nil && !sw.err {
		sw.err = true
		s.log.Error("emulator: writing the OTLP spans failed; later failures are not logged", "err", err)
	}
}
