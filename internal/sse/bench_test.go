package sse

import (
	"bytes"
	"io"
	"testing"
)

// loop serves the same bytes forever, in reads of at most n bytes (a
// network-sized read holds a handful of events).
type loop struct {
	b   []byte
	off int
	n   int
}

func (l *loop) Read(p []byte) (int, error) {
	p = p[:min(len(p), l.n)]
	n := 0
	for n < len(p) {
		c := copy(p[n:], l.b[l.off:])
		n += c
		l.off = (l.off + c) % len(l.b)
	}
	return n, nil
}

// openAIChunk is a typical vLLM chat-completion chunk (about 230 bytes).
const openAIChunk = `data: {"id":"chatcmpl-8c1b2f0e","object":"chat.completion.chunk","created":1730000000,"model":"meta-llama/Meta-Llama-3-8B-Instruct","choices":[{"index":0,"delta":{"content":" token"},"logprobs":null,"finish_reason":null}]}` + "\n\n"

// BenchmarkReader measures one event per op: ns/op is ns per chunk and
// allocs/op allocations per chunk.
func BenchmarkReader(b *testing.B) {
	for _, tc := range []struct {
		name  string
		chunk string
		read  int
	}{
		{"openai-LF-4KiB-reads", openAIChunk, 4096},
		{"openai-CRLF-512B-reads", string(bytes.ReplaceAll([]byte(openAIChunk), []byte("\n"), []byte("\r\n"))), 512},
		{"multiline-event-4KiB-reads", "event: delta\nid: 1\ndata: line one\ndata: line two\n: comment\n\n", 4096},
	} {
		b.Run(tc.name, func(b *testing.B) {
			src := &loop{b: []byte(tc.chunk), n: tc.read}
			r := NewReader(src, Limits{})
			b.SetBytes(int64(len(tc.chunk)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Next(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRecordReader measures one NUL-delimited record per op.
func BenchmarkRecordReader(b *testing.B) {
	rec := []byte(`{"response":"Hello, this is a legacy EAS streaming chunk"}` + "\x00")
	r := NewNULReader(&loop{b: rec, n: 4096}, 0)
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Next(); err != nil && err != io.EOF {
			b.Fatal(err)
		}
	}
}
