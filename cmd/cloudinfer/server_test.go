package main

import (
	"bytes"
	"context"
	"errors"
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
)

// noCloudCredentials empties the environment's cloud credentials and
// points Google's Application Default Credentials at a file that does not
// exist, so that any use of them fails.
func noCloudCredentials(t *testing.T) {
	t.Helper()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AZUREML_API_KEY", "OPENAI_API_KEY", "EAS_TOKEN"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(t.TempDir(), "no-such-credentials.json"))
}

// standaloneWithGRPC starts an emulator with its HTTP and gRPC listeners
// apart from the command, as `cloudinfer emulate` would.
func standaloneWithGRPC(t *testing.T) *emulator.Server {
	t.Helper()
	emu, err := emulator.New(emulator.Options{TimeScale: 0.01, Seed: 1})
	require.NoError(t, err)
	require.NoError(t, emu.Start("127.0.0.1:0", "127.0.0.1:0"))
	t.Cleanup(func() { _ = emu.Close() })
	return emu
}

// TestBenchVertexGRPCAddr: --grpc-addr, alone or beside --url (the HTTP
// root of the same server), sends Vertex's requests to that gRPC address,
// in bench as in invoke; a loopback one is dialled in plain text without any Google
// credential, and the embedded emulator is not started.
func TestBenchVertexGRPCAddr(t *testing.T) {
	noCloudCredentials(t)
	emu := standaloneWithGRPC(t)
	for _, extra := range [][]string{
		{"--grpc-addr", emu.GRPCAddr()},
		{"--url", emu.URL(), "--grpc-addr", emu.GRPCAddr()},
	} {
		t.Run(strings.Join(extra, " "), func(t *testing.T) {
			emu.ResetRecords()
			res, stdout, stderr, err := runBench(t, append([]string{"--provider", "gcp", "--endpoint", "phi-3-mini",
				"--requests", "2", "--warmup", "0", "--prompt-tokens", "8", "--output-tokens", "2"}, extra...)...)
			t.Log("\n" + stdout + stderr)
			require.NoError(t, err)
			assert.NotContains(t, stderr, "embedded emulator")
			tr := res.Targets[0]
			assert.Empty(t, tr.Fatal)
			assert.Zero(t, tr.Counts().Failed, "%v", tr.ErrorExamples)
			assert.Len(t, emu.Records(), 2, "the requests reached the server --grpc-addr names")

			emu.ResetRecords()
			var out strings.Builder
			require.NoError(t, parse(t, append([]string{"invoke", "--provider", "gcp", "--max-tokens", "2"}, extra...)...).
				Invoke.run(context.Background(), &out))
			assert.Contains(t, out.String(), "status 200")
			assert.NotContains(t, out.String(), "embedded emulator")
			assert.Len(t, emu.Records(), 1, "invoke's request reached it too")
		})
	}
}

// TestServerFlagsEachProviderNeeds: --url is a server's HTTP root (every
// HTTP provider's), --grpc-addr its gRPC address (Vertex's). A command
// line that gives only the one its provider does not speak is a usage
// error naming the flag it needs, never a request to the cloud (for gcp
// with --url alone, Google's endpoint and credentials): with --url alone,
// gcp needs --grpc-addr, whether the URL is on this machine or another.
func TestServerFlagsEachProviderNeeds(t *testing.T) {
	noCloudCredentials(t)
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--provider", "gcp", "--url", "http://127.0.0.1:1"}, "--grpc-addr"},
		{[]string{"--provider", "vertex", "--url", "http://192.0.2.1:8080"}, "--grpc-addr"},
		{[]string{"--provider", "gcp", "--url", "https://example.com"}, "--grpc-addr"},
		{[]string{"--provider", "aws", "--grpc-addr", "127.0.0.1:1"}, "--url"},
		{[]string{"--provider", "openai", "--grpc-addr", "127.0.0.1:1"}, "--url"},
	} {
		for _, cmd := range []string{"bench", "invoke"} {
			args := append([]string{cmd, "--endpoint", "phi-3-mini"}, tc.args...)
			if cmd == "bench" {
				args = append(args, "--quiet", "--requests", "1", "--out", filepath.Join(t.TempDir(), "r.json"))
			}
			var out, errOut bytes.Buffer
			got := run(args, &out, &errOut)
			assert.Equal(t, exitUsage, got, "%v: %s", args, errOut.String())
			assert.Contains(t, errOut.String(), "Usage: cloudinfer "+cmd, args)
			assert.Contains(t, errOut.String(), tc.says, args)
			assert.NotContains(t, errOut.String(), "credentials", args)
		}
	}
}

