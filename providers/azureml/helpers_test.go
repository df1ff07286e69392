package azureml

import (
	"testing"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/providers/providertest"
)

const key = "aml-endpoint-key-secret"

var (
	// server starts a handler and an adapter that sends it key.
	server = providertest.Server(func(url string, optFns ...func(*Options)) (*Adapter, error) {
		return New(Options{EndpointURL: url + "/azureml/{endpoint}", Key: key, AllowInsecureHTTP: true}, optFns...)
	})
	client       = providertest.Client
	ctx          = providertest.Context
	writeFlushed = providertest.WriteFlushed
)

func generateReq() *cloudreq.CloudRequest {
	return providertest.GenerateRequest(cloudreq.ProviderAzure, cloudreq.ServiceAzureML, cloudreq.Target{Endpoint: "my-ep"})
}

func invokeReq(body string) *cloudreq.CloudRequest {
	return providertest.InvokeRequest(cloudreq.ProviderAzure, cloudreq.ServiceAzureML, cloudreq.Target{Endpoint: "my-ep"}, body)
}

func stream(t *testing.T, a *Adapter, r *cloudreq.CloudRequest) providertest.Streamed {
	t.Helper()
	return providertest.Stream(t, client(t, a), r)
}
