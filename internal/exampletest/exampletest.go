// Package exampletest runs the programs under examples/ in their own
// tests: the run function a program's main calls, with the given command
// line, its standard output captured.
package exampletest

import (
	"bytes"
	"flag"
	"io"
	"os"
	"regexp"
	"sync"
	"testing"
)

// Run calls run with os.Args set to the program name and args and a fresh
// flag.CommandLine (so that the program's flags can be defined again, as
// go test -count=2 does), and returns what it wrote to standard output. A
// bad flag panics rather than exiting the test binary. Environment
// variables in clear are set empty for the test, so that a setting of the
// machine (a real endpoint, a key) does not send the program elsewhere
// than the embedded emulator. Run fails the test if run returns an error.
// It changes process-wide state (os.Args, os.Stdout, flag.CommandLine):
// call it from one test at a time, never in parallel.
func Run(t *testing.T, run func() error, clear []string, args ...string) string {
	t.Helper()
	out, err := RunErr(t, run, clear, args...)
	if err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out)
	}
	return out
}

// RunErr is Run for a program whose failure is what the test checks: it
// returns run's error beside the output instead of failing the test. A
// panic in run (a bad flag) goes on to the caller once the process-wide
// state is restored and the output's copy has ended.
func RunErr(t *testing.T, run func() error, clear []string, args ...string) (string, error) {
	t.Helper()
	for _, k := range clear {
		t.Setenv(k, "")
	}
	oldArgs, oldOut, oldFlags := os.Args, os.Stdout, flag.CommandLine
	defer func() { os.Args, os.Stdout, flag.CommandLine = oldArgs, oldOut, oldFlags }()
	os.Args = append([]string{"example"}, args...)
	flag.CommandLine = flag.NewFlagSet(os.Args[0], flag.PanicOnError)
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
	var once sync.Once
	finish := func() {
		once.Do(func() {
			_ = w.Close()
			<-copied
			_ = r.Close()
		})
	}
	defer finish() // a run that panics (a bad flag) ends the copy too
	rerr := run()
	finish()
	return out.String(), rerr
}

// reportLines are the lines every example prints for a streamed response
// of at most 8 tokens: the outcome with the server's usage and its start
// verdict, on the embedded emulator's own report (which the example's
// client reads with emulator.StartReport), and the latency figures of its
// one attempt.
var reportLines = []*regexp.Regexp{
	regexp.MustCompile(`(?m)^finish=(stop|length) usage: in=[1-9][0-9]* out=[1-8] \(server\) start=(warm|cold) \(server-reported\)`),
	regexp.MustCompile(`(?m)^attempts=1 ttft=[0-9.]+[µm]?s tpot=[0-9.]+[µm]?s e2e=[0-9.]+[µm]?s`),
}

// RunOnEmulator runs an example as `go run` does with no settings but
// "-max-tokens 8": against the embedded emulator, streaming. It fails the
// test unless the output has the outcome and latency lines every example
// prints. clear names the environment variables that would point the
// example elsewhere.
func RunOnEmulator(t *testing.T, run func() error, clear ...string) {
	t.Helper()
	out := Run(t, run, clear, "-max-tokens", "8")
	for _, re := range reportLines {
		if !re.MatchString(out) {
			t.Errorf("the output has no line matching %s:\n%s", re, out)
		}
	}
}
