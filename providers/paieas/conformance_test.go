package paieas_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/providers/paieas"
	"github.com/cloudinfer/cloudinfer/providers/providertest"
)

func TestConformance(t *testing.T) {
	errs := providertest.CommonErrors()
	// PAI-EAS has no 403 (forbidden is 401 Authorization Failed), and
	// rate-limits quota with 429 like any throttle.
	errs[emulator.FaultForbidden] = errcodes.Unauthenticated
	errs[emulator.FaultQuota] = errcodes.Throttled
	errs[emulator.FaultQueueFull] = errcodes.Throttled
	errs[emulator.FaultModelError] = errcodes.Internal
	errs[emulator.FaultHTML502] = errcodes.Unavailable
	providertest.RunConformance(t, providertest.Harness{
		Provider: cloudreq.ProviderAlibaba, Service: cloudreq.ServicePAIEAS,
		NewAdapter: func(t *testing.T, srv *emulator.Server) cloudreq.Adapter {
			a, err := paieas.New(paieas.Options{Endpoint: srv.URL(), Token: "conformance", AllowInsecureHTTP: true})
			require.NoError(t, err)
			return a
		},
		Target:           func(endpoint string) cloudreq.Target { return cloudreq.Target{Endpoint: endpoint} },
		InvokeBody:       []byte(`{"prompt":"hi","max_new_tokens":8}`),
		StreamInvoke:     true,
		InvokeStreamBody: []byte(`{"prompt":"hi","max_new_tokens":8,"use_stream_chat":"True"}`),
		Errors:           errs,
		Dialect:          "pai-eas openai chat",
		Features:         map[providertest.Feature]bool{providertest.FeatureTools: true, providertest.FeatureJSON: true, providertest.FeatureJSONSchema: true, providertest.FeatureImages: true, providertest.FeatureLogprobs: true, providertest.FeatureChoices: true, providertest.FeatureReasoning: true, providertest.FeatureSampling: true, providertest.FeatureSeed: true, providertest.FeatureTopK: true, providertest.FeaturePenalties: true, providertest.FeatureStop: true, providertest.FeatureParallelToolCalls: true, providertest.FeatureMaxCompletionTokens: true, providertest.FeatureThinkingBudget: false, providertest.FeatureExtra: true},
	})
}

// TestFeaturesLegacy: the legacy body carries a prompt and a token limit
// only; everything else is refused naming the dialect.
func TestFeaturesLegacy(t *testing.T) {
	providertest.RunFeatures(t, providertest.Harness{
		Provider: cloudreq.ProviderAlibaba, Service: cloudreq.ServicePAIEAS,
		NewAdapter: func(t *testing.T, srv *emulator.Server) cloudreq.Adapter {
			a, err := paieas.New(paieas.Options{Endpoint: srv.URL(), Token: "conformance", AllowInsecureHTTP: true, Dialect: paieas.DialectLegacy})
			require.NoError(t, err)
			return a
		},
		Target:   func(endpoint string) cloudreq.Target { return cloudreq.Target{Endpoint: endpoint} },
		Dialect:  "pai-eas legacy",
		Features: map[providertest.Feature]bool{providertest.FeatureTools: false, providertest.FeatureJSON: false, providertest.FeatureJSONSchema: false, providertest.FeatureImages: false, providertest.FeatureLogprobs: false, providertest.FeatureChoices: false, providertest.FeatureReasoning: false, providertest.FeatureSampling: false, providertest.FeatureSeed: false, providertest.FeatureTopK: false, providertest.FeaturePenalties: false, providertest.FeatureStop: false, providertest.FeatureParallelToolCalls: false, providertest.FeatureMaxCompletionTokens: false, providertest.FeatureThinkingBudget: false, providertest.FeatureExtra: true},
	})
}
