package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/emulator"
)

// geminiBody is a caller's own GenerateContentRequest, with members the
// typed generate input has no field for.
const geminiBody = `{"contents":[{"role":"user","parts":[{"text":"Say hello."}]}],
	"safetySettings":[{"category":"HARM_CATEGORY_HATE_SPEECH","threshold":"BLOCK_ONLY_HIGH"}],
	"labels":{"team":"cli"},"generationConfig":{"maxOutputTokens":5}}`

// TestInvokeRawGemini: --method generateContent or streamGenerateContent
// sends --body as the GenerateContentRequest itself, over gRPC and REST,
// whole and streamed, and the answer is read as a generation.
func TestInvokeRawGemini(t *testing.T) {
	body := filepath.Join(t.TempDir(), "gemini.json")
	require.NoError(t, os.WriteFile(body, []byte(geminiBody), 0o600))
	for _, transport := range []string{"", "rest"} {
		for _, method := range []string{"generateContent", "streamGenerateContent"} {
			t.Run(transport+"/"+method, func(t *testing.T) {
				c := &invokeCmd{Provider: "gcp", Endpoint: "llama-3-8b", Transport: transport, Method: method, Body: body,
					Stream: method == "streamGenerateContent", Type: "application/json", TimeScale: 0.01, Prompt: "unused"}
				var out strings.Builder
				require.NoError(t, c.run(context.Background(), &out))
				s := out.String()
				assert.Contains(t, s, "status 200")
				assert.Contains(t, s, "out 5 (server)", "the body's own maxOutputTokens")
				assert.NotContains(t, s, "candidates", "the text is printed, not the raw response")
			})
		}
	}
	emu, err := emulator.New(emulator.Options{TimeScale: 0.01, Seed: 1})
	require.NoError(t, err)
	require.NoError(t, emu.Start("127.0.0.1:0", "127.0.0.1:0"))
	t.Cleanup(func() { _ = emu.Close() })
	c := &invokeCmd{Provider: "gcp", Endpoint: "llama-3-8b", GRPCAddr: emu.GRPCAddr(), Method: "generateContent", Body: body,
		Type: "application/json", TimeScale: 0.01, Prompt: "unused"}
	require.NoError(t, c.run(context.Background(), &strings.Builder{}))
	recs := emu.Records()
	require.Len(t, recs, 1)
	assert.Equal(t, "GenerateContent", recs[0].Route, "generateContent reached with the caller's body")
}
