package main

import (
	"regexp"
	"testing"

	"github.com/cloudinfer/cloudinfer/internal/exampletest"
)

// TestRunsOnTheEmbeddedEmulator runs the example as `go run ./examples/sagemaker`
// does with no settings: against the embedded emulator, streaming, and
// printing the outcome and the latency figures.
func TestRunsOnTheEmbeddedEmulator(t *testing.T) {
	out := exampletest.Run(t, run, []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ACCESS_KEY_ID"}, "-max-tokens", "8")
	for _, want := range []string{
		`(?m)^finish=(stop|length) usage: in=[1-9][0-9]* out=[1-8] \(server\) start=(warm|cold)`,
		`(?m)^attempts=1 ttft=[0-9.]+[µm]?s tpot=[0-9.]+[µm]?s e2e=[0-9.]+[µm]?s`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("the output has no line matching %s:\n%s", want, out)
		}
	}
}
