// Command cloudinfer is the cloudinfer CLI.
//
//	cloudinfer bench     run a latency benchmark (default: the embedded emulator)
//	cloudinfer emulate   serve every provider's wire protocol locally
//	cloudinfer invoke    send one request and print the response and its timing
//	cloudinfer report    render, compare or merge saved benchmark results
package main

import (
	"os"

	"github.com/alecthomas/kong"
)

// cli is the command line; each command lives in its own file.
type cli struct {
	Bench   benchCmd   `cmd:"" help:"Run a latency benchmark (with no flags: the reference experiment on the embedded emulator)."`
	Emulate emulateCmd `cmd:"" help:"Serve SageMaker, Azure ML, Vertex AI, PAI-EAS and OpenAI-compatible protocols locally."`
	Invoke  invokeCmd  `cmd:"" help:"Send one request and print the response, its timing and its start verdict."`
	Report  reportCmd  `cmd:"" help:"Render, compare or merge saved benchmark results."`
}

func main() {
	var c cli
	k := kong.Parse(&c,
		kong.Name("cloudinfer"),
		kong.Description("One Go API and CLI for model inference on SageMaker, Azure ML, Vertex AI, PAI-EAS and OpenAI-compatible servers."),
		kong.UsageOnError(),
	)
	if err := k.Run(); err != nil {
		k.Errorf("%v", err)
		os.Exit(1)
	}
}
