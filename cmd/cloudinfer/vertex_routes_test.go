package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// sspBody is a serverStreamingPredict request body.
const sspBody = `{"inputs":[{"structVal":{"prompt":{"stringVal":["Say hello."]}}}],"parameters":{"structVal":{"maxOutputTokens":{"intVal":[7]}}}}`

// TestInvokeVertexREST: --transport rest reaches the embedded emulator's
// and a standalone emulator's REST routes (at --url), generate and
// serverStreamingPredict (--method) included, and refuses --grpc-addr.
func TestInvokeVertexREST(t *testing.T) {
	emu, err := emulator.New(emulator.Options{TimeScale: 0.01, Seed: 1})
	require.NoError(t, err)
	require.NoError(t, emu.Start("127.0.0.1:0", "127.0.0.1:0"))
	t.Cleanup(func() { _ = emu.Close() })
	body := filepath.Join(t.TempDir(), "ssp.json")
	require.NoError(t, os.WriteFile(body, []byte(sspBody), 0o600))
	for name, c := range map[string]*invokeCmd{
		"generate embedded":   {Transport: "rest", Stream: true},
		"generate standalone": {Transport: "rest", URL: emu.URL(), Stream: true},
		"ssp rest":            {Transport: "rest", Method: "serverStreamingPredict", Body: body, Stream: true},
		"ssp grpc":            {Method: "serverStreamingPredict", Body: body, Stream: true},
	} {
		t.Run(name, func(t *testing.T) {
			c.Provider, c.Endpoint, c.Prompt, c.MaxTokens, c.Type, c.TimeScale = "gcp", "llama-3-8b", "hi", 7, "application/json", 0.01
			var out strings.Builder
			require.NoError(t, c.run(context.Background(), &out))
			s := out.String()
			assert.Contains(t, s, "status 200")
			assert.Contains(t, s, "out 7 ")
			assert.Contains(t, s, "ttft ")
			assert.Equal(t, c.URL == "", strings.Contains(s, "embedded emulator"))
		})
	}
	assert.NotEmpty(t, emu.Records(), "the standalone emulator was reached")

	c := &invokeCmd{Provider: "gcp", Transport: "rest", GRPCAddr: emu.GRPCAddr(), Prompt: "hi", Type: "application/json"}
	err = c.run(context.Background(), &strings.Builder{})
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
	assert.ErrorContains(t, err, "--transport rest")
	c = &invokeCmd{Provider: "aws", Transport: "rest", Prompt: "hi", Type: "application/json"}
	assert.ErrorContains(t, c.run(context.Background(), &strings.Builder{}), "Vertex's")
}

// TestBenchPlanTransport: a plan's transport and method are checked and
// reach the request.
func TestBenchPlanTransport(t *testing.T) {
	p := &bench.Plan{Targets: []bench.Target{{Provider: "gcp", Endpoint: "e", Transport: "rest", Method: "serverStreamingPredict",
		Action: "invoke", Payload: bench.Payload{Body: sspBody}}}, Limits: bench.Limits{Requests: 1}}
	require.NoError(t, p.Prepare())
	assert.Equal(t, "serverStreamingPredict", p.Targets[0].Request().Attributes.Method)
	assert.True(t, vertexREST(&p.Targets[0]))
	assert.True(t, toEmulator(&p.Targets[0]))

	bad := &bench.Plan{Targets: []bench.Target{{Provider: "gcp", Endpoint: "e", Transport: "soap"}}, Limits: bench.Limits{Requests: 1}}
	assert.ErrorContains(t, bad.Prepare(), "want grpc or rest")
	bad = &bench.Plan{Targets: []bench.Target{{Provider: "openai", Model: "m", Transport: "rest"}}, Limits: bench.Limits{Requests: 1}}
	assert.ErrorContains(t, bad.Prepare(), "Vertex's")
}
