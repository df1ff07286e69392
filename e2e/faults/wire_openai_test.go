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
	"github.com/cloudinfer/cloudinfer/providers/openai"
)

// openAIKey is a sentinel API key: it must never appear in an error or a log.
const openAIKey = "sentinel-openai-key-Wd7c2QmZ"

func init() { moreBackends = append(moreBackends, openAIBackend) }

func openAIBackend() backend {
	return backend{
		name: "openai",
		applies: func(a answer) bool {
			// 450 is PAI-EAS's queue-full status and 530 SageMaker's
			// InternalDependencyException: an OpenAI-compatible server
			// sends neither.
			return a.status != 450 && a.status != 530
		},
		start: func(t testing.TB, env startEnv) cloudreq.Adapter {
			base, hc := serveEnv(t, openAIWire{}, env)
			return newOpenAI(t, base, hc)
		},
		newAdapter: func(t testing.TB, base string, hc *http.Client) cloudreq.Adapter {
			return newOpenAI(t, base, hc)
		},
		request: func(stream bool) *cloudreq.CloudRequest {
			if stream {
				return &cloudreq.CloudRequest{
					Provider: cloudreq.ProviderOpenAI, Service: cloudreq.ServiceOpenAICompatible, Action: cloudreq.ActionGenerate,
					Target:   cloudreq.Target{Model: "m"},
					Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "hello"}}, MaxTokens: 8},
				}
			}
			return &cloudreq.CloudRequest{
				Provider: cloudreq.ProviderOpenAI, Service: cloudreq.ServiceOpenAICompatible, Action: cloudreq.ActionInvoke,
				Target:  cloudreq.Target{Model: "m"},
				Payload: cloudreq.Payload{Body: []byte(`{"model":"m","messages":[{"role":"user","content":"hello"}]}`)},
			}
		},
	}
}

// newOpenAI returns an OpenAI-compatible adapter for base with the
// sentinel key.
func newOpenAI(t testing.TB, base string, hc *http.Client, fns ...func(*openai.Options)) *openai.Adapter {
	t.Helper()
	ad, err := openai.New(openai.Options{
		BaseURL: base, APIKey: openAIKey, HTTPClient: hc,
		AllowInsecureHTTP: strings.HasPrefix(base, "http:"),
	}, fns...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ad.Close() })
	return ad
}

// openAIWire answers as vLLM's OpenAI-compatible server does.
type openAIWire struct{}

func (openAIWire) isStream(_ *http.Request, body []byte) bool {
	return bytes.Contains(body, []byte(`"stream":true`))
}

// vllmErrorType is the exception class vLLM names in its error envelope.
func vllmErrorType(status int) string {
	switch status {
	case 400, 413, 422:
		return "BadRequestError"
	case 401:
		return "AuthenticationError"
	case 403:
		return "PermissionDeniedError"
	case 404:
		return "NotFoundError"
	case 429:
		return "RateLimitError"
	case 503:
		return "ServiceUnavailableError"
	}
	return "InternalServerError"
}

func (openAIWire) writeError(w http.ResponseWriter, a answer) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", "req-fault-1")
	if a.kind == kindNotReady {
		w.WriteHeader(503)
		_, _ = io.WriteString(w, `{"error":"Model m is currently loading","estimated_time":20.0}`)
		return
	}
	w.WriteHeader(a.status)
	_, _ = fmt.Fprintf(w, `{"error":{"message":"injected %d","type":%q,"param":null,"code":%d}}`, a.status, vllmErrorType(a.status), a.status)
}

func (openAIWire) writeOK(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
}

func (openAIWire) streamHead(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
}

func (openAIWire) chunk(w io.Writer, i int) error {
	_, err := io.WriteString(w, sseChunk(i))
	return err
}

func (openAIWire) finish(w io.Writer) error {
	_, err := io.WriteString(w, sseFinish)
	return err
}

func (openAIWire) streamError(w io.Writer) error {
	_, err := io.WriteString(w, "data: {\"error\":{\"message\":\"the model stream broke\",\"type\":\"InternalServerError\",\"code\":500}}\n\ndata: [DONE]\n\n")
	return err
}
