package bench_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/hooks"
	"github.com/cloudinfer/cloudinfer/internal/h1client"
	"github.com/cloudinfer/cloudinfer/providers/openai"
)

// loopReply is scripts/loopserver's answer: one fixed, non-streamed chat
// completion of one output token.
const loopReply = `{"id":"cmpl-loop","object":"chat.completion","created":0,"model":"m",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`

// loopServer is scripts/loopserver in the test: it reads each request to
// its end and answers loopReply at once.
func loopServer(tb testing.TB) *httptest.Server {
	body := []byte(loopReply)
	length := strconv.Itoa(len(body))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h := w.Header()
		h["Content-Type"] = []string{"application/json"}
		h["Content-Length"] = []string{length}
		_, _ = w.Write(body)
	}))
	tb.Cleanup(srv.Close)
	return srv
}

// loopConnect connects a target to srv as the CLI connects one to a
// server on this machine: the OpenAI adapter, the default hooks, no
// retries, a per-request timeout, a pool of connections as large as the
// run's workers; with h1, h1client carries the requests (the CLI's
// default), else net/http's Transport (--http-client std).
func loopConnect(srv *httptest.Server, conns int, h1 bool) func(context.Context, *bench.Target) (*cloudreq.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 0
	tr.MaxIdleConnsPerHost = max(conns, bench.MaxWorkers)
	hc := &http.Client{Transport: tr}
	if h1 {
		hc.Transport = &h1client.Transport{Fallback: tr, MaxIdleConnsPerHost: tr.MaxIdleConnsPerHost}
	}
	return func(context.Context, *bench.Target) (*cloudreq.Client, error) {
		ad, err := openai.New(openai.Options{BaseURL: srv.URL, AllowInsecureHTTP: true, HTTPClient: hc})
		if err != nil {
			return nil, err
		}
		return cloudreq.New(cloudreq.Options{
			Adapters: []cloudreq.Adapter{ad},
			CallOptions: cloudreq.CallOptions{Hooks: hooks.Default(), Retry: cloudreq.RetryOptions{MaxAttempts: 1},
				Timeout: 2 * time.Minute},
		})
	}
}

// BenchmarkClosedLoop is the whole per-request path of a closed loop as
// scripts/vs-vegeta.sh measures it: 64 workers sending the script's
// request (prompt "hello", one output token, not streamed) through the
// OpenAI adapter to a loopback server that answers at once, b.N
// requests, over h1client (client=sync, the CLI's default) and net/http's
// Transport (client=std). Client and server share the machine; allocs/op
// are the client's and the server's per request, req/s the pair's rate.
func BenchmarkClosedLoop(b *testing.B) {
	for _, h1 := range []bool{true, false} {
		name := "client=std"
		if h1 {
			name = "client=sync"
		}
		b.Run(name, func(b *testing.B) { benchClosedLoop(b, h1) })
	}
}

func benchClosedLoop(b *testing.B, h1 bool) {
	const conns = 64
	srv := loopServer(b)
	p := &bench.Plan{
		Targets: []bench.Target{{Name: "m", Provider: "openai", Model: "m", Stream: false,
			Payload: bench.Payload{Prompt: "hello", OutputTokens: 1}}},
		Load:   bench.Load{Model: bench.LoadClosed, Concurrency: conns},
		Limits: bench.Limits{Requests: b.N},
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	res, err := bench.Run(context.Background(), p, bench.Options{Connect: loopConnect(srv, conns, h1)})
	el := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if c := res.Targets[0].Counts(); c.Failed > 0 || c.Requests != int64(b.N) {
		b.Fatalf("%d of %d requests, %d failed: %v", c.Requests, b.N, c.Failed, res.Targets[0].ErrorExamples)
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "req/s")
}
