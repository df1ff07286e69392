package emulator

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIsEASQueueRequest(t *testing.T) {
	mk := func(method, target string, user bool) *http.Request {
		r := httptest.NewRequest(method, target, nil)
		if user {
			r.Header.Set(easQueueUserHeader, "u")
		}
		return r
	}
	assert.True(t, isEASQueueRequest(mk("GET", "/api/predict/svc/sink", false)))
	assert.True(t, isEASQueueRequest(mk("GET", "/api/predict/svc?_attrs_=true", false)))
	assert.True(t, isEASQueueRequest(mk("POST", "/api/predict/svc", true)))
	assert.False(t, isEASQueueRequest(mk("POST", "/api/predict/svc", false)), "the synchronous service")
	assert.False(t, isEASQueueRequest(mk("POST", "/api/predict/svc/v1/chat/completions", true)))
	assert.False(t, isEASQueueRequest(mk("POST", "/endpoints/svc/invocations", true)))
}

// TestEASQueueWire: the attributes name the identity header, which an
// enqueue needs; the index is text with the request id header; frames
// come as JSON only.
func TestEASQueueWire(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 1})
	do := func(method, path, user, accept string, body string) (int, http.Header, string) {
		req, err := http.NewRequest(method, s.URL()+path, strings.NewReader(body))
		require.NoError(t, err)
		if user != "" {
			req.Header.Set(easQueueUserHeader, user)
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	code, _, body := do("GET", "/api/predict/llama-3-8b?_attrs_=true", "", "", "")
	assert.Equal(t, 200, code)
	assert.Contains(t, body, `"meta.header.userIdentifyHeader":"`+easQueueUserHeader+`"`)
	code, _, _ = do("GET", "/api/predict/llama-3-8b/sink?_index_=0", "", "", "")
	assert.Equal(t, 400, code, "no identity header")
	code, h, body := do("POST", "/api/predict/llama-3-8b?job=1", "u1", "", `{"prompt":"hi","max_new_tokens":2}`)
	assert.Equal(t, 200, code)
	assert.Equal(t, "1", body)
	assert.NotEmpty(t, h.Get(easQueueRequestID))
	code, _, body = do("GET", "/api/predict/llama-3-8b/sink?_index_=1&_length_=1&_timeout_=5s", "u1", "application/json", "")
	assert.Equal(t, 200, code)
	assert.Contains(t, body, `"job":"1"`)
	assert.Contains(t, body, `"lastCode":"200"`)
	code, _, _ = do("GET", "/api/predict/llama-3-8b/sink?_index_=1", "u1", "application/vnd.google.protobuf", "")
	assert.Equal(t, 406, code)
	code, _, _ = do("POST", "/api/predict/nope", "u1", "", "{}")
	assert.Equal(t, 404, code)
}
