package sagemaker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
	"github.com/cloudinfer/cloudinfer/providers/providertest"
)

// countingProvider counts its Retrieve calls; its credentials never
// expire.
type countingProvider struct{ n atomic.Int64 }

func (p *countingProvider) Retrieve(context.Context) (aws.Credentials, error) {
	p.n.Add(1)
	return aws.Credentials{AccessKeyID: "AKIDTESTTESTTEST", SecretAccessKey: "secret", Source: "counting"}, nil
}

// okServer answers every request 200 with a small body.
func okServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestCredentialsCached: a provider given in Options.Credentials or in
// Options.Config is cached, so 200 concurrent requests retrieve
// credentials once, not once each.
func TestCredentialsCached(t *testing.T) {
	const calls = 200
	for _, path := range []string{"Credentials", "Config"} {
		t.Run(path, func(t *testing.T) {
			srv := okServer(t)
			p := &countingProvider{}
			opts := Options{BaseEndpoint: srv.URL, AllowInsecureHTTP: true, HTTPClient: &http.Client{Transport: &http.Transport{}}}
			if path == "Credentials" {
				opts.Region, opts.Credentials = "us-east-1", p
			} else {
				opts.Config = &aws.Config{Region: "us-east-1", Credentials: p}
			}
			ad, err := New(context.Background(), opts)
			require.NoError(t, err)
			t.Cleanup(func() { ad.opts.HTTPClient.(*http.Client).CloseIdleConnections() })
			var wg sync.WaitGroup
			var failed atomic.Int64
			for range calls {
				wg.Go(func() {
					if _, err := ad.Invoke(context.Background(), invokeCall("ep", `{}`)); err != nil && failed.Add(1) == 1 {
						t.Errorf("invoke: %v", err)
					}
				})
			}
			wg.Wait()
			require.Zero(t, failed.Load())
			assert.EqualValues(t, 1, p.n.Load(), "Retrieve calls for %d requests", calls)
		})
	}
}

// TestCredentialsCacheKept: a provider that is a cache already is used as
// it is, and anonymous credentials are not wrapped.
func TestCredentialsCacheKept(t *testing.T) {
	c := aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider("AKIDTESTTESTTEST", "secret", ""))
	assert.Same(t, c, cached(c).(credentialSource).CredentialsProvider)
	assert.True(t, aws.IsCredentialsProvider(cached(c), credentials.StaticCredentialsProvider{}), "the SDK still sees the provider held")
	assert.Equal(t, aws.AnonymousCredentials{}, cached(aws.AnonymousCredentials{}))
	assert.Nil(t, cached(nil))
	ad, err := New(context.Background(), Options{Region: "us-east-1", Credentials: c, BaseEndpoint: "https://example.invalid"})
	require.NoError(t, err)
	assert.Same(t, c, ad.client.Options().Credentials.(credentialSource).CredentialsProvider)
}

// TestCredentialsFailure: a credentials provider that fails is reported as
// ERR_UNAUTHENTICATED, not retried and without the provider's words; one
// whose service cannot be reached keeps the transport's code. No request
// reaches the endpoint.
func TestCredentialsFailure(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	for _, tc := range []struct {
		name      string
		err       error
		code      errcodes.Code
		retryable bool
	}{
		{"provider refuses", errors.New("no EC2 IMDS role found at /secret/path"), errcodes.Unauthenticated, false},
		{"service unreachable", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, errcodes.Unavailable, true},
		{"service unreachable, in the provider's words", fmt.Errorf("refreshing from /secret/path: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), errcodes.Unavailable, true},
		{"service unreachable, by URL", fmt.Errorf("container credentials from /secret/path: %w", &url.Error{Op: "Get", URL: "http://169.254.170.2/v2/credentials?token=q-secret", Err: io.ErrUnexpectedEOF}), errcodes.Unavailable, true},
		{"service slow", fmt.Errorf("refreshing from /secret/path: %w", context.DeadlineExceeded), errcodes.Timeout, true},
		{"empty cache file", fmt.Errorf("reading SSO token /secret/path: %w", io.EOF), errcodes.Unauthenticated, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return aws.Credentials{}, tc.err })
			ad, err := New(context.Background(), Options{Region: "us-east-1", Credentials: p, BaseEndpoint: srv.URL, AllowInsecureHTTP: true})
			require.NoError(t, err)
			_, err = testClient(t, ad).Invoke(context.Background(), &cloudreq.CloudRequest{
				Provider: cloudreq.ProviderAWS, Service: cloudreq.ServiceSageMaker, Action: cloudreq.ActionInvoke,
				Target: cloudreq.Target{Endpoint: "ep"}, Payload: cloudreq.Payload{Body: []byte(`{}`)},
			})
			var e *errcodes.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tc.code, e.Code)
			assert.Equal(t, tc.retryable, e.Retryable)
			assert.Contains(t, e.Error(), "credentials")
			assert.NotContains(t, e.Error(), "/secret/path")
			assert.NotContains(t, e.Error(), "q-secret")
			assert.ErrorIs(t, err, tc.err)
		})
	}
	assert.Zero(t, hits.Load())
}

