package servermetrics

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// The attributes of vLLM's per-request span (vllm/tracing.py
// SpanAttributes; the span is "llm_request", made by the V1 engine's
// OutputProcessor.do_tracing when a request finishes), times in seconds.
const (
	SpanAttrRequestID        = "gen_ai.request.id"
	SpanAttrQueue            = "gen_ai.latency.time_in_queue"
	SpanAttrTTFT             = "gen_ai.latency.time_to_first_token"
	SpanAttrE2E              = "gen_ai.latency.e2e"
	SpanAttrPrefill          = "gen_ai.latency.time_in_model_prefill"
	SpanAttrDecode           = "gen_ai.latency.time_in_model_decode"
	SpanAttrPromptTokens     = "gen_ai.usage.prompt_tokens"
	SpanAttrCompletionTokens = "gen_ai.usage.completion_tokens"
)

// MaxSpanLine bounds one line of a spans file (a collector's batch of
// spans is one line).
const MaxSpanLine = 64 << 20

// Span is one request as vLLM's per-request span tells it.
type Span struct {
	// ID is the span's gen_ai.request.id: vLLM's request id, which is
	// chatcmpl-<X-Request-Id> for a chat and cmpl-<X-Request-Id>-<n> for
	// a completion's prompt n when the client sent X-Request-Id.
	ID string
	// Start is the span's start (the request's arrival).
	Start time.Time
	// Request holds the span's times in milliseconds as the emulator's
	// records hold them: QueueMs (time_in_queue), PrefillMs
	// (time_in_model_prefill), FirstTokenMs (time_to_first_token, from
	// arrival) and LastTokenMs (FirstTokenMs + time_in_model_decode), so
	// that decode is LastTokenMs − FirstTokenMs; TokensSent is
	// completion_tokens (1 when the span has none), Outcome "ok".
	Request Request
	// E2EMs is gen_ai.latency.e2e in milliseconds (NaN-free: 0 if absent).
	E2EMs        float64
	PromptTokens int
	// Estimated says the span had no prefill or decode time of its own
	// (vLLM's V0 engine wrote neither): prefill is then TTFT − queue (the
	// server's whole first-token time past its queue) and decode E2E −
	// TTFT.
	Estimated bool
}

// SpanStats counts what a spans file held.
type SpanStats struct {
	// Lines counts the non-empty lines; Bad those that were not OTLP JSON
	// (a line the collector was writing as it was read, say).
	Lines, Bad int
	// Spans counts the per-request spans read, Other the spans that are
	// not one (no gen_ai.request.id, or no latency attribute).
	Spans, Other int
}

// spansJSON reads OTLP/JSON with the protobuf JSON mapping, which reads
// its lowerCamelCase names, its int64s as strings and its enums as
// numbers; fields it does not know are skipped. (Trace and span ids,
// hex in OTLP/JSON where the mapping wants base64, are read as base64 —
// every hex digit is a base64 one — and not used.)
var spansJSON = protojson.UnmarshalOptions{DiscardUnknown: true}

// ReadSpans reads vLLM's per-request spans from OTLP JSON lines, as an
// OpenTelemetry Collector's file exporter writes them (format json,
// uncompressed: one ExportTraceServiceRequest — resourceSpans[].
// scopeSpans[].spans[] — a line), and calls fn with each. It parses each
// line with the official OTLP types (go.opentelemetry.io/proto/otlp,
// TracesData, whose JSON is an ExportTraceServiceRequest's). A line that
// does not parse is counted in Bad and skipped; a reader none of whose
// lines parse is an error (ERR_INVALID_PARAM).
func ReadSpans(r io.Reader, fn func(*Span)) (SpanStats, error) {
	var st SpanStats
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxSpanLine)
	var firstErr error
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		st.Lines++
		var td tracepb.TracesData
		if err := spansJSON.Unmarshal(line, &td); err != nil {
			st.Bad++
			if firstErr == nil {
				firstErr = fmt.Errorf("line %d: %s", st.Lines, firstLine(err.Error()))
			}
			continue
		}
		for _, rs := range td.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, sp := range ss.GetSpans() {
					s, ok := requestSpan(sp)
					if !ok {
						st.Other++
						continue
					}
					st.Spans++
					fn(&s)
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return st, errcodes.Errorf(errcodes.InvalidParam, "servermetrics: spans: line %d is longer than %d MiB", st.Lines+1, MaxSpanLine>>20)
		}
		return st, errcodes.Wrap(err, errcodes.InvalidParam, "servermetrics: spans: "+err.Error())
	}
	if st.Lines > 0 && st.Bad == st.Lines {
		return st, errcodes.Errorf(errcodes.InvalidParam, "servermetrics: spans: not OTLP JSON lines (an OpenTelemetry Collector file exporter's, format json, uncompressed): %v", firstErr)
	}
	return st, nil
}

