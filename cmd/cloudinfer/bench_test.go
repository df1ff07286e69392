package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alecthomas/kong"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// parse parses a command line into the CLI.
func parse(t *testing.T, args ...string) *cli {
	t.Helper()
	c, err := parseArgs(t, args...)
	require.NoError(t, err)
	return c
}

// parseArgs parses a command line into the CLI and returns kong's error.
func parseArgs(t *testing.T, args ...string) (*cli, error) {
	t.Helper()
	var c cli
	p, err := kong.New(&c, kong.Name("cloudinfer"), kong.Exit(func(int) { t.Fatal("exit") }))
	require.NoError(t, err)
	_, err = p.Parse(args)
	return &c, err
}

func TestDefaultRunIsTheReferenceExperiment(t *testing.T) {
	c := parse(t, "bench")
	p, reference, err := c.Bench.plan()
	require.NoError(t, err)
	assert.True(t, reference)
	require.Len(t, p.Targets, 3)
	for i, m := range referenceModels {
		tg := p.Targets[i]
		assert.Equal(t, m, tg.Endpoint)
		assert.True(t, tg.Stream)
		assert.Equal(t, 512, tg.Payload.PromptTokens)
		assert.Empty(t, tg.URL, "the embedded emulator")
	}
	assert.Equal(t, 1, p.Limits.Warmup)
	assert.True(t, c.Bench.needsEmulator(p))
	assert.True(t, p.Parallel, "the three models run at once")
	// About a minute of the slowest model's requests (1912 ms mean each),
	// warm-up included.
	assert.Equal(t, 30, referenceRequests(1, 1))
	assert.Equal(t, 100, referenceRequests(0.01, 1))
}

// TestDefaultRunKeepsPayloadFlags: the payload flags given to a run with no
// targets of its own apply to the reference models, never silently dropped.
func TestDefaultRunKeepsPayloadFlags(t *testing.T) {
	c := parse(t, "bench", "--payload", "../../bench/testdata/body.json", "--content-type", "application/json",
		"--action", "invoke", "--output-tokens", "16", "--variant", "v1")
	p, reference, err := c.Bench.plan()
	require.NoError(t, err)
	assert.True(t, reference)
	require.Len(t, p.Targets, 3)
	for _, tg := range p.Targets {
		assert.Equal(t, "body.json", filepath.Base(tg.Payload.File), tg.Endpoint)
		assert.Equal(t, "application/json", tg.Payload.ContentType, tg.Endpoint)
		assert.Equal(t, "invoke", tg.Action, tg.Endpoint)
		assert.Equal(t, 16, tg.Payload.OutputTokens, tg.Endpoint)
		assert.Equal(t, "v1", tg.Variant, tg.Endpoint)
	}
	require.NoError(t, p.Prepare())
}

func TestFlagsBuildTargetsAndLoad(t *testing.T) {
	c := parse(t, "bench", "--provider", "aws", "--endpoint", "a", "--endpoint", "b", "--no-stream",
		"--load", "ladder", "--ladder-step", "25", "--ladder-step-length", "2s", "--ladder-high-water", "300ms",
		"--ladder-low-water", "100ms", "--ladder-floor", "5", "--ladder-target", "100", "--ladder-backoff", "0.5",
		"--sla", "ttft p95 150ms starts=warm", "--traffic-log", "../../bench/testdata/traffic.csv", "--cloud")
	p, reference, err := c.Bench.plan()
	require.NoError(t, err)
	assert.False(t, reference)
	require.NoError(t, p.Prepare())
	require.Len(t, p.Targets, 2)
	assert.Equal(t, "sagemaker", p.Targets[1].Service)
	assert.False(t, p.Targets[0].Stream)
	l := p.Load.Ladder
	assert.Equal(t, bench.Ladder{Start: 5, Increment: 25, Floor: 5, Target: 100, Backoff: 0.5, Step: bench.Duration(2e9),
		HighWater: bench.Duration(3e8), LowWater: bench.Duration(1e8), Metric: "e2e"}, l)
	assert.Equal(t, bench.Duration(20e9), p.Limits.Duration, "a ladder runs ten steps by default")
	require.Len(t, p.SLAs, 1)
	require.NotNil(t, p.Mix)
	assert.Len(t, p.Mix.Classes, 3)
	assert.False(t, c.Bench.needsEmulator(p), "--cloud")
}

