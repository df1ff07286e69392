package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestStartMemProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mem.prof")
	stop, err := startMemProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Fatalf("before stop: %v, %v: want an empty file", fi, err)
	}
	stop()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A pprof profile is gzipped protocol buffers.
	if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		t.Fatalf("profile starts %x, want gzip", b[:min(len(b), 4)])
	}
	if _, err := startMemProfile(filepath.Join(t.TempDir(), "no", "such", "dir", "mem.prof")); err == nil {
		t.Fatal("a file that cannot be made: no error")
	}
}
