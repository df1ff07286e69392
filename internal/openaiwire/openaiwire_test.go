package openaiwire

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

func TestParseError(t *testing.T) {
	tests := []struct {
		name string
		body string
		ok   bool
		want ErrorBody
	}{
		{"vllm nested", `{"error":{"message":"m","type":"BadRequestError","param":null,"code":400}}`, true,
			ErrorBody{Status: 400, Type: "BadRequestError", Message: "m", Shape: "nested"}},
		{"vllm flat", `{"object":"error","message":"m","type":"NotFoundError","param":null,"code":404}`, true,
			ErrorBody{Status: 404, Type: "NotFoundError", Message: "m", Shape: "flat"}},
		{"openai string code", `{"error":{"message":"m","type":"insufficient_quota","param":"x","code":"insufficient_quota"}}`, true,
			ErrorBody{Code: "insufficient_quota", Type: "insufficient_quota", Param: "x", Message: "m", Shape: "nested"}},
		{"openai null code", `{"error":{"message":"m","type":"invalid_request_error","param":null,"code":null}}`, true,
			ErrorBody{Type: "invalid_request_error", Message: "m", Shape: "nested"}},
		{"azure flat", `{"status":422,"code":"parameter_not_supported","detail":{"param":"n"},"message":"m"}`, true,
			ErrorBody{Status: 422, Code: "parameter_not_supported", Detail: `{"param":"n"}`, Message: "m", Shape: "azure"}},
		{"azure score nested", `{"error":{"code":"ModelNotReady","message":"m"}}`, true,
			ErrorBody{Code: "ModelNotReady", Message: "m", Shape: "nested"}},
		{"message only", `{"message":"m"}`, true, ErrorBody{Message: "m", Shape: "flat"}},
		{"hf", `{"error":"Model x is currently loading","estimated_time":12.5}`, true,
			ErrorBody{Message: "Model x is currently loading", EstimatedTime: 12.5, Shape: "hf"}},
		{"tgi", `{"error":"Input validation error: max_new_tokens must be > 0","error_type":"validation"}`, true,
			ErrorBody{Type: "validation", Message: "Input validation error: max_new_tokens must be > 0", Shape: "hf"}},
		{"fastapi", `{"detail":"Not Found"}`, true, ErrorBody{Message: "Not Found", Shape: "detail"}},
		{"string numeric code", `{"error":{"message":"m","code":"429"}}`, true, ErrorBody{Status: 429, Message: "m", Shape: "nested"}},
		{"odd member types", `{"error":{"message":7,"type":["x"],"code":{"a":1}}}`, true, ErrorBody{Shape: "nested"}},
		{"not json", `Internal Server Error`, false, ErrorBody{}},
		{"unknown object", `{"foo":1}`, false, ErrorBody{}},
		{"broken json", `{"error":`, false, ErrorBody{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseError([]byte(tt.body))
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestMessageIsCut(t *testing.T) {
	long := make([]byte, 3000)
	for i := range long {
		long[i] = 'a'
	}
	got, ok := ParseError([]byte(`{"message":"` + string(long) + `"}`))
	require.True(t, ok)
	assert.LessOrEqual(t, len(got.Message), MaxMessage+len("…"))
}

func TestClassify(t *testing.T) {
	tests := []struct {
		status int
		body   ErrorBody
		want   errcodes.Code
	}{
		{429, ErrorBody{Code: "insufficient_quota"}, errcodes.QuotaExceeded},
		{429, ErrorBody{Type: "insufficient_quota"}, errcodes.QuotaExceeded},
		{429, ErrorBody{Code: "rate_limit_exceeded"}, errcodes.Throttled},
		{404, ErrorBody{Type: "invalid_request_error"}, errcodes.NotFound},
		{503, ErrorBody{Message: "The model `x` is loading"}, errcodes.ModelNotReady},
		{503, ErrorBody{EstimatedTime: 3}, errcodes.ModelNotReady},
		{503, ErrorBody{Message: "overloaded"}, errcodes.Unavailable},
		{500, ErrorBody{Message: "model is loading"}, errcodes.Internal},
		{0, ErrorBody{Status: 500, Type: "InternalServerError"}, errcodes.Internal},
		{0, ErrorBody{Type: "RateLimitError"}, errcodes.Throttled},
		{0, ErrorBody{Type: "server_error"}, errcodes.Internal},
		{0, ErrorBody{}, errcodes.Unknown},
		// TGI's error_type, met in a stream.
		{0, ErrorBody{Type: "validation"}, errcodes.InvalidParam},
		{0, ErrorBody{Type: "overloaded"}, errcodes.Throttled},
		{0, ErrorBody{Type: "generation"}, errcodes.ModelError},
		{0, ErrorBody{Type: "incomplete_generation"}, errcodes.Internal},
		{424, ErrorBody{Type: "generation"}, errcodes.ModelError},
		{200, ErrorBody{Type: "BadRequestError"}, errcodes.InvalidParam},
		// An error object in a 2xx body: the status it states decides.
		{200, ErrorBody{Status: 422, Code: "parameter_not_supported"}, errcodes.InvalidParam},
		{200, ErrorBody{Status: 429}, errcodes.Throttled},
		{200, ErrorBody{Status: 503, Type: "server_error"}, errcodes.Unavailable},
		{200, ErrorBody{Status: 503, Message: "model is loading"}, errcodes.ModelNotReady},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Classify(tt.status, tt.body), "%d %+v", tt.status, tt.body)
	}
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name string
		body string
		want Result
	}{
		{"role only", `{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`, Result{}},
		{"content", `{"choices":[{"delta":{"content":"hi"}}]}`, Result{Text: "hi", Content: true}},
		{"tool call", `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]}`, Result{Content: true, ToolCalls: []cloudreq.ToolCall{{Arguments: "{"}}}},
		{"empty tool calls", `{"choices":[{"delta":{"tool_calls":[]}}]}`, Result{}},
		{"reasoning", `{"choices":[{"delta":{"reasoning_content":"hm"}}]}`, Result{Content: true, Reasoning: "hm"}},
		{"vllm reasoning", `{"choices":[{"delta":{"reasoning":"hm"}}]}`, Result{Content: true, Reasoning: "hm"}},
		{"reasoning object", `{"choices":[{"delta":{"reasoning":{"text":"hm"}}}]}`, Result{Content: true}},
		{"empty reasoning", `{"choices":[{"delta":{"role":"assistant","reasoning":null,"reasoning_content":""}}]}`, Result{}},
		{"blank reasoning", `{"choices":[{"delta":{"reasoning":""}}]}`, Result{}},
		{"finish", `{"choices":[{"delta":{},"finish_reason":"length"}]}`, Result{FinishReason: "length"}},
		{"usage only", `{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":9,"total_tokens":12}}`,
			Result{Usage: &cloudreq.Usage{InputTokens: 3, OutputTokens: 9, Source: "server"}}},
		{"whole chat", `{"choices":[{"message":{"role":"assistant","content":"yo"},"finish_reason":"stop"}]}`, Result{Text: "yo", Content: true, FinishReason: "stop"}},
		{"completion", `{"choices":[{"text":"a"},{"text":"b","finish_reason":"stop"}]}`, Result{Text: "ab", Content: true, FinishReason: "stop",
			Choices: []cloudreq.Choice{{Index: 0, Text: "a"}, {Index: 1, Text: "b", FinishReason: "stop"}}}},
		{"null error member", `{"error":null,"choices":[{"delta":{"content":"x"}}]}`, Result{Text: "x", Content: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode([]byte(tt.body))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	r, err := Decode([]byte(`{"error":{"message":"boom","type":"InternalServerError","code":500}}`))
	require.NoError(t, err)
	require.NotNil(t, r.Error)
	assert.Equal(t, 500, r.Error.Status)

	// Azure's flat envelope and older vLLM's are errors too; a chunk-like
	// object without choices is not.
	for body, status := range map[string]int{
		`{"status":422,"code":"parameter_not_supported","detail":{"parameter":"x"},"message":"x is not supported"}`: 422,
		`{"object":"error","message":"old vllm says no","type":"BadRequestError","param":null,"code":400}`:          400,
	} {
		r, err := Decode([]byte(body))
		require.NoError(t, err, body)
		require.NotNil(t, r.Error, body)
		assert.Equal(t, status, r.Error.Status, body)
		assert.NotEmpty(t, r.Error.Message, body)
	}
	r, err = Decode([]byte(`{"id":"x","object":"chat.completion.chunk","usage":{"prompt_tokens":1,"completion_tokens":2}}`))
	require.NoError(t, err)
	assert.Nil(t, r.Error)
	require.NotNil(t, r.Usage)
	_, err = Decode([]byte(`[1]`))
	assert.ErrorIs(t, err, ErrNotJSON)
	_, err = Decode([]byte(`{"choices":`))
	assert.Error(t, err)
}

func TestStreamDecoder(t *testing.T) {
	d := &StreamDecoder{Provider: "openai", RequestID: "r"}
	_, end, err := d.Decode([]byte(`{"choices":[{"delta":{"content":"a"}}]}`))
	require.NoError(t, err)
	assert.False(t, end)
	assert.ErrorIs(t, d.Complete(), errcodes.StreamInterrupted, "no finish reason yet")
	_, _, err = d.Decode([]byte(`{"choices":[{"delta":{},"finish_reason":"stop"}]}`))
	require.NoError(t, err)
	assert.NoError(t, d.Complete())
	_, end, err = d.Decode([]byte(" [DONE] "))
	require.NoError(t, err)
	assert.True(t, end)
	_, _, err = d.Decode([]byte(`{"error":{"message":"x","type":"BadRequestError","code":400}}`))
	var e *errcodes.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, errcodes.StreamInterrupted, e.Code)
	assert.Equal(t, "ERR_INVALID_PARAM", e.Details["code"])
	assert.False(t, e.Retryable)
	assert.Equal(t, "r", e.RequestID)
}

func TestIsCompletionsPath(t *testing.T) {
	assert.True(t, IsCompletionsPath("/v1/completions"))
	assert.True(t, IsCompletionsPath("/v1/completions/?x=1"))
	assert.False(t, IsCompletionsPath("/v1/chat/completions"))
	assert.False(t, IsCompletionsPath("/chat/completions?api-version=1"))
	assert.False(t, IsCompletionsPath(""))
}

func TestPrompt(t *testing.T) {
	assert.Equal(t, "hi", Prompt([]cloudreq.Message{{Role: "user", Content: "hi"}}))
	assert.Equal(t, "system: s\nuser: u\nassistant:", Prompt([]cloudreq.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "u"}}))
}

// TestDecodeErrorWithOddMembers: an error object whose other members have
// unexpected types (a string "status", a numeric "object") is still an
// error, as ParseError reads it; it was taken for an empty chunk, and a
// mid-stream error passed unseen.
func TestDecodeErrorWithOddMembers(t *testing.T) {
	for _, body := range []string{
		`{"error":{"message":"boom","type":"InternalServerError","code":500},"status":"failed"}`,
		`{"error":{"message":"boom","code":500},"object":7}`,
		`{"error":{"message":"boom","code":500},"message":{"text":"x"}}`,
		`{"status":500.0,"code":"internal","message":"boom"}`,
	} {
		r, err := Decode([]byte(body))
		require.NoError(t, err, body)
		require.NotNil(t, r.Error, body)
		assert.Equal(t, "boom", r.Error.Message, body)

		// Before any content the error is the whole answer (a 500);
		// after content it interrupts the stream.
		d := &StreamDecoder{Provider: "p"}
		_, _, err = d.Decode([]byte(body))
		assert.ErrorIs(t, err, errcodes.Internal, body)
		d = &StreamDecoder{Provider: "p"}
		_, _, err = d.Decode([]byte(`{"choices":[{"delta":{"content":"a"}}]}`))
		require.NoError(t, err)
		_, _, err = d.Decode([]byte(body))
		assert.ErrorIs(t, err, errcodes.StreamInterrupted, body)
	}
}

// TestDecodeEmptyToolCallsWithSpaces: an empty tool_calls array is not
// content, however it is spaced.
func TestDecodeEmptyToolCallsWithSpaces(t *testing.T) {
	for _, tc := range []string{`[ ]`, "[\n ]", `[]`, `null`} {
		r, err := Decode([]byte(`{"choices":[{"delta":{"tool_calls":` + tc + `}}]}`))
		require.NoError(t, err)
		assert.False(t, r.Content, tc)
	}
}

// TestDecodeManyChoicesAllocatesLinearly: the texts of many choices are
// joined in linear space. Joined pairwise, a 280 KB chunk of 20,000
// two-character choices allocated about 440 MB (each join copied all the
// text before it): a server could make every chunk cost that.
func TestDecodeManyChoicesAllocatesLinearly(t *testing.T) {
	const n = 20000
	body := []byte(`{"choices":[` + strings.Repeat(`{"text":"ab"},`, n-1) + `{"text":"ab"}]}`)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r, err := Decode(body)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	assert.Len(t, r.Text, 2*n)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(100*len(body)), "bytes allocated for a %d-byte chunk", len(body))
}
