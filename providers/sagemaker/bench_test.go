package sagemaker

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime/types"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

// memSource is an eventSource over a prefilled channel: the benchmark then
// measures the chunk stream's own work, not a producer goroutine.
type memSource struct{ ch chan types.ResponseStream }

func (m *memSource) Events() <-chan types.ResponseStream { return m.ch }
func (m *memSource) Close() error                        { return nil }
func (m *memSource) Err() error                          { return nil }

// newMemSource holds n events: n-1 of body (cycling through them) and last.
func newMemSource(n int, last []byte, body ...[]byte) *memSource {
	part := func(p []byte) types.ResponseStream {
		return &types.ResponseStreamMemberPayloadPart{Value: types.PayloadPart{Bytes: p}}
	}
	evs := make([]types.ResponseStream, len(body))
	for i, p := range body {
		evs[i] = part(p)
	}
	m := &memSource{ch: make(chan types.ResponseStream, n)}
	for i := range n - 1 {
		m.ch <- evs[i%len(evs)]
	}
	m.ch <- part(last)
	close(m.ch)
	return m
}

// benchStream reads b.N chunks, one per PayloadPart, through a chunkStream;
// the last part ends the stream. ns/op and allocs/op are per chunk.
func benchStream(b *testing.B, generate bool, last []byte, body ...[]byte) {
	b.ReportAllocs()
	src := newMemSource(b.N, last, body...)
	cs := newChunkStream(context.Background(), src, nil, &cloudreq.CloudResponse{}, generate)
	b.ResetTimer()
	n := 0
	for {
		ch, err := cs.Next()
		if err != nil {
			if err != io.EOF || n != b.N {
				b.Fatalf("after %d of %d chunks: %v", n, b.N, err)
			}
			break
		}
		if generate && ch.Text == "" {
			b.Fatal("no text")
		}
		n++
	}
}

func BenchmarkChunkStreamOpenAI(b *testing.B) {
	benchStream(b, true,
		[]byte("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"llama-3-8b\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" end\"},\"logprobs\":null,\"finish_reason\":\"stop\"}]}\n\n"),
		[]byte("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"llama-3-8b\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" token\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n"))
}

func BenchmarkChunkStreamTGI(b *testing.B) {
	benchStream(b, true,
		[]byte("data:{\"index\":2,\"token\":{\"id\":2,\"text\":\" end\",\"logprob\":-0.1,\"special\":false},\"generated_text\":\"token end\",\"details\":{\"finish_reason\":\"length\",\"generated_tokens\":2,\"seed\":null}}\n\n"),
		[]byte("data:{\"index\":1,\"token\":{\"id\":1234,\"text\":\" token\",\"logprob\":-0.25,\"special\":false},\"generated_text\":null,\"details\":null}\n\n"))
}

// BenchmarkChunkStreamSplitLines has each line cut across two parts.
// ns/op and allocs/op are per chunk (two parts).
func BenchmarkChunkStreamSplitLines(b *testing.B) {
	line := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" token\"},\"finish_reason\":\"stop\"}]}\n\n"
	b.ReportAllocs()
	src := newMemSource(2*b.N, []byte(line[40:]), []byte(line[:40]), []byte(line[40:]))
	cs := newChunkStream(context.Background(), src, nil, &cloudreq.CloudResponse{}, true)
	b.ResetTimer()
	n := 0
	for {
		if _, err := cs.Next(); err != nil {
			if err != io.EOF || n != b.N {
				b.Fatalf("after %d of %d chunks: %v", n, b.N, err)
			}
			break
		}
		n++
	}
}

func BenchmarkChunkStreamInvoke(b *testing.B) {
	p := []byte(`{"token":{"text":" token"}}` + "\n")
	benchStream(b, false, p, p)
}

// BenchmarkStreamEndToEnd reads b.N chunks through the SDK over a loopback
// HTTP connection: eventstream decoding and the SDK's goroutines included.
func BenchmarkStreamEndToEnd(b *testing.B) {
	b.ReportAllocs()
	tok := part("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" token\"},\"finish_reason\":null}]}\n\n")
	end := part("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" end\"},\"finish_reason\":\"stop\"}]}\n\n")
	frames := encodeFrames(b, tok)
	last := encodeFrames(b, end)
	ad, _ := testAdapter(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		n, _ := strconv.Atoi(r.Header.Get("X-Chunks"))
		writeStreamHead(w, nil)
		for range n - 1 {
			_, _ = w.Write(frames)
		}
		_, _ = w.Write(last)
	}))
	call, err := genCall("llm", true, ad, "")
	if err != nil {
		b.Fatal(err)
	}
	call.Request.Header = http.Header{"X-Chunks": {strconv.Itoa(b.N)}}
	b.ResetTimer()
	cs, err := ad.Stream(context.Background(), call)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	n := 0
	for {
		if _, err := cs.Next(); err != nil {
			if err != io.EOF || n != b.N {
				b.Fatalf("after %d of %d chunks: %v", n, b.N, err)
			}
			break
		}
		n++
	}
}
