package azureml

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
)

// Environment variables the default credential reads itself (azidentity's
// sources read their own).
const (
	envTokenCredentials = "AZURE_TOKEN_CREDENTIALS"
	envClientID         = "AZURE_CLIENT_ID"
)

// managedIdentityEnv are the variables by which a host announces its
// managed identity endpoint (App Service, Functions, Container Apps,
// Service Fabric, Azure Arc, Cloud Shell). A plain Azure VM announces
// none: its identity is found only by asking IMDS.
var managedIdentityEnv = []string{"IDENTITY_ENDPOINT", "MSI_ENDPOINT"}

// noCredentialHint ends the error of a default credential that found none.
const noCredentialHint = "no Azure credential found: set Options.Key, Token or Credential (Anonymous for a local server), " +
	"the EnvironmentCredential or workload identity variables, log in with az or azd, " +
	"or on an Azure VM choose its managed identity with AZURE_TOKEN_CREDENTIALS=ManagedIdentityCredential"

// lazyDefaultCredential creates the default credential (see
// newDefaultCredential) at its first use, so that constructing an Adapter
// reads no environment and makes no network call.
type lazyDefaultCredential struct {
	co   azcore.ClientOptions // the credentials' own client options
	once sync.Once
	cred azcore.TokenCredential
	err  error
}

// GetToken implements azcore.TokenCredential.
func (l *lazyDefaultCredential) GetToken(ctx context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	l.once.Do(func() { l.cred, l.err = newDefaultCredential(l.co) })
	if l.err != nil {
		return azcore.AccessToken{}, l.err
	}
	return l.cred.GetToken(ctx, o)
}

// newDefaultCredential returns the credential used when Options name
// none. With AZURE_TOKEN_CREDENTIALS set, the caller chose: it is
// azidentity.DefaultAzureCredential, which honours that choice ("prod",
// "dev" or one credential's name). Otherwise it is DefaultAzureCredential's
// chain (environment, workload identity, managed identity, Azure CLI,
// Azure Developer CLI, Azure PowerShell) less what only the network can
// tell: managed identity is in it only when the host announces its
// endpoint (IDENTITY_ENDPOINT or MSI_ENDPOINT), so that a machine with no
// credential fails at once instead of probing IMDS.
func newDefaultCredential(co azcore.ClientOptions) (azcore.TokenCredential, error) {
	if _, ok := os.LookupEnv(envTokenCredentials); ok {
		return azidentity.NewDefaultAzureCredential(&azidentity.DefaultAzureCredentialOptions{ClientOptions: co})
	}
	var (
		creds   []azcore.TokenCredential
		missing []string
	)
	add := func(name string, c azcore.TokenCredential, err error) {
		if err != nil {
			missing = append(missing, name+": "+err.Error())
			return
		}
		creds = append(creds, c)
	}
	env, err := azidentity.NewEnvironmentCredential(&azidentity.EnvironmentCredentialOptions{ClientOptions: co})
	add("EnvironmentCredential", env, err)
	wi, err := azidentity.NewWorkloadIdentityCredential(&azidentity.WorkloadIdentityCredentialOptions{ClientOptions: co})
	add("WorkloadIdentityCredential", wi, err)
	if managedIdentityAnnounced() {
		o := &azidentity.ManagedIdentityCredentialOptions{ClientOptions: co}
		if id, ok := os.LookupEnv(envClientID); ok {
			o.ID = azidentity.ClientID(id)
		}
		mi, err := azidentity.NewManagedIdentityCredential(o)
		add("ManagedIdentityCredential", mi, err)
	} else {
		missing = append(missing, "ManagedIdentityCredential: not tried: the host announces no managed identity endpoint (IDENTITY_ENDPOINT, MSI_ENDPOINT)")
	}
	az, err := azidentity.NewAzureCLICredential(nil)
	add("AzureCLICredential", az, err)
	azd, err := azidentity.NewAzureDeveloperCLICredential(nil)
	add("AzureDeveloperCLICredential", azd, err)
	ps, err := azidentity.NewAzurePowerShellCredential(nil)
	add("AzurePowerShellCredential", ps, err)
	if len(creds) == 0 {
		return nil, errors.New(noCredentialHint + ": " + strings.Join(missing, "; "))
	}
	chain, err := azidentity.NewChainedTokenCredential(creds, nil)
	if err != nil {
		return nil, err
	}
	return &defaultChain{chain: chain, missing: missing}, nil
}

// managedIdentityAnnounced reports whether the host names its managed
// identity endpoint in the environment.
func managedIdentityAnnounced() bool {
	for _, k := range managedIdentityEnv {
		if os.Getenv(k) != "" {
			return true
		}
	}
	return false
}

// defaultChain is the default credential's chain; its error says what
// was not tried, and what to set.
type defaultChain struct {
	chain   *azidentity.ChainedTokenCredential
	missing []string
}

// GetToken implements azcore.TokenCredential.
func (d *defaultChain) GetToken(ctx context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	tok, err := d.chain.GetToken(ctx, o)
	if err != nil && ctx.Err() == nil {
		msg := noCredentialHint + ": " + err.Error()
		if len(d.missing) > 0 {
			msg += "; " + strings.Join(d.missing, "; ")
		}
		return tok, &chainError{msg: msg, err: err}
	}
	return tok, err
}

// chainError is a failure of the default chain, worded with the hint.
type chainError struct {
	msg string
	err error
}

func (e *chainError) Error() string { return e.msg }
func (e *chainError) Unwrap() error { return e.err }
