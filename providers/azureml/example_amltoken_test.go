package azureml_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/providers/azureml"
)

// exampleEntra stands in for an azidentity credential (DefaultAzureCredential).
type exampleEntra struct{}

func (exampleEntra) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: "entra-token", ExpiresOn: time.Now().Add(time.Hour)}, nil
}

// ExampleNewEndpointTokenCredential calls a managed online endpoint whose
// auth mode is aml_token with tokens that refresh themselves: each comes
// from Azure Resource Manager's token call, here the emulator's. Against
// Azure, pass an azidentity credential and leave EndpointTokenOptions nil.
func ExampleNewEndpointTokenCredential() {
	eps := emulator.DefaultEndpoints()
	for i := range eps {
		eps[i].Credentials.Keys = []string{"only-issued-tokens-work"}
	}
	emu, err := emulator.New(emulator.Options{TimeScale: 0.001, Seed: 1, Endpoints: eps})
	if err != nil {
		log.Fatal(err)
	}
	if err := emu.Start("127.0.0.1:0", ""); err != nil {
		log.Fatal(err)
	}
	defer emu.Close()

	cred, err := azureml.NewEndpointTokenCredential(exampleEntra{},
		"/subscriptions/SUB/resourceGroups/RG/providers/Microsoft.MachineLearningServices/workspaces/WS/onlineEndpoints/llama-3-8b",
		&azureml.EndpointTokenOptions{ARMEndpoint: emu.URL(), AllowInsecureHTTP: true})
	if err != nil {
		log.Fatal(err)
	}
	ad, err := azureml.New(azureml.Options{EndpointURL: emu.URL() + "/azureml/{endpoint}", Credential: cred, AllowInsecureHTTP: true})
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
		Target:   cloudreq.Target{Endpoint: "llama-3-8b"},
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "Say hello."}}, MaxTokens: 8},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.StatusCode, resp.Text != "")
	// Output: 200 true
}
