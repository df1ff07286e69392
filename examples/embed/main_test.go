package main

import (
	"errors"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/internal/exampletest"
	"go.uber.org/goleak"
)

var clearEnv = []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"}

// TestGatePasses runs the example as `go run ./examples/embed` does, with
// fewer and shorter requests and SLAs no loaded machine can miss (the gate's
// verdict, not the machine's speed, is under test): against the embedded
// emulator, it prints the summary and a passing verdict per SLA, and saves
// a result that reads back with the same requests.
func TestGatePasses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "result.json")
	out := exampletest.Run(t, run, clearEnv, "-requests", "6", "-concurrency", "3", "-max-tokens", "4", "-out", path,
		"-sla", "ttft p95 1m starts=warm", "-sla", "e2e p95 5m")
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^llama-3-8b\s+6\s+0\s`),
		regexp.MustCompile(`(?m)^gate: ttft p95 1m0s starts=warm endpoint=llama-3-8b: PASS \(measured [0-9.]+m?s over [1-6] requests\)$`),
		regexp.MustCompile(`(?m)^gate: e2e p95 5m0s endpoint=llama-3-8b: PASS \(measured [0-9.]+m?s over 6 requests\)$`),
	} {
		if !re.MatchString(out) {
			t.Errorf("the output has no line matching %s:\n%s", re, out)
		}
	}
	res, err := bench.ReadResult(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Targets) != 1 || res.Targets[0].Counts().Requests != 6 {
		t.Errorf("the saved result holds %d targets, want 1 with 6 requests", len(res.Targets))
	}
}

// TestGateFails: an SLA the endpoint cannot meet makes the program fail
// with errSLAFailed (exit status 1), after the verdict lines.
func TestGateFails(t *testing.T) {
	out, err := exampletest.RunErr(t, run, clearEnv, "-requests", "3", "-max-tokens", "4",
		"-sla", "ttft p50 1ms", "-sla", "e2e p95 60s")
	if !errors.Is(err, errSLAFailed) {
		t.Fatalf("err = %v, want errSLAFailed; output:\n%s", err, out)
	}
	if err.Error() != "an SLA failed: 1 of 2" {
		t.Errorf("err = %q", err)
	}
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^gate: ttft p50 1ms endpoint=llama-3-8b: FAIL `),
		regexp.MustCompile(`(?m)^gate: e2e p95 1m0s endpoint=llama-3-8b: PASS `),
	} {
		if !re.MatchString(out) {
			t.Errorf("the output has no line matching %s:\n%s", re, out)
		}
	}
}

// TestBadSLAFlag: an SLA that does not parse is refused as the flag is
// read (flag.PanicOnError in tests; exit status 2 from the command).
func TestBadSLAFlag(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a bad -sla was accepted")
		}
	}()
	_, _ = exampletest.RunErr(t, run, clearEnv, "-sla", "ttft p200 1ms")
	t.Error("run returned")
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
