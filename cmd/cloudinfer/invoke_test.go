package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
			assert.Contains(t, s, "(server-reported)", "the client read the standalone emulator's start report")
		})
	}
	assert.NotEmpty(t, emu.Records(), "the requests reached the standalone emulator")
}

// TestInvokeHeaderIsOneHeaderPerFlag: each -H is one header, its value
// kept whole (a ';' in it included), as "Name=value" or curl's
// "Name: value"; the name is canonicalized so that a repeated header is
// replaced, not sent twice.
func TestInvokeHeaderIsOneHeaderPerFlag(t *testing.T) {
	c := parse(t, "invoke",
		"-H", "Content-Type=application/json; charset=utf-8",
		"-H", "x-emulator-inject: throttle",
		"-H", "X-Token=a=b",
		"-H", "X-Emulator-Inject=queue-full")
	assert.Equal(t, map[string]string{
		"Content-Type":      "application/json; charset=utf-8",
		"X-Emulator-Inject": "queue-full",
		"X-Token":           "a=b",
	}, map[string]string(c.Invoke.Header))
}

// TestInvokeBadHeaderIsAUsageErrorThatKeepsTheSecret: a malformed -H is a
// usage error whose message does not repeat the flag's text, which may hold
// a credential.
func TestInvokeBadHeaderIsAUsageErrorThatKeepsTheSecret(t *testing.T) {
	const secret = "sk-HEADERSECRET0123456789"
	for _, h := range []string{
		"Authorization Bearer " + secret,       // no separator
		"Authorization Bearer " + secret + "=", // a name that is no field name
		"Authorization=Bearer " + secret + "\r\nX-Evil: 1",
		"=" + secret,
	} {
		var out, errOut bytes.Buffer
		got := run([]string{"invoke", "-H", h}, &out, &errOut)
		assert.Equal(t, exitUsage, got, errOut.String())
		assert.Contains(t, errOut.String(), "--header")
		assert.NotContains(t, errOut.String(), secret)
		assert.NotContains(t, errOut.String(), "HEADERSECRET")
	}
}

// TestInvokeEndpointURLIsTheServer: an --endpoint that is a URL (Azure ML
// scoring root, PAI-EAS service URL, OpenAI-compatible base) names the
// server; the embedded emulator is neither started nor announced, and the
// request reaches that server.
func TestInvokeEndpointURLIsTheServer(t *testing.T) {
	for _, k := range []string{"AZUREML_API_KEY", "OPENAI_API_KEY", "EAS_TOKEN"} {
		t.Setenv(k, "")
	}
	emu, err := emulator.New(emulator.Options{TimeScale: 0.01, Seed: 1})
	require.NoError(t, err)
	require.NoError(t, emu.Start("127.0.0.1:0", ""))
	t.Cleanup(func() { _ = emu.Close() })
	for _, c := range []*invokeCmd{
		{Provider: "openai", Endpoint: emu.URL() + "/v1"},
		{Provider: "azure", Endpoint: emu.URL() + "/azureml/llama-3-8b"},
		{Provider: "alibaba", Endpoint: emu.URL() + "/api/predict/llama-3-8b"},
	} {
		t.Run(c.Provider, func(t *testing.T) {
			emu.ResetRecords()
			c.Model, c.Prompt, c.MaxTokens, c.Type, c.TimeScale = "llama-3-8b", "hi", 2, "application/json", 1
			var out strings.Builder
			require.NoError(t, c.run(context.Background(), &out))
			assert.NotContains(t, out.String(), "embedded emulator")
			assert.Contains(t, out.String(), "status 200")
			assert.Len(t, emu.Records(), 1, "the request reached the server --endpoint names")
		})
	}
	for _, p := range []string{"aws", "gcp"} {
		c := &invokeCmd{Provider: p, Endpoint: emu.URL() + "/endpoints/llama-3-8b", Model: "llama-3-8b",
			Prompt: "hi", MaxTokens: 2, Type: "application/json", TimeScale: 1}
		err := c.run(context.Background(), io.Discard)
		require.Error(t, err, p)
		assert.Contains(t, err.Error(), "endpoint name, not a URL", p)
	}
}

// TestInvokeKeyToThisMachine: OPENAI_API_KEY goes over plain http only to
// a server on this machine (another host is refused: see
// TestBenchRefusesAKeyInClearToAnotherHost), and is never printed.
func TestInvokeKeyToThisMachine(t *testing.T) {
	const key = "sk-ENVSECRET0123456789"
	t.Setenv("OPENAI_API_KEY", key)
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	var out strings.Builder
	c := &invokeCmd{Provider: "openai", Endpoint: srv.URL + "/v1", Model: "m", Prompt: "hi", MaxTokens: 2,
		Type: "application/json", TimeScale: 1}
	err := c.run(context.Background(), &out)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), key)
	assert.NotContains(t, out.String(), key)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"Bearer " + key}, seen, "the key reaches a server on this machine, once (401 is not retried)")
}

