package openai

import (
	"io"
	"testing"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
	"github.com/cloudinfer/cloudinfer/internal/openaiwire"
)

// loop serves the same bytes forever in reads of at most 4 KiB, like a
// socket delivering a steady stream.
type loop struct {
	b   []byte
	off int
}

func (l *loop) Read(p []byte) (int, error) {
	p = p[:min(len(p), 4096)]
	n := 0
	for n < len(p) {
		c := copy(p[n:], l.b[l.off:])
		n += c
		l.off = (l.off + c) % len(l.b)
	}
	return n, nil
}

func (l *loop) Close() error { return nil }

// BenchmarkStreamChunk measures one streamed chat chunk per op, as the
// adapter's ChunkStream parses it: SSE framing and the chunk's JSON. ns/op
// is ns per chunk, allocs/op allocations per chunk.
func BenchmarkStreamChunk(b *testing.B) {
	var body io.ReadCloser = &loop{b: []byte(helloChunk)}
	s := httpadapter.NewStream(&cloudreq.CloudResponse{}, body, httpadapter.StreamConfig{
		Provider: cloudreq.ProviderOpenAI, Framing: httpadapter.FramingSSE, MaxFrame: httpadapter.DefaultMaxEvent,
		Decoder: &openaiwire.StreamDecoder{Provider: cloudreq.ProviderOpenAI},
	})
	b.SetBytes(int64(len(helloChunk)))
	b.ReportAllocs()
	for b.Loop() {
		ch, err := s.Next()
		if err != nil || ch.Text != "Hello" {
			b.Fatal(ch, err)
		}
	}
}
