package emulator

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAzureRetryAfterHeaders: a throttled Azure ML call carries the
// retry-delay headers Azure documents (retry-after-ms, x-ms-retry-after-ms,
// Retry-After), and no other provider's.
func TestAzureRetryAfterHeaders(t *testing.T) {
	s := start(t, Options{TimeScale: 1, Seed: 5})
	inject := map[string]string{HeaderInject: string(FaultThrottle)}
	for _, c := range []struct{ url, body string }{
		{s.URL() + "/azureml/llama-3-8b/score", amlBodySample},
		{s.URL() + "/azureml/llama-3-8b/chat/completions?api-version=2024-05-01-preview", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":4}`},
	} {
		resp, b := azurePost(t, http.MethodPost, c.url, "", c.body, inject)
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%s", b)
		assert.Equal(t, "1000", resp.Header.Get("retry-after-ms"), c.url)
		assert.Equal(t, "1000", resp.Header.Get("x-ms-retry-after-ms"), c.url)
		assert.Equal(t, "1", resp.Header.Get("Retry-After"), c.url)
		assert.Empty(t, resp.Header.Values("x-amz-retry-after"), c.url)
	}
}
