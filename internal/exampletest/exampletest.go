// Package exampletest runs the programs under examples/ in their own
// tests: the run function a program's main calls, with the given command
// line, its standard output captured.
package exampletest

import (
	"bytes"
	"io"
	"os"
	"testing"
)

// Run calls run with os.Args set to the program name and args, and
// returns what it wrote to standard output. Environment variables in
// clear are set empty for the test, so that a setting of the machine
// (a real endpoint, a key) does not send the program elsewhere than the
// embedded emulator. Run fails the test if run returns an error. It
// changes process-wide state (os.Args, os.Stdout): call it from one test
// at a time, never in parallel.
func Run(t *testing.T, run func() error, clear []string, args ...string) string {
	t.Helper()
	for _, k := range clear {
		t.Setenv(k, "")
	}
	oldArgs, oldOut := os.Args, os.Stdout
	defer func() { os.Args, os.Stdout = oldArgs, oldOut }()
	os.Args = append([]string{"example"}, args...)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout = w
	var out bytes.Buffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(&out, r)
	}()
	rerr := run()
	_ = w.Close()
	<-copied
	_ = r.Close()
	if rerr != nil {
		t.Fatalf("run: %v\noutput:\n%s", rerr, out.String())
	}
	return out.String()
}
