package sagemaker_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/providers/sagemaker"
)

// Example generates text on a SageMaker endpoint, here the local emulator's,
// then shows the portable view of an error. Against a real endpoint, leave
// out BaseEndpoint, Credentials and AllowInsecureHTTP: the default AWS
// configuration is used.
func Example() {
	ctx := context.Background()
	emu, err := emulator.New(emulator.Options{TimeScale: 0.001, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	if err := emu.Start("127.0.0.1:0", ""); err != nil {
		log.Fatal(err)
	}
	defer emu.Close()

	ad, err := sagemaker.New(ctx, sagemaker.Options{
		Region:            "us-east-1",
		Credentials:       credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "example-secret", ""),
		BaseEndpoint:      emu.URL(),
		AllowInsecureHTTP: true, // the emulator speaks plain http
		Dialect:           sagemaker.DialectMessages,
	})
	if err != nil {
		log.Fatal(err)
	}
	client, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	req := &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderAWS, Action: cloudreq.ActionGenerate,
		Target:   cloudreq.Target{Endpoint: "llama-3-8b"},
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "Say hello."}}, MaxTokens: 16},
	}
	resp, err := client.Invoke(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.StatusCode, resp.Text != "", resp.Usage.OutputTokens > 0)

	req.Target.Endpoint = "no-such-endpoint"
	_, err = client.Invoke(ctx, req)
	var e *errcodes.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code, e.ProviderCode, e.HTTPStatus, errors.Is(err, errcodes.NotFound))
	}
	// Output:
	// 200 true true
	// ERR_NOT_FOUND ValidationError 400 true
}
