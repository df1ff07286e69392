package httpadapter

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

func TestNewTransport(t *testing.T) {
	tr := NewTransport()
	dt := http.DefaultTransport.(*http.Transport)
	require.NotSame(t, dt, tr)
	assert.Equal(t, DefaultMaxIdleConnsPerHost, tr.MaxIdleConnsPerHost)
	assert.Zero(t, tr.MaxIdleConns, "no total idle limit")
	assert.Equal(t, DefaultIdleConnTimeout, tr.IdleConnTimeout)
	assert.Equal(t, DefaultResponseHeaderTimeout, tr.ResponseHeaderTimeout)
	assert.NotNil(t, tr.Proxy, "proxy from the environment kept")
	assert.True(t, tr.ForceAttemptHTTP2)
	assert.Equal(t, dt.TLSHandshakeTimeout, tr.TLSHandshakeTimeout)
	assert.Zero(t, dt.MaxIdleConnsPerHost, "http.DefaultTransport is not changed")
	assert.Zero(t, dt.ResponseHeaderTimeout, "http.DefaultTransport is not changed")
}

func TestClient(t *testing.T) {
	mine := &http.Client{}
	c := New(Config{HTTPClient: mine})
	assert.Same(t, mine, c.Client())
	assert.Nil(t, c.OwnTransport(), "a caller's client is not the adapter's to close")
	c = New(Config{})
	require.NotNil(t, c.OwnTransport())
	assert.Same(t, c.OwnTransport(), c.Client().Transport)
}

// TestResponseHeaderTimeout: a server that takes the request and never
// answers fails the request with a retryable ERR_TIMEOUT once the header
// timeout passes (shortened here).
func TestResponseHeaderTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	c := New(Config{})
	defer c.Close()
	c.OwnTransport().ResponseHeaderTimeout = 50 * time.Millisecond
	resp, err := c.Client().Get(srv.URL)
	if err == nil {
		_ = resp.Body.Close()
	}
	require.Error(t, err)
	e := TransportError("p", err)
	assert.Equal(t, errcodes.Timeout, e.Code)
	assert.True(t, e.Retryable)
}
