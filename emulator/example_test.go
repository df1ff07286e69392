package emulator_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/cloudinfer/cloudinfer/emulator"
)

// A test starts the emulator on free loopback ports, sends one
// OpenAI-compatible request, and reads what was injected.
func Example() {
	srv, err := emulator.New(emulator.Options{TimeScale: 0.001, Seed: 1})
	if err != nil {
		panic(err)
	}
	if err := srv.Start("127.0.0.1:0", ""); err != nil {
		panic(err)
	}
	defer srv.Close()

	body := `{"model":"phi-3-mini","max_tokens":4,"messages":[{"role":"user","content":"Hello"}]}`
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL()+"/v1/chat/completions", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get(emulator.HeaderOutputTokens), resp.Header.Get(emulator.HeaderColdStart))
	// Output: 200 4 false
}

// Quickstarts tell how to reach each provider's protocol.
func ExampleServer_Quickstarts() {
	srv, err := emulator.New(emulator.Options{})
	if err != nil {
		panic(err)
	}
	if err := srv.Start("127.0.0.1:0", "127.0.0.1:0"); err != nil {
		panic(err)
	}
	defer srv.Close()
	for _, q := range srv.Quickstarts() {
		fmt.Println(q.Provider, strings.HasPrefix(q.Curl, "curl "))
	}
	// Output:
	// sagemaker true
	// azureml true
	// vertex true
	// pai-eas true
	// openai true
}

// A configuration file defines endpoints, profiles and credentials.
func ExampleParseConfig() {
	opts, err := emulator.ParseConfig([]byte(`
endpoints:
  - name: eas-llama
    providers: [pai-eas]
    profile: {base: llama-3-8b, slots: 5, max_queue: 64}
    credentials: {keys: [my-token]}
`))
	if err != nil {
		panic(err)
	}
	e := opts.Endpoints[0]
	fmt.Println(e.Name, e.Providers, e.Profile.Slots, e.Profile.MaxQueue, e.Profile.TTFTMs.Mean)
	// Output: eas-llama [pai-eas] 5 64 428
}
