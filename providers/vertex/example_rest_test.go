package vertex_test

import (
	"context"
	"fmt"
	"log"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/providers/vertex"
)

// startEmulator starts a local emulator for the examples.
func startEmulator() *emulator.Server {
	emu, err := emulator.New(emulator.Options{TimeScale: 0.001, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	if err := emu.Start("127.0.0.1:0", "127.0.0.1:0"); err != nil {
		log.Fatal(err)
	}
	return emu
}

// restClient returns a client over a REST adapter. Against Vertex AI,
// leave Endpoint and Insecure out: the adapter sends to
// https://LOCATION-aiplatform.googleapis.com with Application Default
// Credentials' tokens.
func restClient(ctx context.Context, emu *emulator.Server) *cloudreq.Client {
	ad, err := vertex.New(ctx, vertex.Options{
		Project: "my-project", Location: "us-central1", Transport: vertex.TransportREST,
		Endpoint: emu.URL(), Insecure: true, // the emulator, for this example
	})
	if err != nil {
		log.Fatal(err)
	}
	client, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}})
	if err != nil {
		log.Fatal(err)
	}
	return client
}

// Example_rest sends generateContent, then streamGenerateContent?alt=sse,
// over REST: JSON over HTTPS, for networks that let no gRPC through.
func Example_rest() {
	emu := startEmulator()
	defer emu.Close()
	ctx := context.Background()
	client := restClient(ctx, emu)
	defer client.Close()

	req := &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderGCP, Action: cloudreq.ActionGenerate,
		Target:   cloudreq.Target{Endpoint: "llama-3-8b"},
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "Say hello."}}, MaxTokens: 8},
	}
	resp, err := client.Invoke(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("generateContent:", resp.Usage.OutputTokens, "tokens")

	s, err := client.Stream(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	n := 0
	for s.Next() {
		n++
	}
	if err := s.Err(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("streamGenerateContent:", n, "chunks")
	// Output:
	// generateContent: 8 tokens
	// streamGenerateContent: 8 chunks
}

// Example_restPredict sends predict, then rawPredict (a body that is not
// {"instances":…}), over REST.
func Example_restPredict() {
	emu := startEmulator()
	defer emu.Close()
	ctx := context.Background()
	client := restClient(ctx, emu)
	defer client.Close()

	for _, body := range []string{
		`{"instances":[{"prompt":"Say hello."}],"parameters":{"max_tokens":8}}`,
		`{"model":"llama-3-8b","messages":[{"role":"user","content":"Say hello."}],"max_tokens":8}`,
	} {
		resp, err := client.Invoke(ctx, &cloudreq.CloudRequest{
			Provider: cloudreq.ProviderGCP, Action: cloudreq.ActionInvoke,
			Target:  cloudreq.Target{Endpoint: "llama-3-8b"},
			Payload: cloudreq.Payload{Body: []byte(body), ContentType: "application/json"},
		})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(resp.StatusCode, resp.Text != "")
	}
	// Output:
	// 200 true
	// 200 true
}

// Example_serverStreamingPredict streams serverStreamingPredict, over gRPC
// here (Transport: vertex.TransportREST takes the same request): the body
// is a StreamingPredictRequest's JSON, each chunk one
// StreamingPredictResponse.
func Example_serverStreamingPredict() {
	emu := startEmulator()
	defer emu.Close()
	ctx := context.Background()
	ad, err := vertex.New(ctx, vertex.Options{Project: "my-project", Location: "us-central1",
		Endpoint: emu.GRPCAddr(), Insecure: true})
	if err != nil {
		log.Fatal(err)
	}
	client, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	s, err := client.Stream(ctx, &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderGCP, Action: cloudreq.ActionInvoke,
		Target:     cloudreq.Target{Endpoint: "llama-3-8b"},
		Attributes: cloudreq.Attributes{Method: vertex.MethodServerStreamingPredict},
		Payload: cloudreq.Payload{Body: []byte(`{"inputs":[{"structVal":{"prompt":{"stringVal":["Say hello."]}}}],` +
			`"parameters":{"structVal":{"maxOutputTokens":{"intVal":[5]}}}}`)},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	n := 0
	for s.Next() {
		if s.Chunk().Text != "" {
			n++
		}
	}
	if err := s.Err(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(n, "chunks")
	// Output: 5 chunks
}
