package paieas_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/providers/paieas"
)

// TestLegacyRefusals: the EAS LLM template's body refuses what it cannot
// carry, naming itself.
func TestLegacyRefusals(t *testing.T) {
	a, err := paieas.New(paieas.Options{Endpoint: "https://x.pai-eas.aliyuncs.com", Token: "t", Dialect: paieas.DialectLegacy})
	require.NoError(t, err)
	req := func(f func(g *cloudreq.GenerateInput)) *cloudreq.CloudRequest {
		g := &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "hi"}}}
		f(g)
		return &cloudreq.CloudRequest{Provider: "alibaba", Action: "generate", Target: cloudreq.Target{Endpoint: "svc"}, Generate: g}
	}
	seed := int64(1)
	for name, f := range map[string]func(g *cloudreq.GenerateInput){
		"tools": func(g *cloudreq.GenerateInput) { g.Tools = []cloudreq.Tool{{Name: "f"}} },
		"schema": func(g *cloudreq.GenerateInput) {
			g.ResponseFormat = &cloudreq.ResponseFormat{Type: cloudreq.FormatJSON}
		},
		"image": func(g *cloudreq.GenerateInput) {
			g.Messages[0] = cloudreq.Message{Role: "user", Parts: []cloudreq.Part{{Type: "image", ImageURL: "https://x/a.png"}}}
		},
		"seed":      func(g *cloudreq.GenerateInput) { g.Seed = &seed },
		"n":         func(g *cloudreq.GenerateInput) { g.N = 3 },
		"reasoning": func(g *cloudreq.GenerateInput) { g.Reasoning = &cloudreq.Reasoning{Effort: "low"} },
		"stop":      func(g *cloudreq.GenerateInput) { g.Stop = []string{"\n"} },
		"topk":      func(g *cloudreq.GenerateInput) { g.TopK = 5 },
	} {
		_, err := a.Encode(req(f), false)
		assert.ErrorContains(t, err, "pai-eas legacy cannot express", name)
	}
}