// TestPlanVertexURLWithoutGRPCAddrIsRefused: a plan's gcp target with a
// url but no grpc_addr is refused before anything starts, not sent to
// Google's own endpoint.
func TestPlanVertexURLWithoutGRPCAddrIsRefused(t *testing.T) {
	noCloudCredentials(t)
	plan := filepath.Join(t.TempDir(), "plan.yaml")
	require.NoError(t, os.WriteFile(plan, []byte(`targets:
  - {name: vx, provider: gcp, endpoint: phi-3-mini, url: "http://127.0.0.1:1"}
limits: {requests: 1}
`), 0o600))
	_, stdout, stderr, err := runBench(t, "--config", plan)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `target "vx"`)
	assert.Contains(t, err.Error(), "grpc_addr")
	assert.NotContains(t, stdout+stderr, "embedded emulator")
}

// TestAzureEmulatorRoot: an Azure --url that is a server's root on this
// machine (a `cloudinfer emulate`, as for the other HTTP providers) sends
// to that emulator's Azure route for the endpoint, /azureml/{endpoint},
// in bench and invoke.
func TestAzureEmulatorRoot(t *testing.T) {
	noCloudCredentials(t)
	emu := standaloneWithGRPC(t)
	for _, root := range []string{emu.URL(), emu.URL() + "/"} {
		emu.ResetRecords()
		res, stdout, stderr, err := runBench(t, "--provider", "azure", "--url", root, "--endpoint", "phi-3-mini",
			"--requests", "2", "--warmup", "0", "--prompt-tokens", "8", "--output-tokens", "2")
		t.Log("\n" + stdout + stderr)
		require.NoError(t, err)
		tr := res.Targets[0]
		assert.Zero(t, tr.Counts().Failed, "%v", tr.ErrorExamples)
		assert.Len(t, emu.Records(), 2)

		c := &invokeCmd{Provider: "azure", URL: root, Prompt: "hi", MaxTokens: 2, Type: "application/json", TimeScale: 1}
		var out strings.Builder
		require.NoError(t, c.run(context.Background(), &out))
		assert.Contains(t, out.String(), "status 200")
		assert.NotContains(t, out.String(), "embedded emulator")
	}
}

// capture is a server on this machine that notes each request's headers
// and body and answers with a fixed body.
type capture struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []captured
}

type captured struct {
	path   string
	header http.Header
	body   string
}

func newCapture(t *testing.T, answer string) *capture {
	t.Helper()
	c := &capture{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.reqs = append(c.reqs, captured{r.URL.Path, r.Header.Clone(), string(b)})
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *capture) all() []captured {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]captured(nil), c.reqs...)
}

// TestModelGoesOutOnlyWhenGiven: invoke and bench send a model (SageMaker's
// target model header, the model member of Azure ML's and PAI-EAS's body)
// only when --model is given; with --endpoint and no --model none goes, so
// a SageMaker stream (which takes no target model) works.
func TestModelGoesOutOnlyWhenGiven(t *testing.T) {
	noCloudCredentials(t)
	// The user's case: a SageMaker stream with an endpoint and no model.
	var out strings.Builder
	assert.NoError(t, parse(t, "invoke", "--provider", "aws", "--endpoint", "phi-3-mini", "--stream", "--time-scale", "0.01",
		"--max-tokens", "2").Invoke.run(context.Background(), &out))
	assert.Contains(t, out.String(), "status 200")

	const answer = `{"choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"generated_text":"hi"}`
	for _, prov := range []string{"aws", "azure", "alibaba"} {
		for _, model := range []string{"", "my-model"} {
			srv := newCapture(t, answer)
			url := srv.URL
			if prov == "azure" {
				url += "/azureml/ep" // an endpoint root of its own
			}
			args := []string{"invoke", "--provider", prov, "--endpoint", "ep", "--url", url, "--max-tokens", "2"}
			if model != "" {
				args = append(args, "--model", model)
			}
			_ = parse(t, args...).Invoke.run(context.Background(), io.Discard) // only the request matters
			_, _, _, _ = runBench(t, "--provider", prov, "--endpoint", "ep", "--url", url, "--requests", "1", "--warmup", "0",
				"--prompt-tokens", "8", "--output-tokens", "2", "--no-stream", "--model", model, "--server-metrics", "off")
			reqs := srv.all()
			require.Len(t, reqs, 2, "%s: one from invoke, one from bench", prov)
			for i, r := range reqs {
				who := []string{"invoke", "bench"}[i]
				sent := r.header.Get("X-Amzn-Sagemaker-Target-Model")
				if prov != "aws" {
					sent = ""
					if strings.Contains(r.body, `"model"`) {
						sent = r.body
					}
				}
				if model == "" {
					assert.Empty(t, sent, "%s %s: no model given, none sent", who, prov)
				} else {
					assert.Contains(t, sent, model, "%s %s: the model given is sent", who, prov)
				}
			}
		}
	}
}

