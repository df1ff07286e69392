package azureml

import (
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
	"github.com/cloudinfer/cloudinfer/providers/providertest"
)

// TestErrorMapping holds the rows of the package doc's table.
func TestErrorMapping(t *testing.T) {
	const js = "application/json"
	tests := []struct {
		name      string
		status    int
		ct, body  string
		hdr       map[string]string
		want      errcodes.Code
		pcode     string
		retryable bool
		msg       string
	}{
		{"model not ready code", 503, js, `{"error":{"code":"ModelNotReady","message":"The model is loading"}}`, nil, errcodes.ModelNotReady, "ModelNotReady", true, "The model is loading"},
		{"model_not_ready header", 503, "text/plain", `busy`, map[string]string{"x-ms-error-code": "model_not_ready"}, errcodes.ModelNotReady, "model_not_ready", true, "busy"},
		{"503 loading text", 503, "text/plain", `Deployment is not ready to serve traffic`, nil, errcodes.ModelNotReady, "503", true, ""},
		{"deployment not ready code", 503, js, `{"error":{"code":"DeploymentNotReady","message":"scaling"}}`, nil, errcodes.ModelNotReady, "DeploymentNotReady", true, ""},
		{"invalid api key", 401, js, `{"error":{"code":"invalid_api_key","message":"bad key"}}`, nil, errcodes.Unauthenticated, "invalid_api_key", false, ""},
		{"deployment not found", 400, js, `{"error":{"code":"DeploymentNotFound","message":"no such deployment"}}`, nil, errcodes.NotFound, "DeploymentNotFound", false, ""},
		{"context length", 400, js, `{"error":{"code":"context_length_exceeded","message":"too long"}}`, nil, errcodes.InvalidParam, "context_length_exceeded", false, ""},
		{"quota", 429, js, `{"error":{"code":"QuotaExceeded","message":"quota"}}`, nil, errcodes.QuotaExceeded, "QuotaExceeded", false, ""},
		{"rate limit code", 429, js, `{"error":{"code":"TooManyRequests","message":"slow"}}`, map[string]string{"Retry-After": "3"}, errcodes.Throttled, "TooManyRequests", true, ""},
		{"400", 400, js, `{"message":"bad input"}`, nil, errcodes.InvalidParam, "400", false, "bad input"},
		{"401", 401, js, `{"error":{"code":"Unauthorized","message":"key missing"}}`, nil, errcodes.Unauthenticated, "Unauthorized", false, "key missing"},
		{"403", 403, "text/plain", ``, nil, errcodes.PermissionDenied, "403", false, "Forbidden"},
		{"404", 404, js, `{"message":"No valid deployments to route to"}`, nil, errcodes.NotFound, "404", false, ""},
		{"408", 408, "text/plain", `request timed out`, nil, errcodes.Timeout, "408", true, ""},
		{"409", 409, "text/plain", `conflict`, nil, errcodes.InvalidParam, "409", false, ""},
		{"413", 413, "text/plain", ``, nil, errcodes.PayloadTooLarge, "413", false, ""},
		{"422 serverless flat", 422, js, `{"status":422,"code":"parameter_not_supported","detail":{"param":"n"},"message":"n is not supported"}`, nil, errcodes.InvalidParam, "parameter_not_supported", false, "n is not supported"},
		{"424 model error", 424, "text/plain", ``, map[string]string{"ms-azureml-model-error-statuscode": "500", "ms-azureml-model-error-reason": "model_error"}, errcodes.ModelError, "424", false, "the model container failed: model_error"},
		{"424 model overloaded", 424, js, `{"message":"Model is overloaded"}`, map[string]string{"ms-azureml-model-error-statuscode": "429", "ms-azureml-model-error-reason": "model_overloaded"}, errcodes.Throttled, "424", true, "Model is overloaded"},
		{"424 model unavailable", 424, "text/plain", ``, map[string]string{"ms-azureml-model-error-statuscode": "503", "ms-azureml-model-error-reason": "model_unavailable"}, errcodes.Unavailable, "424", true, "the model container failed: model_unavailable"},
		{"424 container 400", 424, js, `{"message":"Bad request to the model"}`, map[string]string{"ms-azureml-model-error-statuscode": "400", "ms-azureml-model-error-reason": "invalid_input"}, errcodes.ModelError, "424", false, ""},
		{"429", 429, js, `{"message":"too many pending requests"}`, map[string]string{"retry-after-ms": "250"}, errcodes.Throttled, "429", true, ""},
		{"500", 500, js, `{"error":{"code":"InternalServerError","message":"boom"}}`, nil, errcodes.Internal, "InternalServerError", true, "boom"},
		{"502 html", 502, "text/html", `<html><title>502 Bad Gateway</title></html>`, nil, errcodes.Unavailable, "502", true, "502 Bad Gateway"},
		{"503", 503, "text/plain", `upstream spike`, nil, errcodes.Unavailable, "503", true, ""},
		{"503 gateway overflow", 503, "text/plain", `upstream connect error or disconnect/reset before headers. reset reason: overflow`, nil, errcodes.Unavailable, "503", true, ""},
		{"504", 504, "text/plain", ``, nil, errcodes.Timeout, "504", true, ""},
		{"other", 418, "text/plain", ``, nil, errcodes.InvalidParam, "418", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.hdr {
					w.Header().Set(k, v)
				}
				w.Header().Set("Content-Type", tt.ct)
				w.Header().Set("x-request-id", "az-rid")
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			})
			_, err := client(t, a).Invoke(ctx(t), generateReq())
			var e *errcodes.Error
			require.True(t, errors.As(err, &e))
			assert.Equal(t, tt.want, e.Code, "%v", err)
			assert.Equal(t, "azure", e.Provider)
			assert.Equal(t, tt.pcode, e.ProviderCode)
			assert.Equal(t, tt.status, e.HTTPStatus)
			assert.Equal(t, tt.retryable, e.Retryable)
			assert.Equal(t, "az-rid", e.RequestID)
			if tt.msg != "" {
				assert.Equal(t, tt.msg, e.Message)
			}
			var after time.Duration
			if v, ok := tt.hdr["Retry-After"]; ok {
				after, _ = time.ParseDuration(v + "s")
			}
			if v, ok := tt.hdr["retry-after-ms"]; ok {
				after, _ = time.ParseDuration(v + "ms")
			}
			assert.Equal(t, after, e.RetryAfter)
			if tt.status == 424 {
				// The container's own status and reason are kept.
				want := map[string]string{}
				for _, h := range []string{"ms-azureml-model-error-statuscode", "ms-azureml-model-error-reason"} {
					want[h] = tt.hdr[h]
				}
				assert.Equal(t, want, e.Details)
			}
			if tt.status == 422 {
				assert.Equal(t, `{"param":"n"}`, e.Details["detail"])
			}
			var re *azcore.ResponseError
			require.True(t, errors.As(err, &re), "the azcore error is reachable")
			assert.Equal(t, tt.status, re.StatusCode)
			assert.NotContains(t, re.Error(), key)
			assert.NotContains(t, err.Error(), key)
			assert.NotContains(t, re.RawResponse.Request.Header.Get("Authorization"), key)
		})
	}
}

