package openai

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
	"github.com/cloudinfer/cloudinfer/providers/providertest"
)

// TestConnectionPool: without an HTTPClient the adapter keeps enough idle
// connections for concurrent calls, bounds the wait for response headers,
// and its Close closes its own transport's idle connections only (not
// http.DefaultTransport's).
func TestConnectionPool(t *testing.T) {
	providertest.RunPool(t, providertest.PoolHarness{
		NewAdapter: func(t *testing.T, base string, hc *http.Client) cloudreq.Adapter {
			a, err := New(Options{BaseURL: base, HTTPClient: hc})
			require.NoError(t, err)
			t.Cleanup(func() { _ = a.Close() })
			return a
		},
		Request: func() *cloudreq.CloudRequest { return invokeReq(`{}`) },
		Core:    func(a cloudreq.Adapter) *httpadapter.Core { return a.(*Adapter).core },
	})
}
