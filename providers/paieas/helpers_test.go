package paieas

import (
	"testing"
	"time"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/providers/providertest"
)

const token = "eas-token-secret"

var (
	// server starts a handler and an adapter that sends it the token.
	server = providertest.Server(func(url string, optFns ...func(*Options)) (*Adapter, error) {
		return New(Options{Endpoint: url, Token: token, AllowInsecureHTTP: true}, optFns...)
	})
	client       = providertest.Client
	ctx          = providertest.Context
	writeFlushed = providertest.WriteFlushed
)

func generateReq() *cloudreq.CloudRequest {
	return providertest.GenerateRequest(cloudreq.ProviderAlibaba, cloudreq.ServicePAIEAS, cloudreq.Target{Endpoint: "llm-svc"})
}

func legacyReq() *cloudreq.CloudRequest {
	r := generateReq()
	r.Attributes.Dialect = string(DialectLegacy)
	return r
}

func invokeReq(body string) *cloudreq.CloudRequest {
	return providertest.InvokeRequest(cloudreq.ProviderAlibaba, cloudreq.ServicePAIEAS, cloudreq.Target{Endpoint: "svc"}, body)
}

func stream(t *testing.T, a *Adapter, r *cloudreq.CloudRequest) providertest.Streamed {
	t.Helper()
	return providertest.Stream(t, client(t, a), r)
}

func newClientRetrying(a *Adapter) (*cloudreq.Client, error) {
	return cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{a}}, func(o *cloudreq.Options) {
		o.Retry.MaxAttempts = 2
		o.Retry.BaseDelay = time.Millisecond
		o.Retry.MaxRetryAfter = 2 * time.Second
	})
}
