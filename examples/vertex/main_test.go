package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/cloudinfer/cloudinfer/internal/exampletest"
)

// TestRunsOnTheEmbeddedEmulator runs the example as `go run ./examples/vertex`
// does with no settings: against the embedded emulator, streaming, and
// printing the outcome and the latency figures.
func TestRunsOnTheEmbeddedEmulator(t *testing.T) {
	exampletest.RunOnEmulator(t, run, "GOOGLE_CLOUD_LOCATION", "GOOGLE_CLOUD_PROJECT", "VERTEX_ENDPOINT", "VERTEX_MODEL")
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
