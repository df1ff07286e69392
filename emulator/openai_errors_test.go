package emulator

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOpenAIStreamErrorFirst: under stream-error-first an OpenAI-compatible
// stream (the OpenAI routes and PAI-EAS's /v1 routes, chat and
// completions) opens with 200 and a rate-limit error event, then [DONE],
// as vLLM sends them, with no content before; a non-streamed call gets the
// throttle answer.
func TestOpenAIStreamErrorFirst(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hdr := map[string]string{HeaderInject: string(FaultStreamErrorFirst)}
	const completion = `{"model":"llama-3-8b","stream":true,"max_tokens":10,"prompt":"hi"}`
	for _, tc := range []struct{ name, path, body string }{
		{"openai chat", "/v1/chat/completions", chatStream},
		{"openai completions", "/v1/completions", completion},
		{"eas chat", "/api/predict/llama-3-8b/v1/chat/completions", chatStream},
		{"eas completions", "/api/predict/llama-3-8b/v1/completions", completion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := do(ctx, t, s.URL()+tc.path, tc.body, hdr)
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Contains(t, resp.Header.Get("Content-Type"), "text/event-stream")
			events := readSSE(t, resp.Body)
			require.Equal(t, 2, len(events), "%q", events)
			var e openAIError
			require.NoError(t, json.Unmarshal([]byte(events[0]), &e))
			assert.Equal(t, "RateLimitError", e.Error.Type)
			assert.EqualValues(t, 429, e.Error.Code)
			assert.Equal(t, "[DONE]", events[1])

			resp, err = do(ctx, t, s.URL()+tc.path, strings.Replace(tc.body, `"stream":true`, `"stream":false`, 1), hdr)
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
			if strings.HasPrefix(tc.name, "openai") {
				assert.NotEmpty(t, resp.Header.Get("Retry-After"))
			} else {
				assert.Empty(t, resp.Header.Get("Retry-After"), "PAI-EAS documents no retry delay")
			}
		})
	}
	recs := waitRecords(t, s, 8)
	for _, r := range recs {
		assert.Equal(t, "error", r.Outcome, r.ID)
		assert.Zero(t, r.TokensSent, r.ID)
	}
}

// TestPAIEASLegacyStreamErrorFirst: a legacy EAS stream has no in-band
// rate-limit error; stream-error-first gets the gateway's 429 before any
// stream, NUL-delimited or SSE.
func TestPAIEASLegacyStreamErrorFirst(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url := s.URL() + "/api/predict/llama-3-8b"
	for _, accept := range []string{"", "text/event-stream"} {
		resp := easPost(ctx, t, url, `{"prompt":"hi","use_stream_chat":"True","max_new_tokens":5}`,
			map[string]string{HeaderInject: string(FaultStreamErrorFirst), "Accept": accept})
		assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, accept)
		assert.Equal(t, string(FaultThrottle), resp.Header.Get(HeaderFault))
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, "Too Many Requests: the service is rate limited", string(b))
	}
}

// TestOpenAIAndEASContainerFaults: model-overloaded and model-unavailable
// are the model server's 429 and 503 (vLLM's envelope on the OpenAI
// routes, plain text behind EAS); gateway-overflow is the fronting Envoy's
// plain-text 503 on both.
func TestOpenAIAndEASContainerFaults(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const whole = `{"model":"llama-3-8b","max_tokens":4,"messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		path  string
		fault Fault
		want  int
		ct    string
		body  string // the plain-text body, or the envelope's type
	}{
		{"/v1/chat/completions", FaultModelOverloaded, 429, "application/json", "RateLimitError"},
		{"/v1/chat/completions", FaultModelUnavailable, 503, "application/json", "ServiceUnavailableError"},
		{"/v1/chat/completions", FaultGatewayOverflow, 503, "text/plain", gatewayOverflowText},
		{"/api/predict/llama-3-8b/v1/chat/completions", FaultModelOverloaded, 429, "text/plain", "Too Many Requests: the model is overloaded"},
		{"/api/predict/llama-3-8b/v1/chat/completions", FaultModelUnavailable, 503, "text/plain", "Service Unavailable: the model server is unavailable"},
		{"/api/predict/llama-3-8b/v1/chat/completions", FaultGatewayOverflow, 503, "text/plain", gatewayOverflowText},
		{"/api/predict/llama-3-8b", FaultGatewayOverflow, 503, "text/plain", gatewayOverflowText},
	} {
		body := whole
		if !strings.Contains(tc.path, "/v1/") {
			body = `{"prompt":"hi","max_new_tokens":4}`
		}
		resp, err := do(ctx, t, s.URL()+tc.path, body, map[string]string{HeaderInject: string(tc.fault)})
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		assert.Equal(t, tc.want, resp.StatusCode, "%s %s", tc.path, tc.fault)
		assert.Contains(t, resp.Header.Get("Content-Type"), tc.ct, "%s %s", tc.path, tc.fault)
		if tc.ct == "text/plain" {
			assert.Equal(t, tc.body, string(b), "%s %s", tc.path, tc.fault)
			continue
		}
		var e openAIError
		require.NoError(t, json.Unmarshal(b, &e), "%s %s", tc.path, tc.fault)
		assert.Equal(t, tc.body, e.Error.Type)
		assert.EqualValues(t, tc.want, e.Error.Code)
		assert.NotContains(t, strings.ToLower(e.Error.Message), "loading", "not a not-ready answer")
	}
}