// TestInvokeRefusesBadNumbers: negative --retries or --timeout and an empty
// --prompt are refused, not read as "none" or replaced by a generated
// prompt.
func TestInvokeRefusesBadNumbers(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--retries=-1"}, "--retries must not be negative"},
		{[]string{"--timeout=-1s"}, "--timeout must not be negative"},
		{[]string{"--time-scale=NaN"}, "--time-scale must not be negative"},
		{[]string{"--prompt", ""}, "--prompt is empty"},
		{[]string{"--prompt", "  "}, "--prompt is empty"},
	} {
		c := parse(t, append([]string{"invoke"}, tc.args...)...)
		var out strings.Builder
		err := c.Invoke.run(context.Background(), &out)
		require.Error(t, err, tc.args)
		assert.Contains(t, err.Error(), tc.says)
		assert.NotContains(t, out.String(), "embedded emulator", "refused before anything starts")
	}
}

// TestInvokeTimeScaleZeroIsAnnouncedAsOne: --time-scale 0 runs the
// emulator at 1 (its default), and says so.
func TestInvokeTimeScaleZeroIsAnnouncedAsOne(t *testing.T) {
	c := &invokeCmd{Provider: "openai", Model: "llama-3-8b", Prompt: "hi", MaxTokens: 1, Type: "application/json"}
	var out strings.Builder
	require.NoError(t, c.run(context.Background(), &out))
	assert.Contains(t, out.String(), "(time scale 1)")
}

// TestInvokeErrorSaysHowManyAttempts: a failed call's error says how many
// attempts were made, so that a retryable code is not read as "not
// retried".
func TestInvokeErrorSaysHowManyAttempts(t *testing.T) {
	for _, stream := range []bool{false, true} {
		c := &invokeCmd{Provider: "openai", Model: "llama-3-8b", Prompt: "x", MaxTokens: 4, Type: "application/json",
			TimeScale: 0.01, Retries: 1, Stream: stream, Header: map[string]string{"X-Emulator-Inject": "throttle"}}
		err := c.run(context.Background(), io.Discard)
		require.Error(t, err)
		assert.Contains(t, err.Error(), string(errcodes.Throttled))
		assert.Contains(t, err.Error(), "after 2 attempts")
	}
}

// TestInvokeUsageHasItsUnit: the usage line says its figures are tokens.
func TestInvokeUsageHasItsUnit(t *testing.T) {
	c := &invokeCmd{Provider: "openai", Model: "llama-3-8b", Prompt: "hi", MaxTokens: 3, Type: "application/json", TimeScale: 0.01}
	var out strings.Builder
	require.NoError(t, c.run(context.Background(), &out))
	assert.Regexp(t, `usage +tokens in \d+  out 3 \(server\)`, out.String())
}

// TestInvokeStreamPrintsContentOnly: a raw body streamed from an
// OpenAI-compatible server prints the generated text, not the JSON of its
// role-only first chunk; an input count the response did not give is
// "unknown", not 0.
func TestInvokeStreamPrintsContentOnly(t *testing.T) {
	body := filepath.Join(t.TempDir(), "raw.json")
	require.NoError(t, os.WriteFile(body, []byte(`{"model":"llama-3-8b","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stream":true}`), 0o600))
	var out strings.Builder
	require.NoError(t, parse(t, "invoke", "--stream", "--body", body, "--time-scale", "0.01").Invoke.run(context.Background(), &out))
	s := out.String()
	t.Log("\n" + s)
	assert.NotContains(t, s, "chat.completion.chunk")
	assert.NotContains(t, s, `"role"`)
	assert.Regexp(t, `usage +tokens in unknown  out 5 \(counted\)`, s)
}

// TestInvokeStreamErrorBeforeContent: a stream that fails before any
// content prints no empty line before the error (Vertex's gRPC stream
// fails at its first message, not when it opens).
func TestInvokeStreamErrorBeforeContent(t *testing.T) {
	for _, p := range []string{"gcp", "openai", "aws"} {
		var out strings.Builder
		err := parse(t, "invoke", "--provider", p, "--stream", "--time-scale", "0.01", "--retries", "0",
			"-H", "X-Emulator-Inject=throttle").Invoke.run(context.Background(), &out)
		require.Error(t, err, p)
		assert.NotContains(t, out.String(), "\n\n", "%s: %q", p, out.String())
		assert.Equal(t, 1, strings.Count(out.String(), "\n"), "%s: the emulator's line only: %q", p, out.String())
	}
}
