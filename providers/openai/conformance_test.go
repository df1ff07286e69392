package openai_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/providers/openai"
	"github.com/cloudinfer/cloudinfer/providers/providertest"
)

func TestConformance(t *testing.T) {
	errs := providertest.CommonErrors()
	errs[emulator.FaultQuota] = errcodes.QuotaExceeded
	errs[emulator.FaultQueueFull] = errcodes.Throttled
	errs[emulator.FaultModelError] = errcodes.Internal
	errs[emulator.FaultHTML502] = errcodes.Unavailable
	providertest.RunConformance(t, providertest.Harness{
		Provider: cloudreq.ProviderOpenAI, Service: cloudreq.ServiceOpenAICompatible,
		NewAdapter: func(t *testing.T, srv *emulator.Server) cloudreq.Adapter {
			a, err := openai.New(openai.Options{BaseURL: srv.URL(), APIKey: "conformance", AllowInsecureHTTP: true})
			require.NoError(t, err)
			return a
		},
		Target:           func(endpoint string) cloudreq.Target { return cloudreq.Target{Model: endpoint} },
		InvokeBody:       []byte(`{"model":"llama-3-8b","messages":[{"role":"user","content":"hi"}],"max_tokens":8}`),
		StreamInvoke:     true,
		InvokeStreamBody: []byte(`{"model":"llama-3-8b","messages":[{"role":"user","content":"hi"}],"max_tokens":8,"stream":true}`),
		Errors:           errs,
		Dialect:          "openai-compatible chat",
		Features: map[providertest.Feature]bool{
			providertest.FeatureTools: true, providertest.FeatureJSON: true, providertest.FeatureJSONSchema: true,
			providertest.FeatureImages: true, providertest.FeatureLogprobs: true, providertest.FeatureChoices: true,
			providertest.FeatureReasoning: true, providertest.FeatureSampling: true, providertest.FeatureSeed: true, providertest.FeatureTopK: true, providertest.FeaturePenalties: true, providertest.FeatureStop: true, providertest.FeatureParallelToolCalls: true, providertest.FeatureMaxCompletionTokens: true, providertest.FeatureThinkingBudget: false, providertest.FeatureExtra: true,
		},
	})
}

// TestFeaturesCompletions: the completions dialect (Target.Path
// /v1/completions) expresses sampling, n and logprobs, and refuses what a
// prompt cannot carry.
func TestFeaturesCompletions(t *testing.T) {
	providertest.RunFeatures(t, providertest.Harness{
		Provider: cloudreq.ProviderOpenAI, Service: cloudreq.ServiceOpenAICompatible,
		NewAdapter: func(t *testing.T, srv *emulator.Server) cloudreq.Adapter {
			a, err := openai.New(openai.Options{BaseURL: srv.URL(), APIKey: "conformance", AllowInsecureHTTP: true})
			require.NoError(t, err)
			return a
		},
		Target: func(endpoint string) cloudreq.Target {
			return cloudreq.Target{Model: endpoint, Path: "/v1/completions"}
		},
		Dialect:  "openai-compatible completions",
		Features: map[providertest.Feature]bool{providertest.FeatureTools: false, providertest.FeatureJSON: false, providertest.FeatureJSONSchema: false, providertest.FeatureImages: false, providertest.FeatureLogprobs: true, providertest.FeatureChoices: true, providertest.FeatureReasoning: false, providertest.FeatureSampling: true, providertest.FeatureSeed: true, providertest.FeatureTopK: true, providertest.FeaturePenalties: true, providertest.FeatureStop: true, providertest.FeatureParallelToolCalls: false, providertest.FeatureMaxCompletionTokens: false, providertest.FeatureThinkingBudget: false, providertest.FeatureExtra: true},
	})
}
