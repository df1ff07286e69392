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