func TestHugeErrorBodyIsReadBounded(t *testing.T) {
	body := &providertest.Endless{}
	hc := &http.Client{Transport: providertest.RoundTrip(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 500, Status: "500 Internal Server Error", Header: http.Header{"Content-Type": {"text/html"}}, Body: body, Request: r}, nil
	})}
	a, err := New(Options{Region: "r", Key: key, HTTPClient: hc})
	require.NoError(t, err)
	_, err = client(t, a).Invoke(ctx(t), generateReq())
	assert.ErrorIs(t, err, errcodes.Internal)
	assert.LessOrEqual(t, body.N, int64(httpadapter.DefaultMaxErrorBody+64<<10), "read %d bytes", body.N)
}

func TestTransportError(t *testing.T) {
	a, srv := server(t, func(w http.ResponseWriter, r *http.Request) {})
	srv.Close()
	_, err := client(t, a).Invoke(ctx(t), generateReq())
	var e *errcodes.Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, errcodes.Unavailable, e.Code)
	assert.Equal(t, "azure", e.Provider)
	assert.True(t, e.Retryable)
}

func TestResponseTooLarge(t *testing.T) {
	a, _ := server(t, recorder(&seen{}, 200, "application/json", chatReply), func(o *Options) { o.MaxResponseBytes = 16 })
	_, err := client(t, a).Invoke(ctx(t), generateReq())
	assert.ErrorIs(t, err, errcodes.PayloadTooLarge)
}

// TestErrorOn200Body: an error object in a 2xx body is classified by its
// code, else the status it states, which is then its ProviderCode.
func TestErrorOn200Body(t *testing.T) {
	tests := []struct {
		body  string
		want  errcodes.Code
		pcode string
	}{
		{`{"error":{"message":"slow down","code":429}}`, errcodes.Throttled, "429"},
		{`{"status":422,"code":"parameter_not_supported","message":"n is not supported"}`, errcodes.InvalidParam, "parameter_not_supported"},
		{`{"error":{"code":"TooManyRequests","message":"slow"}}`, errcodes.Throttled, "TooManyRequests"},
	}
	for _, tt := range tests {
		a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, tt.body)
		})
		_, err := client(t, a).Invoke(ctx(t), generateReq())
		var e *errcodes.Error
		require.ErrorAs(t, err, &e, tt.body)
		assert.Equal(t, tt.want, e.Code, tt.body)
		assert.Equal(t, tt.pcode, e.ProviderCode, tt.body)
		assert.Equal(t, http.StatusOK, e.HTTPStatus, tt.body)
	}
}
