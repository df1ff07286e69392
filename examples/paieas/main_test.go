package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/cloudinfer/cloudinfer/internal/exampletest"
)

// TestRunsOnTheEmbeddedEmulator runs the example as `go run ./examples/paieas`
// does with no settings: against the embedded emulator, streaming, and
// printing the outcome and the latency figures.
func TestRunsOnTheEmbeddedEmulator(t *testing.T) {
	exampletest.RunOnEmulator(t, run, "EAS_ENDPOINT", "EAS_MODEL", "EAS_SERVICE", "EAS_TOKEN")
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
