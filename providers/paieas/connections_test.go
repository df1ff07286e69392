package paieas

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
	"github.com/cloudinfer/cloudinfer/providers/providertest"
)

// TestConnectionPool: without an HTTPClient the adapter keeps enough idle
// connections for concurrent calls, and its Close closes its own
// transport's idle connections only (not http.DefaultTransport's).
func TestConnectionPool(t *testing.T) {
	providertest.RunPool(t, providertest.PoolHarness{
		NewAdapter: func(t *testing.T, base string, hc *http.Client) cloudreq.Adapter {
			a, err := New(Options{Endpoint: base, HTTPClient: hc})
			require.NoError(t, err)
			t.Cleanup(func() { _ = a.Close() })
			return a
		},
		Request: func() *cloudreq.CloudRequest { return invokeReq(`{}`) },
	})
}

// TestOwnTransport: the adapter's own transport bounds the wait for
// response headers, and a server that never answers fails the call with a
// retryable ERR_TIMEOUT (the bound is shortened here).
func TestOwnTransport(t *testing.T) {
	release := make(chan struct{})
	a, srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) })
	require.NotNil(t, a.own, "no HTTPClient: the adapter builds its transport")
	assert.Same(t, a.own, a.client.Transport)
	assert.Equal(t, httpadapter.DefaultResponseHeaderTimeout, a.own.ResponseHeaderTimeout)
	assert.Equal(t, httpadapter.DefaultMaxIdleConnsPerHost, a.own.MaxIdleConnsPerHost)

	a.own.ResponseHeaderTimeout = 50 * time.Millisecond
	_, err := client(t, a).Invoke(ctx(t), invokeReq(`{}`))
	require.Error(t, err)
	assert.ErrorIs(t, err, errcodes.Timeout)
	assert.True(t, errcodes.As(err).Retryable)

	hc := &http.Client{}
	b, err := New(Options{Endpoint: srv.URL, HTTPClient: hc})
	require.NoError(t, err)
	assert.Nil(t, b.own, "a caller's client is not the adapter's")
	assert.Same(t, hc, b.client)
}
