package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/emulator"
)

// TestEmulatorTarget: the emulator's start report is read for the
// embedded emulator and for servers on this machine (a cloudinfer emulate
// running apart), never for a cloud or another host.
func TestEmulatorTarget(t *testing.T) {
	embedded := &environment{emu: &emulator.Server{}}
	alone := &environment{}
	tests := []struct {
		env  *environment
		t    bench.Target
		want bool
	}{
		{embedded, bench.Target{Provider: "openai", Model: "m"}, true},
		{embedded, bench.Target{Provider: "gcp", Endpoint: "e"}, true},
		{alone, bench.Target{Provider: "openai", Model: "m"}, false},
		{alone, bench.Target{Provider: "openai", URL: "http://127.0.0.1:8080"}, true},
		{alone, bench.Target{Provider: "aws", Endpoint: "e", URL: "http://localhost:8080"}, true},
		{alone, bench.Target{Provider: "alibaba", Endpoint: "http://[::1]:8080/api/predict/svc"}, true},
		{embedded, bench.Target{Provider: "openai", URL: "https://api.example.com/v1"}, false},
		{alone, bench.Target{Provider: "openai", URL: "http://192.0.2.1:8000"}, false},
		{alone, bench.Target{Provider: "azure", Endpoint: "https://ep.eastus.inference.ml.azure.com/score"}, false},
		{alone, bench.Target{Provider: "gcp", Endpoint: "e", GRPCAddr: "127.0.0.1:8081"}, true},
		{alone, bench.Target{Provider: "gcp", Endpoint: "e", GRPCAddr: "us-central1-aiplatform.googleapis.com:443"}, false},
		{alone, bench.Target{Provider: "gcp", Endpoint: "e", URL: "http://127.0.0.1:8080"}, false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.env.emulatorTarget(&tt.t), "%+v (embedded: %v)", tt.t, tt.env.emu != nil)
	}
}
