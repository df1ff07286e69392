package openai_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

// TestEmulatorStreamInvokeRawBody: a raw invoke body that asks for a
// stream is read as OpenAI chunks: the role-only first chunk reaches the
// caller (its Data is the event) but is not content, so the first token
// is the first chunk with text; each content chunk is one token.
func TestEmulatorStreamInvokeRawBody(t *testing.T) {
	c := emulatorClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderOpenAI, Service: cloudreq.ServiceOpenAICompatible, Action: cloudreq.ActionInvoke,
		Target: cloudreq.Target{Model: "llama-3-8b"},
		Payload: cloudreq.Payload{ContentType: "application/json", Body: []byte(
			`{"model":"llama-3-8b","messages":[{"role":"user","content":"hi"}],"max_tokens":6,"stream":true,"stream_options":{"include_usage":true}}`)},
	}
	s, err := c.Stream(ctx, r)
	require.NoError(t, err)
	defer s.Close()
	var chunks []cloudreq.StreamChunk
	for s.Next() {
		ch := s.Chunk()
		ch.Data = append([]byte(nil), ch.Data...) // valid until the next Next
		chunks = append(chunks, ch)
	}
	require.NoError(t, s.Err())
	require.NotEmpty(t, chunks)
	first := chunks[0]
	assert.Contains(t, string(first.Data), `"role":"assistant"`)
	assert.False(t, first.Content, "the role-only chunk is not content")
	assert.Empty(t, first.Text)
	content := 0
	for _, ch := range chunks {
		if ch.Content {
			content++
		}
	}
	resp := s.Response()
	assert.Equal(t, resp.Usage.OutputTokens, content, "one content chunk per token")
	tl := resp.Timing
	require.NotNil(t, tl)
	require.NotEmpty(t, tl.Chunks)
	assert.False(t, tl.Chunks[0].Content, "the timeline keeps the role-only chunk as no token")
	tokens := 0
	for _, ch := range tl.Chunks {
		tokens += ch.Tokens
	}
	assert.Equal(t, content, tokens, "tokens counted from content chunks only")
}
