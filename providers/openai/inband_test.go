package openai

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// TestInStreamErrorRows holds the package doc's in-stream rows: an error
// event before any content (first, or after the role-only chunk) gets its
// own code and that code's retryability; after content it is
// ERR_STREAM_INTERRUPTED, not retryable, its code in Details["code"].
func TestInStreamErrorRows(t *testing.T) {
	tests := []struct {
		name, event string
		want        errcodes.Code
		pcode       string
	}{
		{"vllm rate limit", `{"error":{"message":"Too many requests","type":"RateLimitError","param":null,"code":429}}`, errcodes.Throttled, "RateLimitError"},
		{"openai rate_limit_error", `{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":null}}`, errcodes.Throttled, "rate_limit_error"},
		{"server_error", `{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}`, errcodes.Internal, "server_error"},
		{"content_filter", `{"error":{"message":"filtered","type":null,"param":"prompt","code":"content_filter"}}`, errcodes.InvalidParam, "content_filter"},
		{"insufficient_quota", `{"error":{"message":"quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`, errcodes.QuotaExceeded, "insufficient_quota"},
		{"stated status", `{"error":{"message":"engine down","code":503}}`, errcodes.Unavailable, "503"},
		{"tgi validation", `{"error":"Input validation error","error_type":"validation"}`, errcodes.InvalidParam, "validation"},
		{"tgi overloaded", `{"error":"Model is overloaded","error_type":"overloaded"}`, errcodes.Throttled, "overloaded"},
		{"tgi generation", `{"error":"CUDA out of memory","error_type":"generation"}`, errcodes.ModelError, "generation"},
		{"tgi incomplete_generation", `{"error":"incomplete","error_type":"incomplete_generation"}`, errcodes.Internal, "incomplete_generation"},
	}
	for _, tt := range tests {
		for _, lead := range [][]string{nil, {roleChunk}, {roleChunk, helloChunk}} {
			a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
				send := sseWriter(w)
				for _, c := range lead {
					send(c)
				}
				send("data: " + tt.event + "\n\n")
				send(doneEvent)
			})
			out := stream(t, a, generateReq("m"))
			var e *errcodes.Error
			require.True(t, errors.As(out.Err, &e), "%s: %v", tt.name, out.Err)
			assert.Equal(t, "openai", e.Provider, tt.name)
			assert.Equal(t, tt.pcode, e.ProviderCode, tt.name)
			var api *APIError
			assert.True(t, errors.As(out.Err, &api), tt.name)
			if len(lead) < 2 {
				assert.Equal(t, tt.want, e.Code, "%s after %d chunks: %v", tt.name, len(lead), out.Err)
				assert.Equal(t, tt.want.Retryable(), e.Retryable, tt.name)
				continue
			}
			assert.Equal(t, errcodes.StreamInterrupted, e.Code, "%s after content: %v", tt.name, out.Err)
			assert.False(t, e.Retryable, tt.name)
			assert.Equal(t, string(tt.want), e.Details["code"], tt.name)
		}
	}
}
