package emulator

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func openAIClient(s *Server, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{
		option.WithBaseURL(s.URL() + "/v1"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0),
	}, opts...)...)
}

func TestOpenAIStreamingIncludeUsage(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 7})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var resp *http.Response
	client := openAIClient(s)
	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:         "llama-3-8b",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage(strings.Repeat("word ", 400))},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}, option.WithResponseInto(&resp))
	var text strings.Builder
	contentChunks := 0
	var usage openai.CompletionUsage
	finish := ""
	for stream.Next() {
		ch := stream.Current()
		if len(ch.Choices) > 0 {
			if ch.Choices[0].Delta.Content != "" {
				contentChunks++
				text.WriteString(ch.Choices[0].Delta.Content)
			}
			if ch.Choices[0].FinishReason != "" {
				finish = ch.Choices[0].FinishReason
			}
		}
		if ch.Usage.CompletionTokens > 0 {
			usage = ch.Usage
		}
	}
	require.NoError(t, stream.Err())
	require.NoError(t, stream.Close())
	assert.Equal(t, "stop", finish)
	assert.Equal(t, int64(contentChunks), usage.CompletionTokens)
	assert.Equal(t, int64(500), usage.PromptTokens) // 2000 bytes / 4
	assert.Equal(t, usage.PromptTokens+usage.CompletionTokens, usage.TotalTokens)

	require.NotNil(t, resp)
	assert.Equal(t, strconv.Itoa(contentChunks), resp.Header.Get(HeaderOutputTokens))
	ttft, err := strconv.ParseFloat(resp.Header.Get(HeaderTTFTMs), 64)
	require.NoError(t, err)
	assert.Greater(t, ttft, 0.0)
	assert.Equal(t, "false", resp.Header.Get(HeaderColdStart))

	recs := waitRecords(t, s, 1)
	r := recs[0]
	assert.Equal(t, OpenAI, r.Provider)
	assert.Equal(t, "ok", r.Outcome)
	assert.Equal(t, contentChunks, r.TokensSent)
	assert.InDelta(t, ttft, r.TTFTMs, 0.001)
	assert.Equal(t, resp.Header.Get(HeaderRequestID), r.ID)
	assert.GreaterOrEqual(t, r.FirstTokenMs, r.TTFTMs)
}

func TestOpenAINonStreaming(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 7})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := openAIClient(s)
	res, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:     "phi-3-mini",
		Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
		MaxTokens: openai.Int(5),
	})
	require.NoError(t, err)
	require.Len(t, res.Choices, 1)
	assert.Equal(t, "length", res.Choices[0].FinishReason)
	assert.Equal(t, int64(5), res.Usage.CompletionTokens)
	assert.Len(t, strings.Fields(res.Choices[0].Message.Content), 5)

	comp, err := c.Completions.New(ctx, openai.CompletionNewParams{
		Model:  "qwen2-7b",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("once upon a time")},
	})
	require.NoError(t, err)
	require.Len(t, comp.Choices, 1)
	assert.NotEmpty(t, comp.Choices[0].Text)

	_, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "no-such-model",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
	})
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr), "got %v", err)
	assert.Equal(t, http.StatusNotFound, apiErr.StatusCode)
}

// TestWrongMethod405: every POST route of the HTTP protocols answers
// another method with 405 and an Allow header, in its server's form.
func TestWrongMethod405(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 1})
	name := DefaultEndpoints()[0].Name
	tests := []struct {
		path, method, allow, body string
	}{
		{"/v1/chat/completions", http.MethodGet, "POST", `{"detail":"Method Not Allowed"}`},
		{"/v1/completions", http.MethodPut, "POST", `{"detail":"Method Not Allowed"}`},
		{"/v1/models", http.MethodPost, "GET", `{"detail":"Method Not Allowed"}`},
		{"/api/predict/" + name, http.MethodGet, "POST", "Method Not Allowed\n"},
		{"/api/predict/" + name + "/v1/chat/completions", http.MethodGet, "POST", "Method Not Allowed\n"},
		{"/api/predict/" + name + "/v1/models", http.MethodPost, "GET", "Method Not Allowed\n"},
		{"/azureml/" + name + "/score", http.MethodGet, "POST", `MethodNotAllowed`},
		{"/azureml/" + name + "/chat/completions", http.MethodGet, "POST", `MethodNotAllowed`},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req, err := http.NewRequestWithContext(context.Background(), tt.method, s.URL()+tt.path, nil)
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
			assert.Equal(t, tt.allow, resp.Header.Get("Allow"))
			assert.Contains(t, string(b), tt.body)
		})
	}
}

// TestOpenAIModelsAuth: a model list or lookup refused for its
// credentials is a 401, as vLLM with --api-key answers, not an empty list
// or a 404; models the key may use are listed.
func TestOpenAIModelsAuth(t *testing.T) {
	keyed := func(name, key string) Endpoint {
		p, _ := BuiltinProfile("phi-3-mini")
		return Endpoint{Name: name, Profile: p, Credentials: Credentials{Keys: []string{key}}}
	}
	s := start(t, Options{TimeScale: 0.001, Seed: 1, Endpoints: []Endpoint{keyed("a", "key-a"), keyed("b", "key-b")}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	get := func(path, key string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+path, nil)
		require.NoError(t, err)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		path, key string
		status    int
		body      string
	}{
		{"/v1/models", "", 401, "AuthenticationError"},
		{"/v1/models", "wrong", 401, "AuthenticationError"},
		{"/v1/models", "key-a", 200, `"id":"a"`},
		{"/v1/models/a", "", 401, "AuthenticationError"},
		{"/v1/models/a", "key-b", 401, "AuthenticationError"},
		{"/v1/models/a", "key-a", 200, `"id":"a"`},
		{"/v1/models/nope", "key-a", 404, "NotFoundError"},
	} {
		status, body := get(tc.path, tc.key)
		assert.Equal(t, tc.status, status, "%s with %q: %s", tc.path, tc.key, body)
		assert.Contains(t, body, tc.body, "%s with %q", tc.path, tc.key)
	}
	_, body := get("/v1/models", "key-a")
	assert.NotContains(t, body, `"id":"b"`)
}

// TestPathNamedChatChecksAuthFirst: where the path names the endpoint
// (Azure serverless chat, PAI-EAS /v1/), bad credentials are refused
// before the body is looked at, as the providers' gateways do.
func TestPathNamedChatChecksAuthFirst(t *testing.T) {
	p, _ := BuiltinProfile("phi-3-mini")
	s := start(t, Options{TimeScale: 0.001, Seed: 1, Endpoints: []Endpoint{{Name: "k", Profile: p, Credentials: Credentials{Keys: []string{"key"}}}}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, path := range []string{"/azureml/k/chat/completions", "/api/predict/k/v1/chat/completions", "/api/predict/k/v1/completions"} {
		resp, err := do(ctx, t, s.URL()+path, `{"messages":"not a list"}`, map[string]string{"Authorization": "Bearer wrong"})
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, path)
	}
}
