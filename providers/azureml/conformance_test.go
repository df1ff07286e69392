package azureml_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/providers/azureml"
	"github.com/cloudinfer/cloudinfer/providers/providertest"
)

func errorTable() map[emulator.Fault]errcodes.Code {
	errs := providertest.CommonErrors()
	errs[emulator.FaultQuota] = errcodes.QuotaExceeded
	errs[emulator.FaultQueueFull] = errcodes.Throttled
	errs[emulator.FaultHTML502] = errcodes.Unavailable
	return errs
}

// noCredentials builds the adapter as a caller with no credential
// anywhere would: no Key, Token or Credential, an empty environment.
func noCredentials(api azureml.API) func(t *testing.T, srv *emulator.Server) (cloudreq.Adapter, error) {
	return func(t *testing.T, srv *emulator.Server) (cloudreq.Adapter, error) {
		azureml.NoAzureEnvironment(t)
		return azureml.New(azureml.Options{EndpointURL: srv.URL() + "/azureml/{endpoint}", API: api, AllowInsecureHTTP: true})
	}
}

func TestConformanceScore(t *testing.T) {
	errs := errorTable()
	errs[emulator.FaultModelError] = errcodes.ModelError // 424
	providertest.RunConformance(t, providertest.Harness{
		Provider: cloudreq.ProviderAzure, Service: cloudreq.ServiceAzureML,
		NewAdapter: func(t *testing.T, srv *emulator.Server) cloudreq.Adapter {
			a, err := azureml.New(azureml.Options{EndpointURL: srv.URL() + "/azureml/{endpoint}", Key: "conformance", AllowInsecureHTTP: true})
			require.NoError(t, err)
			return a
		},
		Target:           func(endpoint string) cloudreq.Target { return cloudreq.Target{Endpoint: endpoint} },
		InvokeBody:       []byte(`{"input_data":{"input_string":[{"role":"user","content":"hi"}],"parameters":{"max_new_tokens":8}}}`),
		StreamInvoke:     true,
		InvokeStreamBody: []byte(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":8,"stream":true}`),
		Errors:           errs,
		NoCredentials:    noCredentials(azureml.APIScore),
		Dialect:          "azureml /score messages",
		Features: map[providertest.Feature]bool{
			providertest.FeatureTools: true, providertest.FeatureJSON: true, providertest.FeatureJSONSchema: true, providertest.FeatureImages: true, providertest.FeatureLogprobs: true, providertest.FeatureChoices: true, providertest.FeatureReasoning: true, providertest.FeatureSampling: true, providertest.FeatureSeed: true, providertest.FeatureTopK: true, providertest.FeaturePenalties: true, providertest.FeatureStop: true, providertest.FeatureParallelToolCalls: true, providertest.FeatureMaxCompletionTokens: true, providertest.FeatureThinkingBudget: false, providertest.FeatureExtra: true,
		},
	})
}

func TestConformanceServerlessChat(t *testing.T) {
	errs := errorTable()
	errs[emulator.FaultModelError] = errcodes.Internal // serverless: 500 model_error
	providertest.RunConformance(t, providertest.Harness{
		Provider: cloudreq.ProviderAzure, Service: cloudreq.ServiceAzureML,
		NewAdapter: func(t *testing.T, srv *emulator.Server) cloudreq.Adapter {
			a, err := azureml.New(azureml.Options{EndpointURL: srv.URL() + "/azureml/{endpoint}", Key: "conformance",
				API: azureml.APIChat, AllowInsecureHTTP: true})
			require.NoError(t, err)
			return a
		},
		Target:           func(endpoint string) cloudreq.Target { return cloudreq.Target{Endpoint: endpoint} },
		InvokeBody:       []byte(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":8}`),
		StreamInvoke:     true,
		InvokeStreamBody: []byte(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":8,"stream":true}`),
		Errors:           errs,
		NoCredentials:    noCredentials(azureml.APIChat),
		Dialect:          "azureml serverless chat",
		Features: map[providertest.Feature]bool{
			providertest.FeatureTools: true, providertest.FeatureJSON: true, providertest.FeatureJSONSchema: true, providertest.FeatureImages: true, providertest.FeatureLogprobs: false, providertest.FeatureChoices: false, providertest.FeatureReasoning: false, providertest.FeatureSampling: false, providertest.FeatureSeed: true, providertest.FeatureTopK: false, providertest.FeaturePenalties: true, providertest.FeatureStop: true, providertest.FeatureParallelToolCalls: false, providertest.FeatureMaxCompletionTokens: false, providertest.FeatureThinkingBudget: false, providertest.FeatureExtra: false,
		},
	})
}

// TestFeaturesInputData: the model catalog's input_data body carries
// messages and a few parameters; the rest is refused naming the dialect.
func TestFeaturesInputData(t *testing.T) {
	providertest.RunFeatures(t, providertest.Harness{
		Provider: cloudreq.ProviderAzure, Service: cloudreq.ServiceAzureML,
		NewAdapter: func(t *testing.T, srv *emulator.Server) cloudreq.Adapter {
			a, err := azureml.New(azureml.Options{EndpointURL: srv.URL() + "/azureml/{endpoint}", Key: "conformance",
				ScoreDialect: azureml.ScoreInputData, AllowInsecureHTTP: true})
			require.NoError(t, err)
			return a
		},
		Target:   func(endpoint string) cloudreq.Target { return cloudreq.Target{Endpoint: endpoint} },
		Dialect:  "azureml /score input_data",
		Features: map[providertest.Feature]bool{providertest.FeatureTools: false, providertest.FeatureJSON: false, providertest.FeatureJSONSchema: false, providertest.FeatureImages: false, providertest.FeatureLogprobs: false, providertest.FeatureChoices: false, providertest.FeatureReasoning: false, providertest.FeatureSampling: false, providertest.FeatureSeed: false, providertest.FeatureTopK: true, providertest.FeaturePenalties: false, providertest.FeatureStop: false, providertest.FeatureParallelToolCalls: false, providertest.FeatureMaxCompletionTokens: false, providertest.FeatureThinkingBudget: false, providertest.FeatureExtra: true},
	})
}
