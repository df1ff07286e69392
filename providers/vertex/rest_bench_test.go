package vertex

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

// genFrame is one streamGenerateContent SSE event's data, as Vertex sends it.
const genFrame = `{"candidates":[{"content":{"role":"model","parts":[{"text":" token"}]}}],"modelVersion":"gemini-2.0-flash","createTime":"2026-01-01T00:00:00Z","responseId":"r1"}`

// BenchmarkRESTChunkGenerate is the REST transport's handling of one
// streamGenerateContent?alt=sse event: the JSON read into the proto, then
// the gRPC path's chunk fields.
func BenchmarkRESTChunkGenerate(b *testing.B) {
	d := &genDecoder{frames: frames{what: "GenerateContentResponse"}}
	d.setHead(&cloudreq.CloudResponse{})
	frame := []byte(genFrame)
	b.ReportAllocs()
	for b.Loop() {
		ch, _, err := d.Decode(frame)
		if err != nil || ch.Text != " token" {
			b.Fatal(err, ch.Text)
		}
	}
}

// BenchmarkRESTArrayStream reads a 64-element serverStreamingPredict JSON
// array per iteration; ns/chunk is the figure to read.
func BenchmarkRESTArrayStream(b *testing.B) {
	const n = 64
	el := `{"outputs":[{"structVal":{"content":{"dtype":"STRING","stringVal":[" token"]}}}]}`
	body := []byte("[" + strings.Repeat(el+"\n,\r\n", n-1) + el + "]")
	b.ReportAllocs()
	chunks := 0
	for b.Loop() {
		s := newArrayStream(&cloudreq.CloudResponse{}, io.NopCloser(bytes.NewReader(body)), &sspDecoder{frames{what: "StreamingPredictResponse"}}, 1<<20)
		for {
			ch, err := s.Next()
			if err == io.EOF {
				break
			}
			if err != nil || ch.Text != " token" {
				b.Fatal(err, ch.Text)
			}
			chunks++
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(chunks), "ns/chunk")
}

// TestRESTGenerateFastPath: a text-only frame read by the fast path gives
// the chunk protojson and the gRPC path's fields give.
func TestRESTGenerateFastPath(t *testing.T) {
	for _, frame := range []string{
		genFrame,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"a"},{"text":"b"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":2,"totalTokenCount":5},"responseId":"r2"}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"x"}]},"finishReason":"MAX_TOKENS"}],"usageMetadata":{"promptTokenCount":0,"candidatesTokenCount":0}}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"x"}]},"finishReason":"SAFETY"}]}`,
	} {
		fast := &genDecoder{frames: frames{what: "GenerateContentResponse"}}
		fast.setHead(&cloudreq.CloudResponse{})
		got, ok := fast.fast([]byte(frame))
		if !ok {
			t.Fatalf("%s: not read by the fast path", frame)
		}
		slow := &genDecoder{frames: frames{what: "GenerateContentResponse"}}
		slow.setHead(&cloudreq.CloudResponse{})
		m := &aiplatformpb.GenerateContentResponse{}
		if err := protoIn.Unmarshal([]byte(frame), m); err != nil {
			t.Fatal(err)
		}
		want := slow.cs.genFields(m)
		if got.Text != want.Text || got.FinishReason != want.FinishReason || (got.Usage == nil) != (want.Usage == nil) ||
			got.Usage != nil && *got.Usage != *want.Usage || fast.cs.resp.RequestID != slow.cs.resp.RequestID || fast.cs.finished != slow.cs.finished {
			t.Errorf("%s:\nfast %+v %+v id %q\nslow %+v %+v id %q", frame, got, got.Usage, fast.cs.resp.RequestID, want, want.Usage, slow.cs.resp.RequestID)
		}
	}
	d := &genDecoder{frames: frames{what: "GenerateContentResponse"}}
	d.setHead(&cloudreq.CloudResponse{})
	for _, rich := range []string{
		`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{}}}]}}]}`,
		`{"candidates":[{"content":{"parts":[{"text":"t","thought":true}]}}]}`,
		`{"candidates": [{"content": {"parts`,
		`{"error":{"code":500,"status":"INTERNAL"}}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"x"}]},"index":0},{"content":{"role":"model","parts":[{"text":"y"}]},"index":1}]}`,
	} {
		if _, ok := d.fast([]byte(rich)); ok {
			t.Errorf("%s: read by the fast path", rich)
		}
	}
}
