package emulator

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wholeChat is the non-streamed chat answer, as far as the tests read it.
type wholeChat struct {
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		Logprobs     *chatLogprobs `json:"logprobs"`
		FinishReason string        `json:"finish_reason"`
	} `json:"choices"`
	Usage usage `json:"usage"`
}

func postJSON(ctx context.Context, t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp, err := do(ctx, t, url, body, nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// TestOpenAIChoicesAndLogprobs: n asks for n choices, each with its own
// index and text, usage counting them all; logprobs true with
// top_logprobs k gives every token's logprob, bytes and k most likely
// tokens (the sampled one first). The same seed gives the same answer; one
// choice without logprobs is as before (choice 0 is the call's own words).
func TestOpenAIChoicesAndLogprobs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const body = `{"model":"llama-3-8b","max_tokens":6,"n":3,"logprobs":true,"top_logprobs":2,"messages":[{"role":"user","content":"hi"}]}`
	answer := func() wholeChat {
		s := start(t, Options{TimeScale: 0.001, Seed: 11})
		status, b := postJSON(ctx, t, s.URL()+"/v1/chat/completions", body)
		require.Equal(t, http.StatusOK, status, "%s", b)
		var w wholeChat
		require.NoError(t, json.Unmarshal(b, &w), "%s", b)
		return w
	}
	w := answer()
	require.Len(t, w.Choices, 3)
	texts := map[string]bool{}
	for j, ch := range w.Choices {
		assert.Equal(t, j, ch.Index)
		assert.Equal(t, "length", ch.FinishReason)
		texts[ch.Message.Content] = true
		require.NotNil(t, ch.Logprobs, "choice %d", j)
		require.Len(t, ch.Logprobs.Content, 6, "one entry per token")
		joined := ""
		for _, e := range ch.Logprobs.Content {
			joined += e.Token
			assert.LessOrEqual(t, e.Logprob, 0.0)
			assert.Equal(t, []byte(e.Token), toBytes(e.Bytes))
			require.Len(t, e.TopLogprobs, 2)
			assert.Equal(t, e.Token, e.TopLogprobs[0].Token, "the sampled token is the most likely")
			assert.Equal(t, e.Logprob, e.TopLogprobs[0].Logprob)
			assert.Less(t, e.TopLogprobs[1].Logprob, e.TopLogprobs[0].Logprob)
			assert.NotEqual(t, e.Token, e.TopLogprobs[1].Token)
		}
		assert.Equal(t, ch.Message.Content, joined, "the tokens make the text")
	}
	assert.Len(t, texts, 3, "each choice says something of its own")
	assert.Equal(t, 18, w.Usage.CompletionTokens, "usage counts every choice")
	assert.Equal(t, w.Usage.PromptTokens+18, w.Usage.TotalTokens)
	assert.Equal(t, w, answer(), "deterministic from the seed")

	// One choice, no logprobs: as before.
	s := start(t, Options{TimeScale: 0.001, Seed: 11})
	status, b := postJSON(ctx, t, s.URL()+"/v1/chat/completions", strings.Replace(strings.Replace(body, `"n":3,`, "", 1), `"logprobs":true,"top_logprobs":2,`, "", 1))
	require.Equal(t, http.StatusOK, status)
	var one wholeChat
	require.NoError(t, json.Unmarshal(b, &one))
	require.Len(t, one.Choices, 1)
	assert.Equal(t, w.Choices[0].Message.Content, one.Choices[0].Message.Content)
	assert.Nil(t, one.Choices[0].Logprobs)
	assert.Contains(t, string(b), `"logprobs":null`)
	assert.Equal(t, 6, one.Usage.CompletionTokens)
}

func toBytes(v []int) []byte {
	b := make([]byte, len(v))
	for i, x := range v {
		b[i] = byte(x)
	}
	return b
}

// TestOpenAIChoicesStream: a streamed answer with n choices sends each
// choice's role chunk and, for every token, one chunk per choice with its
// index (and logprobs when asked), the finish reason on each choice's last;
// the usage chunk counts every choice.
func TestOpenAIChoicesStream(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 12})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := do(ctx, t, s.URL()+"/v1/chat/completions",
		`{"model":"llama-3-8b","max_tokens":4,"n":2,"logprobs":true,"top_logprobs":1,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	events := readSSE(t, resp.Body)
	require.Equal(t, "[DONE]", events[len(events)-1])
	events = events[:len(events)-1]
	type ev struct {
		Choices []struct {
			Index int `json:"index"`
			Delta struct {
				Role    string  `json:"role"`
				Content *string `json:"content"`
			} `json:"delta"`
			Logprobs     *chatLogprobs `json:"logprobs"`
			FinishReason *string       `json:"finish_reason"`
		} `json:"choices"`
		Usage *usage `json:"usage"`
	}
	roles, tokens, finishes := map[int]int{}, map[int]int{}, map[int]int{}
	var u *usage
	for _, e := range events {
		var x ev
		require.NoError(t, json.Unmarshal([]byte(e), &x), e)
		if x.Usage != nil {
			u = x.Usage
			continue
		}
		require.Len(t, x.Choices, 1, e)
		ch := x.Choices[0]
		switch {
		case ch.Delta.Role == "assistant":
			roles[ch.Index]++
			assert.Nil(t, ch.Logprobs)
		default:
			tokens[ch.Index]++
			require.NotNil(t, ch.Logprobs, e)
			require.Len(t, ch.Logprobs.Content, 1, e)
			assert.Equal(t, *ch.Delta.Content, ch.Logprobs.Content[0].Token)
			require.Len(t, ch.Logprobs.Content[0].TopLogprobs, 1)
		}
		if ch.FinishReason != nil {
			finishes[ch.Index]++
		}
	}
	assert.Equal(t, map[int]int{0: 1, 1: 1}, roles)
	assert.Equal(t, map[int]int{0: 4, 1: 4}, tokens)
	assert.Equal(t, map[int]int{0: 1, 1: 1}, finishes)
	require.NotNil(t, u)
	assert.Equal(t, 8, u.CompletionTokens)
}

// TestOpenAICompletionsLogprobs: /v1/completions takes logprobs k and
// answers the legacy form (tokens, token_logprobs, top_logprobs maps
// holding the sampled token, text_offset), whole and streamed; n works there
// too. openai-go reads both.
func TestOpenAICompletionsLogprobs(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 13})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := openAIClient(s)
	res, err := c.Completions.New(ctx, openai.CompletionNewParams{
		Model:     "qwen2-7b",
		Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String("once upon a time")},
		MaxTokens: openai.Int(5), N: openai.Int(2), Logprobs: openai.Int(3),
	})
	require.NoError(t, err)
	require.Len(t, res.Choices, 2)
	for j, ch := range res.Choices {
		assert.EqualValues(t, j, ch.Index)
		lp := ch.Logprobs
		require.Len(t, lp.Tokens, 5)
		require.Len(t, lp.TokenLogprobs, 5)
		require.Len(t, lp.TopLogprobs, 5)
		require.Len(t, lp.TextOffset, 5)
		assert.Equal(t, ch.Text, strings.Join(lp.Tokens, ""))
		off := int64(0)
		for i, tok := range lp.Tokens {
			assert.Equal(t, off, lp.TextOffset[i])
			off += int64(len(tok))
			assert.Len(t, lp.TopLogprobs[i], 3)
			assert.Equal(t, lp.TokenLogprobs[i], lp.TopLogprobs[i][tok], "the sampled token is in the top map")
		}
	}
	assert.EqualValues(t, 10, res.Usage.CompletionTokens)

	stream := c.Completions.NewStreaming(ctx, openai.CompletionNewParams{
		Model:     "qwen2-7b",
		Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String("once upon a time")},
		MaxTokens: openai.Int(4), Logprobs: openai.Int(0),
	})
	var text strings.Builder
	var offsets []int64
	for stream.Next() {
		ch := stream.Current()
		require.Len(t, ch.Choices, 1)
		text.WriteString(ch.Choices[0].Text)
		lp := ch.Choices[0].Logprobs
		require.Len(t, lp.Tokens, 1)
		assert.Equal(t, ch.Choices[0].Text, lp.Tokens[0])
		assert.Len(t, lp.TopLogprobs[0], 1, "logprobs 0: the sampled token only")
		offsets = append(offsets, lp.TextOffset[0])
	}
	require.NoError(t, stream.Err())
	require.Len(t, offsets, 4)
	assert.Zero(t, offsets[0])
	assert.Less(t, offsets[0], offsets[3])
}

// TestOpenAIChatLogprobsOpenAIGo: openai-go reads n choices and chat
// logprobs as the emulator writes them.
func TestOpenAIChatLogprobsOpenAIGo(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 14})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := openAIClient(s)
	res, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:     "llama-3-8b",
		Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
		MaxTokens: openai.Int(3), N: openai.Int(2), Logprobs: openai.Bool(true), TopLogprobs: openai.Int(4),
	})
	require.NoError(t, err)
	require.Len(t, res.Choices, 2)
	for j, ch := range res.Choices {
		assert.EqualValues(t, j, ch.Index)
		require.Len(t, ch.Logprobs.Content, 3)
		for _, e := range ch.Logprobs.Content {
			require.Len(t, e.TopLogprobs, 4)
			assert.Equal(t, e.Token, e.TopLogprobs[0].Token)
			assert.Len(t, e.Bytes, len(e.Token))
		}
	}
	assert.EqualValues(t, 6, res.Usage.CompletionTokens)
}

// TestOpenAIChoicesInvalid: values a server refuses are answered 400.
func TestOpenAIChoicesInvalid(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 15})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const chat = `{"model":"llama-3-8b","messages":[{"role":"user","content":"hi"}],`
	const comp = `{"model":"llama-3-8b","prompt":"hi",`
	for _, tc := range []struct{ path, body, want string }{
		{"/v1/chat/completions", chat + `"n":0}`, `"n" must be between 1 and 128`},
		{"/v1/chat/completions", chat + `"n":129}`, `"n" must be between 1 and 128`},
		{"/v1/chat/completions", chat + `"n":1.5}`, `must be an integer`},
		{"/v1/chat/completions", chat + `"top_logprobs":2}`, `"top_logprobs" needs "logprobs": true`},
		{"/v1/chat/completions", chat + `"logprobs":true,"top_logprobs":21}`, `"top_logprobs" must be between 0 and 20`},
		{"/v1/completions", comp + `"logprobs":-1}`, `"logprobs" must be between 0 and 20`},
		{"/v1/completions", comp + `"n":"two"}`, `must be an integer`},
	} {
		status, b := postJSON(ctx, t, s.URL()+tc.path, tc.body)
		assert.Equal(t, http.StatusBadRequest, status, tc.body)
		var e openAIError
		require.NoError(t, json.Unmarshal(b, &e), "%s", b)
		assert.Contains(t, e.Error.Message, tc.want, tc.body)
	}
}
