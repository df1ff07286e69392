package sagemaker_test

import (
	"context"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/providers/sagemaker"
)

// ExampleNewOpenAI calls an endpoint's OpenAI-compatible chat completions
// route with bearer tokens minted from AWS credentials (and minted again
// before they expire). Here the endpoint is the local emulator's, which
// checks each token's signature against the keys it is configured with;
// against AWS give only the Region (or nothing: the AWS configuration's),
// and the credentials need sagemaker:CallWithBearerToken and
// sagemaker:InvokeEndpoint.
func ExampleNewOpenAI() {
	eps := emulator.DefaultEndpoints()
	for i := range eps {
		eps[i].Credentials.AWSAccessKeyID, eps[i].Credentials.AWSSecretAccessKey = "AKIDEXAMPLE", "example-secret"
	}
	emu, err := emulator.New(emulator.Options{TimeScale: 0.001, Seed: 1, Endpoints: eps})
	if err != nil {
		log.Fatal(err)
	}
	if err := emu.Start("127.0.0.1:0", ""); err != nil {
		log.Fatal(err)
	}
	defer emu.Close()

	ctx := context.Background()
	ad, err := sagemaker.NewOpenAI(ctx, sagemaker.OpenAIOptions{
		Region:            "us-east-1",
		Credentials:       credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "example-secret", ""),
		BaseURL:           emu.URL(),
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
	resp, err := client.Invoke(ctx, &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderAWS, Service: sagemaker.ServiceOpenAI, Action: cloudreq.ActionGenerate,
		Target:   cloudreq.Target{Endpoint: "llama-3-8b"},
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "Say hello."}}, MaxTokens: 8},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Text != "", resp.Usage.OutputTokens)
	// Output: true 8
}
