package servermetrics

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// TestReadSpans reads a file written to the documented shape: an
// OpenTelemetry Collector file exporter's OTLP JSON lines (hex ids,
// int64s as strings, kind as a number) holding vLLM V1's llm_request
// spans, an HTTP span that is not one, a V0 span (no prefill or decode of
// its own), a blank line and a last line cut short.
func TestReadSpans(t *testing.T) {
	got := map[string]Span{}
	st, err := ReadSpansFile("testdata/vllm-spans.jsonl", func(s *Span) { got[s.ID] = *s })
	require.NoError(t, err)
	assert.Equal(t, SpanStats{Lines: 4, Bad: 1, Spans: 5, Other: 1}, st)
	require.Len(t, got, 5)

	s := got["chatcmpl-0123456789abcdef0123456789abcdef"]
	assert.False(t, s.Estimated)
	assert.InDelta(t, 12.0, s.Request.QueueMs, 1e-9)
	assert.InDelta(t, 45.0, s.Request.PrefillMs, 1e-9)
	assert.InDelta(t, 60.1, s.Request.FirstTokenMs, 1e-9)
	assert.InDelta(t, 600.0, s.Request.LastTokenMs-s.Request.FirstTokenMs, 1e-9, "decode")
	assert.InDelta(t, 660.1, s.E2EMs, 1e-9)
	assert.Equal(t, 128, s.Request.TokensSent)
	assert.Equal(t, 512, s.PromptTokens)
	assert.Equal(t, "ok", s.Request.Outcome)
	assert.Equal(t, int64(1764640000100000000), s.Start.UnixNano())

	v0 := got["chatcmpl-11111111111111111111111111111111"]
	assert.True(t, v0.Estimated)
	assert.InDelta(t, 20.0, v0.Request.QueueMs, 1e-9)
	assert.InDelta(t, 50.0, v0.Request.PrefillMs, 1e-9, "TTFT − queue")
	assert.InDelta(t, 400.0, v0.Request.LastTokenMs-v0.Request.FirstTokenMs, 1e-9, "E2E − TTFT")
}

// TestReadSpansBad: a file with no OTLP JSON line is ERR_INVALID_PARAM,
// naming the form it wants; an empty one holds nothing.
func TestReadSpansBad(t *testing.T) {
	for _, in := range []string{"hello\n", "{\"resourceSpans\":7}\n", "\x28\xb5\x2f\xfd compressed"} {
		_, err := ReadSpans(strings.NewReader(in), func(*Span) { t.Fatal("no span") })
		require.Error(t, err, in)
		assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
		assert.Contains(t, err.Error(), "OTLP JSON")
	}
	st, err := ReadSpans(strings.NewReader(""), func(*Span) {})
	require.NoError(t, err)
	assert.Zero(t, st)
	_, err = ReadSpansFile("testdata/none.jsonl", func(*Span) {})
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
}

// TestClientRequestIDs: vLLM's request ids back to the X-Request-Id sent.
func TestClientRequestIDs(t *testing.T) {
	assert.Equal(t, []string{"abc", "chatcmpl-abc"}, ClientRequestIDs("chatcmpl-abc"))
	assert.Equal(t, []string{"abc", "abc-0", "cmpl-abc-0"}, ClientRequestIDs("cmpl-abc-0"))
	assert.Equal(t, []string{"abc", "cmpl-abc"}, ClientRequestIDs("cmpl-abc"))
	assert.Equal(t, []string{"emu-x-1-2"}, ClientRequestIDs("emu-x-1-2"))
}

// BenchmarkReadSpans reads a collector's file of 1,000 lines of 5 spans
// each (the testdata file's first two lines, repeated).
func BenchmarkReadSpans(b *testing.B) {
	data, err := os.ReadFile("testdata/vllm-spans.jsonl")
	require.NoError(b, err)
	lines := strings.SplitN(string(data), "\n", 4)
	var sb strings.Builder
	for range 500 {
		sb.WriteString(lines[0] + "\n" + lines[2] + "\n")
	}
	in := sb.String()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		if _, err := ReadSpans(strings.NewReader(in), func(*Span) { n++ }); err != nil || n != 2000 {
			b.Fatal(n, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2000, "ns/span")
}