func TestConfigFileAndOverrides(t *testing.T) {
	c := parse(t, "bench", "--config", "../../bench/testdata/plan.yaml", "--rate", "7", "--requests", "9", "--warmup", "0")
	p, _, err := c.Bench.plan()
	require.NoError(t, err)
	assert.Len(t, p.Targets, 2)
	assert.Equal(t, bench.LoadPoisson, p.Load.Model)
	assert.Equal(t, 7.0, p.Load.Rate)
	assert.Equal(t, 9, p.Limits.Requests)
	assert.Equal(t, 0, p.Limits.Warmup)
	assert.Equal(t, bench.Duration(30e9), p.Limits.Duration, "kept from the file")
}

func TestBenchAndReportEndToEnd(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r.json")
	c := parse(t, "bench", "--time-scale", "0.01", "--requests", "4", "--quiet", "--out", out,
		"--html", filepath.Join(dir, "r.html"), "--csv", filepath.Join(dir, "r.csv"), "--markdown", filepath.Join(dir, "r.md"))
	var stdout bytes.Buffer
	require.NoError(t, c.Bench.run(context.Background(), &stdout, nil))
	s := stdout.String()
	t.Log("\n" + s)
	for _, m := range referenceModels {
		assert.Contains(t, s, m)
	}
	assert.Contains(t, s, "TTFT ms")
	assert.Contains(t, s, "Emulator ground truth")
	assert.Contains(t, s, "result: "+out)
	for _, f := range []string{"r.json", "r.html", "r.csv", "r.md"} {
		st, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err)
		assert.Positive(t, st.Size(), f)
	}
	res, err := bench.ReadResult(out)
	require.NoError(t, err)
	for _, tr := range res.Targets {
		assert.Equal(t, int64(4), tr.Counts().Requests, tr.Name)
		assert.Zero(t, tr.Counts().Failed, "%v", tr.ErrorExamples)
	}

	// The same run as if from a second machine, for --merge.
	second := filepath.Join(dir, "second.json")
	res.Hosts = []bench.Host{{Name: "second-machine", CPUs: 2}}
	require.NoError(t, res.Save(second))
	for _, args := range [][]string{
		{"report", out},
		{"report", "--compare", out, out},
		{"report", "--merge", out, second, "--format", "html"},
	} {
		rc := parse(t, args...)
		var b bytes.Buffer
		require.NoError(t, rc.Report.render(&b), strings.Join(args, " "))
		assert.Contains(t, b.String(), "llama-3-8b")
	}
	m := filepath.Join(dir, "m.json")
	require.NoError(t, parse(t, "report", "--merge", out, second, "--format", "json", "--out", m).Report.Run())
	merged, err := bench.ReadResult(m)
	require.NoError(t, err)
	assert.Equal(t, int64(8), merged.Targets[0].Counts().Requests)
	assert.Len(t, merged.Hosts, 2)

	assert.Error(t, parse(t, "report", "--merge", out, out).Report.render(&bytes.Buffer{}), "the same run twice")
	assert.Error(t, parse(t, "report", "--compare", out).Report.render(&bytes.Buffer{}))
	assert.Error(t, parse(t, "report", out, out).Report.render(&bytes.Buffer{}))
}

func TestEveryProviderAgainstTheEmbeddedEmulator(t *testing.T) {
	for _, prov := range []string{"openai", "aws", "azure", "gcp", "alibaba"} {
		t.Run(prov, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r.json")
			c := parse(t, "bench", "--provider", prov, "--endpoint", "phi-3-mini", "--time-scale", "0.01",
				"--requests", "3", "--warmup", "0", "--quiet", "--out", out)
			runThreeStreamed(t, c, out)
		})
	}
}

