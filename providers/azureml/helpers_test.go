package azureml

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/providers/providertest"
)

const key = "aml-endpoint-key-secret"

func server(t *testing.T, h http.HandlerFunc, optFns ...func(*Options)) (*Adapter, *httptest.Server) {
	t.Helper()
	return providertest.Serve(t, h, func(url string) (*Adapter, error) {
		return New(Options{EndpointURL: url + "/azureml/{endpoint}", Key: key, AllowInsecureHTTP: true}, optFns...)
	})
}

var (
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
