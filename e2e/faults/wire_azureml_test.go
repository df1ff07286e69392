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
	"github.com/cloudinfer/cloudinfer/providers/azureml"
)

// azureKey is a sentinel endpoint key: it must never appear in an error
// or a log.
const azureKey = "sentinel-azure-key-Pe4m6JuY"

func init() { moreBackends = append(moreBackends, azuremlBackend) }

func azuremlBackend() backend {
	return backend{
		name: "azureml",
		applies: func(a answer) bool {
			// Azure ML sends neither PAI-EAS's 450 nor SageMaker's 530.
			return a.status != 450 && a.status != 530
		},
		start: func(t testing.TB, env startEnv) cloudreq.Adapter {
			base, hc := serveEnv(t, azuremlWire{}, env)
			return newAzureML(t, base, hc)
		},
		newAdapter: func(t testing.TB, base string, hc *http.Client) cloudreq.Adapter {
			return newAzureML(t, base, hc)
		},
		request: func(stream bool) *cloudreq.CloudRequest {
			if stream {
				return &cloudreq.CloudRequest{
					Provider: cloudreq.ProviderAzure, Service: cloudreq.ServiceAzureML, Action: cloudreq.ActionGenerate,
					Target:   cloudreq.Target{Endpoint: "ep"},
					Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "hello"}}, MaxTokens: 8},
				}
			}
			return &cloudreq.CloudRequest{
				Provider: cloudreq.ProviderAzure, Service: cloudreq.ServiceAzureML, Action: cloudreq.ActionInvoke,
				Target:  cloudreq.Target{Endpoint: "ep"},
				Payload: cloudreq.Payload{Body: []byte(`{"input_data":{"input_string":["hello"]}}`)},
			}
		},
	}
}

// newAzureML returns an Azure ML /score adapter for base with the
// sentinel key.
func newAzureML(t testing.TB, base string, hc *http.Client, fns ...func(*azureml.Options)) *azureml.Adapter {
	t.Helper()
	ad, err := azureml.New(azureml.Options{
		EndpointURL: base + "/{endpoint}", Key: azureKey, HTTPClient: hc,
		AllowInsecureHTTP: strings.HasPrefix(base, "http:"),
	}, fns...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ad.Close() })
	return ad
}

// azuremlWire answers as an Azure ML managed online endpoint does:
// {"error":{"code","message"}} bodies, 424 with the model's status in
// headers, SSE from chat deployments.
type azuremlWire struct{}

func (azuremlWire) isStream(_ *http.Request, body []byte) bool {
	return bytes.Contains(body, []byte(`"stream":true`))
}

func (azuremlWire) writeError(w http.ResponseWriter, a answer) {
	status, code := a.status, http.StatusText(a.status)
	code = strings.ReplaceAll(code, " ", "")
	if a.kind == kindNotReady {
		status, code = 503, "ModelNotReady"
	}
	if status == 424 {
		w.Header().Set("ms-azureml-model-error-statuscode", "500")
		w.Header().Set("ms-azureml-model-error-reason", "model_error")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-request-id", "req-fault-1")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"error":{"code":%q,"message":"injected %d"}}`, code, status)
}

func (azuremlWire) writeOK(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"output":"ok"}`)
}

func (azuremlWire) streamHead(w http.ResponseWriter) { openAIWire{}.streamHead(w) }

func (azuremlWire) chunk(w io.Writer, i int) error { return openAIWire{}.chunk(w, i) }

func (azuremlWire) finish(w io.Writer) error { return openAIWire{}.finish(w) }

func (azuremlWire) streamError(w io.Writer) error { return openAIWire{}.streamError(w) }
