package openaiwire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

const (
	roleFrame    = `{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
	contentFrame = `{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}`
)

// inBandErrors are in-band error events and the code the same body gets
// over HTTP with no status of its own beyond what it states.
var inBandErrors = []struct {
	name, body string
	want       errcodes.Code
	pcode      string
}{
	{"vllm rate limit", `{"error":{"message":"Too many requests","type":"RateLimitError","param":null,"code":429}}`, errcodes.Throttled, "RateLimitError"},
	{"openai rate limit", `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, errcodes.Throttled, "rate_limit_exceeded"},
	{"openai server error", `{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}`, errcodes.Internal, "server_error"},
	{"content filter", `{"error":{"message":"The response was filtered","type":null,"param":"prompt","code":"content_filter"}}`, errcodes.InvalidParam, "content_filter"},
	{"insufficient quota", `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`, errcodes.QuotaExceeded, "insufficient_quota"},
	{"vllm status only", `{"error":{"message":"engine is overloaded","code":503}}`, errcodes.Unavailable, "503"},
	{"vllm bad request", `{"error":{"message":"max_tokens too large","type":"BadRequestError","param":null,"code":400}}`, errcodes.InvalidParam, "BadRequestError"},
	{"tgi overloaded", `{"error":"Model is overloaded","error_type":"overloaded"}`, errcodes.Throttled, "overloaded"},
}

// TestStreamDecoderErrorBeforeContent: an in-band error that no content
// preceded is the whole answer: it gets the code the same body gets over
// HTTP, with that code's retryability, never ERR_STREAM_INTERRUPTED. A
// role-only first chunk is not content.
func TestStreamDecoderErrorBeforeContent(t *testing.T) {
	for _, tt := range inBandErrors {
		for _, lead := range [][]string{nil, {roleFrame}} {
			d := &StreamDecoder{Provider: "p", RequestID: "r"}
			for _, f := range lead {
				ch, end, err := d.Decode([]byte(f))
				require.NoError(t, err)
				require.False(t, end)
				require.False(t, ch.Content)
			}
			_, end, err := d.Decode([]byte(tt.body))
			assert.False(t, end)
			var e *errcodes.Error
			require.ErrorAs(t, err, &e, tt.name)
			assert.Equal(t, tt.want, e.Code, "%s after %d chunks: %v", tt.name, len(lead), err)
			assert.Equal(t, tt.want.Retryable(), e.Retryable, tt.name)
			assert.Equal(t, tt.pcode, e.ProviderCode, tt.name)
			assert.Equal(t, "p", e.Provider, tt.name)
			assert.Equal(t, "r", e.RequestID, tt.name)
			assert.NotEmpty(t, e.Message, tt.name)
		}
	}
}

// TestStreamDecoderErrorAfterContent: once content reached the caller, an
// in-band error interrupts the stream: ERR_STREAM_INTERRUPTED, not
// retryable, with the in-band error's own code in Details["code"].
func TestStreamDecoderErrorAfterContent(t *testing.T) {
	for _, tt := range inBandErrors {
		d := &StreamDecoder{Provider: "p", RequestID: "r"}
		for _, f := range []string{roleFrame, contentFrame} {
			_, _, err := d.Decode([]byte(f))
			require.NoError(t, err)
		}
		_, _, err := d.Decode([]byte(tt.body))
		var e *errcodes.Error
		require.ErrorAs(t, err, &e, tt.name)
		assert.Equal(t, errcodes.StreamInterrupted, e.Code, tt.name)
		assert.False(t, e.Retryable, tt.name)
		assert.Equal(t, string(tt.want), e.Details["code"], tt.name)
		assert.Equal(t, tt.pcode, e.ProviderCode, tt.name)
	}
}

// TestStreamDecoderMalformed: a chunk that does not parse is the model
// server's fault when it is the first thing the caller would see
// (ERR_MODEL_ERROR, not retryable, as for a whole body); after content it
// interrupts the stream.
func TestStreamDecoderMalformed(t *testing.T) {
	const bad = `{"choices":[{"delta":{"content`
	d := &StreamDecoder{Provider: "p", RequestID: "r"}
	_, _, err := d.Decode([]byte(roleFrame))
	require.NoError(t, err)
	_, _, err = d.Decode([]byte(bad))
	var e *errcodes.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, errcodes.ModelError, e.Code, "%v", err)
	assert.False(t, e.Retryable)
	assert.Equal(t, "r", e.RequestID)

	d = &StreamDecoder{Provider: "p", RequestID: "r"}
	_, _, err = d.Decode([]byte(contentFrame))
	require.NoError(t, err)
	_, _, err = d.Decode([]byte(bad))
	require.ErrorAs(t, err, &e)
	assert.Equal(t, errcodes.StreamInterrupted, e.Code, "%v", err)
	assert.False(t, e.Retryable)
}

// TestClassifyContentFilter: OpenAI's and Azure OpenAI's content_filter
// code is the request's fault, whatever status came with it.
func TestClassifyContentFilter(t *testing.T) {
	assert.Equal(t, errcodes.InvalidParam, Classify(0, ErrorBody{Code: "content_filter"}))
	assert.Equal(t, errcodes.InvalidParam, Classify(400, ErrorBody{Code: "content_filter"}))
}