func TestMixFileFlag(t *testing.T) {
	c := parse(t, "bench", "--endpoint", "m", "--mix", "../../bench/testdata/mix.yaml")
	p, _, err := c.Bench.plan()
	require.NoError(t, err)
	require.NoError(t, p.Prepare())
	require.NotNil(t, p.Mix)
	assert.Len(t, p.Mix.Classes, 3)
	assert.Len(t, p.Mix.Dimensions, 2)
	require.Len(t, p.Mix.Classes[0].SLAs, 1)
	_, _, err = parse(t, "bench", "--mix", "../../bench/testdata/mix.yaml", "--traffic-log", "../../bench/testdata/traffic.csv").Bench.plan()
	assert.Error(t, err)

	// A mistake in a mix file is reported at its own line.
	bad := filepath.Join(t.TempDir(), "mix.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("classes:\n  - {path: /a, weight: 1}\n  - {path: /b, wieght: 2}\n"), 0o600))
	_, _, err = parse(t, "bench", "--mix", bad).Bench.plan()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "parse mix: [3:")

	// JSON works too.
	js := filepath.Join(t.TempDir(), "mix.json")
	require.NoError(t, os.WriteFile(js, []byte(`{"classes":[{"path":"/a","weight":1}]}`), 0o600))
	p, _, err = parse(t, "bench", "--endpoint", "m", "--mix", js).Bench.plan()
	require.NoError(t, err)
	require.NotNil(t, p.Mix)
	assert.Len(t, p.Mix.Classes, 1)
}

// TestGroundTruthColdFromModelReady: for a scale-to-zero endpoint whose
// first requests start cold, the injected TTFT the ground-truth table
// compares with is counted from the end of the cold start, as the measured
// one is; counted from arrival it would be larger by the whole cold start
// (about 280 ms here against a TTFT of about 30 ms).
func TestGroundTruthColdFromModelReady(t *testing.T) {
	c := parse(t, "bench", "--endpoint", "serverless", "--time-scale", "0.1", "--requests", "4", "--concurrency", "2",
		"--warmup", "0", "--quiet", "--out", filepath.Join(t.TempDir(), "r.json"))
	var stdout bytes.Buffer
	require.NoError(t, c.Bench.run(context.Background(), &stdout, nil))
	s := stdout.String()
	t.Log("\n" + s)
	require.Contains(t, s, "cold", "the run met a cold start")
	_, table, ok := strings.Cut(s, "Emulator ground truth")
	require.True(t, ok)
	var measured, injected float64
	for line := range strings.SplitSeq(table, "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && f[0] == "serverless" {
			var err error
			measured, err = strconv.ParseFloat(f[1], 64)
			require.NoError(t, err)
			injected, err = strconv.ParseFloat(f[2], 64)
			require.NoError(t, err)
		}
	}
	require.Positive(t, injected, "a serverless row")
	// Far wider than a busy machine's delays, far narrower than the cold
	// start (about 280 ms) the two would differ by if it were counted in one.
	assert.InDelta(t, injected, measured, 100, "measured %.1f ms, injected %.1f ms", measured, injected)
}

// TestVertexGRPCAddrNotEmulated: a Vertex target with a gRPC address of its
// own goes there, not to the embedded emulator another target starts.
// Nothing listens at the address, so none of its requests succeeds.
func TestVertexGRPCAddrNotEmulated(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	require.NoError(t, os.WriteFile(plan, []byte(`targets:
  - {name: emulated, provider: openai, endpoint: phi-3-mini, model: phi-3-mini, payload: {prompt_tokens: 8, output_tokens: 4}}
  - {name: own-addr, provider: gcp, endpoint: phi-3-mini, project: p, location: us-central1, grpc_addr: "127.0.0.1:1", payload: {prompt_tokens: 8, output_tokens: 4}}
limits: {requests: 2, warmup: 0}
`), 0o600))
	out := filepath.Join(dir, "r.json")
	c := parse(t, "bench", "--config", plan, "--time-scale", "0.01", "--quiet", "--out", out)
	var stdout bytes.Buffer
	require.NoError(t, c.Bench.run(context.Background(), &stdout, nil))
	t.Log("\n" + stdout.String())
	res, err := bench.ReadResult(out)
	require.NoError(t, err)
	for _, tr := range res.Targets {
		switch tr.Name {
		case "emulated":
			assert.Zero(t, tr.Counts().Failed)
			assert.Positive(t, tr.Counts().Requests)
		case "own-addr":
			cn := tr.Counts()
			assert.Positive(t, cn.Requests, "a loopback address is dialled as a local emulator")
			assert.Equal(t, cn.Requests, cn.Failed, "nothing answers at 127.0.0.1:1")
		}
	}
}

