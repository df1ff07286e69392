package exampletest

import (
	"flag"
	"fmt"
	"os"
	"runtime/debug"
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

// TestPanicEndsTheCopy: a program that panics (a bad flag under
// flag.PanicOnError) leaves no goroutine copying its output behind, and
// standard output restored. The garbage collector is off, so that no
// finalizer closes the pipe in the test's stead.
func TestPanicEndsTheCopy(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	stdout := os.Stdout
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not reach the caller")
			}
		}()
		_, _ = RunErr(t, func() error {
			fmt.Println("partial")
			panic("bad flag")
		}, nil)
	}()
	if os.Stdout != stdout {
		t.Error("standard output not restored")
	}
	goleak.VerifyNone(t)
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
