package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/emulator"
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

// TestInvokeStandaloneEmulator: --url and --grpc-addr reach an emulator
// that runs apart (cloudinfer emulate) for every provider, with no cloud
// credentials in the environment: loopback plain-http targets get the
// emulator's treatment (no TLS; placeholder AWS keys, no Azure or Google
// credential).
func TestInvokeStandaloneEmulator(t *testing.T) {
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AZUREML_API_KEY", "OPENAI_API_KEY", "EAS_TOKEN"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	emu, err := emulator.New(emulator.Options{TimeScale: 0.01, Seed: 1})
	require.NoError(t, err)
	require.NoError(t, emu.Start("127.0.0.1:0", "127.0.0.1:0"))
	t.Cleanup(func() { _ = emu.Close() })
	for _, c := range []*invokeCmd{
		{Provider: "openai", URL: emu.URL()},
		{Provider: "aws", URL: emu.URL()},
		{Provider: "azure", URL: emu.URL() + "/azureml/llama-3-8b"},
		{Provider: "alibaba", URL: emu.URL()},
		{Provider: "gcp", GRPCAddr: emu.GRPCAddr()},
	} {
		t.Run(c.Provider, func(t *testing.T) {
			c.Model, c.Prompt, c.MaxTokens, c.Type, c.TimeScale = "llama-3-8b", "hi", 4, "application/json", 1
			var out strings.Builder
			require.NoError(t, c.run(context.Background(), &out))
			s := out.String()
			assert.NotContains(t, s, "embedded emulator", "the standalone one answered")
			assert.Contains(t, s, "status 200")
		})
	}
	assert.NotEmpty(t, emu.Records(), "the requests reached the standalone emulator")
}