// TestTargetThatCannotRunFailsTheCommand: a target whose client cannot
// start (here, a URL its adapter refuses) is reported FAILED once, with
// its code once, and the command exits non-zero.
func TestTargetThatCannotRunFailsTheCommand(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	require.NoError(t, os.WriteFile(plan, []byte(`targets:
  - {name: ok, provider: openai, endpoint: phi-3-mini, model: phi-3-mini, payload: {prompt_tokens: 8, output_tokens: 4}}
  - {name: broken, provider: azure, endpoint: phi-3-mini, url: "ftp://127.0.0.1/x", payload: {prompt_tokens: 8, output_tokens: 4}}
limits: {requests: 2, warmup: 0}
`), 0o600))
	c := parse(t, "bench", "--config", plan, "--time-scale", "0.01", "--quiet", "--out", filepath.Join(dir, "r.json"))
	var stdout bytes.Buffer
	err := c.Bench.run(context.Background(), &stdout, nil)
	t.Log("\n" + stdout.String())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "1 of 2 targets could not run: broken")
	assert.Contains(t, stdout.String(), "FAILED (broken): ERR_INVALID_PARAM: ")
	assert.NotContains(t, stdout.String(), "ERR_INVALID_PARAM: ERR_INVALID_PARAM", "the code once")
}

// TestBenchRefusesUnwritableOutputsFirst: an output in a directory that
// does not exist is refused before the run, not after it.
func TestBenchRefusesUnwritableOutputsFirst(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-dir")
	for _, flag := range []string{"--out", "--html", "--csv", "--markdown"} {
		c := parse(t, "bench", "--time-scale", "0.01", "--requests", "2", "--quiet", flag, filepath.Join(missing, "r"))
		var stdout bytes.Buffer
		err := c.Bench.run(context.Background(), &stdout, nil)
		require.Error(t, err, flag)
		assert.Contains(t, err.Error(), "does not exist", flag)
		assert.Empty(t, stdout.String(), "%s: nothing ran", flag)
	}
}

// TestRateAloneMeansOpenLoopAndNegativesRefused: --rate without --load is
// an open loop at that rate, and a negative number is an error rather than
// "not given".
func TestRateAloneMeansOpenLoopAndNegativesRefused(t *testing.T) {
	p, _, err := parse(t, "bench", "--rate", "20").Bench.plan()
	require.NoError(t, err)
	assert.Equal(t, bench.LoadConstant, p.Load.Model)
	assert.Equal(t, 20.0, p.Load.Rate)

	p, _, err = parse(t, "bench", "--rate", "20", "--load", "poisson").Bench.plan()
	require.NoError(t, err)
	assert.Equal(t, bench.LoadPoisson, p.Load.Model)

	for _, args := range [][]string{{"--requests=-5"}, {"--rate=-1"}, {"--duration=-1s"}, {"--concurrency=-2"}} {
		_, _, err := parse(t, append([]string{"bench"}, args...)...).Bench.plan()
		require.Error(t, err, args)
		assert.Contains(t, err.Error(), "must not be negative", args)
	}
}

// TestNetworkImpairsEveryTransport runs one HTTP and the gRPC provider
// over a 20 ms (each way) link: every streamed request's TTFT then holds
// at least one round trip (40 ms) on top of the emulator's few
// milliseconds, and the result names the network.
func TestNetworkImpairsEveryTransport(t *testing.T) {
	for _, prov := range []string{"openai", "gcp"} {
		t.Run(prov, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r.json")
			c := parse(t, "bench", "--provider", prov, "--endpoint", "phi-3-mini", "--time-scale", "0.01",
				"--requests", "3", "--warmup", "0", "--quiet", "--out", out, "--network", "delay=20ms seed=3")
			var text bytes.Buffer
			require.NoError(t, c.Bench.run(context.Background(), &text, nil))
			assert.Contains(t, text.String(), "network delay=20ms,seed=3")
			assert.Contains(t, text.String(), "also holds the network's delays")
			res, err := bench.ReadResult(out)
			require.NoError(t, err)
			tr := res.Targets[0]
			assert.Equal(t, "delay=20ms,seed=3", tr.Network)
			assert.Zero(t, tr.Counts().Failed, "%v", tr.ErrorExamples)
			ttft := tr.Dist(latency.TTFT, "", "")
			require.Equal(t, uint64(3), ttft.Count())
			assert.GreaterOrEqual(t, ttft.Min(), int64(40*time.Millisecond), "a round trip of the link")
		})
	}
	c := parse(t, "bench", "--network", "delay=soon", "--quiet")
	err := c.Bench.run(context.Background(), &bytes.Buffer{}, nil)
	assert.ErrorContains(t, err, `network: impair: delay "soon" is not a duration`)
}

