package faults

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/providers/paieas"
)

// easToken is a sentinel EAS token (sent plain, as Bearer, or as the key
// of the EAS signature): it must never appear in an error or a log.
const easToken = "sentinel-eas-token-Nv5b8XkQ"

func init() { moreBackends = append(moreBackends, paieasBackend) }

func paieasBackend() backend {
	return backend{
		name: "paieas",
		applies: func(a answer) bool {
			// EAS gateways send neither SageMaker's 530 nor a model
			// container's 424.
			return a.status != 530 && a.status != 424
		},
		// A plain 503 is not EAS's "no ready instance" answer (the
		// model-not-ready row sends that): ERR_UNAVAILABLE, as elsewhere.
		start: func(t testing.TB, env startEnv) cloudreq.Adapter {
			base, hc := serveEnv(t, paieasWire{}, env)
			return newPAIEAS(t, base, hc)
		},
		newAdapter: func(t testing.TB, base string, hc *http.Client) cloudreq.Adapter {
			return newPAIEAS(t, base, hc)
		},
		request: func(stream bool) *cloudreq.CloudRequest {
			if stream {
				return &cloudreq.CloudRequest{
					Provider: cloudreq.ProviderAlibaba, Service: cloudreq.ServicePAIEAS, Action: cloudreq.ActionGenerate,
					Target:   cloudreq.Target{Endpoint: "svc"},
					Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "hello"}}, MaxTokens: 8},
				}
			}
			return &cloudreq.CloudRequest{
				Provider: cloudreq.ProviderAlibaba, Service: cloudreq.ServicePAIEAS, Action: cloudreq.ActionInvoke,
				Target:  cloudreq.Target{Endpoint: "svc"},
				Payload: cloudreq.Payload{Body: []byte(`{"prompt":"hello"}`)},
			}
		},
	}
}

// newPAIEAS returns a PAI-EAS adapter for base with the sentinel token.
func newPAIEAS(t testing.TB, base string, hc *http.Client, fns ...func(*paieas.Options)) *paieas.Adapter {
	t.Helper()
	ad, err := paieas.New(paieas.Options{
		Endpoint: base, Token: easToken, HTTPClient: hc,
		AllowInsecureHTTP: strings.HasPrefix(base, "http:"),
	}, fns...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ad.Close() })
	return ad
}

// paieasWire answers as an EAS gateway does: plain-text errors (450 when
// the queue is full, 503 with no ready instance), and SSE from the
// OpenAI-compatible model server behind /v1 sub-paths.
type paieasWire struct{}

func (paieasWire) isStream(_ *http.Request, body []byte) bool {
	return bytes.Contains(body, []byte(`"stream":true`))
}

func (paieasWire) writeError(w http.ResponseWriter, a answer) {
	status, msg := a.status, fmt.Sprintf("injected %d", a.status)
	switch {
	case a.kind == kindNotReady:
		status, msg = 503, "no ready instance for service svc"
	case a.status == 450:
		msg = "request is discarded because the queue is full"
	case a.status == 401:
		msg = "Authorization Failed"
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Request-Id", "req-fault-1")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg)
}

func (paieasWire) writeOK(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"response":"ok"}`)
}

func (paieasWire) streamHead(w http.ResponseWriter) { openAIWire{}.streamHead(w) }

func (paieasWire) chunk(w io.Writer, i int) error { return openAIWire{}.chunk(w, i) }

func (paieasWire) finish(w io.Writer) error { return openAIWire{}.finish(w) }

func (paieasWire) streamError(w io.Writer) error { return openAIWire{}.streamError(w) }
