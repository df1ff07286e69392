package emulator

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// lockedBuffer is a bytes.Buffer safe for the emulator's writes and the
// test's read.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestOTLPSpans: each request answered in full is one OTLP JSON line
// holding vLLM's llm_request span, its gen_ai.* attributes the record's
// times in seconds, its request id vLLM's form of the client's
// X-Request-Id, its trace and span ids in hex, its kind a number.
func TestOTLPSpans(t *testing.T) {
	var out lockedBuffer
	s := start(t, Options{TimeScale: 0.01, Seed: 5, SpinWaits: -1, OTLPWriter: &out})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i, c := range []struct{ path, body, id string }{
		{"/v1/chat/completions", chatStream, "abc123"},
		{"/v1/completions", `{"model":"llama-3-8b","prompt":"hi","max_tokens":4}`, "def456"},
		{"/v1/chat/completions", chatStream, ""},
		{"/v1/chat/completions", chatStream, "faulty"},
	} {
		hdr := map[string]string{}
		if c.id != "" {
			hdr["X-Request-Id"] = c.id
		}
		if i == 3 {
			hdr[HeaderInject] = string(FaultThrottle)
		}
		resp, err := do(ctx, t, s.URL()+c.path, c.body, hdr)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	recs := waitRecords(t, s, 4)
	byID := map[string]Record{}
	for _, r := range recs {
		byID[r.ID] = r
	}

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 3, "the throttled request has no span")
	var ids []string
	for _, line := range lines {
		// OTLP/JSON's own form, as a collector's file exporter writes it.
		var raw struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []struct {
						TraceID string `json:"traceId"`
						SpanID  string `json:"spanId"`
						Kind    int    `json:"kind"`
						Name    string `json:"name"`
					} `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &raw), line)
		sp := raw.ResourceSpans[0].ScopeSpans[0].Spans[0]
		assert.Regexp(t, `^[0-9a-f]{32}$`, sp.TraceID)
		assert.Regexp(t, `^[0-9a-f]{16}$`, sp.SpanID)
		assert.Equal(t, 2, sp.Kind, "SPAN_KIND_SERVER")
		assert.Equal(t, SpanName, sp.Name)

		var td tracepb.TracesData
		require.NoError(t, protojson.Unmarshal([]byte(line), &td))
		span := td.GetResourceSpans()[0].GetScopeSpans()[0].GetSpans()[0]
		attrs := map[string]any{}
		for _, kv := range span.GetAttributes() {
			switch v := kv.GetValue().GetValue().(type) {
			case *commonpb.AnyValue_DoubleValue:
				attrs[kv.GetKey()] = v.DoubleValue
			case *commonpb.AnyValue_IntValue:
				attrs[kv.GetKey()] = v.IntValue
			case *commonpb.AnyValue_StringValue:
				attrs[kv.GetKey()] = v.StringValue
			}
		}
		r, ok := byID[attrs[SpanAttrEmulatorRequestID].(string)]
		require.True(t, ok)
		ids = append(ids, attrs[SpanAttrRequestID].(string))
		assert.Equal(t, SpanRequestID(&r), attrs[SpanAttrRequestID])
		assert.InDelta(t, r.QueueMs/1000, attrs[SpanAttrQueue], 1e-12)
		assert.InDelta(t, r.PrefillMs/1000, attrs[SpanAttrPrefill], 1e-12)
		assert.InDelta(t, r.FirstTokenMs/1000, attrs[SpanAttrTTFT], 1e-12)
		assert.InDelta(t, r.LastTokenMs/1000, attrs[SpanAttrE2E], 1e-12)
		assert.InDelta(t, (r.LastTokenMs-r.FirstTokenMs)/1000, attrs[SpanAttrDecode], 1e-12)
		assert.Equal(t, int64(r.TokensSent), attrs[SpanAttrCompletionTokens])
		assert.Equal(t, int64(r.PromptTokens), attrs[SpanAttrPromptTokens])
		assert.Equal(t, uint64(r.Arrival.UnixNano()), span.GetStartTimeUnixNano())
	}
	assert.Contains(t, ids, "chatcmpl-abc123")
	assert.Contains(t, ids, "cmpl-def456-0")
	var bare string
	for _, r := range recs {
		if r.ClientRequestID == "" && r.Outcome == "ok" {
			bare = "chatcmpl-" + r.ID
		}
	}
	assert.Contains(t, ids, bare, "no X-Request-Id: the emulator's id")
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	n := 0
	for sc.Scan() {
		n++
	}
	assert.Equal(t, 3, n, "one line a span")
}