func TestInterruptedBenchSavesAndFails(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.json")
	c := parse(t, "bench", "--endpoint", "phi-3-mini", "--time-scale", "0.01", "--rate", "20", "--duration", "1m",
		"--warmup", "0", "--quiet", "--out", out)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var text bytes.Buffer
	err := c.Bench.run(ctx, &text, nil)
	require.Error(t, err, "an interrupted run does not exit 0")
	assert.Contains(t, err.Error(), "interrupted: the partial result is in "+out)
	assert.Contains(t, text.String(), "INTERRUPTED (partial result)")
	res, rerr := bench.ReadResult(out)
	require.NoError(t, rerr)
	assert.True(t, res.Interrupted)
	assert.Zero(t, res.Targets[0].Counts().Failed, "the calls in flight were waited for, not failed")
}

// TestPlanErrorBeforeTheEmulator: a plan that cannot run is refused before
// the embedded emulator (or anything else) starts.
func TestPlanErrorBeforeTheEmulator(t *testing.T) {
	c := parse(t, "bench", "--provider", "nope", "--quiet")
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	require.NoError(t, err)
	defer stderr.Close()
	var stdout bytes.Buffer
	err = c.Bench.run(context.Background(), &stdout, stderr)
	require.ErrorIs(t, err, errcodes.InvalidParam)
	assert.Contains(t, err.Error(), `provider "nope"`)
	b, rerr := os.ReadFile(stderr.Name())
	require.NoError(t, rerr)
	assert.NotContains(t, string(b)+stdout.String(), "embedded emulator")
}

// keyProxy is a reverse proxy to a standalone emulator that notes every
// request it forwards and any of them whose headers held a secret.
type keyProxy struct {
	URL    string
	secret []string

	mu     sync.Mutex
	n      int
	leaked []string // "Header: where the secret was seen"
}

// newKeyProxy starts a keyProxy to target, closed with the test.
func newKeyProxy(t *testing.T, target string, secrets ...string) *keyProxy {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(u)
	tr := &http.Transport{}
	rp.Transport = tr
	p := &keyProxy{secret: secrets}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.n++
		for name, vs := range r.Header {
			for _, v := range vs {
				for _, s := range p.secret {
					if strings.Contains(v, s) {
						p.leaked = append(p.leaked, name)
					}
				}
			}
		}
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.Close()
		tr.CloseIdleConnections()
	})
	p.URL = srv.URL
	return p
}

// seen returns how many requests went through and the headers that held a
// secret.
func (p *keyProxy) seen() (int, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n, slices.Clone(p.leaked)
}

// standaloneEmulator starts an emulator apart from the command, as
// `cloudinfer emulate` would, closed with the test.
func standaloneEmulator(t *testing.T) *emulator.Server {
	t.Helper()
	emu, err := emulator.New(emulator.Options{TimeScale: 0.01, Seed: 1})
	require.NoError(t, err)
	require.NoError(t, emu.Start("127.0.0.1:0", ""))
	t.Cleanup(func() { _ = emu.Close() })
	return emu
}

// runBench runs bench with args (--quiet and an --out in a temporary
// directory added) and returns its result, its standard output and its
// standard error.
func runBench(t *testing.T, args ...string) (*bench.Result, string, string, error) {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, "r.json")
	c := parse(t, append([]string{"bench", "--quiet", "--out", out}, args...)...)
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	require.NoError(t, err)
	defer stderr.Close()
	var stdout bytes.Buffer
	runErr := c.Bench.run(context.Background(), &stdout, stderr)
	b, err := os.ReadFile(stderr.Name())
	require.NoError(t, err)
	var res *bench.Result
	if _, err := os.Stat(out); err == nil {
		res, err = bench.ReadResult(out)
		require.NoError(t, err)
	}
	return res, stdout.String(), string(b), runErr
}

