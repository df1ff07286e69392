package azureml

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
	"github.com/cloudinfer/cloudinfer/providers/providertest"
)

type seen struct {
	mu                                      sync.Mutex
	n                                       int
	path, query, auth, deploy, crid, accept string
	body                                    []byte
}

func recorder(s *seen, status int, ct, reply string, hdr ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.n++
		s.path, s.query, s.auth = r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization")
		s.deploy, s.crid, s.accept = r.Header.Get("azureml-model-deployment"), r.Header.Get("x-ms-client-request-id"), r.Header.Get("Accept")
		s.body, _ = io.ReadAll(r.Body)
		s.mu.Unlock()
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, reply)
	}
}

const chatReply = `{"choices":[{"message":{"role":"assistant","content":"Hello!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`

func TestScoreGenerateMessages(t *testing.T) {
	var s seen
	a, _ := server(t, recorder(&s, 200, "application/json", chatReply,
		"azureml-model-deployment", "blue", "x-request-id", "srv-req", "X-Emulator-Cold-Start", "false"))
	r := generateReq()
	r.Target.Variant = "blue"
	r.RequestID = "client-req"
	resp, err := client(t, a).Invoke(ctx(t), r)
	require.NoError(t, err)
	assert.Equal(t, "/azureml/my-ep/score", s.path)
	assert.Equal(t, "Bearer "+key, s.auth)
	assert.Equal(t, "blue", s.deploy)
	assert.Equal(t, "client-req", s.crid)
	assert.JSONEq(t, `{"messages":[{"role":"user","content":"hi"}],"max_tokens":8}`, string(s.body))
	assert.Equal(t, "Hello!", resp.Text)
	assert.Equal(t, "stop", resp.FinishReason)
	assert.Equal(t, 2, resp.Usage.OutputTokens)
	assert.Equal(t, "srv-req", resp.RequestID)
	assert.Equal(t, "blue", resp.Metadata["Azureml-Model-Deployment"])
	assert.Equal(t, "false", resp.Header.Get("X-Emulator-Cold-Start"), "the response's headers as received")
	assert.Nil(t, resp.ServerStart, "the adapter reads no server's start report")
}

func TestScoreGenerateInputData(t *testing.T) {
	for _, reply := range []string{`{"output":"Hi there"}`, `[{"0":"Hi there"}]`, `"Hi there"`} {
		var s seen
		a, _ := server(t, recorder(&s, 200, "application/json", reply), func(o *Options) { o.ScoreDialect = ScoreInputData })
		temp := 0.2
		r := generateReq()
		r.Generate.Temperature = &temp
		r.Generate.Messages = append([]cloudreq.Message{{Role: "system", Content: "Be brief."}}, r.Generate.Messages...)
		resp, err := client(t, a).Invoke(ctx(t), r)
		require.NoError(t, err, reply)
		assert.JSONEq(t, `{"input_data":{"input_string":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}],"parameters":{"max_new_tokens":8,"temperature":0.2,"do_sample":true}}}`, string(s.body))
		assert.Equal(t, "Hi there", resp.Text, reply)
	}
	a, _ := server(t, recorder(&seen{}, 200, "application/json", `{"result":1}`))
	_, err := client(t, a).Invoke(ctx(t), generateReq())
	assert.ErrorIs(t, err, errcodes.ModelError)
}

