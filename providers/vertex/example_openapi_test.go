package vertex_test

import (
	"context"
	"fmt"
	"log"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/providers/vertex"
)

// ExampleNewOpenAPI calls Vertex AI's OpenAI-compatible chat completions.
// Here it is the emulator's route, with no token; against Vertex AI give
// Project and Location instead of BaseURL and leave Anonymous and
// AllowInsecureHTTP out: Application Default Credentials' tokens are sent,
// refreshed as they expire.
func ExampleNewOpenAPI() {
	emu, err := emulator.New(emulator.Options{TimeScale: 0.001, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	if err := emu.Start("127.0.0.1:0", ""); err != nil {
		log.Fatal(err)
	}
	defer emu.Close()

	ctx := context.Background()
	ad, err := vertex.NewOpenAPI(ctx, vertex.OpenAPIOptions{
		BaseURL:   emu.URL() + "/v1/projects/my-project/locations/us-central1/endpoints/openapi",
		Anonymous: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	client, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	resp, err := client.Invoke(ctx, &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderGCP, Service: vertex.ServiceOpenAPI, Action: cloudreq.ActionGenerate,
		Target:   cloudreq.Target{Model: "llama-3-8b"},
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "Say hello."}}, MaxTokens: 8},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Text != "", resp.Usage.OutputTokens)
	// Output: true 8
}
