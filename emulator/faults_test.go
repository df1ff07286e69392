package emulator

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const chatStream = `{"model":"llama-3-8b","stream":true,"max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`

// do posts body to url with extra headers on a fresh connection.
func do(ctx context.Context, t *testing.T, url, body string, hdr map[string]string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return (&http.Client{Transport: tr}).Do(req)
}

func TestTransportFaults(t *testing.T) {
	p, _ := BuiltinProfile("llama-3-8b")
	p.StallMs = 50
	s := start(t, Options{TimeScale: 0.001, Seed: 4, Endpoints: []Endpoint{{Name: "llama-3-8b", Profile: p}}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url := s.URL() + "/v1/chat/completions"
	inject := func(f Fault) map[string]string { return map[string]string{HeaderInject: string(f)} }

	t.Run("reset before headers", func(t *testing.T) {
		_, err := do(ctx, t, url, chatStream, inject(FaultResetBeforeHeaders))
		require.Error(t, err)
		assert.True(t, errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || strings.Contains(err.Error(), "EOF"), "%v", err)
	})
	t.Run("html 502", func(t *testing.T) {
		resp, err := do(ctx, t, url, chatStream, inject(FaultHTML502))
		require.NoError(t, err)
		defer resp.Body.Close()
		assert.Equal(t, 502, resp.StatusCode)
		assert.Equal(t, "text/html", resp.Header.Get("Content-Type"))
		b, _ := io.ReadAll(resp.Body)
		assert.Contains(t, string(b), "<title>502 Bad Gateway</title>")
	})
	t.Run("close mid-stream", func(t *testing.T) {
		resp, err := do(ctx, t, url, chatStream, inject(FaultCloseMidStream))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
		assert.Equal(t, 5, strings.Count(string(b), `"delta":{"content"`))
		assert.NotContains(t, string(b), "[DONE]")
	})
	t.Run("stall mid-stream", func(t *testing.T) {
		// From before the request: its tokens may all be written, and the
		// stall begun, by the time the headers reach the client.
		t0 := time.Now()
		resp, err := do(ctx, t, url, chatStream, inject(FaultStallMidStream))
		require.NoError(t, err)
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
		assert.GreaterOrEqual(t, time.Since(t0), 50*time.Microsecond) // StallMs × scale
	})
	t.Run("malformed body", func(t *testing.T) {
		resp, err := do(ctx, t, url, chatStream, inject(FaultMalformedBody))
		require.NoError(t, err)
		defer resp.Body.Close()
		events := readSSE(t, resp.Body)
		require.NotEmpty(t, events)
		assert.False(t, json.Valid([]byte(events[len(events)-1])))
	})
	t.Run("malformed whole body", func(t *testing.T) {
		resp, err := do(ctx, t, url, strings.Replace(chatStream, `"stream":true`, `"stream":false`, 1), inject(FaultMalformedBody))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, 200, resp.StatusCode)
		assert.False(t, json.Valid(b))
	})
	t.Run("stream error", func(t *testing.T) {
		resp, err := do(ctx, t, url, chatStream, inject(FaultStreamError))
		require.NoError(t, err)
		defer resp.Body.Close()
		events := readSSE(t, resp.Body)
		require.GreaterOrEqual(t, len(events), 2)
		assert.Equal(t, "[DONE]", events[len(events)-1], "vLLM still sends [DONE] after an error")
		var e openAIError
		require.NoError(t, json.Unmarshal([]byte(events[len(events)-2]), &e))
		assert.Equal(t, "InternalServerError", e.Error.Type)
	})
	t.Run("unknown fault", func(t *testing.T) {
		resp, err := do(ctx, t, url, chatStream, map[string]string{HeaderInject: "gremlins"})
		require.NoError(t, err)
		defer resp.Body.Close()
		assert.Equal(t, 400, resp.StatusCode)
	})
	t.Run("every error fault answers its status", func(t *testing.T) {
		for _, f := range Faults() {
			if !f.isError() {
				continue
			}
			resp, err := do(ctx, t, url, chatStream, inject(f))
			require.NoError(t, err)
			want, _ := openAIErrorFor(f, "llama-3-8b")
			assert.Equal(t, want, resp.StatusCode, f)
			assert.Equal(t, string(f), resp.Header.Get(HeaderFault))
			require.NoError(t, resp.Body.Close())
		}
	})
}

func TestColdStart(t *testing.T) {
	phi, _ := BuiltinProfile("phi-3-mini")
	phi.ColdStartMs = Dist{2800, 0}
	eps := []Endpoint{
		{Name: "hold", Profile: phi, IdleWindowMs: 250_000, StartCold: true},
		{Name: "reject", Profile: phi, StartCold: true, ColdMode: ColdReject},
		{Name: "warm", Profile: phi},
	}
	const scale = 0.001
	s := start(t, Options{TimeScale: scale, Seed: 8, Endpoints: eps})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	chat := func(model string, hdr map[string]string) *http.Response {
		resp, err := do(ctx, t, s.URL()+"/v1/chat/completions", `{"model":"`+model+`","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`, hdr)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
		return resp
	}
	coldMs := func(resp *http.Response) float64 {
		v, err := strconv.ParseFloat(resp.Header.Get(HeaderColdStartMs), 64)
		require.NoError(t, err)
		return v
	}

	// Hold: the first request waits the whole setup time, the next is warm.
	resp := chat("hold", nil)
	assert.Equal(t, "true", resp.Header.Get(HeaderColdStart))
	assert.InDelta(t, 2800*scale, coldMs(resp), 0.2)
	resp = chat("hold", nil)
	assert.Equal(t, "false", resp.Header.Get(HeaderColdStart))
	// After the idle window (250 s emulated = 250 ms real, a margin that a
	// loaded machine keeps between two calls) it is cold again. The window
	// runs from the end of the handler, which may lag the client's read.
	time.Sleep(400 * time.Millisecond)
	resp = chat("hold", nil)
	assert.Equal(t, "true", resp.Header.Get(HeaderColdStart))

	// Reject: not-ready answers until the model is up, then success.
	resp = chat("reject", nil)
	assert.Equal(t, 503, resp.StatusCode)
	assert.Equal(t, string(FaultModelNotReady), resp.Header.Get(HeaderFault))
	assert.NotEmpty(t, resp.Header.Get("Retry-After"), "OpenAI's retry delay")
	time.Sleep(time.Duration(2800*scale*float64(time.Millisecond)) + 2*time.Millisecond)
	resp = chat("reject", nil)
	assert.Equal(t, 200, resp.StatusCode)

	// Forced cold start on a warm endpoint.
	resp = chat("warm", map[string]string{HeaderCold: "1"})
	assert.Equal(t, "true", resp.Header.Get(HeaderColdStart))
	resp = chat("warm", nil)
	assert.Equal(t, "false", resp.Header.Get(HeaderColdStart))

	// SageMaker's not-ready signal, typed by the official client.
	eps[1].Name = "reject2"
	s2 := start(t, Options{TimeScale: scale, Seed: 8, Endpoints: []Endpoint{eps[1]}})
	c := sageMakerClient(s2, "AKID", "secret")
	_, err := c.InvokeEndpoint(ctx, &sagemakerruntime.InvokeEndpointInput{EndpointName: aws.String("reject2"), Body: []byte(tgiSample)})
	var mnr *types.ModelNotReadyException
	require.True(t, errors.As(err, &mnr), "%T %v", err, err)
}

// TestThrottleTokenBucket: a token bucket refuses the request beyond its
// burst, the retry delay telling when its next token is due (read here
// from Azure ML's millisecond headers).
func TestThrottleTokenBucket(t *testing.T) {
	p := Profile{Name: "tiny", TTFTMs: Dist{1, 0}, TPOTMs: Dist{1, 0}, OutputTokens: Dist{1, 0}, Throttle: &TokenBucket{RatePerSec: 1, Burst: 2}}
	s := start(t, Options{TimeScale: 1, Seed: 1, Endpoints: []Endpoint{{Name: "tiny", Profile: p}}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var codes []int
	first := time.Now()
	for range 3 {
		resp, err := do(ctx, t, s.URL()+"/azureml/tiny/chat/completions?api-version=2024-05-01-preview", `{"messages":[{"role":"user","content":"hi"}]}`, nil)
		require.NoError(t, err)
		codes = append(codes, resp.StatusCode)
		if resp.StatusCode == 429 {
			assert.Equal(t, "1", resp.Header.Get("Retry-After"))
			assert.Equal(t, resp.Header.Get("retry-after-ms"), resp.Header.Get("x-ms-retry-after-ms"))
			ms, err := strconv.Atoi(resp.Header.Get("retry-after-ms"))
			require.NoError(t, err)
			// The next token is due a second after the bucket was last
			// full, somewhere in the calls made so far.
			assert.LessOrEqual(t, ms, 1000)
			assert.GreaterOrEqual(t, ms, 1000-int(time.Since(first).Milliseconds())-1)
		}
		require.NoError(t, resp.Body.Close())
	}
	assert.Equal(t, []int{200, 200, 429}, codes)
}

func TestErrorRatesDeterministic(t *testing.T) {
	p := Profile{Name: "flaky", TTFTMs: Dist{1, 0.5}, TPOTMs: Dist{1, 0.1}, OutputTokens: Dist{2, 0}, ErrorRates: map[string]float64{"internal": 0.2, "throttle": 0.1}}
	run := func() []Fault {
		s := start(t, Options{TimeScale: 0.001, Seed: 99, Endpoints: []Endpoint{{Name: "flaky", Profile: p}}})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for range 200 {
			resp, err := do(ctx, t, s.URL()+"/v1/chat/completions", `{"model":"flaky","messages":[{"role":"user","content":"hi"}]}`, nil)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			require.NoError(t, resp.Body.Close())
		}
		var out []Fault
		for _, r := range waitRecords(t, s, 200) {
			out = append(out, r.Fault)
		}
		return out
	}
	a, b := run(), run()
	assert.Equal(t, a, b, "same seed, same faults")
	count := map[Fault]int{}
	for _, f := range a {
		count[f]++
	}
	// Binomial(200, 0.2): mean 40, sd 5.7; Binomial(200, 0.1): mean 20, sd 4.2.
	assert.InDelta(t, 40, count[FaultInternal], 20)
	assert.InDelta(t, 20, count[FaultThrottle], 14)
}

func TestRecordsAndMetricsEndpoints(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := do(ctx, t, s.URL()+"/v1/chat/completions", chatStream, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	waitRecords(t, s, 1)

	get := func(path string) string {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+path, nil)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	var recs []Record
	require.NoError(t, json.Unmarshal([]byte(get("/emulator/requests?endpoint=llama-3-8b")), &recs))
	require.Len(t, recs, 1)
	assert.Equal(t, 10, recs[0].TokensSent)
	assert.Len(t, recs[0].GapsMs, 9)
	var one []Record
	require.NoError(t, json.Unmarshal([]byte(get("/emulator/requests?id="+recs[0].ID)), &one))
	require.Len(t, one, 1)
	assert.Equal(t, recs[0].Seq, one[0].Seq)
	assert.Equal(t, "[]", strings.TrimSpace(get("/emulator/requests?id=nope")))

	m := get("/metrics")
	assert.Contains(t, m, `vllm:time_to_first_token_seconds_count{model_name="llama-3-8b"} 1`)
	assert.Contains(t, m, `vllm:generation_tokens_total{model_name="llama-3-8b"} 10`)
	assert.Contains(t, m, `vllm:inter_token_latency_seconds_count{model_name="llama-3-8b"} 9`)
	assert.Contains(t, m, `vllm:num_requests_running{model_name="phi-3-mini"} 0`)

	req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, s.URL()+"/emulator/requests", nil)
	dresp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, dresp.Body.Close())
	assert.Empty(t, s.Records())

	var models struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(get("/v1/models")), &models))
	assert.Len(t, models.Data, len(DefaultEndpoints()))
}