// TestUnreadableGenerateBody: a 2xx generate body that does not parse, or
// holds no generated text, is the model's fault (ERR_MODEL_ERROR, not
// retryable), by Invoke and by a stream answered with one JSON body.
func TestUnreadableGenerateBody(t *testing.T) {
	for _, body := range []string{`{"id":"chatcmpl-1","choices":[{"mess`, `{"result":1}`, `<html>`} {
		a, _ := server(t, recorder(&seen{}, 200, "application/json", body))
		_, err := client(t, a).Invoke(ctx(t), generateReq())
		var e *errcodes.Error
		require.ErrorAs(t, err, &e, body)
		assert.Equal(t, errcodes.ModelError, e.Code, "%s: %v", body, err)
		assert.False(t, e.Retryable, body)
		assert.Equal(t, http.StatusOK, e.HTTPStatus, body)
		assert.Equal(t, "azure", e.Provider, body)

		out := stream(t, a, generateReq())
		require.ErrorAs(t, out.Err, &e, body)
		assert.Equal(t, errcodes.ModelError, e.Code, "%s: stream: %v", body, out.Err)
		assert.False(t, e.Retryable, body)
		assert.Zero(t, out.Content(), body)
	}
}

func TestInvokeSendsBytes(t *testing.T) {
	var s seen
	a, _ := server(t, recorder(&s, 200, "application/octet-stream", "\x01\x02"))
	r := invokeReq(`{"data":[[1,2,3]]}`)
	r.Payload.ContentType = "application/json"
	resp, err := client(t, a).Invoke(ctx(t), r)
	require.NoError(t, err)
	assert.Equal(t, `{"data":[[1,2,3]]}`, string(s.body))
	assert.Equal(t, []byte{1, 2}, resp.Data)
}

// TestInvokeTextOfGeneration: a raw invoke keeps the body as it came, and
// fills Text (and the finish reason and usage) when the body is a
// recognisable generation; any other body leaves them empty, without an
// error.
func TestInvokeTextOfGeneration(t *testing.T) {
	tests := []struct {
		ct, body, text string
	}{
		{"application/json", chatReply, "Hello!"},
		{"application/json", `{"output":"Hi there"}`, "Hi there"},
		{"application/json", `[{"0":"Hi there"}]`, "Hi there"},
		{"application/json", `{"result":[0.1,0.2]}`, ""},
		{"application/json", `{"id":"cut`, ""},
		{"text/plain", `Hi there`, ""},
	}
	for _, tt := range tests {
		a, _ := server(t, recorder(&seen{}, 200, tt.ct, tt.body))
		resp, err := client(t, a).Invoke(ctx(t), invokeReq(`{"anything":1}`))
		require.NoError(t, err, tt.body)
		assert.Equal(t, tt.body, string(resp.Data), tt.body)
		assert.Equal(t, tt.text, resp.Text, tt.body)
		if tt.body == chatReply {
			assert.Equal(t, "stop", resp.FinishReason)
			assert.Equal(t, 2, resp.Usage.OutputTokens)
		}
	}
}

func TestChatAPI(t *testing.T) {
	var s seen
	a, _ := server(t, recorder(&s, 200, "application/json", chatReply), func(o *Options) { o.API = APIChat })
	r := generateReq()
	r.Target.Model = "Phi-3-mini"
	resp, err := client(t, a).Invoke(ctx(t), r)
	require.NoError(t, err)
	assert.Equal(t, "/azureml/my-ep/chat/completions", s.path)
	assert.Equal(t, "api-version="+DefaultAPIVersion, s.query)
	assert.JSONEq(t, `{"model":"Phi-3-mini","messages":[{"role":"user","content":"hi"}],"max_tokens":8}`, string(s.body))
	assert.Equal(t, "Hello!", resp.Text)
}