// ReadSpansFile is ReadSpans of the file at path.
func ReadSpansFile(path string, fn func(*Span)) (SpanStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return SpanStats{}, errcodes.Wrap(err, errcodes.InvalidParam, "servermetrics: spans: "+err.Error())
	}
	defer f.Close()
	return ReadSpans(f, fn)
}

// requestSpan reads sp as vLLM's per-request span.
func requestSpan(sp *tracepb.Span) (Span, bool) {
	var id string
	vals := map[string]float64{}
	for _, kv := range sp.GetAttributes() {
		switch kv.GetKey() {
		case SpanAttrRequestID:
			id = kv.GetValue().GetStringValue()
		case SpanAttrQueue, SpanAttrTTFT, SpanAttrE2E, SpanAttrPrefill, SpanAttrDecode, SpanAttrPromptTokens, SpanAttrCompletionTokens:
			if v, ok := number(kv.GetValue()); ok {
				vals[kv.GetKey()] = v
			}
		}
	}
	ttft, okT := vals[SpanAttrTTFT]
	e2e, okE := vals[SpanAttrE2E]
	q := vals[SpanAttrQueue]
	if id == "" || !okT {
		return Span{}, false
	}
	s := Span{ID: id, Start: time.Unix(0, int64(sp.GetStartTimeUnixNano())), E2EMs: e2e * 1000, PromptTokens: int(vals[SpanAttrPromptTokens])}
	prefill, okP := vals[SpanAttrPrefill]
	decode, okD := vals[SpanAttrDecode]
	if !okP {
		prefill, s.Estimated = ttft-q, true
	}
	if !okD {
		decode, s.Estimated = 0, true
		if okE {
			decode = e2e - ttft
		}
	}
	tokens := 1
	if v, ok := vals[SpanAttrCompletionTokens]; ok {
		tokens = int(v)
	}
	s.Request = Request{ID: id, Outcome: "ok", QueueMs: q * 1000, PrefillMs: prefill * 1000,
		FirstTokenMs: ttft * 1000, LastTokenMs: (ttft + decode) * 1000, TokensSent: tokens}
	return s, true
}

// number returns an attribute's value as a number (a double or an int).
func number(v *commonpb.AnyValue) (float64, bool) {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue, true
	case *commonpb.AnyValue_IntValue:
		return float64(x.IntValue), true
	}
	return 0, false
}

// ClientRequestIDs returns what the client's X-Request-Id may have been
// for a span's request id, most likely first: the id less vLLM's chat
// prefix (chatcmpl-), or less its completion prefix (cmpl-) and the
// prompt's index (-0), then the id itself.
func ClientRequestIDs(spanID string) []string {
	var out []string
	if rest, ok := strings.CutPrefix(spanID, "chatcmpl-"); ok && rest != "" {
		out = append(out, rest)
	}
	if rest, ok := strings.CutPrefix(spanID, "cmpl-"); ok && rest != "" {
		if i := strings.LastIndexByte(rest, '-'); i > 0 && isDigits(rest[i+1:]) {
			out = append(out, rest[:i])
		}
		out = append(out, rest)
	}
	return append(out, spanID)
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}
