package azureml_test

import (
	"context"
	"errors"
	"os"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/providers/azureml"
)

const endpointID = "/subscriptions/sub-1/resourceGroups/rg/providers/Microsoft.MachineLearningServices/workspaces/ws/onlineEndpoints/llama-3-8b"

// countingCredential is an Entra credential that records the scopes asked
// for and counts its calls.
type countingCredential struct {
	mu     sync.Mutex
	scopes [][]string
}

func (c *countingCredential) GetToken(_ context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scopes = append(c.scopes, o.Scopes)
	return azcore.AccessToken{Token: secret, ExpiresOn: time.Now().Add(time.Hour)}, nil
}

func (c *countingCredential) calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.scopes)
}

func emulatorWithTTL(t *testing.T, ttl time.Duration) *emulator.Server {
	t.Helper()
	eps := emulator.DefaultEndpoints()
	for i := range eps {
		eps[i].Credentials.Keys = []string{"static-only-key"}
	}
	srv, err := emulator.New(emulator.Options{TimeScale: 0.01, Seed: 9, Endpoints: eps, AMLTokenTTL: ttl})
	require.NoError(t, err)
	require.NoError(t, srv.Start("127.0.0.1:0", ""))
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// TestEndpointTokenCredential: AML tokens come from the emulator's ARM
// token call; a token before its expiry is reused, and one past it is
// fetched again before the request that would have sent it (3 requests
// 1.1 s apart over 2 s tokens: 2 fetches, every request accepted — azcore
// refreshes early at refreshAfterTimeUtc only once 30 s passed since its
// last fetch); an expired token sent as a static Options.Token is refused.
func TestEndpointTokenCredential(t *testing.T) {
	for _, tc := range []struct {
		ttl   time.Duration
		gap   time.Duration // between requests
		fetch int           // ARM token calls for 3 requests
	}{{time.Hour, 0, 1}, {2 * time.Second, 1100 * time.Millisecond, 2}} {
		srv := emulatorWithTTL(t, tc.ttl)
		arm := &countingCredential{}
		cred, err := azureml.NewEndpointTokenCredential(arm, endpointID, &azureml.EndpointTokenOptions{ARMEndpoint: srv.URL(), AllowInsecureHTTP: true})
		require.NoError(t, err)
		c := newClient(t, srv, func(o *azureml.Options) { o.Key, o.Credential = "", cred })
		for i := range 3 {
			if i > 0 {
				time.Sleep(tc.gap) // past the token's refreshAfterTimeUtc (ttl/2)
			}
			resp, err := c.Invoke(ctx(t), gen())
			require.NoError(t, err, tc.ttl)
			assert.NotEmpty(t, resp.Text)
		}
		assert.Equal(t, tc.fetch, arm.calls(), "ttl %v", tc.ttl)
		for _, s := range arm.scopes {
			assert.Equal(t, []string{azureml.ScopeManagement}, s)
		}
	}

	srv := emulatorWithTTL(t, 50*time.Millisecond)
	var last string
	cred := azureml.NewAMLTokenCredential(func(ctx context.Context) (string, time.Time, time.Time, error) {
		inner, err := azureml.NewEndpointTokenCredential(&countingCredential{}, endpointID, &azureml.EndpointTokenOptions{ARMEndpoint: srv.URL(), AllowInsecureHTTP: true})
		if err != nil {
			return "", time.Time{}, time.Time{}, err
		}
		tok, err := inner.GetToken(ctx, policy.TokenRequestOptions{})
		last = tok.Token
		return tok.Token, tok.ExpiresOn, tok.RefreshOn, err
	})
	_, err := newClient(t, srv, func(o *azureml.Options) { o.Key, o.Credential = "", cred }).Invoke(ctx(t), gen())
	require.NoError(t, err)
	require.NotEmpty(t, last)
	time.Sleep(100 * time.Millisecond)
	_, err = newClient(t, srv, func(o *azureml.Options) { o.Key, o.Token = "", last }).Invoke(ctx(t), gen())
	assert.Equal(t, errcodes.Unauthenticated, errcodes.Of(err), "an expired AML token is refused")
	assert.NotContains(t, err.Error(), last)
}

func TestAMLTokenCredentialFailure(t *testing.T) {
	srv := emulatorWithTTL(t, time.Hour)
	cred := azureml.NewAMLTokenCredential(func(context.Context) (string, time.Time, time.Time, error) {
		return "", time.Time{}, time.Time{}, errors.New("vault unreachable")
	})
	_, err := newClient(t, srv, func(o *azureml.Options) { o.Key, o.Credential = "", cred }).Invoke(ctx(t), gen())
	var e *errcodes.Error
	require.True(t, errors.As(err, &e), "%v", err)
	assert.Equal(t, errcodes.Unauthenticated, e.Code)
	assert.False(t, e.Retryable)
	assert.Contains(t, e.Message, "vault unreachable")

	arm := &countingCredential{}
	bad, err := azureml.NewEndpointTokenCredential(arm, "/subscriptions/s/resourceGroups/g/providers/Microsoft.MachineLearningServices/workspaces/w/onlineEndpoints/no-such",
		&azureml.EndpointTokenOptions{ARMEndpoint: srv.URL(), AllowInsecureHTTP: true})
	require.NoError(t, err)
	_, err = newClient(t, srv, func(o *azureml.Options) { o.Key, o.Credential = "", bad }).Invoke(ctx(t), gen())
	assert.Equal(t, errcodes.Unauthenticated, errcodes.Of(err))
	assert.Contains(t, err.Error(), "ResourceNotFound")

	for _, bad := range []struct {
		id  string
		arm string
	}{{"not-an-id", ""}, {endpointID, "http://example.com"}} {
		_, err := azureml.NewEndpointTokenCredential(arm, bad.id, &azureml.EndpointTokenOptions{ARMEndpoint: bad.arm})
		assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err), bad)
	}
	_, err = azureml.NewEndpointTokenCredential(nil, endpointID, nil)
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
}

