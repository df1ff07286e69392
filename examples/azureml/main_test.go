package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/cloudinfer/cloudinfer/internal/exampletest"
)

// TestRunsOnTheEmbeddedEmulator runs the example as `go run ./examples/azureml`
// does with no settings: against the embedded emulator, streaming, and
// printing the outcome and the latency figures.
func TestRunsOnTheEmbeddedEmulator(t *testing.T) {
	exampletest.RunOnEmulator(t, run, "AZUREML_API", "AZUREML_DEPLOYMENT", "AZUREML_ENDPOINT", "AZUREML_KEY", "AZUREML_REGION", "AZUREML_TOKEN")
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
