package cloudreq_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// echoAdapter sends one request with a credential header and turns the
// server's answer into an error carrying its body as the message, as an
// adapter does with a provider's error.
type echoAdapter struct {
	url    string
	header string
	value  string
}

func (a *echoAdapter) Describe() cloudreq.Description {
	return cloudreq.Description{Provider: "openai", Service: "openai-compatible", Actions: []string{cloudreq.ActionInvoke}}
}

func (a *echoAdapter) Invoke(ctx context.Context, _ *cloudreq.Call) (*cloudreq.CloudResponse, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url, http.NoBody)
	if err != nil {
		return nil, err
	}
	req.Header.Set(a.header, a.value)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	e := errcodes.New(errcodes.Unauthenticated, string(b))
	e.RequestID = resp.Header.Get("X-Request-Id")
	e.Details = map[string]string{"echo": string(b)}
	return nil, e
}

func TestCredentialsQuotedBackAreRedacted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var all string
		for _, k := range []string{"Authorization", "X-Amz-Security-Token", "Api-Key"} {
			all += r.Header.Get(k) + " "
		}
		w.Header().Set("X-Request-Id", all)
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = fmt.Fprintf(w, "bad credentials: %s", all)
	}))
	defer srv.Close()
	defer http.DefaultClient.CloseIdleConnections()
	for _, tc := range []struct {
		header, value string
		secrets       []string
	}{
		{"Authorization", "Bearer sk-secret-0123456789", []string{"sk-secret-0123456789"}},
		{"Authorization", "raw-eas-token-0123456789", []string{"raw-eas-token-0123456789"}},
		{"Authorization", "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/sagemaker/aws4_request, SignedHeaders=host, Signature=0123abcd4567ef89", []string{"0123abcd4567ef89"}},
		{"X-Amz-Security-Token", "session-token-0123456789", []string{"session-token-0123456789"}},
		{"Api-Key", "azure-key-0123456789", []string{"azure-key-0123456789"}},
	} {
		t.Run(tc.header, func(t *testing.T) {
			c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{&echoAdapter{url: srv.URL, header: tc.header, value: tc.value}}})
			require.NoError(t, err)
			_, err = c.Invoke(context.Background(), req())
			var e *errcodes.Error
			require.ErrorAs(t, err, &e)
			assert.Contains(t, e.Message, "[REDACTED]")
			for _, s := range tc.secrets {
				assert.NotContains(t, e.Error(), s)
				assert.NotContains(t, e.RequestID, s)
				assert.NotContains(t, e.Details["echo"], s)
			}
		})
	}
}

// TestQuotedBearerTokensAreRedacted: a bearer token quoted in an error is
// redacted even when the transport was not traced (gRPC).
func TestQuotedBearerTokensAreRedacted(t *testing.T) {
	fake := failing(errcodes.New(errcodes.Unauthenticated, "invalid credentials: Bearer ya29.sentinel-token-0123"))
	_, err := client(t, fake).Invoke(context.Background(), req())
	var e *errcodes.Error
	require.ErrorAs(t, err, &e)
	assert.NotContains(t, e.Error(), "ya29.sentinel-token-0123")
	assert.Contains(t, e.Message, "Bearer [REDACTED]")
}

// namingAdapter sends its own credential in a header the client does not
// know, and the request's headers, and names its credential
// (CredentialSource) instead of having the transport's headers recorded.
type namingAdapter struct {
	echoAdapter
	secret string
	panics bool
}

func (a *namingAdapter) Credentials() []string {
	if a.panics {
		panic("credentials unavailable")
	}
	return []string{a.secret}
}

func (a *namingAdapter) Invoke(ctx context.Context, call *cloudreq.Call) (*cloudreq.CloudResponse, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url, http.NoBody)
	if err != nil {
		return nil, err
	}
	req.Header = call.Request.Header.Clone()
	req.Header.Set("X-Custom-Auth", a.secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return nil, errcodes.New(errcodes.Unauthenticated, string(b))
}

func TestCredentialSourceSecretsAreRedacted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = fmt.Fprintf(w, "bad credentials: %s / %s", r.Header.Get("X-Custom-Auth"), r.Header.Get("Api-Key"))
	}))
	defer srv.Close()
	defer http.DefaultClient.CloseIdleConnections()
	const named, inRequest = "named-secret-0123456789", "request-key-0123456789"
	r := req()
	r.Header = http.Header{"Api-Key": {inRequest}}

	a := &namingAdapter{echoAdapter: echoAdapter{url: srv.URL}, secret: named}
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{a}})
	require.NoError(t, err)
	_, err = c.Invoke(context.Background(), r)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bad credentials: [REDACTED] / [REDACTED]")
	assert.NotContains(t, err.Error(), named)
	assert.NotContains(t, err.Error(), inRequest)

	// A CredentialSource that panics costs the redaction of its own
	// secrets only; the call still ends with the attempt's error.
	a.panics = true
	_, err = c.Invoke(context.Background(), r)
	assert.Equal(t, errcodes.Unauthenticated, errcodes.Of(err))
	assert.NotContains(t, err.Error(), inRequest)
}
