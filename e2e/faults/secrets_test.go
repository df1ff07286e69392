package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/hooks"
	"github.com/cloudinfer/cloudinfer/providers/paieas"
	"github.com/cloudinfer/cloudinfer/telemetry"
)

// credentialHeaders are the request headers that carry credentials.
var credentialHeaders = []string{"Authorization", "X-Amz-Security-Token", "Api-Key", "X-Api-Key"}

// echoed is every credential the server received, as it was sent.
func echoed(h http.Header) string {
	var parts []string
	for _, k := range credentialHeaders {
		for _, v := range h.Values(k) {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, "; ")
}

// echoAnswer is the worst server: it quotes the credentials it received
// in its error, in the shapes every adapter reads (a JSON message, an
// error object, the X-Amzn-ErrorType SageMaker needs, plain text).
func echoAnswer(status int) answer {
	return answer{raw: func(w http.ResponseWriter, r *http.Request) {
		msg := "invalid credentials: " + echoed(r.Header)
		body, _ := json.Marshal(map[string]any{
			"message": msg,
			"error":   map[string]any{"message": msg, "type": "invalid_request_error", "code": "invalid_api_key"},
		})
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-ErrorType", "UnrecognizedClientException")
		w.Header().Set("X-Request-Id", msg)
		w.Header().Set("X-Amzn-RequestId", msg)
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}}
}

// echoStreamAnswer opens a stream and sends the provider's in-stream
// error event quoting the credentials received.
func echoStreamAnswer(b backend) answer {
	return answer{raw: func(w http.ResponseWriter, r *http.Request) {
		msg := "invalid credentials: " + echoed(r.Header)
		ev, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "code": 401}})
		if b.name == "sagemaker" {
			sagemakerWire{}.streamHead(w)
			_ = payloadPart(w, []byte("data: "+string(ev)+"\n\n"))
			return
		}
		openAIWire{}.streamHead(w)
		_, _ = fmt.Fprintf(w, "data: %s\n\n", ev)
	}}
}

// sigV4Signature extracts the signature of a SigV4 Authorization header.
var sigV4Signature = regexp.MustCompile(`Signature=([0-9a-f]+)`)

// secretsSeen returns the secrets of one attempt: the backend's sentinel
// credentials and every credential value the server received (Bearer
// tokens, EAS signatures, the SigV4 signature and session token).
func secretsSeen(h http.Header, sentinels []string) []string {
	out := append([]string(nil), sentinels...)
	for _, k := range credentialHeaders {
		for _, v := range h.Values(k) {
			if m := sigV4Signature.FindStringSubmatch(v); m != nil {
				out = append(out, m[1])
				continue
			}
			out = append(out, v)
			if _, tok, ok := strings.Cut(v, " "); ok {
				out = append(out, tok)
			}
		}
	}
	return out
}

// sentinels are the credentials each backend is configured with.
var sentinels = map[string][]string{
	"sagemaker": {awsSecret, awsSessionToken},
	"openai":    {openAIKey},
	"paieas":    {easToken},
	"azureml":   {azureKey},
}

// secretBackends are the HTTP backends, PAI-EAS once per way of sending
// its token.
func secretBackends() []backend {
	var out []backend
	for _, b := range httpBackends() {
		if b.name != "paieas" {
			out = append(out, b)
			continue
		}
		for _, auth := range []paieas.Auth{paieas.AuthToken, paieas.AuthBearer, paieas.AuthSignature} {
			pb := b
			pb.name = "paieas-" + string(auth)
			pb.start = func(t testing.TB, env startEnv) cloudreq.Adapter {
				base, hc := serveEnv(t, paieasWire{}, env)
				return newPAIEAS(t, base, hc, func(o *paieas.Options) { o.Auth = auth })
			}
			out = append(out, pb)
		}
	}
	return out
}

func sentinelsOf(name string) []string {
	if strings.HasPrefix(name, "paieas") {
		name = "paieas"
	}
	return sentinels[name]
}

// TestSecretsNeverLeak: every kind of credential (API key, SigV4 secret,
// session token and signature, Azure key, EAS token and signature) is
// kept out of err.Error(), fmt's %v, %+v and %#v of the error, its JSON
// form, and the log records of the telemetry log hook and the retry loop
// — even when the server quotes the credentials back in its error
// message, its request-id header or an in-stream error event.
func TestSecretsNeverLeak(t *testing.T) {
	for _, b := range secretBackends() {
		for _, c := range []struct {
			name   string
			a      answer
			stream bool
		}{
			{"401-echo", echoAnswer(401), false},
			{"401-echo-stream", echoAnswer(401), true},
			{"503-echo-retried", echoAnswer(503), false},
			{"in-stream-echo", echoStreamAnswer(b), true},
		} {
			t.Run(b.name+"/"+c.name, func(t *testing.T) {
				var logs bytes.Buffer
				logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
				r := newRig(t, b, []answer{c.a}, withClient(func(o *cloudreq.Options) {
					o.Hooks = hooks.Default()
					telemetry.WithLogging(logger, telemetry.LogOptions{Level: slog.LevelDebug})(o)
				}))
				_, _, err := r.call(context.Background(), c.stream)
				require.Error(t, err)
				att := r.rec.attempts()
				require.NotEmpty(t, att)
				secrets := secretsSeen(att[0].header, sentinelsOf(b.name))
				require.NotEmpty(t, secrets)
				js, _ := json.Marshal(err)
				views := map[string]string{
					"Error()": err.Error(),
					"%v":      fmt.Sprintf("%v", err),
					"%+v":     fmt.Sprintf("%+v", err),
					"%#v":     fmt.Sprintf("%#v", err),
					"json":    string(js),
					"logs":    logs.String(),
				}
				for view, text := range views {
					for _, s := range secrets {
						assert.NotContains(t, text, s, "%s leaks a credential", view)
					}
				}
				assert.NotEmpty(t, logs.String(), "the log hook wrote records")
			})
		}
	}
}

// TestSecretsNotInTransportErrors: a connection failure's error (refused,
// and a URL with user info) names no credential either.
func TestSecretsNotInTransportErrors(t *testing.T) {
	for _, b := range secretBackends() {
		t.Run(b.name, func(t *testing.T) {
			r := newRig(t, b, []answer{{reset: true}}, withClient(func(o *cloudreq.Options) { o.Retry.MaxAttempts = 1 }))
			_, err := r.invoke(context.Background())
			require.Error(t, err)
			att := r.rec.attempts()
			require.NotEmpty(t, att)
			for _, s := range secretsSeen(att[0].header, sentinelsOf(b.name)) {
				assert.NotContains(t, fmt.Sprintf("%+v %#v", err, err), s)
			}
		})
	}
}