// TestBenchLoopbackURLWithKeysInTheEnvironment: a plain-http loopback --url
// (a `cloudinfer emulate` running apart, a local vLLM) is reached with
// OPENAI_API_KEY and EAS_TOKEN set, and sent them: on this machine they
// cross no network.
func TestBenchLoopbackURLWithKeysInTheEnvironment(t *testing.T) {
	const key, token = "sk-BENCHENVSECRET0123456789", "EASBENCHSECRET0123456789"
	t.Setenv("OPENAI_API_KEY", key)
	t.Setenv("EAS_TOKEN", token)
	emu := standaloneEmulator(t)
	for _, prov := range []string{"openai", "alibaba"} {
		t.Run(prov, func(t *testing.T) {
			p := newKeyProxy(t, emu.URL(), key, token)
			args := []string{"--provider", prov, "--url", p.URL, "--requests", "2", "--warmup", "0",
				"--prompt-tokens", "8", "--output-tokens", "2", "--server-metrics", "off"} // the requests alone
			if prov == "openai" {
				args = append(args, "--model", "phi-3-mini")
			} else {
				args = append(args, "--endpoint", "phi-3-mini")
			}
			res, stdout, stderr, err := runBench(t, args...)
			t.Log("\n" + stdout + stderr)
			require.NoError(t, err)
			tr := res.Targets[0]
			assert.Empty(t, tr.Fatal)
			assert.Equal(t, int64(2), tr.Counts().Requests)
			assert.Zero(t, tr.Counts().Failed, "%v", tr.ErrorExamples)
			assert.NotContains(t, stderr, "embedded emulator")
			n, sent := p.seen()
			assert.Equal(t, 2, n, "the requests went to --url")
			assert.Equal(t, []string{"Authorization", "Authorization"}, sent, "the key from the environment reaches a server on this machine")
		})
	}
}

// TestBenchEndpointURLIsTheServer: an --endpoint that is a URL (an
// OpenAI-compatible base, an Azure ML scoring root, a PAI-EAS service URL)
// names the server, as for invoke: the embedded emulator is neither
// started nor announced, the requests reach that server with the key from
// the environment (on this machine). SageMaker and Vertex endpoints are
// names only.
func TestBenchEndpointURLIsTheServer(t *testing.T) {
	const key, token = "sk-BENCHENVSECRET0123456789", "EASBENCHSECRET0123456789"
	t.Setenv("OPENAI_API_KEY", key)
	t.Setenv("EAS_TOKEN", token)
	t.Setenv("AZUREML_API_KEY", "")
	emu := standaloneEmulator(t)
	for _, tc := range []struct{ prov, path string }{
		{"openai", "/v1"},
		{"azure", "/azureml/phi-3-mini"},
		{"alibaba", "/api/predict/phi-3-mini"},
	} {
		t.Run(tc.prov, func(t *testing.T) {
			p := newKeyProxy(t, emu.URL(), key, token)
			res, stdout, stderr, err := runBench(t, "--provider", tc.prov, "--endpoint", p.URL+tc.path, "--model", "phi-3-mini",
				"--requests", "2", "--warmup", "0", "--prompt-tokens", "8", "--output-tokens", "2", "--server-metrics", "off") // the requests alone
			t.Log("\n" + stdout + stderr)
			require.NoError(t, err)
			assert.NotContains(t, stderr, "embedded emulator")
			assert.NotContains(t, stdout, "Emulator ground truth", "no embedded emulator served it")
			tr := res.Targets[0]
			assert.Zero(t, tr.Counts().Failed, "%v", tr.ErrorExamples)
			n, sent := p.seen()
			assert.Equal(t, 2, n, "the requests went to the --endpoint URL")
			if tc.prov == "azure" {
				assert.Empty(t, sent, "AZUREML_API_KEY is empty")
			} else {
				assert.Equal(t, []string{"Authorization", "Authorization"}, sent, "the key from the environment reaches a server on this machine")
			}
		})
	}
	for _, prov := range []string{"aws", "gcp"} {
		_, _, stderr, err := runBench(t, "--provider", prov, "--endpoint", emu.URL()+"/endpoints/phi-3-mini", "--requests", "1")
		require.Error(t, err, prov)
		assert.Contains(t, err.Error(), "endpoint name, not a URL", prov)
		assert.NotContains(t, stderr, "embedded emulator", prov)
	}
	// The URL names the server, not the model it is asked for.
	_, _, stderr, err := runBench(t, "--provider", "openai", "--endpoint", emu.URL()+"/v1", "--requests", "1")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--model")
	assert.NotContains(t, stderr, "embedded emulator")
}

