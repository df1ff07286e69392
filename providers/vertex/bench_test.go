package vertex

import (
	"context"
	"testing"
	"time"

	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

// memGen and memRaw are in-memory server streams that return the same
// message forever, so the benchmarks measure the adapter's per-chunk work
// alone.
type memGen struct {
	grpc.ClientStream
	m *aiplatformpb.GenerateContentResponse
}

func (s memGen) Recv() (*aiplatformpb.GenerateContentResponse, error) { return s.m, nil }

type memRaw struct {
	grpc.ClientStream
	m *httpbody.HttpBody
}

func (s memRaw) Recv() (*httpbody.HttpBody, error) { return s.m, nil }

// BenchmarkChunkGenerate is the adapter's handling of one
// streamGenerateContent message: text, finish reason, usage and the JSON
// Data.
func BenchmarkChunkGenerate(b *testing.B) {
	cs := &chunkStream{gen: memGen{m: genMsg(" token", 0, 0, 0)}, resp: &cloudreq.CloudResponse{}, cancel: func() {}}
	b.ReportAllocs()
	for b.Loop() {
		ch, err := cs.Next()
		if err != nil || ch.Text != " token" {
			b.Fatal(err, ch.Text)
		}
	}
}

// BenchmarkChunkRawSSE is the handling of one streamRawPredict message
// carrying an OpenAI-compatible SSE chunk.
func BenchmarkChunkRawSSE(b *testing.B) {
	data := []byte("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" token\"},\"finish_reason\":null}]}\n\n")
	cs := &chunkStream{raw: memRaw{m: &httpbody.HttpBody{Data: data}}, resp: &cloudreq.CloudResponse{}, cancel: func() {}}
	b.ReportAllocs()
	for b.Loop() {
		ch, err := cs.Next()
		if err != nil || ch.Text != " token" {
			b.Fatal(err, ch.Text)
		}
	}
}

// BenchmarkStreamLoopback streams 64 messages per iteration from the fake
// server over loopback gRPC through cloudreq.Client: gRPC, the adapter and
// the client's stream bookkeeping together. ns/chunk is the figure to read.
func BenchmarkStreamLoopback(b *testing.B) {
	const n = 64
	f, addr := startFake(b)
	msgs := make([]*aiplatformpb.GenerateContentResponse, n)
	for i := range msgs {
		msgs[i] = genMsg(" token", 0, 0, 0)
	}
	msgs[n-1] = genMsg(".", aiplatformpb.Candidate_STOP, 4, n)
	f.set(func(f *fakeServer) { f.genChunks = msgs })
	c, _ := newFakeClient(b, addr)
	req := genReq()
	b.ReportAllocs()
	start := time.Now()
	iters := 0
	for b.Loop() {
		iters++
		s, err := c.Stream(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		got := 0
		for s.Next() {
			got++
		}
		if err := s.Err(); err != nil || got != n {
			b.Fatal(err, got)
		}
		_ = s.Close()
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(iters*n), "ns/chunk")
	// The fake records every call; keep its memory bounded across rounds.
	f.set(func(f *fakeServer) { f.calls = nil })
}

var _ cloudreq.ChunkStream = (*chunkStream)(nil)