func TestURLs(t *testing.T) {
	a, err := New(Options{Region: "westeurope"})
	require.NoError(t, err)
	tests := []struct {
		target cloudreq.Target
		want   string
	}{
		{cloudreq.Target{Endpoint: "ep"}, "https://ep.westeurope.inference.ml.azure.com/score"},
		{cloudreq.Target{Endpoint: "https://ep2.eastus.inference.ml.azure.com/score"}, "https://ep2.eastus.inference.ml.azure.com/score"},
		{cloudreq.Target{Endpoint: "https://ep2.eastus.inference.ml.azure.com"}, "https://ep2.eastus.inference.ml.azure.com/score"},
		{cloudreq.Target{Endpoint: "ep", Path: "v1/chat/completions"}, "https://ep.westeurope.inference.ml.azure.com/v1/chat/completions"},
	}
	for _, tt := range tests {
		got, err := a.url(&cloudreq.CloudRequest{Target: tt.target})
		require.NoError(t, err)
		assert.Equal(t, tt.want, got)
	}
	noRegion, err := New(Options{})
	require.NoError(t, err)
	_, err = noRegion.url(&cloudreq.CloudRequest{Target: cloudreq.Target{Endpoint: "ep"}})
	assert.ErrorIs(t, err, errcodes.InvalidParam)
	_, err = noRegion.url(&cloudreq.CloudRequest{})
	assert.ErrorIs(t, err, errcodes.InvalidParam)
}

type fakeCred struct {
	mu     sync.Mutex
	scopes []string
	tok    string
	err    error
}

func (f *fakeCred) GetToken(_ context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scopes = o.Scopes
	return azcore.AccessToken{Token: f.tok, ExpiresOn: time.Now().Add(time.Hour)}, f.err
}

func TestTokenCredential(t *testing.T) {
	var s seen
	cred := &fakeCred{tok: "entra-token"}
	a, _ := server(t, recorder(&s, 200, "application/json", chatReply), func(o *Options) { o.Key, o.Credential = "", cred })
	_, err := client(t, a).Invoke(ctx(t), generateReq())
	require.NoError(t, err)
	assert.Equal(t, "Bearer entra-token", s.auth)
	assert.Equal(t, []string{DefaultScope}, cred.scopes)

	failing := &fakeCred{err: errors.New("AADSTS7000215: invalid client secret")}
	a, _ = server(t, recorder(&s, 200, "application/json", chatReply), func(o *Options) { o.Key, o.Credential = "", failing })
	n := s.n
	_, err = client(t, a).Invoke(ctx(t), generateReq())
	var e *errcodes.Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, errcodes.Unauthenticated, e.Code)
	assert.False(t, e.Retryable)
	assert.Equal(t, n, s.n, "nothing was sent")
}

// TestEchoedTokenIsRedacted: the adapter names its credentials
// (cloudreq.CredentialSource), so an Entra token the server quotes back is
// redacted though the client records no headers for it.
func TestEchoedTokenIsRedacted(t *testing.T) {
	const tok = "entra-token-0123456789"
	echo := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = fmt.Fprintf(w, `{"error":{"code":"Unauthorized","message":"bad token %s"}}`, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	}
	a, _ := server(t, echo, func(o *Options) { o.Key, o.Credential = "", &fakeCred{tok: tok} })
	_, err := client(t, a).Invoke(ctx(t), generateReq())
	require.Error(t, err)
	assert.NotContains(t, fmt.Sprintf("%+v", err), tok)
	assert.Contains(t, err.Error(), "[REDACTED]")
	assert.Equal(t, []string{tok}, a.Credentials())
}

func TestAMLToken(t *testing.T) {
	var s seen
	a, _ := server(t, recorder(&s, 200, "application/json", chatReply), func(o *Options) { o.Key, o.Token = "", "aml-token" })
	_, err := client(t, a).Invoke(ctx(t), generateReq())
	require.NoError(t, err)
	assert.Equal(t, "Bearer aml-token", s.auth)
}

func TestDefaultCredentialIsLazy(t *testing.T) {
	a, err := New(Options{Region: "eastus"})
	require.NoError(t, err)
	require.NotNil(t, a.lazy)
	assert.Nil(t, a.lazy.cred, "no credential built at construction")
	assert.NoError(t, a.lazy.err)
}

