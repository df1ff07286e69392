package azureml

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// azureEnvironment lists the variables Microsoft Entra's credential
// sources read.
var azureEnvironment = []string{
	"AZURE_CLIENT_ID", "AZURE_TENANT_ID", "AZURE_CLIENT_SECRET", "AZURE_CLIENT_CERTIFICATE_PATH",
	"AZURE_CLIENT_CERTIFICATE_PASSWORD", "AZURE_CLIENT_SEND_CERTIFICATE_CHAIN", "AZURE_USERNAME", "AZURE_PASSWORD",
	"AZURE_FEDERATED_TOKEN_FILE", "AZURE_AUTHORITY_HOST", "AZURE_TOKEN_CREDENTIALS", "AZURE_ADDITIONALLY_ALLOWED_TENANTS",
	"IDENTITY_ENDPOINT", "IDENTITY_HEADER", "IDENTITY_SERVER_THUMBPRINT", "IMDS_ENDPOINT", "MSI_ENDPOINT", "MSI_SECRET",
}

// NoAzureEnvironment empties, for the test, every variable a Microsoft
// Entra credential source reads, and PATH, so that no developer tool (az,
// azd, pwsh) is found: no credential anywhere.
func NoAzureEnvironment(t *testing.T) {
	t.Helper()
	for _, k := range append(azureEnvironment, "PATH") {
		t.Setenv(k, "")
		require.NoError(t, os.Unsetenv(k))
	}
	t.Setenv("PATH", t.TempDir())
}

// sent records the requests a credential sends, and answers each with h
// (or a transport error when h is nil).
type sent struct {
	mu   sync.Mutex
	urls []string
	h    func(*http.Request) (*http.Response, error)
}

func (s *sent) Do(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.urls = append(s.urls, r.URL.String())
	s.mu.Unlock()
	if s.h == nil {
		return nil, errors.New("offline")
	}
	return s.h(r)
}

// TestDefaultCredentialDoesNotProbe: with no credential configured
// anywhere, the default credential fails at once, without a request (no
// IMDS probe, no call to Microsoft Entra), and says what to set.
func TestDefaultCredentialDoesNotProbe(t *testing.T) {
	NoAzureEnvironment(t)
	rec := &sent{}
	l := &lazyDefaultCredential{co: azcore.ClientOptions{Transport: rec}}
	_, err := l.GetToken(context.Background(), policy.TokenRequestOptions{Scopes: []string{DefaultScope}})
	require.Error(t, err)
	assert.Empty(t, rec.urls, "no request is sent")
	assert.Contains(t, err.Error(), "Options.Key")
	assert.Contains(t, err.Error(), "AZURE_TOKEN_CREDENTIALS")
}

// tokenReply answers a managed identity token request.
func tokenReply(r *http.Request) (*http.Response, error) {
	body := `{"access_token":"mi-token","expires_in":"3599","expires_on":"4102444800","resource":"https://ml.azure.com","token_type":"Bearer"}`
	return &http.Response{StatusCode: 200, Status: "200 OK", Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
}

var scopes atomic.Int64

// TestDefaultCredentialManagedIdentity: managed identity is used when the
// host announces its endpoint (App Service's IDENTITY_ENDPOINT), or when
// AZURE_TOKEN_CREDENTIALS chooses it (an Azure VM's IMDS); each sends
// its token request and nothing else.
func TestDefaultCredentialManagedIdentity(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
		host string
	}{
		{"announced", map[string]string{"IDENTITY_ENDPOINT": "http://127.0.0.1:41234/msi/token", "IDENTITY_HEADER": "h"}, "127.0.0.1:41234"},
		{"chosen", map[string]string{"AZURE_TOKEN_CREDENTIALS": "ManagedIdentityCredential"}, "169.254.169.254"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			NoAzureEnvironment(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			rec := &sent{h: tokenReply}
			l := &lazyDefaultCredential{co: azcore.ClientOptions{Transport: rec}}
			// Managed identity tokens are cached per process, by resource:
			// each run asks for its own.
			scope := fmt.Sprintf("https://ml.azure.com/test-%d/.default", scopes.Add(1))
			tok, err := l.GetToken(context.Background(), policy.TokenRequestOptions{Scopes: []string{scope}})
			require.NoError(t, err)
			assert.Equal(t, "mi-token", tok.Token)
			require.Len(t, rec.urls, 1, "one token request: %v", rec.urls)
			u, err := url.Parse(rec.urls[0])
			require.NoError(t, err)
			assert.Equal(t, tt.host, u.Host)
		})
	}
}
