package azureml_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/providers/azureml"
)

const secret = "aml-secret-key"

func emulatorWithKey(t *testing.T) *emulator.Server {
	t.Helper()
	eps := emulator.DefaultEndpoints()
	for i := range eps {
		eps[i].Credentials.Keys = []string{secret}
	}
	srv, err := emulator.New(emulator.Options{TimeScale: 0.01, Seed: 9, Endpoints: eps})
	require.NoError(t, err)
	require.NoError(t, srv.Start("127.0.0.1:0", ""))
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func newClient(t *testing.T, srv *emulator.Server, optFns ...func(*azureml.Options)) *cloudreq.Client {
	t.Helper()
	a, err := azureml.New(azureml.Options{EndpointURL: srv.URL() + "/azureml/{endpoint}", Key: secret, AllowInsecureHTTP: true}, optFns...)
	require.NoError(t, err)
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{a}}, func(o *cloudreq.Options) { o.Retry.MaxAttempts = 1 },
		emulator.WithStartReport())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func gen() *cloudreq.CloudRequest {
	return &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderAzure, Service: cloudreq.ServiceAzureML, Action: cloudreq.ActionGenerate,
		Target:   cloudreq.Target{Endpoint: "llama-3-8b"},
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "Tell me a story."}}, MaxTokens: 12},
		Header:   http.Header{},
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

type staticToken string

func (s staticToken) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: string(s), ExpiresOn: time.Now().Add(time.Hour)}, nil
}

func TestEmulatorCredentials(t *testing.T) {
	srv := emulatorWithKey(t)
	for name, f := range map[string]func(*azureml.Options){
		"key":        func(o *azureml.Options) {},
		"aml token":  func(o *azureml.Options) { o.Key, o.Token = "", secret },
		"credential": func(o *azureml.Options) { o.Key, o.Credential = "", staticToken(secret) },
	} {
		resp, err := newClient(t, srv, f).Invoke(ctx(t), gen())
		require.NoError(t, err, name)
		assert.NotEmpty(t, resp.Text, name)
	}
	_, err := newClient(t, srv, func(o *azureml.Options) { o.Key = "wrong-key" }).Invoke(ctx(t), gen())
	assert.ErrorIs(t, err, errcodes.Unauthenticated)
	assert.NotContains(t, err.Error(), "wrong-key")
}

func TestEmulatorInputDataAndDeployment(t *testing.T) {
	srv := emulatorWithKey(t)
	c := newClient(t, srv, func(o *azureml.Options) { o.ScoreDialect = azureml.ScoreInputData })
	r := gen()
	r.Target.Variant = "default"
	r.RequestID = "client-123"
	resp, err := c.Invoke(ctx(t), r)
	require.NoError(t, err)
	assert.NotEmpty(t, resp.Text)
	assert.Equal(t, "default", resp.Metadata["Azureml-Model-Deployment"])
	assert.NotEmpty(t, resp.RequestID)

	r.Target.Variant = "green"
	_, err = c.Invoke(ctx(t), r)
	assert.ErrorIs(t, err, errcodes.NotFound)
}

func TestEmulatorModelErrorDetails(t *testing.T) {
	srv := emulatorWithKey(t)
	r := gen()
	r.Header.Set(emulator.HeaderInject, string(emulator.FaultModelError))
	_, err := newClient(t, srv).Invoke(ctx(t), r)
	var e *errcodes.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, errcodes.ModelError, e.Code)
	assert.Equal(t, 424, e.HTTPStatus)
	assert.Equal(t, "500", e.Details["ms-azureml-model-error-statuscode"])
	assert.Equal(t, "model_error", e.Details["ms-azureml-model-error-reason"])
}

func TestEmulatorServerlessStreamUsage(t *testing.T) {
	srv := emulatorWithKey(t)
	s, err := newClient(t, srv, func(o *azureml.Options) { o.API = azureml.APIChat }).Stream(ctx(t), gen())
	require.NoError(t, err)
	defer s.Close()
	n := 0
	for s.Next() {
		if s.Chunk().Content {
			n++
		}
	}
	require.NoError(t, s.Err())
	assert.Equal(t, "server", s.Response().Usage.Source)
	assert.Equal(t, n, s.Response().Usage.OutputTokens)
}

// TestEmulatorRootAsScoringURI: the emulator's own address given as the
// scoring URI names no endpoint; the error says which URLs do.
func TestEmulatorRootAsScoringURI(t *testing.T) {
	srv := emulatorWithKey(t)
	for _, api := range []azureml.API{azureml.APIScore, azureml.APIChat} {
		r := gen()
		r.Target.Endpoint = srv.URL()
		_, err := newClient(t, srv, func(o *azureml.Options) { o.API = api }).Invoke(ctx(t), r)
		var e *errcodes.Error
		require.ErrorAs(t, err, &e, api)
		assert.Equal(t, errcodes.NotFound, e.Code, "%s: %v", api, err)
		assert.Contains(t, e.Message, srv.URL()+"/azureml/{endpoint}/score", api)
		assert.Contains(t, e.Message, "{endpoint}.{region}.inference.ml.azure.com", api)
	}
}
