package vertex

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/providers/providertest"
)

func TestConformance(t *testing.T) {
	errs := providertest.CommonErrors()
	errs[emulator.FaultQuota] = errcodes.QuotaExceeded
	errs[emulator.FaultModelError] = errcodes.ModelError
	providertest.RunConformance(t, providertest.Harness{
		Provider: cloudreq.ProviderGCP, Service: cloudreq.ServiceVertex,
		NewAdapter: func(t *testing.T, srv *emulator.Server) cloudreq.Adapter {
			ad, err := New(context.Background(), Options{
				Project: "p", Location: "us-central1", Endpoint: srv.GRPCAddr(), Insecure: true,
			})
			require.NoError(t, err)
			return ad // the suite's client closes it
		},
		Target:           func(endpoint string) cloudreq.Target { return cloudreq.Target{Endpoint: endpoint} },
		InvokeBody:       []byte(`{"instances":[{"prompt":"Say hello."}],"parameters":{"max_tokens":16}}`),
		StreamInvoke:     true,
		InvokeStreamBody: []byte(`{"model":"llama-3-8b","messages":[{"role":"user","content":"Say hello."}],"max_tokens":16,"stream":true}`),
		Errors:           errs,
		NoCredentials:    noCredentialsAdapter,
		Dialect:          "vertex gemini",
		Features: map[providertest.Feature]bool{
			providertest.FeatureTools: true, providertest.FeatureJSON: true, providertest.FeatureJSONSchema: true, providertest.FeatureImages: true,
			providertest.FeatureLogprobs: true, providertest.FeatureChoices: true, providertest.FeatureReasoning: true, providertest.FeatureSampling: true, providertest.FeatureSeed: true, providertest.FeatureTopK: true, providertest.FeaturePenalties: true, providertest.FeatureStop: true, providertest.FeatureParallelToolCalls: false, providertest.FeatureMaxCompletionTokens: false, providertest.FeatureThinkingBudget: true, providertest.FeatureExtra: true,
		},
		HidesThoughts: true,
	})
}
