package sagemaker_test

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/providers/sagemaker"
)

// ExampleNewAsync runs asynchronous inference: the call submits the body
// with InvokeEndpointAsync, waits for the result in S3 and returns it.
// Here the endpoint and S3 are the local emulator's; against AWS, leave out
// BaseEndpoint, Credentials, AllowInsecureHTTP and S3Endpoint.
func ExampleNewAsync() {
	ctx := context.Background()
	emu, err := emulator.New(emulator.Options{TimeScale: 0.001, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	if err := emu.Start("127.0.0.1:0", ""); err != nil {
		log.Fatal(err)
	}
	defer emu.Close()

	ad, err := sagemaker.NewAsync(ctx, sagemaker.Options{
		Region:            "us-east-1",
		Credentials:       credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "example-secret", ""),
		BaseEndpoint:      emu.URL(),
		AllowInsecureHTTP: true,
	}, sagemaker.AsyncOptions{
		S3Endpoint: emu.URL() + "/s3", // the emulator's S3
		Wait:       sagemaker.WaitOptions{PollInterval: 10 * time.Millisecond},
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
		Provider: cloudreq.ProviderAWS, Service: sagemaker.ServiceAsync, Action: cloudreq.ActionGenerate,
		Target:     cloudreq.Target{Endpoint: "llama-3-8b"},
		Attributes: cloudreq.Attributes{InferenceID: "example-1"},
		Generate:   &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "Say hello."}}, MaxTokens: 16},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Text != "", resp.Metadata[sagemaker.HeaderOutputLocation])
	fmt.Println(strings.HasSuffix(resp.Metadata[sagemaker.HeaderFailureLocation], "example-1-error.out"))
	// Output:
	// true s3://cloudinfer-emulator/async-output/llama-3-8b/example-1.out
	// true
}