func TestCredentialRules(t *testing.T) {
	_, err := New(Options{EndpointURL: "http://127.0.0.1:1/azureml/{endpoint}", Key: key})
	require.ErrorIs(t, err, errcodes.InvalidParam)
	assert.NotContains(t, err.Error(), key)
	_, err = New(Options{EndpointURL: "http://127.0.0.1:1/azureml/{endpoint}"})
	assert.ErrorIs(t, err, errcodes.InvalidParam, "the default credential is a credential too")
	_, err = New(Options{EndpointURL: "http://127.0.0.1:1/azureml/{endpoint}", Anonymous: true})
	assert.NoError(t, err)
	_, err = New(Options{Key: "a", Token: "b"})
	assert.ErrorIs(t, err, errcodes.InvalidParam)
	_, err = New(Options{API: "x"})
	assert.ErrorIs(t, err, errcodes.InvalidParam)
	_, err = New(Options{ScoreDialect: "x"})
	assert.ErrorIs(t, err, errcodes.InvalidParam)

	a, err := New(Options{Region: "r", Key: key})
	require.NoError(t, err)
	_, err = a.url(&cloudreq.CloudRequest{Target: cloudreq.Target{Endpoint: "http://10.0.0.1/score"}})
	assert.ErrorIs(t, err, errcodes.InvalidParam)
}

func TestAnonymousSendsNoAuthorization(t *testing.T) {
	var s seen
	a, _ := server(t, recorder(&s, 200, "application/json", chatReply), func(o *Options) { o.Key, o.Anonymous = "", true })
	_, err := client(t, a).Invoke(ctx(t), generateReq())
	require.NoError(t, err)
	assert.Empty(t, s.auth)
}

func TestAzcoreRetriesAreOff(t *testing.T) {
	var s seen
	a, _ := server(t, recorder(&s, 503, "text/plain", "busy", "Retry-After", "0"))
	_, err := client(t, a).Invoke(ctx(t), generateReq())
	assert.ErrorIs(t, err, errcodes.Unavailable)
	assert.Equal(t, 1, s.n, "one attempt: azcore's retry policy is off")
}

func TestDescribe(t *testing.T) {
	a, err := New(Options{})
	require.NoError(t, err)
	d := a.Describe()
	assert.Equal(t, "azure", d.Provider)
	assert.Equal(t, "azureml", d.Service)
	b, _ := json.Marshal(d.Actions)
	assert.JSONEq(t, `["invoke","generate"]`, string(b))
}

func TestTimingThroughAzcore(t *testing.T) {
	a, _ := server(t, recorder(&seen{}, 200, "application/json", chatReply))
	resp, err := client(t, a).Invoke(ctx(t), generateReq())
	require.NoError(t, err)
	require.NotNil(t, resp.Timing)
	at := resp.Timing.LastAttempt()
	require.NotNil(t, at)
	assert.False(t, at.GotConn.IsZero(), "httptrace reached the transport through azcore")
	assert.False(t, at.WroteRequest.IsZero())
	assert.False(t, at.FirstByte.IsZero())
	assert.True(t, at.FirstByte.After(at.Send))
}

