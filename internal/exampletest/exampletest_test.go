package exampletest

import (
	"flag"
	"fmt"
	"testing"

	"go.uber.org/goleak"
)

// TestRunTwice: a program that defines its flags on flag.CommandLine can
// be run more than once in a process (go test -count=2), each run seeing
// only its own command line.
func TestRunTwice(t *testing.T) {
	run := func() error {
		n := flag.Int("n", 1, "a number")
		flag.Parse()
		fmt.Printf("n=%d args=%v\n", *n, flag.Args())
		return nil
	}
	if out := Run(t, run, nil, "-n", "2"); out != "n=2 args=[]\n" {
		t.Errorf("first run printed %q", out)
	}
	if out := Run(t, run, nil, "x"); out != "n=1 args=[x]\n" {
		t.Errorf("second run printed %q", out)
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
