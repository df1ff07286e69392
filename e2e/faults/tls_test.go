package faults

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
	"google.golang.org/api/option"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/providers/azureml"
	"github.com/cloudinfer/cloudinfer/providers/openai"
	"github.com/cloudinfer/cloudinfer/providers/paieas"
	"github.com/cloudinfer/cloudinfer/providers/sagemaker"
	"github.com/cloudinfer/cloudinfer/providers/vertex"
)

// tlsServer serves h over TLS with httptest's certificate (valid for
// 127.0.0.1), configured by cfg, and counts TLS handshakes.
func tlsServer(t *testing.T, h http.Handler, cfg func(*tls.Config)) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hellos atomic.Int32
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		hellos.Add(1)
		return nil, nil
	}}
	if cfg != nil {
		cfg(srv.TLS)
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, &hellos
}

// trusting returns an HTTP client that trusts srv's certificate, with Go's
// default TLS settings otherwise (no MinVersion of its own).
func trusting(t *testing.T, srv *httptest.Server) *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// newClient wraps ad in a cloudreq client with fast retries.
func newClient(t *testing.T, ad cloudreq.Adapter, fns ...func(*cloudreq.Options)) *cloudreq.Client {
	t.Helper()
	o := cloudreq.Options{Adapters: []cloudreq.Adapter{ad}}
	fastRetries(&o)
	for _, f := range fns {
		f(&o)
	}
	c, err := cloudreq.New(o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestTLSWorks: each HTTP adapter speaks to a TLS endpoint it trusts
// (the positive control for the tests below).
func TestTLSWorks(t *testing.T) {
	for _, b := range httpBackends() {
		t.Run(b.name, func(t *testing.T) {
			rec := &recorder{}
			srv, _ := tlsServer(t, serveWire(wireOf(b), rec), nil)
			c := newClient(t, b.newAdapter(t, srv.URL, trusting(t, srv)))
			_, err := c.Invoke(context.Background(), b.request(false))
			require.NoError(t, err)
			assert.Equal(t, 1, rec.count())
		})
	}
}

// wireOf returns b's wire.
func wireOf(b backend) wire {
	switch b.name {
	case "sagemaker":
		return sagemakerWire{}
	case "paieas":
		return paieasWire{}
	case "azureml":
		return azuremlWire{}
	}
	return openAIWire{}
}

// TestCertificateErrorsNotRetried: a certificate the client does not
// trust fails the call with ERR_UNAUTHENTICATED after one handshake —
// retrying cannot fix it — and nothing reaches the handler.
func TestCertificateErrorsNotRetried(t *testing.T) {
	for _, b := range httpBackends() {
		t.Run(b.name, func(t *testing.T) {
			rec := &recorder{}
			srv, hellos := tlsServer(t, serveWire(wireOf(b), rec), nil)
			tr := &http.Transport{} // the system roots: httptest's certificate is unknown
			t.Cleanup(tr.CloseIdleConnections)
			c := newClient(t, b.newAdapter(t, srv.URL, &http.Client{Transport: tr}))
			for _, stream := range modes() {
				hellos.Store(0)
				var err error
				if stream {
					_, err = c.Stream(context.Background(), b.request(true))
				} else {
					_, err = c.Invoke(context.Background(), b.request(false))
				}
				var e *errcodes.Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, errcodes.Unauthenticated, e.Code, "%s: %v", mode(stream), err)
				assert.False(t, e.Retryable)
				assert.Equal(t, int32(1), hellos.Load(), "%s: one handshake, no retry", mode(stream))
			}
			assert.Equal(t, 0, rec.count())
		})
	}
}

// TestTLSBelow12Refused: a server that offers nothing newer than TLS 1.1
// is refused by every adapter (Go's client minimum, TLS 1.2, is kept), and
// the refusal is not retried.
func TestTLSBelow12Refused(t *testing.T) {
	for _, b := range httpBackends() {
		t.Run(b.name, func(t *testing.T) {
			rec := &recorder{}
			srv, hellos := tlsServer(t, serveWire(wireOf(b), rec), func(c *tls.Config) {
				c.MaxVersion = tls.VersionTLS11
			})
			c := newClient(t, b.newAdapter(t, srv.URL, trusting(t, srv)))
			_, err := c.Invoke(context.Background(), b.request(false))
			var e *errcodes.Error
			require.ErrorAs(t, err, &e)
			assert.Contains(t, e.Error(), "protocol version", "%v", err)
			assert.False(t, e.Retryable, "%v", err)
			assert.Equal(t, int32(1), hellos.Load(), "one handshake, no retry")
			assert.Equal(t, 0, rec.count())
		})
	}
}

// TestPlainHTTPCredentialsRefused: an adapter with credentials refuses a
// plain-http endpoint unless AllowInsecureHTTP is set (for the emulator):
// the credential never leaves the process.
func TestPlainHTTPCredentialsRefused(t *testing.T) {
	for _, b := range httpBackends() {
		t.Run(b.name, func(t *testing.T) {
			rec := &recorder{}
			base, hc := serveHTTP(t, serveWire(wireOf(b), rec), false)
			ad, err := insecureRefused(t, b.name, base, hc)
			if err == nil {
				c := newClient(t, ad)
				_, err = c.Invoke(context.Background(), b.request(false))
			}
			var e *errcodes.Error
			require.ErrorAs(t, err, &e, "plain http with credentials must be refused")
			assert.Contains(t, strings.ToLower(e.Error()), "http", "%v", err)
			assert.Equal(t, 0, rec.count(), "nothing was sent")
		})
	}
}

// redirectTo answers every request with a 307 to target (the same path).
func redirectTo(target string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		http.Redirect(w, r, target+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}
}

// TestNoCredentialsOnCrossHostRedirect: an endpoint that redirects to
// another host (localhost instead of 127.0.0.1, another port) must not
// receive the credentials: the other host sees no Authorization, session
// token or key, whether or not the redirect is followed.
func TestNoCredentialsOnCrossHostRedirect(t *testing.T) {
	for _, b := range httpBackends() {
		t.Run(b.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []http.Header
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				got = append(got, r.Header.Clone())
				mu.Unlock()
				_, _ = io.Copy(io.Discard, r.Body)
				wireOf(b).writeOK(w)
			}))
			t.Cleanup(other.Close)
			_, port, _ := net.SplitHostPort(other.Listener.Addr().String())
			first := httptest.NewServer(redirectTo("http://localhost:" + port))
			t.Cleanup(first.Close)
			tr := &http.Transport{}
			t.Cleanup(tr.CloseIdleConnections)
			c := newClient(t, b.newAdapter(t, first.URL, &http.Client{Transport: tr}))
			_, _ = c.Invoke(context.Background(), b.request(false))
			mu.Lock()
			defer mu.Unlock()
			for _, h := range got {
				for _, k := range credentialHeaders {
					assert.Empty(t, h.Values(k), "%s forwarded to another host", k)
				}
			}
			t.Logf("the other host got %d requests", len(got))
		})
	}
}

