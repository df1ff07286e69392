package vertex_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"

	"github.com/googleapis/gax-go/v2/apierror"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/providers/vertex"
)

// Example streams a generateContent call from Vertex AI, here the local
// emulator's gRPC listener, then shows the portable view of an error.
// Against real Vertex AI, leave out Endpoint and Insecure: the adapter
// dials {Location}-aiplatform.googleapis.com with Application Default
// Credentials.
func Example() {
	ctx := context.Background()
	emu, err := emulator.New(emulator.Options{TimeScale: 0.001, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	if err := emu.Start("127.0.0.1:0", "127.0.0.1:0"); err != nil {
		log.Fatal(err)
	}
	defer emu.Close()

	ad, err := vertex.New(ctx, vertex.Options{
		Project:  "my-project",
		Location: "us-central1",
		Endpoint: emu.GRPCAddr(),
		Insecure: true, // the emulator speaks plain-text gRPC
	})
	if err != nil {
		log.Fatal(err)
	}
	client, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close() // closes the adapter too

	req := &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderGCP, Action: cloudreq.ActionGenerate,
		Target:   cloudreq.Target{Endpoint: "llama-3-8b"}, // completed to projects/my-project/locations/us-central1/endpoints/llama-3-8b
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "Say hello."}}, MaxTokens: 16},
	}
	s, err := client.Stream(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	text := ""
	for s.Next() {
		text += s.Chunk().Text
	}
	if err := s.Err(); err != nil {
		log.Fatal(err)
	}
	resp := s.Response()
	fmt.Println(text != "", resp.FinishReason != "", resp.Usage.OutputTokens > 0, resp.Usage.Source)

	req.Header = http.Header{"X-Emulator-Inject": {"quota"}}
	_, err = client.Invoke(ctx, req, func(o *cloudreq.CallOptions) { o.Retry.MaxAttempts = 1 })
	var e *errcodes.Error
	var ae *apierror.APIError
	if errors.As(err, &e) && errors.As(err, &ae) {
		fmt.Println(e.Code, e.ProviderCode, e.HTTPStatus, e.Details["reason"], ae.GRPCStatus().Code())
	}
	// Output:
	// true true true server
	// ERR_QUOTA_EXCEEDED RESOURCE_EXHAUSTED 429 QUOTA_EXCEEDED ResourceExhausted
}