// TestBenchTimeScaleZeroIsAnnouncedAsOne: --time-scale 0 runs the embedded
// emulator at 1 (its default) and says so; the default run sizes itself
// for that scale.
func TestBenchTimeScaleZeroIsAnnouncedAsOne(t *testing.T) {
	_, _, stderr, err := runBench(t, "--time-scale", "0", "--endpoint", "phi-3-mini", "--requests", "1", "--warmup", "0",
		"--prompt-tokens", "8", "--output-tokens", "1")
	require.NoError(t, err)
	assert.Contains(t, stderr, "(time scale 1)")
	assert.Equal(t, referenceRequests(1, 1), referenceRequests(0, 1), "0 means 1")
}

// TestBenchRefusesAKeyInClearToAnotherHost: a key in the environment is
// not sent over plain http to a host other than this machine's: the target
// is refused with words a CLI user can act on. Nothing is dialled.
func TestBenchRefusesAKeyInClearToAnotherHost(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-BENCHENVSECRET0123456789")
	t.Setenv("EAS_TOKEN", "EASBENCHSECRET0123456789")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIABENCHSECRET")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "awsBENCHSECRET")
	t.Setenv("AWS_SESSION_TOKEN", "SESSIONBENCHSECRET")
	env := &environment{cmd: &benchCmd{}}
	for _, tg := range []bench.Target{
		{Name: "s", Provider: "aws", Endpoint: "ep", Region: "us-east-1", URL: "http://192.0.2.1:8000"},
		{Name: "o", Provider: "openai", Model: "m", URL: "http://192.0.2.1:8000"},
		{Name: "o2", Provider: "openai", Endpoint: "http://192.0.2.1:8000/v1", URL: "http://192.0.2.1:8000", Model: "m"},
		{Name: "a", Provider: "alibaba", Endpoint: "svc", URL: "http://192.0.2.1:8000"},
	} {
		_, err := env.adapter(context.Background(), &tg)
		require.Error(t, err, tg.Name)
		assert.Contains(t, err.Error(), "over plain http", tg.Name)
		assert.Contains(t, err.Error(), "https", tg.Name)
		assert.NotContains(t, err.Error(), "AllowInsecureHTTP", "%s: no option a CLI user can set", tg.Name)
		assert.NotContains(t, err.Error(), "SECRET", tg.Name)
	}
}