// TestScopeByRoute: the Entra scope follows the route unless set.
func TestScopeByRoute(t *testing.T) {
	srv := emulatorWithKey(t)
	for _, tc := range []struct {
		api   azureml.API
		scope string
		want  string
	}{
		{azureml.APIScore, "", azureml.ScopeManagedOnline},
		{azureml.APIChat, "", azureml.ScopeFoundry},
		{azureml.APIChat, "https://ml.azure.com/.default", "https://ml.azure.com/.default"},
	} {
		cred := &countingCredential{}
		_, err := newClient(t, srv, func(o *azureml.Options) { o.Key, o.Credential, o.API, o.Scope = "", cred, tc.api, tc.scope }).Invoke(ctx(t), gen())
		require.NoError(t, err, tc.api)
		require.Equal(t, 1, cred.calls())
		assert.Equal(t, []string{tc.want}, cred.scopes[0], tc.api)
	}
}

// TestIntegrationAzureAMLToken calls a real managed online endpoint with
// auth_mode aml_token through NewEndpointTokenCredential and the default
// Azure credential. It needs CLOUDINFER_IT_AZURE=1,
// CLOUDINFER_IT_AZURE_ENDPOINT_ID (the endpoint's ARM resource id) and
// CLOUDINFER_IT_AZURE_REGION.
func TestIntegrationAzureAMLToken(t *testing.T) {
	id := os.Getenv("CLOUDINFER_IT_AZURE_ENDPOINT_ID")
	if os.Getenv("CLOUDINFER_IT_AZURE") != "1" || id == "" {
		t.Skip("real-Azure test: set CLOUDINFER_IT_AZURE=1, CLOUDINFER_IT_AZURE_ENDPOINT_ID and CLOUDINFER_IT_AZURE_REGION to run it")
	}
	entra, err := azidentity.NewDefaultAzureCredential(nil)
	require.NoError(t, err)
	cred, err := azureml.NewEndpointTokenCredential(entra, id, nil)
	require.NoError(t, err)
	a, err := azureml.New(azureml.Options{Region: os.Getenv("CLOUDINFER_IT_AZURE_REGION"), Credential: cred})
	require.NoError(t, err)
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{a}})
	require.NoError(t, err)
	defer c.Close()
	req := gen()
	req.Target.Endpoint = path.Base(id)
	resp, err := c.Invoke(ctx(t), req)
	require.NoError(t, err)
	assert.NotEmpty(t, resp.Text)
}
