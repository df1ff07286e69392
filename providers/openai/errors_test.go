package openai

import (
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
	"github.com/cloudinfer/cloudinfer/providers/providertest"
)

// TestErrorMapping holds the rows of the package doc's table.
func TestErrorMapping(t *testing.T) {
	const (
		jsonCT = "application/json"
		htmlCT = "text/html"
		textCT = "text/plain"
	)
	tests := []struct {
		name      string
		status    int
		ct, body  string
		header    map[string]string
		want      errcodes.Code
		pcode     string
		retryable bool
		msg       string
	}{
		{"quota code", 429, jsonCT, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`, nil, errcodes.QuotaExceeded, "insufficient_quota", false, "You exceeded your current quota"},
		{"rate limit code", 429, jsonCT, `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, map[string]string{"Retry-After": "2"}, errcodes.Throttled, "rate_limit_exceeded", true, "Rate limit reached"},
		{"invalid api key", 401, jsonCT, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, nil, errcodes.Unauthenticated, "invalid_api_key", false, "Incorrect API key provided"},
		{"model not found", 404, jsonCT, `{"error":{"message":"The model does not exist","type":"invalid_request_error","param":null,"code":"model_not_found"}}`, nil, errcodes.NotFound, "model_not_found", false, ""},
		{"context length", 400, jsonCT, `{"error":{"message":"maximum context length","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, nil, errcodes.InvalidParam, "context_length_exceeded", false, ""},
		{"model not ready code", 503, jsonCT, `{"error":{"message":"warming up","type":"server_error","code":"model_not_ready"}}`, nil, errcodes.ModelNotReady, "model_not_ready", true, ""},
		{"hf estimated_time", 503, jsonCT, `{"error":"Model meta/llama is currently loading","estimated_time":20.5}`, nil, errcodes.ModelNotReady, "503", true, "Model meta/llama is currently loading"},
		{"vllm loading message", 503, jsonCT, `{"error":{"message":"The model ` + "`m`" + ` is loading, retry later","type":"ServiceUnavailableError","param":null,"code":503}}`, nil, errcodes.ModelNotReady, "ServiceUnavailableError", true, ""},
		{"vllm nested 400", 400, jsonCT, `{"error":{"message":"bad temperature","type":"BadRequestError","param":null,"code":400}}`, nil, errcodes.InvalidParam, "BadRequestError", false, "bad temperature"},
		{"vllm flat 400", 400, jsonCT, `{"object":"error","message":"old vllm says no","type":"BadRequestError","param":null,"code":400}`, nil, errcodes.InvalidParam, "BadRequestError", false, "old vllm says no"},
		{"405", 405, jsonCT, `{"detail":"Method Not Allowed"}`, nil, errcodes.InvalidParam, "405", false, "Method Not Allowed"},
		{"409", 409, textCT, `conflict`, nil, errcodes.InvalidParam, "409", false, "conflict"},
		{"422", 422, jsonCT, `{"detail":"Unprocessable"}`, nil, errcodes.InvalidParam, "422", false, ""},
		{"401", 401, jsonCT, `{"error":{"message":"Unauthorized","type":"AuthenticationError","code":401}}`, nil, errcodes.Unauthenticated, "AuthenticationError", false, ""},
		{"403", 403, jsonCT, `{"error":{"message":"nope","type":"PermissionDeniedError","code":403}}`, nil, errcodes.PermissionDenied, "PermissionDeniedError", false, ""},
		{"404", 404, jsonCT, `{"detail":"Not Found"}`, nil, errcodes.NotFound, "404", false, "Not Found"},
		{"408", 408, textCT, ``, nil, errcodes.Timeout, "408", true, "Request Timeout"},
		{"504", 504, jsonCT, `{"error":{"message":"timed out","type":"TimeoutError","code":504}}`, nil, errcodes.Timeout, "TimeoutError", true, ""},
		{"413", 413, jsonCT, `{"error":{"message":"too large","type":"BadRequestError","code":413}}`, nil, errcodes.PayloadTooLarge, "BadRequestError", false, ""},
		{"429 plain", 429, jsonCT, `{"error":{"message":"slow down","type":"RateLimitError","code":429}}`, map[string]string{"retry-after-ms": "1500"}, errcodes.Throttled, "RateLimitError", true, ""},
		{"499", 499, textCT, `client closed`, nil, errcodes.Canceled, "499", false, ""},
		{"500", 500, jsonCT, `{"error":{"message":"boom","type":"InternalServerError","code":500}}`, nil, errcodes.Internal, "InternalServerError", true, "boom"},
		{"500 plain text", 500, textCT, "Internal   Server\nError", nil, errcodes.Internal, "500", true, "Internal Server Error"},
		{"502 html", 502, htmlCT, "<html>\n<head><title>502 Bad Gateway</title></head><body>nginx</body></html>", nil, errcodes.Unavailable, "502", true, "502 Bad Gateway"},
		{"503 plain", 503, jsonCT, `{"error":{"message":"The server is temporarily unavailable","type":"ServiceUnavailableError","code":503}}`, map[string]string{"Retry-After": "1"}, errcodes.Unavailable, "ServiceUnavailableError", true, ""},
		{"503 proxy plain text", 503, textCT, "upstream connect error or disconnect/reset before headers. reset reason: overflow", nil, errcodes.Unavailable, "503", true, "upstream connect error or disconnect/reset before headers. reset reason: overflow"},
		{"501", 501, jsonCT, `{"detail":"Not Implemented"}`, nil, errcodes.InvalidParam, "501", false, "Not Implemented"},
		{"other 5xx", 507, textCT, ``, nil, errcodes.Unavailable, "507", true, ""},
		{"other 4xx", 418, textCT, ``, nil, errcodes.InvalidParam, "418", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.ct)
				w.Header().Set("X-Request-Id", "rid-9")
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			})
			_, err := client(t, a).Invoke(ctx(t), generateReq("m"))
			require.Error(t, err)
			var e *errcodes.Error
			require.True(t, errors.As(err, &e))
			assert.Equal(t, tt.want, e.Code, "%v", err)
			assert.Equal(t, "openai", e.Provider)
			assert.Equal(t, tt.pcode, e.ProviderCode)
			assert.Equal(t, tt.status, e.HTTPStatus)
			assert.Equal(t, "rid-9", e.RequestID)
			assert.Equal(t, tt.retryable, e.Retryable)
			if tt.msg != "" {
				assert.Equal(t, tt.msg, e.Message)
			}
			var api *APIError
			require.True(t, errors.As(err, &api), "the native error is reachable")
			assert.Equal(t, tt.status, api.StatusCode)
			var after time.Duration
			if v, ok := tt.header["Retry-After"]; ok {
				after, _ = time.ParseDuration(v + "s")
			}
			if v, ok := tt.header["retry-after-ms"]; ok {
				after, _ = time.ParseDuration(v + "ms")
			}
			assert.Equal(t, after, e.RetryAfter)
		})
	}
}

func TestRetryAfterMs(t *testing.T) {
	a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("retry-after-ms", "1500")
		w.WriteHeader(429)
	})
	_, err := client(t, a).Invoke(ctx(t), generateReq("m"))
	var e *errcodes.Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, 1500*time.Millisecond, e.RetryAfter)
}

func TestHugeErrorBodyIsReadBounded(t *testing.T) {
	body := &providertest.Endless{}
	hc := &http.Client{Transport: providertest.RoundTrip(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 500, Header: http.Header{"Content-Type": {"text/html"}}, Body: body, Request: r}, nil
	})}
	a, err := New(Options{BaseURL: "https://example.invalid", HTTPClient: hc})
	require.NoError(t, err)
	_, err = client(t, a).Invoke(ctx(t), generateReq("m"))
	assert.ErrorIs(t, err, errcodes.Internal)
	assert.LessOrEqual(t, body.N, int64(httpadapter.DefaultMaxErrorBody+64<<10), "read %d bytes of an endless error page", body.N)
	assert.Contains(t, err.Error(), "HTML error page")
}

func TestTransportErrors(t *testing.T) {
	a, srv := server(t, func(w http.ResponseWriter, r *http.Request) {})
	srv.Close()
	_, err := client(t, a).Invoke(ctx(t), generateReq("m"))
	var e *errcodes.Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, errcodes.Unavailable, e.Code)
	assert.Equal(t, "openai", e.Provider)
	assert.True(t, e.Retryable)

	a, _ = server(t, func(w http.ResponseWriter, r *http.Request) {
		// Hijack and drop the connection before any response byte.
		c, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = c.Close()
		}
	})
	_, err = client(t, a).Invoke(ctx(t), generateReq("m"))
	assert.ErrorIs(t, err, errcodes.Unavailable)
}

func TestErrorOn200Body(t *testing.T) {
	a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"error":{"message":"quota","type":"insufficient_quota","code":"insufficient_quota"}}`)
	})
	_, err := client(t, a).Invoke(ctx(t), generateReq("m"))
	assert.ErrorIs(t, err, errcodes.QuotaExceeded)
}

// TestErrorOn200BodyStatedStatus: an error object in a 2xx body is
// classified by the status the body states.
func TestErrorOn200BodyStatedStatus(t *testing.T) {
	tests := []struct {
		body string
		want errcodes.Code
	}{
		{`{"error":{"message":"Too many requests","code":429}}`, errcodes.Throttled},
		{`{"object":"error","message":"bad n","code":400}`, errcodes.InvalidParam},
		{`{"error":{"message":"engine down","type":"server_error","code":503}}`, errcodes.Unavailable},
	}
	for _, tt := range tests {
		a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, tt.body)
		})
		_, err := client(t, a).Invoke(ctx(t), generateReq("m"))
		assert.Equal(t, tt.want, errcodes.Of(err), "%s: %v", tt.body, err)
	}
}