// TestScoreInputDataSampling: the model catalog's containers run Hugging
// Face generation, which samples only with do_sample true and refuses a
// temperature of 0 while sampling: a positive temperature (or a top_p)
// turns sampling on, a temperature of 0 asks for greedy decoding.
func TestScoreInputDataSampling(t *testing.T) {
	zero, warm, topP := 0.0, 0.7, 0.9
	tests := []struct {
		name       string
		temp, top  *float64
		wantParams string
	}{
		{"defaults", nil, nil, `{"max_new_tokens":8}`},
		{"greedy", &zero, nil, `{"max_new_tokens":8,"do_sample":false}`},
		{"sampled", &warm, nil, `{"max_new_tokens":8,"temperature":0.7,"do_sample":true}`},
		{"nucleus", nil, &topP, `{"max_new_tokens":8,"top_p":0.9,"do_sample":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s seen
			a, _ := server(t, recorder(&s, 200, "application/json", `{"output":"ok"}`), func(o *Options) { o.ScoreDialect = ScoreInputData })
			r := generateReq()
			r.Generate.Temperature, r.Generate.TopP = tt.temp, tt.top
			_, err := client(t, a).Invoke(ctx(t), r)
			require.NoError(t, err)
			var body struct {
				InputData struct {
					Parameters json.RawMessage `json:"parameters"`
				} `json:"input_data"`
			}
			require.NoError(t, json.Unmarshal(s.body, &body))
			assert.JSONEq(t, tt.wantParams, string(body.InputData.Parameters))
		})
	}
}

// TestRegionErrorHidesTemplateSecrets: the error for a template that
// needs a region quotes it without user info or query, where a key may
// ride.
func TestRegionErrorHidesTemplateSecrets(t *testing.T) {
	a, err := New(Options{EndpointURL: "https://user:pw-secret@{endpoint}.{region}.example/x?sig=q-secret#frag", Key: key})
	require.NoError(t, err)
	_, err = a.url(&cloudreq.CloudRequest{Target: cloudreq.Target{Endpoint: "ep"}})
	require.ErrorIs(t, err, errcodes.InvalidParam)
	assert.Contains(t, err.Error(), "https://{endpoint}.{region}.example/x")
	for _, s := range []string{"pw-secret", "q-secret", "user", "frag"} {
		assert.NotContains(t, err.Error(), s)
	}
	assert.Equal(t, "{endpoint}.example", templateForMessage("{endpoint}.example?key=k"))
}

// TestURLQueries: the serverless chat route always carries exactly one
// api-version — Target.Path's, else the endpoint URL's, else
// Options.APIVersion — and keeps the caller's other query parameters;
// /score gets no api-version of its own.
func TestURLQueries(t *testing.T) {
	const (
		serverless = "https://m.eastus2.models.ai.azure.com"
		managed    = "https://ep.westeurope.inference.ml.azure.com"
		def        = "api-version=" + DefaultAPIVersion
	)
	tests := []struct {
		name       string
		api        API
		apiVersion string
		target     cloudreq.Target
		want       string
	}{
		{"chat name", APIChat, "", cloudreq.Target{Endpoint: "ep"}, managed + "/chat/completions?" + def},
		{"chat absolute root", APIChat, "", cloudreq.Target{Endpoint: serverless}, serverless + "/chat/completions?" + def},
		{"chat absolute route", APIChat, "", cloudreq.Target{Endpoint: serverless + "/chat/completions/"}, serverless + "/chat/completions?" + def},
		{"chat absolute keeps api-version", APIChat, "", cloudreq.Target{Endpoint: serverless + "/chat/completions?api-version=2024-08-01-preview"},
			serverless + "/chat/completions?api-version=2024-08-01-preview"},
		{"chat absolute keeps other parameters", APIChat, "", cloudreq.Target{Endpoint: serverless + "?foo=a%26b&bar=1"},
			serverless + "/chat/completions?foo=a%26b&bar=1&" + def},
		{"chat absolute keeps both", APIChat, "2025-01-01", cloudreq.Target{Endpoint: serverless + "/chat/completions?foo=1&api-version=2024-08-01-preview#frag"},
			serverless + "/chat/completions?foo=1&api-version=2024-08-01-preview"},
		{"chat absolute empty api-version", APIChat, "", cloudreq.Target{Endpoint: serverless + "?api-version="}, serverless + "/chat/completions?" + def},
		{"chat options api-version escaped", APIChat, "2024 05+x&y", cloudreq.Target{Endpoint: serverless}, serverless + "/chat/completions?api-version=2024+05%2Bx%26y"},
		{"chat path", APIChat, "", cloudreq.Target{Endpoint: "ep", Path: "/v1/chat/completions"}, managed + "/v1/chat/completions?" + def},
		{"chat path on absolute", APIChat, "2025-01-01", cloudreq.Target{Endpoint: serverless, Path: "chat/completions"}, serverless + "/chat/completions?api-version=2025-01-01"},
		{"chat path keeps api-version", APIChat, "", cloudreq.Target{Endpoint: "ep", Path: "/chat/completions?api-version=2024-08-01-preview"},
			managed + "/chat/completions?api-version=2024-08-01-preview"},
		{"chat path keeps other parameters", APIChat, "", cloudreq.Target{Endpoint: "ep", Path: "chat/completions?foo=1"}, managed + "/chat/completions?foo=1&" + def},
		{"chat path query only", APIChat, "", cloudreq.Target{Endpoint: serverless, Path: "?foo=1"}, serverless + "?foo=1&" + def},
		{"chat path api-version wins", APIChat, "", cloudreq.Target{Endpoint: serverless + "?api-version=a&x=1", Path: "/chat/completions?api-version=b&y=2"},
			serverless + "/chat/completions?x=1&y=2&api-version=b"},
		{"chat duplicate api-version", APIChat, "", cloudreq.Target{Endpoint: serverless + "?api-version=a&x=1&api%2Dversion=b"},
			serverless + "/chat/completions?x=1&api%2Dversion=b"},
		{"score name", APIScore, "", cloudreq.Target{Endpoint: "ep"}, managed + "/score"},
		{"score absolute keeps parameters", APIScore, "", cloudreq.Target{Endpoint: managed + "/score?foo=1"}, managed + "/score?foo=1"},
		{"score path keeps parameters", APIScore, "", cloudreq.Target{Endpoint: "ep", Path: "/score?verbose"}, managed + "/score?verbose"},
		{"score chat path", APIScore, "", cloudreq.Target{Endpoint: "ep", Path: "/v1/chat/completions"}, managed + "/v1/chat/completions"},
		{"score both queries", APIScore, "", cloudreq.Target{Endpoint: managed + "?a=1", Path: "/score?b=2"}, managed + "/score?a=1&b=2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New(Options{Region: "westeurope", API: tt.api, APIVersion: tt.apiVersion})
			require.NoError(t, err)
			got, err := a.url(&cloudreq.CloudRequest{Target: tt.target})
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestTemplateQuery: the query of Options.EndpointURL is kept.
func TestTemplateQuery(t *testing.T) {
	a, err := New(Options{EndpointURL: "https://{endpoint}.example/x?sig=1", API: APIChat})
	require.NoError(t, err)
	got, err := a.url(&cloudreq.CloudRequest{Target: cloudreq.Target{Endpoint: "ep"}})
	require.NoError(t, err)
	assert.Equal(t, "https://ep.example/x/chat/completions?sig=1&api-version="+DefaultAPIVersion, got)
}

// TestChatAPIPathQuery: a custom chat path and its query reach the server
// with the api-version added.
func TestChatAPIPathQuery(t *testing.T) {
	var s seen
	a, _ := server(t, recorder(&s, 200, "application/json", chatReply), func(o *Options) { o.API = APIChat })
	r := generateReq()
	r.Target.Path = "/v1/chat/completions?foo=a%20b"
	_, err := client(t, a).Invoke(ctx(t), r)
	require.NoError(t, err)
	assert.Equal(t, "/azureml/my-ep/v1/chat/completions", s.path)
	assert.Equal(t, "foo=a%20b&api-version="+DefaultAPIVersion, s.query)
}

// TestConnectionPool: without an HTTPClient the adapter keeps enough idle
// connections for concurrent calls and bounds the wait for response
// headers; its Close closes its own transport's idle connections only
// (providertest.RunPool).
func TestConnectionPool(t *testing.T) {
	providertest.RunPool(t, providertest.HTTPPool(func(base string, hc *http.Client) (*Adapter, error) {
		return New(Options{EndpointURL: base + "/{endpoint}", Anonymous: true, HTTPClient: hc})
	}, func(a *Adapter) *httpadapter.Core { return a.core }, func() *cloudreq.CloudRequest { return invokeReq(`{}`) }))
}
