package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/cloudinfer/cloudinfer/internal/exampletest"
)

// TestRunsOnTheEmbeddedEmulator runs the example as `go run ./examples/sagemaker`
// does with no settings: against the embedded emulator, streaming, and
// printing the outcome and the latency figures.
func TestRunsOnTheEmbeddedEmulator(t *testing.T) {
	exampletest.RunOnEmulator(t, run, "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ACCESS_KEY_ID")
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
