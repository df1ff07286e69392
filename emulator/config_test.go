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

// TestParseConfigErrorsNameTheKey checks that each invalid configuration is
// refused with an error that names where the problem is.
func TestParseConfigErrorsNameTheKey(t *testing.T) {
	for _, c := range []struct{ name, cfg, want string }{
		{"negative time scale", "time_scale: -1\n", "time_scale"},
		{"NaN figure", "profiles:\n  - name: p\n    ttft_ms: {mean: .nan, sd: 1}\n", "profiles[0].ttft_ms.mean"},
		{"infinite window", "endpoints:\n  - name: x\n    idle_window_ms: .inf\n", "endpoints[0].idle_window_ms"},
		{"unknown endpoint key", "endpoints:\n  - name: x\n  - name: y\n    colour: blue\n", `endpoints[1]: unknown field "colour"`},
		{"unknown credentials key", "endpoints:\n  - name: x\n    credentials: {token: t}\n", `endpoints[0]: unknown field "token"`},
		{"rates above 1 in all", "profiles:\n  - name: p\n    base: phi-3-mini\n    error_rates: {internal: 0.7, throttle: 0.6}\n", "error_rates"},
		{"profile defined twice", "profiles:\n  - {name: p, base: phi-3-mini}\n  - {name: p, base: llama-3-8b}\n", `profiles[1]: profile "p" is defined twice`},
		{"endpoint defined twice", "endpoints:\n  - name: x\n  - name: x\n", `endpoints[1]: endpoint "x" is defined twice`},
		{"base defined below", "profiles:\n  - {name: a, base: b}\n  - {name: b, base: phi-3-mini}\n", `profiles[0]: base profile "b" is defined below`},
		{"own base", "profiles:\n  - {name: a, base: a}\n", `profiles[0]: profile "a" cannot be its own base`},
	} {
		_, err := ParseConfig([]byte(c.cfg))
		if assert.Error(t, err, c.name) {
			assert.Contains(t, err.Error(), c.want, c.name)
		}
	}
	// A built-in may be redefined from itself, and a built-in endpoint replaced.
	opts, err := ParseConfig([]byte("builtin_endpoints: true\nprofiles:\n  - {name: phi-3-mini, base: phi-3-mini, slots: 3}\nendpoints:\n  - name: phi-3-mini\n"))
	require.NoError(t, err)
	require.Len(t, opts.Endpoints, len(DefaultEndpoints()))
	for _, e := range opts.Endpoints {
		if e.Name == "phi-3-mini" {
			assert.Equal(t, 3, e.Profile.Slots)
		}
	}
}

// TestProfileInheritance pins down what a profile takes from its base and
// what an endpoint's profile takes from the endpoint's default profile.
func TestProfileInheritance(t *testing.T) {
	llama, _ := BuiltinProfile("llama-3-8b")
	qwen, _ := BuiltinProfile("qwen2-7b")
	opts, err := ParseConfig([]byte(`
profiles:
  - name: few-slots
    base: llama-3-8b
    slots: 5
  - name: own-queue
    base: llama-3-8b
    slots: 5
    max_queue: 64
  - name: no-queue
    base: llama-3-8b
    max_queue: -1
  - name: no-queue-2
    base: no-queue
    slots: 2
  - name: mean-only
    base: llama-3-8b
    ttft_ms: {mean: 200}
    error_rates: {internal: 0.1}
  - name: more-rates
    base: mean-only
    error_rates: {throttle: 0.2}
endpoints:
  - {name: few-slots, profile: few-slots}
  - {name: own-queue, profile: own-queue}
  - {name: no-queue-2, profile: no-queue-2}
  - {name: more-rates, profile: more-rates}
  - name: qwen2-7b
    profile: {slots: 2, error_rates: {internal: 0.1}, gap_jitter: 0}
  - name: custom
    profile: {request_timeout_ms: 5000}
  - name: zeros
    profile: {name: zeros, slots: 2}
`))
	require.NoError(t, err)
	eps := map[string]Profile{}
	for _, e := range opts.Endpoints {
		eps[e.Name] = e.Profile
	}

	// A derived profile that sets slots but not max_queue keeps its base's
	// queue rule (4 × slots), not the base's queue length.
	assert.Equal(t, 5, eps["few-slots"].Slots)
	assert.Equal(t, 20, eps["few-slots"].MaxQueue)
	assert.Equal(t, llama.TTFTMs, eps["few-slots"].TTFTMs)
	assert.Equal(t, 64, eps["own-queue"].MaxQueue)
	assert.Equal(t, -1, eps["no-queue-2"].MaxQueue, "a queue the base set itself is kept")

	// Objects merge field by field; error rates merge by fault.
	assert.Equal(t, Dist{200, llama.TTFTMs.SD}, eps["more-rates"].TTFTMs)
	assert.Equal(t, map[string]float64{"internal": 0.1, "throttle": 0.2}, eps["more-rates"].ErrorRates)

	// An inline profile with no base, no name and no latency figures starts
	// from the endpoint's default profile, as if it named it as base.
	q := eps["qwen2-7b"]
	assert.Equal(t, qwen.TTFTMs, q.TTFTMs)
	assert.Equal(t, qwen.OutputTokens, q.OutputTokens)
	assert.Equal(t, 2, q.Slots)
	assert.Equal(t, 8, q.MaxQueue)
	assert.Equal(t, 0.0, q.GapJitter, "an explicit zero overrides the default")
	assert.Equal(t, map[string]float64{"internal": 0.1}, q.ErrorRates)
	c := eps["custom"]
	assert.Equal(t, llama.TTFTMs, c.TTFTMs)
	assert.Equal(t, 5000.0, c.RequestTimeoutMs)
	assert.Equal(t, "custom", c.Name)
	// A named profile object without base is taken as written.
	assert.Equal(t, Dist{}, eps["zeros"].TTFTMs)
}

