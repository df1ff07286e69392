package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

func TestInvokeEveryProviderOnTheEmulator(t *testing.T) {
	for _, p := range []string{"openai", "aws", "azure", "alibaba", "gcp"} {
		for _, stream := range []bool{false, true} {
			t.Run(p, func(t *testing.T) {
				c := &invokeCmd{Provider: p, Model: "llama-3-8b", Prompt: "Say hello.", MaxTokens: 6,
					Type: "application/json", Stream: stream, Retries: 0, TimeScale: 0.01,
					Header: map[string]string{"X-Emulator-Cold": "1"}}
				var out strings.Builder
				require.NoError(t, c.run(context.Background(), &out))
				s := out.String()
				assert.Contains(t, s, "status 200")
				assert.Contains(t, s, "out 6 (server)")
				assert.Contains(t, s, "start   cold (server-reported)")
				assert.Contains(t, s, "e2e ")
				if stream {
					assert.Contains(t, s, "ttft ")
				} else {
					assert.NotContains(t, s, "ttft ", "a whole body has no first token")
				}
			})
		}
	}
}

func TestInvokeReportsTheCode(t *testing.T) {
	c := &invokeCmd{Provider: "alibaba", Model: "llama-3-8b", Prompt: "x", MaxTokens: 4, Type: "application/json",
		TimeScale: 0.01, Header: map[string]string{"X-Emulator-Inject": "queue-full"}}
	var out strings.Builder
	err := c.run(context.Background(), &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), string(errcodes.Throttled))
	assert.Contains(t, err.Error(), "retryable: true")
}