// TestFailOnGates: failed requests and a failed SLA are results (the
// command succeeds) unless a gate says otherwise: --fail-on (or a plan's
// fail_on) makes the command fail with one line per gate and target that
// failed, the result saved all the same; a result within its gates passes.
func TestFailOnGates(t *testing.T) {
	dir := t.TempDir()
	throttled := filepath.Join(dir, "throttled.yaml")
	require.NoError(t, os.WriteFile(throttled, []byte(`targets:
  - {name: throttled, provider: openai, model: phi-3-mini, headers: {X-Emulator-Inject: throttle}, payload: {prompt_tokens: 8, output_tokens: 2}}
limits: {requests: 3, warmup: 0}
`), 0o600))
	gated := filepath.Join(dir, "gated.yaml")
	require.NoError(t, os.WriteFile(gated, []byte(`targets:
  - {name: throttled, provider: openai, model: phi-3-mini, headers: {X-Emulator-Inject: throttle}, payload: {prompt_tokens: 8, output_tokens: 2}}
limits: {requests: 3, warmup: 0}
fail_on: ["errors>50%"]
`), 0o600))
	ok := []string{"--endpoint", "phi-3-mini", "--requests", "3", "--warmup", "0", "--prompt-tokens", "8", "--output-tokens", "2", "--time-scale", "0.01"}
	for _, tc := range []struct {
		name string
		args []string
		says []string // empty: the command succeeds
	}{
		{"every request failed, no gate", []string{"--config", throttled, "--time-scale", "0.01"}, nil},
		{"every request failed", []string{"--config", throttled, "--time-scale", "0.01", "--fail-on", "errors>1%"},
			[]string{"bench: 1 gate failure (the result is in ", `gate errors>1%: target "throttled": 3 of 3 measured requests failed (100%)`}},
		{"a count", []string{"--config", throttled, "--time-scale", "0.01", "--fail-on", "errors>2"},
			[]string{`gate errors>2: target "throttled": 3 of 3`}},
		{"the plan's gate", []string{"--config", gated, "--time-scale", "0.01"},
			[]string{`gate errors>50%: target "throttled"`}},
		{"the plan's gate and a flag's", []string{"--config", gated, "--time-scale", "0.01", "--fail-on", "sla", "--sla", "e2e p95 1h"},
			[]string{"2 gate failures", `gate errors>50%: target "throttled"`, `gate sla: target "throttled": SLA "e2e p95 1h0m0s": no request gave a value`}},
		{"a failed SLA, no gate", append(ok, "--sla", "e2e p95 1us"), nil},
		{"a failed SLA", append(ok, "--sla", "e2e p95 1us", "--fail-on", "sla"),
			[]string{`gate sla: target "phi-3-mini": SLA "e2e p95 1µs" failed: measured `}},
		{"within the gates", append(ok, "--sla", "e2e p95 1h", "--fail-on", "sla", "--fail-on", "errors>0"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, stdout, stderr, err := runBench(t, tc.args...)
			t.Log("\n" + stdout + stderr)
			require.NotNil(t, res, "the result is saved")
			if len(tc.says) == 0 {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			var ue usageError
			assert.False(t, errors.As(err, &ue), "a failed gate is a failure, not a usage error")
			for _, s := range tc.says {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}
