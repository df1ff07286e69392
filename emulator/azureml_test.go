package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// azurePipeline is an azcore pipeline with key auth and no retries.
func azurePipeline(key string) runtime.Pipeline {
	keyPolicy := runtime.NewKeyCredentialPolicy(azcore.NewKeyCredential(key), "Authorization",
		&runtime.KeyCredentialPolicyOptions{Prefix: "Bearer ", InsecureAllowCredentialWithHTTP: true})
	return runtime.NewPipeline("emulatortest", "v0.0.1",
		runtime.PipelineOptions{PerRetry: []policy.Policy{keyPolicy}},
		&policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}})
}

func azureScore(ctx context.Context, t *testing.T, pl runtime.Pipeline, url, body string, hdr map[string]string) (*http.Response, error) {
	t.Helper()
	req, err := runtime.NewRequest(ctx, http.MethodPost, url)
	require.NoError(t, err)
	for k, v := range hdr {
		req.Raw().Header.Set(k, v)
	}
	require.NoError(t, req.SetBody(streaming.NopCloser(bytes.NewReader([]byte(body))), "application/json"))
	resp, err := pl.Do(req)
	if err != nil {
		return nil, err
	}
	if !runtime.HasStatusCode(resp, http.StatusOK) {
		return resp, runtime.NewResponseError(resp)
	}
	return resp, nil
}

const amlBodySample = `{"input_data":{"input_string":[{"role":"user","content":"How fast is it?"}],"parameters":{"max_new_tokens":12}}}`

func TestAzureMLScore(t *testing.T) {
	ep := DefaultEndpoints()[1]
	ep.Credentials.Keys = []string{"good-key"}
	s := start(t, Options{TimeScale: 0.001, Seed: 5, Endpoints: []Endpoint{ep}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url := s.URL() + "/azureml/" + ep.Name + "/score"
	pl := azurePipeline("good-key")

	resp, err := azureScore(ctx, t, pl, url, amlBodySample, map[string]string{"azureml-model-deployment": "default"})
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	var out struct {
		Output string `json:"output"`
	}
	require.NoError(t, json.Unmarshal(b, &out))
	assert.NotEmpty(t, out.Output)
	assert.Equal(t, "default", resp.Header.Get("azureml-model-deployment"))
	assert.Equal(t, "12", resp.Header.Get(HeaderOutputTokens))

	tests := []struct {
		name    string
		pl      runtime.Pipeline
		body    string
		hdr     map[string]string
		status  int
		code    string
		modelSC string
	}{
		{"model error 424", pl, amlBodySample, map[string]string{HeaderInject: "model-error"}, 424, "", "500"},
		{"invalid input 424", pl, `{"prompt":"x"}`, nil, 424, "", "400"},
		{"wrong key 401", azurePipeline("bad-key"), amlBodySample, nil, 401, "Unauthorized", ""},
		{"unknown deployment 404", pl, amlBodySample, map[string]string{"azureml-model-deployment": "green"}, 404, "DeploymentNotFound", ""},
		{"throttle 429", pl, amlBodySample, map[string]string{HeaderInject: "throttle"}, 429, "TooManyRequests", ""},
		{"timeout 408", pl, amlBodySample, map[string]string{HeaderInject: "timeout"}, 408, "RequestTimeout", ""},
		{"not ready 503", pl, amlBodySample, map[string]string{HeaderInject: "model-not-ready"}, 503, "model_not_ready", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := azureScore(ctx, t, tt.pl, url, tt.body, tt.hdr)
			var re *azcore.ResponseError
			require.True(t, errors.As(err, &re), "%T %v", err, err)
			assert.Equal(t, tt.status, re.StatusCode)
			assert.Equal(t, tt.code, re.ErrorCode)
			assert.Equal(t, tt.modelSC, re.RawResponse.Header.Get("ms-azureml-model-error-statuscode"))
			if tt.modelSC != "" {
				assert.NotEmpty(t, re.RawResponse.Header.Get("ms-azureml-model-error-reason"))
			}
			require.NoError(t, resp.Body.Close())
		})
	}
}

func TestAzureServerlessChatStream(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 5})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pl := azurePipeline("any")
	resp, err := azureScore(ctx, t, pl, s.URL()+"/azureml/serverless/chat/completions?api-version=2024-05-01-preview",
		`{"messages":[{"role":"user","content":"hi"}],"max_tokens":4,"stream":true}`, nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, "text/event-stream; charset=utf-8", resp.Header.Get("Content-Type"))
	events := readSSE(t, resp.Body)
	require.NotEmpty(t, events)
	assert.Equal(t, "[DONE]", events[len(events)-1])
	assert.Equal(t, "true", resp.Header.Get(HeaderColdStart), "the serverless built-in starts scaled to zero")

	resp, err = azureScore(ctx, t, pl, s.URL()+"/azureml/serverless/chat/completions", `{"messages":[]}`, nil)
	var re *azcore.ResponseError
	require.True(t, errors.As(err, &re), "%T %v", err, err)
	assert.Equal(t, 422, re.StatusCode)
	require.NoError(t, resp.Body.Close())
}

