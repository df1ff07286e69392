package openai_test

import (
	"context"
	"fmt"
	"log"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/providers/openai"
)

// Stream a chat completion from an OpenAI-compatible server — here the
// cloudinfer emulator, which serves the built-in model "llama-3-8b".
func Example() {
	srv, err := emulator.New(emulator.Options{TimeScale: 0.001, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start("127.0.0.1:0", ""); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	ad, err := openai.New(openai.Options{BaseURL: srv.URL(), APIKey: "local", AllowInsecureHTTP: true})
	if err != nil {
		log.Fatal(err)
	}
	client, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	s, err := client.Stream(context.Background(), &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderOpenAI, Service: cloudreq.ServiceOpenAICompatible,
		Action: cloudreq.ActionGenerate, Target: cloudreq.Target{Model: "llama-3-8b"},
		Generate: &cloudreq.GenerateInput{
			Messages:  []cloudreq.Message{{Role: "user", Content: "Say hello."}},
			MaxTokens: 8,
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	content := 0
	for s.Next() {
		if s.Chunk().Content {
			content++
		}
	}
	if err := s.Err(); err != nil {
		log.Fatal(err)
	}
	resp := s.Response()
	fmt.Println("content chunks == output tokens:", content == resp.Usage.OutputTokens, "; usage from:", resp.Usage.Source)
	// Output: content chunks == output tokens: true ; usage from: server
}
