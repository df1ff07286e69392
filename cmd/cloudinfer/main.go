// Command cloudinfer is the cloudinfer CLI.
//
//	cloudinfer bench     run a latency benchmark (default: the embedded emulator)
//	cloudinfer emulate   serve every provider's wire protocol locally
//	cloudinfer invoke    send one request and print the response and its timing
//	cloudinfer report    render, compare or merge saved benchmark results
//	cloudinfer k8s       render the Kubernetes manifests of a benchmark on N workers
//	cloudinfer version   print the build's version, revision and Go version
//
// It exits 0 on success, 1 when a command fails (for bench, also a result
// that fails a --fail-on gate; failed requests and SLAs alone are results)
// and 2 on a usage error (an unknown flag, a value that names nothing the
// command knows or does not parse, flags that do not go together; for
// report, the wrong number of files), after the short usage line and the
// error; --help prints the full help.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/alecthomas/kong"
)

// cli is the command line; each command lives in its own file.
type cli struct {
	Bench   benchCmd   `cmd:"" help:"Run a latency benchmark (with no flags: the reference experiment on the embedded emulator)."`
	Emulate emulateCmd `cmd:"" help:"Serve SageMaker, Azure ML, Vertex AI, PAI-EAS and OpenAI-compatible protocols locally."`
	Invoke  invokeCmd  `cmd:"" help:"Send one request and print the response, its timing and its start verdict."`
	Report  reportCmd  `cmd:"" help:"Render, compare or merge saved benchmark results."`
	K8s     k8sCmd     `cmd:"" name:"k8s" help:"Run a benchmark on a Kubernetes cluster: render its manifests (an Indexed Job of workers, the merge of their results)."`
	Version versionCmd `cmd:"" help:"Print the build's version, source revision and Go version."`
}

// Exit statuses.
const (
	exitFailed = 1 // a command failed
	exitUsage  = 2 // the command line is wrong
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run parses args, runs the command and returns the exit status. --help
// exits 0 from inside kong, as it always has.
func run(args []string, stdout, stderr io.Writer) int {
	var c cli
	p, err := kong.New(&c,
		kong.Name("cloudinfer"),
		kong.Description("One Go API and CLI for model inference on SageMaker, Azure ML, Vertex AI, PAI-EAS and OpenAI-compatible servers."),
		kong.Writers(stdout, stderr),
	)
	if err != nil { // the command line's own definition is wrong
		fmt.Fprintf(stderr, "cloudinfer: %v\n", err)
		return exitFailed
	}
	k, err := p.Parse(args)
	if err != nil {
		if pe := (*kong.ParseError)(nil); errors.As(err, &pe) && pe.Context != nil {
			pe.Context.Stdout = stderr // the usage goes with the error
			_ = kong.DefaultShortHelpPrinter(kong.HelpOptions{}, pe.Context)
		}
		fmt.Fprintf(stderr, "cloudinfer: error: %v\n", err)
		return exitUsage
	}
	if err := k.Run(); err != nil {
		if ue := (usageError{}); errors.As(err, &ue) { // found by the command, not by kong
			k.Stdout = stderr
			_ = kong.DefaultShortHelpPrinter(kong.HelpOptions{}, k)
			fmt.Fprintf(stderr, "cloudinfer: error: %v\n", err)
			return exitUsage
		}
		fmt.Fprintf(stderr, "cloudinfer: error: %v\n", err)
		return exitFailed
	}
	return 0
}

// usageError is a command's error about the shape of its command line (how
// many arguments, which flags together): run exits with exitUsage after the
// short usage, as for kong's own parse errors.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }
