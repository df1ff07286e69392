package bench

import (
	"context"
	"testing"
	"time"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/latency"
)

// benchTimeline returns a timeline as the client fills it for one call on
// a reused connection: non-streamed (one chunk, the body) or streamed with
// n content chunks 2 ms apart.
func benchTimeline(streamed bool, n int) *latency.Timeline {
	t0 := time.Now()
	at := func(us int) time.Time { return t0.Add(time.Duration(us) * time.Microsecond) }
	tl := &latency.Timeline{IntendedSend: t0, Start: at(2), Streamed: streamed, Attempts: []latency.Attempt{{
		Number: 1, Send: at(5), GotConn: at(6), ConnReused: true, WroteRequest: at(20), FirstByte: at(300), End: at(400), Status: 200,
	}}}
	if !streamed {
		tl.Chunks = []latency.Chunk{{At: at(350), Tokens: 1, Content: true}}
		tl.End = at(400)
		return tl
	}
	for i := range n {
		tl.Chunks = append(tl.Chunks, latency.Chunk{At: at(300 + 2000*i), Tokens: 1, Content: true})
	}
	tl.End = at(300 + 2000*n)
	tl.Attempts[0].End = tl.End
	return tl
}

// BenchmarkRecordCall is the per-request recording path: the collector's
// StartCall and EndCall for one finished call (Measure, the recorder, the
// series, the chart points), as every measured request of a run goes
// through it.
func BenchmarkRecordCall(b *testing.B) {
	for _, tc := range []struct {
		name     string
		streamed bool
		chunks   int
	}{{"invoke", false, 1}, {"stream-64", true, 64}} {
		b.Run(tc.name, func(b *testing.B) {
			p := &Plan{Targets: []Target{{Name: "t", Provider: "openai", Model: "m"}}, Limits: Limits{Requests: 1}}
			if err := p.Prepare(); err != nil {
				b.Fatal(err)
			}
			col, err := newCollector(p, &p.Targets[0])
			if err != nil {
				b.Fatal(err)
			}
			col.begin(time.Now())
			tl := benchTimeline(tc.streamed, tc.chunks)
			req := &cloudreq.CloudRequest{Provider: "openai", Target: cloudreq.Target{Model: "m"}}
			resp := &cloudreq.CloudResponse{StatusCode: 200, Usage: cloudreq.Usage{OutputTokens: tc.chunks}}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				_, co := col.StartCall(ctx, req, tc.streamed)
				co.EndCall(resp, tl, nil)
			}
		})
	}
}
