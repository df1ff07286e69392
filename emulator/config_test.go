package emulator

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

const yamlConfig = `
time_scale: 0.01
seed: 42
spin_waits: -1
profiles:
  - name: fast-llama
    base: llama-3-8b
    ttft_ms: {mean: 200, sd: 20}
    error_rates: {throttle: 0.01}
endpoints:
  - name: my-llama
    providers: [sagemaker, aws, openai-compatible]
    profile: fast-llama
    credentials:
      aws_access_key_id: AKIDEXAMPLE
      aws_secret_access_key: secret
    idle_window_ms: 300000
    cold_mode: reject
  - name: inline
    profile:
      base: phi-3-mini
      slots: 5
      max_queue: 64
  - name: phi-3-mini
`

func TestParseConfigYAML(t *testing.T) {
	opts, err := ParseConfig([]byte(yamlConfig))
	require.NoError(t, err)
	assert.Equal(t, 0.01, opts.TimeScale)
	assert.Equal(t, uint64(42), opts.Seed)
	assert.Equal(t, -1, opts.SpinWaits)
	require.Len(t, opts.Endpoints, 3)

	e := opts.Endpoints[0]
	assert.Equal(t, "my-llama", e.Name)
	assert.Equal(t, []Provider{SageMaker, SageMaker, OpenAI}, e.Providers)
	assert.Equal(t, Dist{200, 20}, e.Profile.TTFTMs)
	base, _ := BuiltinProfile("llama-3-8b")
	assert.Equal(t, base.TPOTMs, e.Profile.TPOTMs, "fields not given come from the base")
	assert.Equal(t, "fast-llama", e.Profile.Name)
	assert.Equal(t, ColdReject, e.ColdMode)
	assert.Equal(t, 300000.0, e.IdleWindowMs)
	assert.Equal(t, "AKIDEXAMPLE", e.Credentials.AWSAccessKeyID)

	in := opts.Endpoints[1]
	assert.Equal(t, 5, in.Profile.Slots)
	assert.Equal(t, 64, in.Profile.MaxQueue)
	assert.Equal(t, "inline", in.Profile.Name)

	phi, _ := BuiltinProfile("phi-3-mini")
	assert.Equal(t, phi, opts.Endpoints[2].Profile, "no profile: the built-in of the same name")

	s, err := New(opts)
	require.NoError(t, err)
	require.NoError(t, s.Close())
}

func TestParseConfigJSONAndFile(t *testing.T) {
	js := `{"builtin_endpoints": true, "endpoints": [{"name": "extra", "profile": "qwen2-7b-h100"}]}`
	opts, err := ParseConfig([]byte(js))
	require.NoError(t, err)
	assert.Len(t, opts.Endpoints, len(DefaultEndpoints())+1)

	dir := t.TempDir()
	path := filepath.Join(dir, "emu.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yamlConfig), 0o600))
	opts, err = LoadConfig(path)
	require.NoError(t, err)
	assert.Len(t, opts.Endpoints, 3)

	_, err = LoadConfig(filepath.Join(dir, "missing.yaml"))
	assert.ErrorIs(t, err, errcodes.InvalidParam)

	empty, err := ParseConfig([]byte("time_scale: 0.5\n"))
	require.NoError(t, err)
	assert.Len(t, empty.Endpoints, len(DefaultEndpoints()), "no endpoints: the built-ins")
}

func TestParseConfigErrors(t *testing.T) {
	for name, cfg := range map[string]string{
		"unknown field":        "endpoints:\n  - name: x\n    colour: blue\n",
		"unknown profile":      "endpoints:\n  - name: x\n    profile: gpt-9\n",
		"unknown base":         "profiles:\n  - name: p\n    base: nope\n",
		"unnamed profile":      "profiles:\n  - ttft_ms: {mean: 1, sd: 0}\n",
		"bad provider":         "endpoints:\n  - name: x\n    providers: [ibm]\n",
		"bad cold mode":        "endpoints:\n  - name: x\n    cold_mode: maybe\n",
		"bad name":             "endpoints:\n  - name: a/b\n",
		"half aws credentials": "endpoints:\n  - name: x\n    credentials: {aws_access_key_id: A}\n",
		"bad rate":             "endpoints:\n  - name: x\n    profile: {base: phi-3-mini, error_rates: {internal: 2}}\n",
		"not yaml":             "endpoints: [\n",
		"trailing json":        `{"seed": 1} {}`,
	} {
		_, err := ParseConfig([]byte(cfg))
		assert.Error(t, err, name)
	}
	_, err := New(Options{TimeScale: -1})
	assert.ErrorIs(t, err, errcodes.InvalidParam)
	_, err = New(Options{Endpoints: []Endpoint{{Name: "a"}, {Name: "a"}}})
	assert.ErrorIs(t, err, errcodes.InvalidParam)
}

func TestCredentialsStringHidesSecrets(t *testing.T) {
	c := Credentials{AWSAccessKeyID: "AKIDSECRET", AWSSecretAccessKey: "s3cr3t", Keys: []string{"k3y"}}
	b, err := json.Marshal(Endpoint{Name: "x", Credentials: c})
	require.NoError(t, err)
	for _, secret := range []string{"AKIDSECRET", "s3cr3t", "k3y"} {
		assert.NotContains(t, c.String(), secret)
		assert.NotContains(t, fmt.Sprintf("%v %+v", c, Endpoint{Credentials: c}), secret)
		assert.NotContains(t, string(b), secret)
	}
}

func TestExampleConfigFile(t *testing.T) {
	opts, err := LoadConfig(filepath.Join("testdata", "emulator.example.yaml"))
	require.NoError(t, err)
	assert.Len(t, opts.Endpoints, len(DefaultEndpoints())+3)
	s, err := New(opts)
	require.NoError(t, err)
	require.NoError(t, s.Close())
}

func TestEndpointWithoutProfile(t *testing.T) {
	s, err := New(Options{Endpoints: []Endpoint{{Name: "qwen2-7b"}, {Name: "custom", Providers: []Provider{"aws"}}}})
	require.NoError(t, err)
	defer s.Close()
	eps := s.Endpoints()
	qwen, _ := BuiltinProfile("qwen2-7b")
	llama, _ := BuiltinProfile("llama-3-8b")
	assert.Equal(t, qwen, eps[0].Profile)
	assert.Equal(t, llama, eps[1].Profile)
	assert.Equal(t, []Provider{SageMaker}, eps[1].Providers, "aliases are normalised")
}
