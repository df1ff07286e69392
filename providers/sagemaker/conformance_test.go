package sagemaker

import (
	"context"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/providers/providertest"
)

// emulatorAdapter returns an adapter for the emulator at url, with its own
// transport (closed at cleanup) and static credentials.
func emulatorAdapter(t testing.TB, url string, optFns ...func(*Options)) *Adapter {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	ad, err := New(context.Background(), Options{
		Region:            "us-east-1",
		Credentials:       credentials.NewStaticCredentialsProvider("AKIDEMULATOR", "emulator-secret", ""),
		BaseEndpoint:      url,
		HTTPClient:        &http.Client{Transport: tr},
		AllowInsecureHTTP: true,
	}, optFns...)
	require.NoError(t, err)
	return ad
}

func TestConformance(t *testing.T) {
	errs := providertest.CommonErrors()
	errs[emulator.FaultModelError] = errcodes.ModelError
	for _, d := range []Dialect{DialectMessages, DialectTGI} {
		t.Run(string(d), func(t *testing.T) {
			providertest.RunConformance(t, providertest.Harness{
				Provider: cloudreq.ProviderAWS, Service: cloudreq.ServiceSageMaker,
				NewAdapter: func(t *testing.T, srv *emulator.Server) cloudreq.Adapter {
					return emulatorAdapter(t, srv.URL())
				},
				Target:           func(endpoint string) cloudreq.Target { return cloudreq.Target{Endpoint: endpoint} },
				InvokeBody:       []byte(`{"inputs":"Say hello.","parameters":{"max_new_tokens":16}}`),
				StreamInvoke:     true,
				InvokeStreamBody: []byte(`{"inputs":"Say hello.","parameters":{"max_new_tokens":16},"stream":true}`),
				Attributes:       cloudreq.Attributes{Extra: map[string]string{ExtraDialect: string(d)}},
				Errors:           errs,
			})
		})
	}
}