// TestGroundTruthMatchesRecordsToTheirTarget: targets of every provider
// that share the emulator's endpoint phi-3-mini, two of them with the same
// provider and endpoint and only their payloads apart, run at once. Each
// has its own row in the ground-truth table, over its own measured
// requests' records: as many as its measured TTFTs, none of the warm-up's,
// none of another target's (sm-one's requests ask for one token, so its
// records have no TPOT; sm-short's have).
func TestGroundTruthMatchesRecordsToTheirTarget(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	require.NoError(t, os.WriteFile(plan, []byte(`targets:
  - {name: oa, provider: openai, model: phi-3-mini, stream: true, payload: {prompt_tokens: 8, output_tokens: 4}}
  - {name: sm-short, provider: aws, endpoint: phi-3-mini, stream: true, payload: {prompt_tokens: 8, output_tokens: 4}}
  - {name: sm-one, provider: aws, endpoint: phi-3-mini, stream: true, payload: {prompt_tokens: 64, output_tokens: 1}}
  - {name: az, provider: azure, endpoint: phi-3-mini, stream: true, payload: {prompt_tokens: 8, output_tokens: 4}}
  - {name: eas, provider: alibaba, endpoint: phi-3-mini, stream: true, payload: {prompt_tokens: 8, output_tokens: 4}}
  - {name: vx, provider: gcp, endpoint: phi-3-mini, stream: true, payload: {prompt_tokens: 8, output_tokens: 4}}
limits: {requests: 3, warmup: 1}
parallel: true
`), 0o600))
	res, stdout, _, err := runBench(t, "--config", plan, "--time-scale", "0.01")
	t.Log("\n" + stdout)
	require.NoError(t, err)
	_, table, ok := strings.Cut(stdout, "Emulator ground truth")
	require.True(t, ok)
	rows := map[string][]string{}
	for line := range strings.SplitSeq(table, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[0]] = f
		}
	}
	require.Len(t, res.Targets, 6)
	for _, tr := range res.Targets {
		row := rows[tr.Name]
		require.Len(t, row, 12, "%s: a row with its record count last", tr.Name)
		n := tr.Dist(latency.TTFT, "", "").Count()
		assert.Equal(t, uint64(3), n, "%s: %v", tr.Name, tr.ErrorExamples)
		assert.Equal(t, strconv.FormatUint(n, 10), row[11], "%s: its own measured requests' records", tr.Name)
		assert.NotEqual(t, "-", row[2], "%s: an injected TTFT", tr.Name)
	}
	assert.Equal(t, "-", rows["sm-one"][7], "sm-one: one-token responses, no injected TPOT")
	assert.NotEqual(t, "-", rows["sm-short"][7], "sm-short: an injected TPOT")
}

// TestDefaultRunLadderRunsByTime: `bench --load ladder` with no targets
// runs the reference models' ladders for their duration (ten steps by
// default), not bounded by the default run's request count, which would
// end them within a few steps.
func TestDefaultRunLadderRunsByTime(t *testing.T) {
	res, stdout, _, err := runBench(t, "--load", "ladder", "--ladder-step-length", "50ms", "--ladder-floor", "20",
		"--ladder-target", "20", "--time-scale", "0.01", "--prompt-tokens", "8", "--output-tokens", "2")
	t.Log("\n" + stdout)
	require.NoError(t, err)
	require.Len(t, res.Targets, 3)
	assert.Equal(t, bench.Limits{Duration: bench.Duration(500 * time.Millisecond), Warmup: 1}, res.Plan.Limits,
		"ten steps of 50ms, no request count")
	for _, tr := range res.Targets {
		require.NotNil(t, tr.Ladder, tr.Name)
		assert.NotEmpty(t, tr.Ladder.Steps, tr.Name)
	}
}

// TestHTTPClientChoice: --http-client picks the targets' HTTP client (h1client
// by default, net/http's Transport with std), and a run works over each.
func TestHTTPClientChoice(t *testing.T) {
	for _, choice := range []string{"sync", "std"} {
		t.Run(choice, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r.json")
			c := parse(t, "bench", "--provider", "openai", "--endpoint", "phi-3-mini", "--time-scale", "0.01",
				"--requests", "3", "--warmup", "0", "--quiet", "--out", out, "--http-client", choice)
			env := &environment{cmd: &c.Bench}
			n, err := env.netFor(&bench.Target{})
			require.NoError(t, err)
			want := benchHTTPClient
			if choice == "std" {
				want = stdHTTPClient
			}
			assert.Same(t, want, n.http)
			runThreeStreamed(t, c, out)
		})
	}
	_, err := parseArgs(t, "bench", "--http-client", "fast")
	assert.ErrorContains(t, err, "http-client")
}

// runThreeStreamed runs c's bench of 3 streamed requests, written to out,
// and checks that all 3 came back with a TTFT.
func runThreeStreamed(t *testing.T, c *cli, out string) {
	t.Helper()
	require.NoError(t, c.Bench.run(context.Background(), &bytes.Buffer{}, nil))
	res, err := bench.ReadResult(out)
	require.NoError(t, err)
	tr := res.Targets[0]
	assert.Equal(t, int64(3), tr.Counts().Requests)
	assert.Zero(t, tr.Counts().Failed, "%v", tr.ErrorExamples)
	assert.Equal(t, uint64(3), tr.Dist(latency.TTFT, "", "").Count(), "streamed: TTFT measured")
}
