package paieas

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
	tests := []struct {
		status    int
		ct, body  string
		want      errcodes.Code
		pcode     string
		retryable bool
		msg       string
	}{
		{400, "text/plain", "processor exception: bad input", errcodes.InvalidParam, "400", false, "processor exception: bad input"},
		{401, "text/plain", "Authorization Failed", errcodes.Unauthenticated, "401", false, "Authorization Failed"},
		{403, "text/plain", "Forbidden", errcodes.PermissionDenied, "403", false, "Forbidden"},
		{404, "text/plain", "service not found: llm-svc", errcodes.NotFound, "404", false, "service not found: llm-svc"},
		{405, "text/plain", "Method Not Allowed", errcodes.InvalidParam, "405", false, ""},
		{408, "text/plain", "request timeout", errcodes.Timeout, "408", true, ""},
		{413, "text/plain", "request entity too large", errcodes.PayloadTooLarge, "413", false, ""},
		{429, "text/plain", "rate limited", errcodes.Throttled, "429", true, "rate limited"},
		{450, "text/plain", "request is discarded because the queue is full", errcodes.Throttled, "450", true, "request is discarded because the queue is full"},
		{450, "text/plain", "", errcodes.Throttled, "450", true, "request discarded because the queue is full"},
		{499, "text/plain", "client closed", errcodes.Canceled, "499", false, ""},
		{500, "text/plain", "internal error", errcodes.Internal, "500", true, "internal error"},
		{502, "text/html", "<html><title>502 Bad Gateway</title></html>", errcodes.Unavailable, "502", true, "502 Bad Gateway"},
		{503, "text/plain", "no ready instance", errcodes.ModelNotReady, "503", true, "no ready instance"},
		{503, "text/plain", "Service Unavailable: no ready instance", errcodes.ModelNotReady, "503", true, ""},
		{503, "text/plain", "no available instance for service llm-svc", errcodes.ModelNotReady, "503", true, ""},
		{503, "text/plain", "Service Unavailable", errcodes.Unavailable, "503", true, "Service Unavailable"},
		{503, "text/plain", "upstream connect error or disconnect/reset before headers. reset reason: overflow", errcodes.Unavailable, "503", true, ""},
		{503, "text/plain", "no healthy upstream", errcodes.Unavailable, "503", true, ""},
		{503, "application/json", `{"error":{"message":"The model ` + "`m`" + ` is loading","type":"ServiceUnavailableError","code":503}}`, errcodes.ModelNotReady, "ServiceUnavailableError", true, ""},
		{504, "text/plain", "gateway timeout", errcodes.Timeout, "504", true, ""},
		{507, "text/plain", "", errcodes.Unavailable, "507", true, ""},
		{418, "text/plain", "", errcodes.InvalidParam, "418", false, ""},
		// OpenAI-style bodies from the model server behind /v1.
		{400, "application/json", `{"error":{"message":"bad temperature","type":"BadRequestError","param":null,"code":400}}`, errcodes.InvalidParam, "BadRequestError", false, "bad temperature"},
		{429, "application/json", `{"error":{"message":"quota","type":"insufficient_quota","code":"insufficient_quota"}}`, errcodes.QuotaExceeded, "insufficient_quota", false, ""},
		{500, "application/json", `{"object":"error","message":"engine dead","type":"InternalServerError","code":500}`, errcodes.Internal, "InternalServerError", true, "engine dead"},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status)+tt.pcode+tt.body[:min(len(tt.body), 10)], func(t *testing.T) {
			a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.ct)
				w.Header().Set("X-Request-Id", "eas-rid")
				if tt.status == 450 || tt.status == 429 {
					w.Header().Set("Retry-After", "1")
				}
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			})
			_, err := client(t, a).Invoke(ctx(t), generateReq())
			var e *errcodes.Error
			require.True(t, errors.As(err, &e))
			assert.Equal(t, tt.want, e.Code, "%v", err)
			assert.Equal(t, "alibaba", e.Provider)
			assert.Equal(t, tt.pcode, e.ProviderCode)
			assert.Equal(t, tt.status, e.HTTPStatus)
			assert.Equal(t, tt.retryable, e.Retryable)
			assert.Equal(t, "eas-rid", e.RequestID)
			if tt.msg != "" {
				assert.Equal(t, tt.msg, e.Message)
			}
			if tt.status == 450 || tt.status == 429 {
				assert.Equal(t, time.Second, e.RetryAfter)
			}
			var api *APIError
			require.True(t, errors.As(err, &api))
			assert.Equal(t, tt.status, api.StatusCode)
			assert.NotContains(t, err.Error(), token)
		})
	}
}

func TestQueueFullIsRetried(t *testing.T) {
	n := 0
	a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		n++
		if n == 1 {
			w.WriteHeader(450)
			_, _ = io.WriteString(w, "request is discarded because the queue is full")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, chatReply)
	})
	c, err := newClientRetrying(a)
	require.NoError(t, err)
	resp, err := c.Invoke(ctx(t), generateReq())
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	require.Len(t, resp.Errors, 1)
	assert.Equal(t, errcodes.Throttled, resp.Errors[0].Code)
}

func TestHugeErrorBodyIsReadBounded(t *testing.T) {
	body := &providertest.Endless{}
	hc := &http.Client{Transport: providertest.RoundTrip(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 503, Header: http.Header{}, Body: body, Request: r}, nil
	})}
	a, err := New(Options{Endpoint: "https://eas.invalid", HTTPClient: hc})
	require.NoError(t, err)
	_, err = client(t, a).Invoke(ctx(t), generateReq())
	assert.ErrorIs(t, err, errcodes.Unavailable, "a 503 that does not say no instance is ready")
	assert.LessOrEqual(t, body.N, int64(httpadapter.DefaultMaxErrorBody+64<<10))
	var e *errcodes.Error
	require.True(t, errors.As(err, &e))
	assert.LessOrEqual(t, len(e.Message), 600)
}

func TestTransportError(t *testing.T) {
	a, srv := server(t, func(w http.ResponseWriter, r *http.Request) {})
	srv.Close()
	_, err := client(t, a).Invoke(ctx(t), generateReq())
	var e *errcodes.Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, errcodes.Unavailable, e.Code)
	assert.Equal(t, "alibaba", e.Provider)
}

func TestResponseTooLarge(t *testing.T) {
	a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, chatReply)
	}, func(o *Options) { o.MaxResponseBytes = 16 })
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
		{`{"error":{"message":"quota","type":"insufficient_quota","code":"insufficient_quota"}}`, errcodes.QuotaExceeded, "insufficient_quota"},
		{`{"object":"error","message":"bad n","type":"BadRequestError","code":400}`, errcodes.InvalidParam, "BadRequestError"},
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