// TestEndpointProfileOverrides: in Options, an endpoint's profile without
// name or latency figures is the endpoint's default profile with the fields
// it sets in place of the default's.
func TestEndpointProfileOverrides(t *testing.T) {
	qwen, _ := BuiltinProfile("qwen2-7b")
	rates := map[string]float64{"internal": 0.1}
	s, err := New(Options{Endpoints: []Endpoint{{Name: "qwen2-7b", Profile: Profile{
		Slots: 2, ColdStartMs: Dist{100, 0}, RequestTimeoutMs: 5000, StallMs: 10, ErrorRates: rates,
	}}}})
	require.NoError(t, err)
	defer s.Close()
	p := s.Endpoints()[0].Profile
	assert.Equal(t, qwen.TTFTMs, p.TTFTMs)
	assert.Equal(t, qwen.TPOTMs, p.TPOTMs)
	assert.Equal(t, 2, p.Slots)
	assert.Equal(t, 8, p.MaxQueue, "4 × slots")
	assert.Equal(t, Dist{100, 0}, p.ColdStartMs)
	assert.Equal(t, 5000.0, p.RequestTimeoutMs)
	assert.Equal(t, 10.0, p.StallMs)
	assert.Equal(t, rates, p.ErrorRates)
	assert.Equal(t, 2, cap(s.endpoints["qwen2-7b"].slots), "the served endpoint has the slots asked for")
}

// TestEndpointsDoNotAlias: the server keeps its own copy of each endpoint's
// maps, slices and pointers, so that neither the caller's Options nor what
// Endpoints returns can change (or race with) what is served.
func TestEndpointsDoNotAlias(t *testing.T) {
	p, _ := BuiltinProfile("phi-3-mini")
	p.ErrorRates = map[string]float64{"internal": 0.1}
	p.Throttle = &TokenBucket{RatePerSec: 5, Burst: 2}
	e := Endpoint{Name: "phi", Profile: p, Credentials: Credentials{Keys: []string{"k"}}}
	s, err := New(Options{Endpoints: []Endpoint{e}})
	require.NoError(t, err)
	defer s.Close()
	p.ErrorRates["internal"] = 1
	p.Throttle.Burst = 100
	e.Credentials.Keys[0] = "changed"
	got := s.Endpoints()[0]
	got.Profile.ErrorRates["throttle"] = 1
	got.Profile.Throttle.RatePerSec = 1000
	got.Credentials.Keys[0] = "changed"

	ep := s.endpoints["phi"]
	assert.Equal(t, map[string]float64{"internal": 0.1}, ep.prof.ErrorRates)
	assert.Equal(t, TokenBucket{RatePerSec: 5, Burst: 2}, *ep.prof.Throttle)
	assert.Equal(t, []string{"k"}, ep.Credentials.Keys)
	assert.Equal(t, map[string]float64{"internal": 0.1}, s.Endpoints()[0].Profile.ErrorRates)
}
