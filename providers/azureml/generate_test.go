package azureml_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/providers/azureml"
)

// TestInputDataRefusals: the model catalog's input_data form refuses what
// it cannot carry, naming itself; serverless chat refuses what the model
// inference API does not define unless extra-parameters passes it.
func TestInputDataRefusals(t *testing.T) {
	in, err := azureml.New(azureml.Options{EndpointURL: "https://{endpoint}.x.inference.ml.azure.com", Key: "k", ScoreDialect: azureml.ScoreInputData})
	require.NoError(t, err)
	chat, err := azureml.New(azureml.Options{EndpointURL: "https://{endpoint}.x.inference.ml.azure.com", Key: "k", API: azureml.APIChat})
	require.NoError(t, err)
	req := func(f func(g *cloudreq.GenerateInput)) *cloudreq.CloudRequest {
		g := &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "hi"}}}
		f(g)
		return &cloudreq.CloudRequest{Provider: "azure", Action: "generate", Target: cloudreq.Target{Endpoint: "e"}, Generate: g}
	}
	for name, f := range map[string]func(g *cloudreq.GenerateInput){
		"tools": func(g *cloudreq.GenerateInput) { g.Tools = []cloudreq.Tool{{Name: "f"}} },
		"json": func(g *cloudreq.GenerateInput) {
			g.ResponseFormat = &cloudreq.ResponseFormat{Type: cloudreq.FormatJSON}
		},
		"n":        func(g *cloudreq.GenerateInput) { g.N = 2 },
		"logprobs": func(g *cloudreq.GenerateInput) { g.Logprobs = true },
		"stop":     func(g *cloudreq.GenerateInput) { g.Stop = []string{"\n"} },
	} {
		_, err := in.Encode(req(f), false)
		assert.ErrorContains(t, err, "azureml /score input_data cannot express", name)
	}
	b, err := in.Encode(req(func(g *cloudreq.GenerateInput) { g.TopK = 5; g.Extra = map[string]any{"x": 1} }), false)
	require.NoError(t, err)
	assert.JSONEq(t, `{"input_data":{"input_string":[{"role":"user","content":"hi"}],"parameters":{"top_k":5}},"x":1}`, string(b.Body))

	_, err = chat.Encode(req(func(g *cloudreq.GenerateInput) { g.N = 2 }), false)
	assert.ErrorContains(t, err, "azureml serverless chat cannot express N > 1")
	r := req(func(g *cloudreq.GenerateInput) { g.N = 2 })
	r.Header = map[string][]string{"Extra-Parameters": {"pass-through"}}
	b, err = chat.Encode(r, false)
	require.NoError(t, err)
	assert.Contains(t, string(b.Body), `"n":2`)
}
