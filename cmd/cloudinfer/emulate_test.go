package main

import (
	"bytes"
	"context"
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
	cmd := &emulateCmd{Addr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0", TimeScale: 0.01, Seed: 3}
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
