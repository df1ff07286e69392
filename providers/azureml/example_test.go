package azureml_test

import (
	"context"
	"fmt"
	"log"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/providers/azureml"
)

// Generate text with an Azure ML online endpoint's /score route — here the
// cloudinfer emulator's built-in "llama-3-8b" endpoint, with an endpoint
// key. Against Azure, set Region (or a full scoring URI as
// Target.Endpoint) and leave AllowInsecureHTTP off.
func Example() {
	srv, err := emulator.New(emulator.Options{TimeScale: 0.001, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start("127.0.0.1:0", ""); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	ad, err := azureml.New(azureml.Options{
		EndpointURL:       srv.URL() + "/azureml/{endpoint}",
		Key:               "local-key",
		AllowInsecureHTTP: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	client, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	resp, err := client.Invoke(context.Background(), &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderAzure, Action: cloudreq.ActionGenerate,
		Target: cloudreq.Target{Endpoint: "llama-3-8b"},
		Generate: &cloudreq.GenerateInput{
			Messages:  []cloudreq.Message{{Role: "user", Content: "Say hello."}},
			MaxTokens: 8,
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("text:", resp.Text != "", "status:", resp.StatusCode)
	// Output: text: true status: 200
}
