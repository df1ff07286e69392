package azureml

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// Scopes of Microsoft Entra tokens, by route (Options.Scope overrides).
const (
	// ScopeManagedOnline is the scope of managed online endpoints
	// (APIScore): DefaultScope.
	ScopeManagedOnline = DefaultScope
	// ScopeFoundry is the scope of serverless endpoints and Azure AI
	// Foundry model inference (APIChat): Cognitive Services', which every
	// Azure AI inference endpoint accepts.
	ScopeFoundry = "https://cognitiveservices.azure.com/.default"
	// ScopeManagement is Azure Resource Manager's, with which
	// NewEndpointTokenCredential asks for AML tokens.
	ScopeManagement = "https://management.azure.com/.default"
)

// scopeFor is the Entra scope of api when Options.Scope is empty.
func scopeFor(api API) string {
	if api == APIChat {
		return ScopeFoundry
	}
	return ScopeManagedOnline
}

// AMLTokenFunc returns a fresh AML token of a managed online endpoint
// (auth_mode aml_token), when it expires and, if known, when to refresh it
// (zero: 5 minutes before expiry).
type AMLTokenFunc func(ctx context.Context) (token string, expiresOn, refreshOn time.Time, err error)

// NewAMLTokenCredential returns an azcore.TokenCredential over fetch, to
// set as Options.Credential: the adapter's bearer-token policy keeps the
// token and calls fetch again once it nears expiry (or its refresh time),
// so a long-running service never sends an expired AML token. Options.Token
// is for a token that outlives the process; this is for every other.
func NewAMLTokenCredential(fetch AMLTokenFunc) azcore.TokenCredential {
	return amlTokenCredential{fetch: fetch}
}

type amlTokenCredential struct{ fetch AMLTokenFunc }

// GetToken implements azcore.TokenCredential; the scope is not used (an
// AML token is the endpoint's).
func (c amlTokenCredential) GetToken(ctx context.Context, _ policy.TokenRequestOptions) (azcore.AccessToken, error) {
	tok, exp, ref, err := c.fetch(ctx)
	if err != nil {
		return azcore.AccessToken{}, err
	}
	if tok == "" {
		return azcore.AccessToken{}, fmt.Errorf("the AML token source returned an empty token")
	}
	return azcore.AccessToken{Token: tok, ExpiresOn: exp, RefreshOn: ref}, nil
}

// EndpointTokenOptions configures NewEndpointTokenCredential.
type EndpointTokenOptions struct {
	// ARMEndpoint is Azure Resource Manager's root (default
	// https://management.azure.com); the emulator's URL for tests.
	ARMEndpoint string
	// APIVersion of the token call (default 2024-04-01).
	APIVersion string
	// HTTPClient sends the token calls (default http.DefaultClient).
	HTTPClient *http.Client
	// AllowInsecureHTTP permits a plain-http ARMEndpoint (the emulator).
	AllowInsecureHTTP bool
}

// NewEndpointTokenCredential returns a refreshing AML token source for the
// managed online endpoint whose ARM resource id is endpointID
// (/subscriptions/S/resourceGroups/G/providers/Microsoft.MachineLearningServices/workspaces/W/onlineEndpoints/E):
// each token comes from ARM's onlineEndpoints token call (POST
// …/onlineEndpoints/E/token, the call behind `az ml online-endpoint
// get-credentials`), authenticated with cred for ScopeManagement. The
// caller needs the Microsoft.MachineLearningServices/workspaces/onlineEndpoints/token/action
// permission (AzureML Data Scientist has it). Set the result as
// Options.Credential.
func NewEndpointTokenCredential(cred azcore.TokenCredential, endpointID string, o *EndpointTokenOptions) (azcore.TokenCredential, error) {
	var opts EndpointTokenOptions
	if o != nil {
		opts = *o
	}
	if cred == nil {
		return nil, invalid("NewEndpointTokenCredential needs an Entra credential for Azure Resource Manager")
	}
	if !strings.HasPrefix(endpointID, "/subscriptions/") || !strings.Contains(strings.ToLower(endpointID), "/onlineendpoints/") {
		return nil, invalid("endpoint resource id %q is not /subscriptions/…/workspaces/W/onlineEndpoints/E", endpointID)
	}
	if opts.ARMEndpoint == "" {
		opts.ARMEndpoint = "https://management.azure.com"
	}
	if opts.APIVersion == "" {
		opts.APIVersion = "2024-04-01"
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = http.DefaultClient
	}
	u, err := url.Parse(opts.ARMEndpoint)
	if err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && opts.AllowInsecureHTTP)) {
		return nil, invalid("ARMEndpoint %q must be an https URL (plain http only with AllowInsecureHTTP)", opts.ARMEndpoint)
	}
	tokenURL := strings.TrimSuffix(opts.ARMEndpoint, "/") + strings.TrimSuffix(endpointID, "/") + "/token?api-version=" + url.QueryEscape(opts.APIVersion)
	f := &endpointTokens{cred: cred, url: tokenURL, client: opts.HTTPClient}
	return NewAMLTokenCredential(f.fetch), nil
}

// endpointTokens fetches AML tokens from ARM.
type endpointTokens struct {
	cred   azcore.TokenCredential
	url    string
	client *http.Client
	mu     sync.Mutex
}

// amlTokenAnswer is ARM's answer to the token call: times in Unix seconds.
type amlTokenAnswer struct {
	AccessToken         string `json:"accessToken"`
	ExpiryTimeUTC       int64  `json:"expiryTimeUtc"`
	RefreshAfterTimeUTC int64  `json:"refreshAfterTimeUtc"`
	TokenType           string `json:"tokenType"`
}

func (f *endpointTokens) fetch(ctx context.Context) (string, time.Time, time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	arm, err := f.cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{ScopeManagement}})
	if err != nil {
		return "", time.Time{}, time.Time{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url, http.NoBody)
	if err != nil {
		return "", time.Time{}, time.Time{}, err
	}
	req.Header.Set("Authorization", "Bearer "+arm.Token)
	resp, err := f.client.Do(req)
	if err != nil {
		return "", time.Time{}, time.Time{}, fmt.Errorf("the AML token call failed: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", time.Time{}, time.Time{}, fmt.Errorf("reading the AML token: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", time.Time{}, time.Time{}, fmt.Errorf("the AML token call answered HTTP %d: %s", resp.StatusCode, clip(strings.TrimSpace(string(b))))
	}
	var a amlTokenAnswer
	if err := json.Unmarshal(b, &a); err != nil || a.AccessToken == "" || a.ExpiryTimeUTC == 0 {
		return "", time.Time{}, time.Time{}, fmt.Errorf("the AML token call answered no accessToken and expiryTimeUtc")
	}
	var ref time.Time
	if a.RefreshAfterTimeUTC > 0 {
		ref = time.Unix(a.RefreshAfterTimeUTC, 0)
	}
	return a.AccessToken, time.Unix(a.ExpiryTimeUTC, 0), ref, nil
}
