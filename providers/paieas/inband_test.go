package paieas

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// TestStreamErrorBeforeContent: an in-band error that no content preceded
// is the whole answer, classified as the same body over HTTP with that
// code's retryability (OpenAI SSE, after a role-only chunk too, and a
// legacy NUL record); after content it is ERR_STREAM_INTERRUPTED, not
// retryable, with its own code in Details["code"].
func TestStreamErrorBeforeContent(t *testing.T) {
	const rateLimit = `{"error":{"message":"Too many requests","type":"RateLimitError","param":null,"code":429}}`
	for _, tc := range []struct {
		name   string
		legacy bool
		parts  []string
		want   errcodes.Code
		code   string // Details["code"] after content
	}{
		{"sse first", false, []string{"data: " + rateLimit + "\n\n", sseDone}, errcodes.Throttled, ""},
		{"sse after role", false, []string{sseRole, "data: " + rateLimit + "\n\n", sseDone}, errcodes.Throttled, ""},
		{"sse after content", false, []string{sseRole, sseHello, "data: " + rateLimit + "\n\n", sseDone}, errcodes.StreamInterrupted, "ERR_THROTTLED"},
		{"legacy first", true, []string{rateLimit + "\x00"}, errcodes.Throttled, ""},
		{"legacy after content", true, []string{`{"response":"a"}` + "\x00", rateLimit + "\x00"}, errcodes.StreamInterrupted, "ERR_THROTTLED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct := "text/event-stream"
			if tc.legacy {
				ct = "application/json"
			}
			a, _ := server(t, func(w http.ResponseWriter, r *http.Request) { writeFlushed(w, ct, tc.parts...) })
			r := generateReq()
			if tc.legacy {
				r = legacyReq()
			}
			out := stream(t, a, r)
			var e *errcodes.Error
			require.ErrorAs(t, out.Err, &e)
			assert.Equal(t, tc.want, e.Code, "%v", out.Err)
			assert.Equal(t, "alibaba", e.Provider)
			if tc.code == "" {
				assert.Zero(t, out.Content())
				assert.Equal(t, tc.want.Retryable(), e.Retryable)
				return
			}
			assert.Positive(t, out.Content())
			assert.False(t, e.Retryable)
			assert.Equal(t, tc.code, e.Details["code"])
		})
	}
}

// TestMalformedGenerateBody: a 2xx generate answer that does not parse,
// in either dialect, is ERR_MODEL_ERROR, not retryable; a legacy stream
// whose first record does not parse too, and one cut after content is
// ERR_STREAM_INTERRUPTED.
func TestMalformedGenerateBody(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set(HeaderRequestID, "rid")
			_, _ = io.WriteString(w, `{"choices":[{"mess`)
		})
		r := generateReq()
		if legacy {
			r = legacyReq()
		}
		_, err := client(t, a).Invoke(ctx(t), r)
		var e *errcodes.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, errcodes.ModelError, e.Code, "legacy %v: %v", legacy, err)
		assert.False(t, e.Retryable)
		assert.Equal(t, http.StatusOK, e.HTTPStatus)
		assert.Equal(t, "rid", e.RequestID)
	}
	a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		writeFlushed(w, "application/json", `{"respo`+"\x00")
	})
	out := stream(t, a, legacyReq())
	var e *errcodes.Error
	require.ErrorAs(t, out.Err, &e)
	assert.Equal(t, errcodes.ModelError, e.Code, "%v", out.Err)
	assert.False(t, e.Retryable)

	a, _ = server(t, func(w http.ResponseWriter, r *http.Request) {
		writeFlushed(w, "application/json", `{"response":"a"}`+"\x00", `{"respo`+"\x00")
	})
	out = stream(t, a, legacyReq())
	require.ErrorAs(t, out.Err, &e)
	assert.Equal(t, errcodes.StreamInterrupted, e.Code, "%v", out.Err)
	assert.False(t, e.Retryable)
}
