package vertex_test

import (
	"context"
	"fmt"
	"log"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/providers/vertex"
)

// Example_dedicatedEndpoint calls an endpoint through its dedicated DNS
// name. Here Endpoint redirects the dial to the local emulator; against
// Vertex AI, leave Endpoint and Insecure out: the adapter dials the
// dedicated name on port 443 with Application Default Credentials.
func Example_dedicatedEndpoint() {
	emu, err := emulator.New(emulator.Options{TimeScale: 0.001, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	if err := emu.Start("127.0.0.1:0", "127.0.0.1:0"); err != nil {
		log.Fatal(err)
	}
	defer emu.Close()

	ctx := context.Background()
	ad, err := vertex.New(ctx, vertex.Options{
		Project: "my-project", Location: "us-central1",
		DedicatedEndpoint: "1234567890.us-central1-987654321.prediction.vertexai.goog",
		Endpoint:          emu.GRPCAddr(), Insecure: true, // the emulator, for this example
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
		Provider: cloudreq.ProviderGCP, Action: cloudreq.ActionGenerate,
		Target:   cloudreq.Target{Endpoint: "llama-3-8b"},
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "Say hello."}}, MaxTokens: 8},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Text != "")
	// Output: true
}