// newPoolAdapter returns an adapter for base with static credentials and
// hc as its HTTPClient (nil: none).
func newPoolAdapter(t *testing.T, base string, hc *http.Client, optFns ...func(*Options)) *Adapter {
	t.Helper()
	opts := Options{
		Region:            "us-east-1",
		Credentials:       credentials.NewStaticCredentialsProvider("AKIDTESTTESTTEST", "secret", ""),
		BaseEndpoint:      base,
		AllowInsecureHTTP: true,
	}
	if hc != nil {
		opts.HTTPClient = hc
	}
	ad, err := New(context.Background(), opts, optFns...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ad.Close() })
	return ad
}

// TestConnectionPool: without an HTTPClient the SDK's default client keeps
// enough idle connections for concurrent calls (it keeps 10 per host by
// itself), and Close closes its idle connections only.
func TestConnectionPool(t *testing.T) {
	providertest.RunPool(t, providertest.PoolHarness{
		NewAdapter: func(t *testing.T, base string, hc *http.Client) cloudreq.Adapter {
			return newPoolAdapter(t, base, hc)
		},
		Request: func() *cloudreq.CloudRequest { return invokeCall("ep", `{}`).Request },
	})
}

// ownTransport returns the transport of the adapter's own client.
func ownTransport(t *testing.T, ad *Adapter) *http.Transport {
	t.Helper()
	ob, ok := ad.client.Options().HTTPClient.(ownBody)
	require.True(t, ok)
	hc, ok := ob.next.(*http.Client)
	require.True(t, ok)
	tr, ok := hc.Transport.(*http.Transport)
	require.True(t, ok)
	return tr
}

// TestOwnTransport: the adapter's own client bounds the wait for response
// headers, and an endpoint that never answers fails the call with a
// retryable ERR_TIMEOUT (the bound is shortened here). A client set by
// ClientOptions is the caller's.
func TestOwnTransport(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	ad := newPoolAdapter(t, srv.URL, nil)
	require.NotNil(t, ad.own)
	tr := ownTransport(t, ad)
	require.Same(t, ad.own, tr, "Close reaches the transport that sends")
	assert.Equal(t, ResponseHeaderTimeout, tr.ResponseHeaderTimeout)
	assert.Equal(t, httpadapter.DefaultMaxIdleConnsPerHost, tr.MaxIdleConnsPerHost)
	assert.Zero(t, tr.MaxIdleConns)
	assert.Equal(t, awshttp.DefaultHTTPTransportMaxConnsPerHost, tr.MaxConnsPerHost, "the SDK's other settings are kept")

	tr.ResponseHeaderTimeout = 50 * time.Millisecond
	_, err := testClient(t, ad).Invoke(context.Background(), invokeCall("ep", `{}`).Request)
	require.Error(t, err)
	assert.ErrorIs(t, err, errcodes.Timeout)
	assert.True(t, errcodes.From(err).Retryable)

	mine := &http.Client{}
	b := newPoolAdapter(t, srv.URL, nil, func(o *Options) {
		o.ClientOptions = append(o.ClientOptions, func(o *sagemakerruntime.Options) { o.HTTPClient = mine })
	})
	assert.Nil(t, b.own, "a client set by ClientOptions is the caller's")
	c := newPoolAdapter(t, srv.URL, nil, func(o *Options) { o.Config = &aws.Config{Region: "us-east-1", HTTPClient: mine} })
	assert.Nil(t, c.own, "a client in Options.Config is the caller's")
}

// TestOwnClientReadTimeout: the adapter's own client keeps the read
// timeout the SDK resolved for its default client: a body that stalls
// fails with the SDK's ResponseTimeoutError, while one that keeps
// sending is never cut.
func TestOwnClientReadTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		for range 5 {
			_, _ = io.WriteString(w, "x")
			w.(http.Flusher).Flush()
			time.Sleep(10 * time.Millisecond)
		}
		if r.URL.Path == "/stall" {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	hc, tr := ownClient(awshttp.NewBuildableClient().WithReadTimeout(time.Second))
	t.Cleanup(tr.CloseIdleConnections)
	assert.Same(t, tr, hc.Transport)

	resp, err := hc.Get(srv.URL + "/progress")
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err, "a progressing body is not cut")
	assert.Equal(t, "xxxxx", string(b))

	resp, err = hc.Get(srv.URL + "/stall")
	require.NoError(t, err)
	_, err = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	var rte *awshttp.ResponseTimeoutError
	assert.ErrorAs(t, err, &rte)
}