// insecureRefused builds b's adapter for a plain-http base with its
// credentials and without AllowInsecureHTTP; a refusal may come from New
// or from the first request.
func insecureRefused(t *testing.T, name, base string, hc *http.Client) (cloudreq.Adapter, error) {
	t.Helper()
	var ad interface {
		cloudreq.Adapter
		io.Closer
	}
	var err error
	switch name {
	case "sagemaker":
		ad, err = sagemaker.New(context.Background(), sagemaker.Options{
			Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider(awsKeyID, awsSecret, awsSessionToken),
			BaseEndpoint: base, HTTPClient: hc,
		})
	case "openai":
		ad, err = openai.New(openai.Options{BaseURL: base, APIKey: openAIKey, HTTPClient: hc})
	case "paieas":
		ad, err = paieas.New(paieas.Options{Endpoint: base, Token: easToken, HTTPClient: hc})
	case "azureml":
		ad, err = azureml.New(azureml.Options{EndpointURL: base + "/{endpoint}", Key: azureKey, HTTPClient: hc})
	default:
		t.Fatalf("no adapter %q", name)
	}
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = ad.Close() })
	return ad, nil
}

// TestVertexTLS: Vertex over TLS sends its bearer token to a server it
// trusts; a certificate it does not trust, or a server offering only
// TLS 1.1, fails the call after one attempt without retry; plain text
// never carries the token; and a server quoting the token back does not
// put it in the error.
func TestVertexTLS(t *testing.T) {
	b := vertexBackend()
	t.Run("trusted", func(t *testing.T) {
		noLeaks(t)
		rec := &recorder{}
		addr, pool := startVertexFakeTLS(t, rec)
		c := newClient(t, newVertexTLS(t, addr, pool))
		_, err := c.Invoke(context.Background(), b.request(false))
		require.NoError(t, err)
		att := rec.attempts()
		require.Len(t, att, 1)
		assert.Equal(t, "Bearer "+vertexToken, att[0].header.Get("Authorization"))
	})
	t.Run("untrusted-certificate", func(t *testing.T) {
		noLeaks(t)
		rec := &recorder{}
		addr, _ := startVertexFakeTLS(t, rec)
		ac := &attemptCounter{}
		c := newClient(t, newVertexTLS(t, addr, nil), func(o *cloudreq.Options) { o.Observers = []cloudreq.Observer{ac} })
		_, err := c.Invoke(context.Background(), b.request(false))
		var e *errcodes.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, errcodes.Unauthenticated, e.Code, "%v", err)
		assert.False(t, e.Retryable)
		assert.Equal(t, int32(1), ac.n.Load(), "not retried")
		assert.Equal(t, 0, rec.count())
	})
	t.Run("tls-1.1-server", func(t *testing.T) {
		noLeaks(t)
		rec := &recorder{}
		addr, pool := startVertexFakeTLS(t, rec, func(c *tls.Config) { c.MaxVersion = tls.VersionTLS11 })
		ac := &attemptCounter{}
		c := newClient(t, newVertexTLS(t, addr, pool), func(o *cloudreq.Options) { o.Observers = []cloudreq.Observer{ac} })
		_, err := c.Invoke(context.Background(), b.request(false))
		var e *errcodes.Error
		require.ErrorAs(t, err, &e)
		assert.Contains(t, e.Error(), "protocol version", "%v", err)
		assert.False(t, e.Retryable)
		assert.Equal(t, int32(1), ac.n.Load(), "not retried")
		assert.Equal(t, 0, rec.count())
	})
	t.Run("echoed-token", func(t *testing.T) {
		noLeaks(t)
		rec := &recorder{answers: []answer{{echoAuth: true}}}
		addr, pool := startVertexFakeTLS(t, rec)
		var logs strings.Builder
		c := newClient(t, newVertexTLS(t, addr, pool), func(o *cloudreq.Options) {
			o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		})
		_, err := c.Invoke(context.Background(), b.request(false))
		require.Error(t, err)
		assert.Equal(t, errcodes.Unauthenticated, errcodes.Of(err))
		js, _ := json.Marshal(err)
		for _, view := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err), string(js), logs.String()} {
			assert.NotContains(t, view, vertexToken)
		}
	})
	t.Run("plain-text-never-carries-the-token", func(t *testing.T) {
		noLeaks(t)
		rec := &recorder{}
		addr := startVertexFake(t, rec)
		ad, err := vertex.New(context.Background(), vertex.Options{
			Project: "p", Location: "us-central1", Endpoint: addr, Insecure: true,
			ClientOptions: []option.ClientOption{option.WithTokenSource(oauth2.StaticTokenSource(&oauth2.Token{AccessToken: vertexToken}))},
		})
		if err == nil {
			t.Cleanup(func() { _ = ad.Close() })
			_, _ = newClient(t, ad).Invoke(context.Background(), b.request(false))
		}
		for _, a := range rec.attempts() {
			assert.NotContains(t, a.header.Get("Authorization"), vertexToken)
		}
	})
}
