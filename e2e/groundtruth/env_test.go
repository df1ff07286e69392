package groundtruth

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/providers/openai"
)

// env is an emulator on loopback and a cloudreq client talking to it
// through the OpenAI-compatible adapter.
type env struct {
	srv    *emulator.Server
	client *cloudreq.Client
}

// rewrite is a RoundTripper that edits requests and responses: it plays a
// provider that refuses once, or one that reports nothing about its starts.
type rewrite struct {
	next http.RoundTripper
	req  func(n int, r *http.Request)
	resp func(r *http.Response)

	mu sync.Mutex
	n  int
}

func (rw *rewrite) RoundTrip(r *http.Request) (*http.Response, error) {
	rw.mu.Lock()
	rw.n++
	n := rw.n
	rw.mu.Unlock()
	if rw.req != nil {
		r = r.Clone(r.Context())
		rw.req(n, r)
	}
	resp, err := rw.next.RoundTrip(r)
	if err == nil && rw.resp != nil {
		rw.resp(resp)
	}
	return resp, err
}

// silent removes the emulator's cold-start report, as a real provider that
// says nothing about its starts would.
func silent(r *http.Response) {
	r.Header.Del(emulator.HeaderColdStart)
	r.Header.Del(emulator.HeaderColdStartMs)
}

func newEnv(t testing.TB, scale float64, endpoints []emulator.Endpoint, rw *rewrite, clientOpts ...func(*cloudreq.Options)) *env {
	t.Helper()
	srv, err := emulator.New(emulator.Options{TimeScale: scale, Seed: 1, Endpoints: endpoints})
	require.NoError(t, err)
	require.NoError(t, srv.Start("127.0.0.1:0", ""))
	tr := http.DefaultTransport.(*http.Transport).Clone()
	var rt http.RoundTripper = tr
	if rw != nil {
		rw.next = tr
		rt = rw
	}
	ad, err := openai.New(openai.Options{BaseURL: srv.URL(), HTTPClient: &http.Client{Transport: rt}})
	require.NoError(t, err)
	opts := cloudreq.Options{Adapters: []cloudreq.Adapter{ad}}
	opts.Retry.NoBudget = true
	for _, f := range clientOpts {
		f(&opts)
	}
	c, err := cloudreq.New(opts, emulator.WithStartReport())
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = c.Close()
		tr.CloseIdleConnections()
		_ = srv.Close()
	})
	return &env{srv: srv, client: c}
}

// endpoint returns a built-in profile as an endpoint named name.
func endpoint(t testing.TB, profile, name string, edit func(*emulator.Endpoint)) emulator.Endpoint {
	t.Helper()
	p, ok := emulator.BuiltinProfile(profile)
	require.True(t, ok, profile)
	e := emulator.Endpoint{Name: name, Profile: p}
	if edit != nil {
		edit(&e)
	}
	return e
}

func request(model string, maxTokens int) *cloudreq.CloudRequest {
	return &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderOpenAI, Service: cloudreq.ServiceOpenAICompatible, Action: cloudreq.ActionGenerate,
		Target: cloudreq.Target{Model: model}, Class: "chat",
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "Say hello."}}, MaxTokens: maxTokens},
	}
}

// result is one streamed call: its measurement and the emulator's truth.
type result struct {
	sample latency.Sample
	resp   *cloudreq.CloudResponse
	// truthTTFT is X-Emulator-Ttft-Ms: arrival → first token, as injected.
	truthTTFT time.Duration
}

// stream runs one streamed call to the end and measures it.
func (e *env) stream(t testing.TB, req *cloudreq.CloudRequest) result {
	t.Helper()
	r, err := e.try(req)
	require.NoError(t, err)
	return r
}

// try is stream for any goroutine: it returns the error instead of failing.
func (e *env) try(req *cloudreq.CloudRequest) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := e.client.Stream(ctx, req)
	if err != nil {
		return result{}, err
	}
	defer s.Close()
	for s.Next() {
	}
	if err := s.Err(); err != nil {
		return result{}, err
	}
	resp := s.Response()
	o := latency.Outcome{Endpoint: req.EndpointKey(), Class: req.Class, Start: resp.Start,
		OutputTokens: resp.Usage.OutputTokens, TokenSource: latency.TokenSource(resp.Usage.Source)}
	r := result{sample: latency.Measure(resp.Timing, o), resp: resp}
	if v := resp.Metadata[emulator.HeaderTTFTMs]; v != "" {
		ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return r, err
		}
		r.truthTTFT = time.Duration(ms * float64(time.Millisecond))
	}
	return r, nil
}

// record returns the emulator's ground-truth record of a response. The
// emulator stores it once the handler returns, which may be just after the
// client read the stream's end: it is polled for, 2 s at most. Safe to call
// from any goroutine (it reports with Errorf).
func (e *env) record(t testing.TB, resp *cloudreq.CloudResponse) emulator.Record {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		if r, ok := e.srv.Record(resp.Metadata[emulator.HeaderRequestID]); ok {
			return r
		}
		if time.Now().After(deadline) {
			t.Errorf("no emulator record for request %q", resp.Metadata[emulator.HeaderRequestID])
			return emulator.Record{}
		}
		time.Sleep(time.Millisecond)
	}
}
