package paieas_test

import (
	"context"
	"fmt"
	"log"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/providers/paieas"
)

// Generate text with an LLM service on PAI-EAS — here the cloudinfer
// emulator's built-in "llama-3-8b" service, on its OpenAI-compatible
// sub-path (the default dialect).
func Example() {
	srv, err := emulator.New(emulator.Options{TimeScale: 0.001, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start("127.0.0.1:0", ""); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	ad, err := paieas.New(paieas.Options{Endpoint: srv.URL(), Token: "local-token", AllowInsecureHTTP: true})
	if err != nil {
		log.Fatal(err)
	}
	client, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	resp, err := client.Invoke(context.Background(), &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderAlibaba, Action: cloudreq.ActionGenerate,
		Target: cloudreq.Target{Endpoint: "llama-3-8b"},
		Generate: &cloudreq.GenerateInput{
			Messages:  []cloudreq.Message{{Role: "user", Content: "Say hello."}},
			MaxTokens: 8,
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("text:", resp.Text != "", "finish:", resp.FinishReason != "", "usage from:", resp.Usage.Source)
	// Output: text: true finish: true usage from: server
}
