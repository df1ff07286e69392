package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for one writer and one reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestEmulatePrintsEveryProvider(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out lockedBuffer
	scale, seed := 0.01, uint64(3)
	cmd := &emulateCmd{Addr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0", TimeScale: &scale, Seed: &seed}
	done := make(chan error, 1)
	go func() { done <- cmd.run(ctx, &out) }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "Press Ctrl-C") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	text := out.String()
	for _, want := range []string{
		"AWS SageMaker Runtime", "Azure ML online endpoint", "Google Vertex AI", "Alibaba Cloud PAI-EAS", "OpenAI-compatible",
		"/endpoints/llama-3-8b/invocations-response-stream", "/azureml/llama-3-8b/score",
		":streamGenerateContent?alt=sse", "/api/predict/llama-3-8b/v1/chat/completions", "/v1/chat/completions",
		"Vertex gRPC:", "shutting down",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if n := strings.Count(text, "curl -s"); n != 5 {
		t.Errorf("%d curl commands, want 5", n)
	}
}

func TestEmulateBadConfig(t *testing.T) {
	cmd := &emulateCmd{Addr: "127.0.0.1:0", Config: "/nonexistent/emulator.yaml"}
	if err := cmd.run(context.Background(), &bytes.Buffer{}); err == nil {
		t.Fatal("want an error for a missing config")
	}
}

// TestEmulateFlagsOverrideTheConfig: a flag given overrides the config
// file's value, zero included; a flag not given leaves it.
func TestEmulateFlagsOverrideTheConfig(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "emu.yaml")
	if err := os.WriteFile(cfg, []byte("time_scale: 0.5\nseed: 7\nspin_waits: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := parse(t, "emulate", "--config", cfg)
	opts, err := c.Emulate.options()
	if err != nil {
		t.Fatal(err)
	}
	if opts.TimeScale != 0.5 || opts.Seed != 7 || opts.SpinWaits != 2 {
		t.Errorf("without flags: time scale %g, seed %d, spin waits %d; want the config's 0.5, 7, 2", opts.TimeScale, opts.Seed, opts.SpinWaits)
	}
	c = parse(t, "emulate", "--config", cfg, "--time-scale", "0", "--seed", "0", "--spin-waits", "0")
	if opts, err = c.Emulate.options(); err != nil {
		t.Fatal(err)
	}
	if opts.TimeScale != 0 || opts.Seed != 0 || opts.SpinWaits != 0 {
		t.Errorf("with zero flags: time scale %g, seed %d, spin waits %d; want 0, 0, 0", opts.TimeScale, opts.Seed, opts.SpinWaits)
	}
}

// TestEmulateClientBounds: the slow-client bounds come from the config's
// read_body_timeout_ms and write_stall_timeout_ms, and the flags win.
func TestEmulateClientBounds(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "emu.yaml")
	if err := os.WriteFile(cfg, []byte("read_body_timeout_ms: 1500\nwrite_stall_timeout_ms: -1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := parse(t, "emulate", "--config", cfg)
	opts, err := c.Emulate.options()
	if err != nil {
		t.Fatal(err)
	}
	if opts.ReadBodyTimeout != 1500*time.Millisecond || opts.WriteStallTimeout >= 0 {
		t.Errorf("from the config: read body %v, write stall %v; want 1.5s and negative (off)", opts.ReadBodyTimeout, opts.WriteStallTimeout)
	}
	c = parse(t, "emulate", "--config", cfg, "--read-body-timeout", "5s", "--write-stall-timeout", "2m")
	if opts, err = c.Emulate.options(); err != nil {
		t.Fatal(err)
	}
	if opts.ReadBodyTimeout != 5*time.Second || opts.WriteStallTimeout != 2*time.Minute {
		t.Errorf("with flags: read body %v, write stall %v; want 5s, 2m0s", opts.ReadBodyTimeout, opts.WriteStallTimeout)
	}
}