func TestDeterministicDraws(t *testing.T) {
	run := func() []float64 {
		s := start(t, Options{TimeScale: 0.001, Seed: 5})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for range 5 {
			resp, err := do(ctx, t, s.URL()+"/v1/chat/completions", chatStream, nil)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			require.NoError(t, resp.Body.Close())
		}
		var out []float64
		for _, r := range waitRecords(t, s, 5) {
			out = append(out, r.PrefillMs, r.TPOTMs)
		}
		return out
	}
	a, b := run(), run()
	require.Len(t, a, 10)
	for i := range a {
		assert.InDelta(t, a[i], b[i], 1e-9)
	}
}

func TestRequestTimeout(t *testing.T) {
	p, _ := BuiltinProfile("llama-3-8b")
	p.RequestTimeoutMs = 1000 // the whole answer takes about 1.9 s, its first token 0.43 s
	// At this scale the first token is due about 28 ms before the timeout, a
	// margin that a busy machine running the race detector does not eat.
	s := start(t, Options{TimeScale: 0.05, Seed: 4, Endpoints: []Endpoint{{Name: "slow", Profile: p}}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	whole := `{"inputs":"hi","parameters":{"max_new_tokens":100}}`
	resp, err := do(ctx, t, s.URL()+"/api/predict/slow", `{"prompt":"hi"}`, nil)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, 408, resp.StatusCode)
	assert.Equal(t, string(FaultTimeout), resp.Header.Get(HeaderFault))

	c := sageMakerClient(s, "AKID", "secret")
	_, err = c.InvokeEndpoint(ctx, &sagemakerruntime.InvokeEndpointInput{EndpointName: aws.String("slow"), Body: []byte(whole)})
	var me *types.ModelError
	require.True(t, errors.As(err, &me), "%T %v", err, err)

	// A stream starts before the timeout and is not cut.
	long := `{"model":"slow","stream":true,"messages":[{"role":"user","content":"hi"}]}` // ~1.9 s emulated
	resp, err = do(ctx, t, s.URL()+"/v1/chat/completions", long, nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, "stream cut by the timeout: %s", resp.Header.Get(HeaderFault))
	events := readSSE(t, resp.Body)
	require.NotEmpty(t, events)
	assert.Equal(t, "[DONE]", events[len(events)-1])
}

// TestRequestTimeoutCoversWaits: the server's own timeout counts the time
// spent waiting for a slot or for a cold model, and answers when it is up
// rather than when the wait ends.
func TestRequestTimeoutCoversWaits(t *testing.T) {
	// One slot, held for an hour (emulated) by a stream's second token.
	p := Profile{Name: "busy", TTFTMs: Dist{1, 0}, TPOTMs: Dist{3600e3, 0}, OutputTokens: Dist{2, 0},
		Slots: 1, ColdStartMs: Dist{3600e3, 0}, RequestTimeoutMs: 200e3}
	s := start(t, Options{TimeScale: 0.001, Seed: 1, Endpoints: []Endpoint{
		{Name: "busy", Profile: p},
		{Name: "cold", Profile: p, StartCold: true},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	hold, err := do(ctx, t, s.URL()+"/v1/chat/completions", `{"model":"busy","stream":true,"messages":[{"role":"user","content":"hi"}]}`, nil)
	require.NoError(t, err)
	defer hold.Body.Close()
	require.Equal(t, 200, hold.StatusCode)

	for _, name := range []string{"busy", "cold"} {
		t.Run(name, func(t *testing.T) {
			// The hour-long wait is 3.6 s at this scale; the timeout is
			// 200 ms (1 ms had timed the holding stream out too on a
			// loaded machine, before its first token).
			bctx, bcancel := context.WithTimeout(ctx, 2*time.Second)
			defer bcancel()
			resp, err := do(bctx, t, s.URL()+"/api/predict/"+name, `{"prompt":"hi"}`, nil)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			assert.Equal(t, 408, resp.StatusCode)
			assert.Equal(t, string(FaultTimeout), resp.Header.Get(HeaderFault))
		})
	}
}

// retryAfterNames are the retry-delay headers a client may read.
var retryAfterNames = []string{"Retry-After", "retry-after-ms", "x-ms-retry-after-ms", "x-amz-retry-after"}

// TestRetryAfterHeadersPerProvider: a throttled, queue-full or not-ready
// answer carries the retry-delay headers its provider documents, and no
// other: Azure ML retry-after-ms, x-ms-retry-after-ms and Retry-After;
// OpenAI Retry-After (whole seconds); SageMaker, PAI-EAS and Vertex REST
// none (Vertex gRPC carries a RetryInfo detail instead).
func TestRetryAfterHeadersPerProvider(t *testing.T) {
	s := start(t, Options{TimeScale: 0.5, Seed: 3})
	vertex := `{"contents":[{"role":"user","parts":[{"text":"Hello"}]}],"generationConfig":{"maxOutputTokens":6}}`
	routes := []struct {
		name, path, body string
		want             map[string]string // the 1 s (emulated) delay, 500 ms real
	}{
		{"sagemaker", "/endpoints/llama-3-8b/invocations", tgiSample, nil},
		{"azureml score", "/azureml/llama-3-8b/score", amlBodySample,
			map[string]string{"Retry-After": "1", "retry-after-ms": "500", "x-ms-retry-after-ms": "500"}},
		{"azureml chat", "/azureml/llama-3-8b/chat/completions?api-version=2024-05-01-preview", chatStream,
			map[string]string{"Retry-After": "1", "retry-after-ms": "500", "x-ms-retry-after-ms": "500"}},
		{"openai", "/v1/chat/completions", chatStream, map[string]string{"Retry-After": "1"}},
		{"pai-eas", "/api/predict/llama-3-8b", `{"prompt":"hi"}`, nil},
		{"pai-eas chat", "/api/predict/llama-3-8b/v1/chat/completions", chatStream, nil},
		{"vertex", "/v1/" + vertexEndpoint + ":generateContent", vertex, nil},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, r := range routes {
		for _, f := range []Fault{FaultThrottle, FaultQueueFull, FaultModelNotReady} {
			t.Run(r.name+"/"+string(f), func(t *testing.T) {
				resp, err := do(ctx, t, s.URL()+r.path, r.body, map[string]string{HeaderInject: string(f)})
				require.NoError(t, err)
				_, _ = io.Copy(io.Discard, resp.Body)
				require.NoError(t, resp.Body.Close())
				require.GreaterOrEqual(t, resp.StatusCode, 400)
				got := map[string]string{}
				for _, k := range retryAfterNames {
					if v := resp.Header.Get(k); v != "" {
						got[k] = v
					}
				}
				want := r.want
				if want == nil {
					want = map[string]string{}
				}
				assert.Equal(t, want, got)
			})
		}
	}
}
