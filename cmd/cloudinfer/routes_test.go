package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInvokeSageMakerAsync: `cloudinfer invoke --provider sagemaker-async`
// reaches asynchronous inference on the embedded emulator (submitted, run,
// read back from its S3); a stream is refused.
func TestInvokeSageMakerAsync(t *testing.T) {
	c := &invokeCmd{Provider: "sagemaker-async", Endpoint: "llama-3-8b", Prompt: "Say hello.", MaxTokens: 6,
		Type: "application/json", TimeScale: 0.01}
	var out strings.Builder
	require.NoError(t, c.run(context.Background(), &out))
	assert.Contains(t, out.String(), "status 200")
	assert.Contains(t, out.String(), "out 6 (server)")

	c.Stream = true
	err := c.run(context.Background(), &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unsupported streaming for aws/sagemaker-async")
}

// TestInvokeOpenAIRoutes: `cloudinfer invoke --provider vertex-openai`
// reaches the emulator's endpoints/openapi chat route, and `--provider
// sagemaker-openai` its /endpoints/{name}/openai/v1/chat/completions
// route with a minted bearer token, each whole and streamed.
func TestInvokeOpenAIRoutes(t *testing.T) {
	for _, provider := range []string{"vertex-openai", "sagemaker-openai"} {
		for _, stream := range []bool{false, true} {
			c := &invokeCmd{Provider: provider, Endpoint: "llama-3-8b", Prompt: "Say hello.", MaxTokens: 6,
				Type: "application/json", TimeScale: 0.01, Stream: stream}
			var out strings.Builder
			require.NoError(t, c.run(context.Background(), &out), "%s stream %v", provider, stream)
			assert.Contains(t, out.String(), "status 200", "%s stream %v", provider, stream)
			assert.Contains(t, out.String(), "out 6 (server)", "%s stream %v", provider, stream)
		}
	}
}

// TestInvokePAIEASQueue: `cloudinfer invoke --provider pai-eas-queue`
// enqueues to the emulator's queue service and waits for the result; a
// stream is refused.
func TestInvokePAIEASQueue(t *testing.T) {
	c := &invokeCmd{Provider: "pai-eas-queue", Endpoint: "llama-3-8b", Prompt: "Say hello.", MaxTokens: 6,
		Type: "application/json", TimeScale: 0.01}
	var out strings.Builder
	require.NoError(t, c.run(context.Background(), &out))
	assert.Contains(t, out.String(), "status 200")
	assert.Contains(t, out.String(), "out 6 (server)")
	c.Stream = true
	err := c.run(context.Background(), &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unsupported streaming for alibaba/pai-eas-queue")
}