func TestAzureMLHostRouting(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 5})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/score", bytes.NewReader([]byte(amlBodySample)))
	require.NoError(t, err)
	req.Host = "phi-3-mini.eastus.inference.ml.azure.com"
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "phi-3-mini", resp.Header.Get(HeaderEndpoint))
}

// TestAzureServerlessExtraParameters: the serverless chat route refuses
// body members the model inference API does not define with 422
// parameter_not_supported, unless extra-parameters says drop or
// pass-through.
func TestAzureServerlessExtraParameters(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 5})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pl := azurePipeline("any")
	url := s.URL() + "/azureml/serverless/chat/completions?api-version=2024-05-01-preview"
	body := `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"stream":true,"stream_options":{"include_usage":true},"logit_bias":{}}`
	resp, err := azureScore(ctx, t, pl, url, body, nil)
	var re *azcore.ResponseError
	require.True(t, errors.As(err, &re), "%T %v", err, err)
	assert.Equal(t, 422, re.StatusCode)
	var e struct {
		Status int    `json:"status"`
		Code   string `json:"code"`
		Detail struct {
			Extra []string `json:"extra_parameters"`
		} `json:"detail"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, 422, e.Status)
	assert.Equal(t, "parameter_not_supported", e.Code)
	assert.Equal(t, []string{"logit_bias", "stream_options"}, e.Detail.Extra)

	for _, mode := range []string{"drop", "pass-through"} {
		resp, err = azureScore(ctx, t, pl, url, body, map[string]string{"extra-parameters": mode})
		require.NoError(t, err, mode)
		events := readSSE(t, resp.Body)
		require.NoError(t, resp.Body.Close())
		assert.Equal(t, "[DONE]", events[len(events)-1], mode)
	}
}

// azurePost sends body to url with hdr and returns the answer, its body read.
func azurePost(t *testing.T, method, url, host, body string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = bytes.NewReader([]byte(body))
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	require.NoError(t, err)
	if host != "" {
		req.Host = host
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp, b
}

// TestAzureContainerAndGatewayFaults: /score wraps the container's own
// 429 and 503 in a 424 with ms-azureml-model-error-statuscode; serverless
// chat answers them as its model inference API does (429, 503, flat
// body); a fronting proxy's overflow is a plain-text 503 on both.
func TestAzureContainerAndGatewayFaults(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 5})
	score := s.URL() + "/azureml/llama-3-8b/score"
	chat := s.URL() + "/azureml/llama-3-8b/chat/completions?api-version=2024-05-01-preview"
	const chatBody = `{"messages":[{"role":"user","content":"hi"}],"max_tokens":4}`
	const overflow = "upstream connect error or disconnect/reset before headers. reset reason: overflow"
	tests := []struct {
		name, url, body string
		fault           Fault
		status          int
		modelSC         string // ms-azureml-model-error-statuscode
		code            string // the JSON body's code
		text            string // a plain-text body
	}{
		{"score overloaded", score, amlBodySample, FaultModelOverloaded, 424, "429", "", ""},
		{"score unavailable", score, amlBodySample, FaultModelUnavailable, 424, "503", "", ""},
		{"score gateway overflow", score, amlBodySample, FaultGatewayOverflow, 503, "", "", overflow},
		{"chat overloaded", chat, chatBody, FaultModelOverloaded, 429, "", "TooManyRequests", ""},
		{"chat unavailable", chat, chatBody, FaultModelUnavailable, 503, "", "ServiceUnavailable", ""},
		{"chat gateway overflow", chat, chatBody, FaultGatewayOverflow, 503, "", "", overflow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := azurePost(t, http.MethodPost, tt.url, "", tt.body, map[string]string{HeaderInject: string(tt.fault)})
			assert.Equal(t, tt.status, resp.StatusCode, "%s", b)
			assert.Equal(t, tt.modelSC, resp.Header.Get("ms-azureml-model-error-statuscode"))
			if tt.modelSC != "" {
				assert.NotEmpty(t, resp.Header.Get("ms-azureml-model-error-reason"))
				var e struct {
					Message string `json:"message"`
				}
				require.NoError(t, json.Unmarshal(b, &e), "%s", b)
				assert.NotEmpty(t, e.Message)
			}
			if tt.text != "" {
				assert.Equal(t, "text/plain", resp.Header.Get("Content-Type"))
				assert.Equal(t, tt.text, string(b))
			}
			if tt.code != "" {
				var e struct {
					Status int    `json:"status"`
					Code   string `json:"code"`
				}
				require.NoError(t, json.Unmarshal(b, &e), "%s", b)
				assert.Equal(t, tt.status, e.Status)
				assert.Equal(t, tt.code, e.Code)
			}
		})
	}
}

// TestAzureHostIsNoEndpoint: a request to the root's /score or
// /chat/completions whose Host is an IP address or localhost names no
// endpoint; the answer says which URL forms name one.
func TestAzureHostIsNoEndpoint(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 5})
	for _, host := range []string{"", "localhost:8080", "[::1]:9000", "10.0.0.7"} {
		for _, path := range []string{"/score", "/chat/completions"} {
			resp, b := azurePost(t, http.MethodPost, s.URL()+path, host, amlBodySample, nil)
			assert.Equal(t, http.StatusNotFound, resp.StatusCode, "%s %s: %s", host, path, b)
			var e struct {
				Error struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(b, &e), "%s", b)
			assert.Equal(t, "NotFound", e.Error.Code)
			h := host
			if h == "" {
				h = s.URL()[len("http://"):]
			}
			for _, want := range []string{"http://" + h + "/azureml/{endpoint}/score", "http://" + h + "/azureml/{endpoint}/chat/completions", "{endpoint}.{region}.inference.ml.azure.com"} {
				assert.Contains(t, e.Error.Message, want, "%s %s", host, path)
			}
		}
	}
	// The Host form still names its endpoint, on both routes.
	resp, b := azurePost(t, http.MethodPost, s.URL()+"/chat/completions", "llama-3-8b.eastus.inference.ml.azure.com",
		`{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}`, nil)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	assert.Equal(t, "llama-3-8b", resp.Header.Get(HeaderEndpoint))
}

// TestAzureInfo: GET {base}/info answers the model inference API's
// ModelInfo ({"model_name","model_type","model_provider_name"}), by path
// and by Host; an unknown endpoint is a 404 and other methods a 405.
func TestAzureInfo(t *testing.T) {
	ep := DefaultEndpoints()[1]
	ep.Credentials.Keys = []string{"good-key"}
	s := start(t, Options{TimeScale: 0.001, Seed: 5, Endpoints: []Endpoint{ep}})
	auth := map[string]string{"Authorization": "Bearer good-key"}
	for _, c := range []struct{ url, host string }{
		{s.URL() + "/azureml/" + ep.Name + "/info?api-version=2024-05-01-preview", ""},
		{s.URL() + "/info?api-version=2024-05-01-preview", ep.Name + ".eastus.inference.ml.azure.com"},
	} {
		resp, b := azurePost(t, http.MethodGet, c.url, c.host, "", auth)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		var info map[string]string
		require.NoError(t, json.Unmarshal(b, &info), "%s", b)
		assert.Equal(t, map[string]string{"model_name": ep.Name, "model_type": "chat-completions", "model_provider_name": "cloudinfer emulator"}, info)
	}
	resp, b := azurePost(t, http.MethodGet, s.URL()+"/azureml/"+ep.Name+"/info", "", "", map[string]string{"Authorization": "Bearer bad-key"})
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s", b)
	resp, b = azurePost(t, http.MethodGet, s.URL()+"/azureml/nope/info", "", "", auth)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "%s", b)
	resp, b = azurePost(t, http.MethodPost, s.URL()+"/azureml/"+ep.Name+"/info", "", "{}", auth)
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "%s", b)
	assert.Equal(t, http.MethodGet, resp.Header.Get("Allow"))
}

// TestAzureStreamErrorFirst: under stream-error-first, a serverless chat
// stream's first and only event is the model inference API's rate-limit
// error, {"error":{"code":"429","message":…}}; a /score chat stream opens
// with its container's (vLLM's) rate-limit event; a call that does not
// stream gets the throttle answer.
func TestAzureStreamErrorFirst(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 5})
	inject := map[string]string{HeaderInject: string(FaultStreamErrorFirst)}
	const stream = `{"messages":[{"role":"user","content":"hi"}],"max_tokens":4,"stream":true}`

	resp, b := azurePost(t, http.MethodPost, s.URL()+"/azureml/llama-3-8b/chat/completions?api-version=2024-05-01-preview", "", stream, inject)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	assert.Equal(t, "text/event-stream; charset=utf-8", resp.Header.Get("Content-Type"))
	events := readSSE(t, bytes.NewReader(b))
	require.Len(t, events, 1, "%q", events)
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(events[0]), &e), events[0])
	assert.Equal(t, "429", e.Error.Code)
	assert.Contains(t, e.Error.Message, "Rate limit")

	resp, b = azurePost(t, http.MethodPost, s.URL()+"/azureml/llama-3-8b/score", "", stream, inject)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	events = readSSE(t, bytes.NewReader(b))
	require.NotEmpty(t, events)
	var v struct {
		Error struct {
			Type string `json:"type"`
			Code int    `json:"code"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(events[0]), &v), events[0])
	assert.Equal(t, 429, v.Error.Code, "the container's rate-limit event comes first: %q", events)

	resp, b = azurePost(t, http.MethodPost, s.URL()+"/azureml/llama-3-8b/score", "", amlBodySample, inject)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%s", b)
}
