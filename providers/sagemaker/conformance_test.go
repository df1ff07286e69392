package sagemaker

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
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
	features := map[Dialect]map[providertest.Feature]bool{
		DialectMessages: map[providertest.Feature]bool{
			providertest.FeatureTools: true, providertest.FeatureJSON: true, providertest.FeatureJSONSchema: true, providertest.FeatureImages: true, providertest.FeatureLogprobs: true, providertest.FeatureChoices: true, providertest.FeatureReasoning: true, providertest.FeatureSampling: true, providertest.FeatureSeed: true, providertest.FeatureTopK: true, providertest.FeaturePenalties: true, providertest.FeatureStop: true, providertest.FeatureParallelToolCalls: true, providertest.FeatureMaxCompletionTokens: true, providertest.FeatureThinkingBudget: false, providertest.FeatureExtra: true,
		},
		// TGI's /generate: JSON through its grammar, logprobs from its
		// details and token events; the rest refused.
		DialectTGI: map[providertest.Feature]bool{
			providertest.FeatureTools: false, providertest.FeatureJSON: true, providertest.FeatureJSONSchema: true, providertest.FeatureImages: false,
			providertest.FeatureLogprobs: true, providertest.FeatureChoices: false, providertest.FeatureReasoning: false, providertest.FeatureSampling: false, providertest.FeatureSeed: true, providertest.FeatureTopK: true, providertest.FeaturePenalties: false, providertest.FeatureStop: true, providertest.FeatureParallelToolCalls: false, providertest.FeatureMaxCompletionTokens: false, providertest.FeatureThinkingBudget: false, providertest.FeatureExtra: true,
		},
	}
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
				Attributes:       cloudreq.Attributes{Dialect: string(d)},
				Errors:           errs,
				// The emulator opens the stream with a ModelStreamError
				// whose ErrorCode is ModelInvocationTimeExceeded.
				StreamErrorFirst: errcodes.Timeout,
				NoCredentials:    noCredentials,
				Dialect:          "sagemaker " + string(d),
				Features:         features[d],
			})
		})
	}
}

// noCredentials builds the adapter as a caller with no AWS credentials
// anywhere would: no Options.Credentials, an empty environment, shared
// files that do not exist, and IMDS off so that it is never probed. The
// HTTP client fails the test if a request is sent: the call must fail
// before any network call.
func noCredentials(t *testing.T, srv *emulator.Server) (cloudreq.Adapter, error) {
	t.Helper()
	missing := filepath.Join(t.TempDir(), "none")
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_DEFAULT_PROFILE", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", missing)
	t.Setenv("AWS_CONFIG_FILE", missing)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	return New(context.Background(), Options{
		Region:       "us-east-1",
		BaseEndpoint: srv.URL(),
		HTTPClient: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			t.Errorf("a request was sent without credentials: %s %s", r.Method, r.URL)
			return nil, errors.New("no request expected")
		})},
		AllowInsecureHTTP: true,
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
