package cloudinfer_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/hooks"
	"github.com/cloudinfer/cloudinfer/providers/openai"
)

// Example is the README's quick start, run against the embedded emulator.
func Example() {
	// A local emulator stands in for a vLLM server (time scale 0.01: fast).
	srv, err := emulator.New(emulator.Options{TimeScale: 0.01, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start("127.0.0.1:0", ""); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	adapter, err := openai.New(openai.Options{BaseURL: srv.URL(), AllowInsecureHTTP: true})
	if err != nil {
		log.Fatal(err)
	}
	client, err := cloudreq.New(cloudreq.Options{
		Adapters:    []cloudreq.Adapter{adapter},
		CallOptions: cloudreq.CallOptions{Hooks: hooks.Default()}, // 6 MB payload limit, request ids
	})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	ctx := context.Background()
	resp, err := client.Invoke(ctx, &cloudreq.CloudRequest{
		// Service may be left out: the client fills it from the Provider's adapter.
		Provider: cloudreq.ProviderOpenAI, Action: cloudreq.ActionGenerate,
		Target: cloudreq.Target{Model: "llama-3-8b"},
		Generate: &cloudreq.GenerateInput{
			Messages:  []cloudreq.Message{{Role: "user", Content: "Say hello."}},
			MaxTokens: 32,
		},
	})
	switch {
	case errors.Is(err, errcodes.Throttled): // the same code whatever the cloud said
		log.Fatal("throttled: back off")
	case err != nil:
		log.Fatal(err)
	}
	fmt.Println(resp.Text != "", resp.Usage.OutputTokens > 0, resp.Start.Kind)
	// Output: true true warm
}
