package openaiwire

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

var weatherSchema = json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)

// richInput uses every field of the richer generate input that OpenAI
// chat expresses.
func richInput() *cloudreq.GenerateInput {
	seed := int64(7)
	pp, fp, temp := 0.5, 0.25, 0.7
	par := false
	return &cloudreq.GenerateInput{
		Messages: []cloudreq.Message{
			{Role: "system", Content: "be brief"},
			{Role: "user", Parts: []cloudreq.Part{
				{Type: cloudreq.PartText, Text: "what is this?"},
				{Type: cloudreq.PartImage, ImageURL: "https://example.com/a.png"},
				{Type: cloudreq.PartImage, Data: []byte{1, 2, 3}, MediaType: "image/png"},
			}},
			{Role: "assistant", ToolCalls: []cloudreq.ToolCall{{ID: "call_1", Name: "weather", Arguments: `{"city":"Oslo"}`}}},
			{Role: "tool", ToolCallID: "call_1", Content: `{"temp":3}`},
		},
		MaxTokens: 64, Temperature: &temp, Seed: &seed, N: 2,
		PresencePenalty: &pp, FrequencyPenalty: &fp, Logprobs: true, TopLogprobs: 3,
		Tools:             []cloudreq.Tool{{Name: "weather", Description: "weather in a city", Parameters: weatherSchema}},
		ToolChoice:        &cloudreq.ToolChoice{Mode: cloudreq.ToolChoiceFunction, Name: "weather"},
		ParallelToolCalls: &par,
		ResponseFormat:    &cloudreq.ResponseFormat{Type: cloudreq.FormatJSONSchema, Name: "answer", Schema: weatherSchema, Strict: true},
		Reasoning:         &cloudreq.Reasoning{Effort: "high"},
		TokenLimit:        cloudreq.TokenLimitMaxCompletionTokens,
	}
}

// TestChatMatchesOpenAIGo: the chat body is what openai-go writes for the
// same request (its params are the reference of the OpenAI wire shape).
func TestChatMatchesOpenAIGo(t *testing.T) {
	got, err := EncodeChat(richInput(), EncodeOptions{Model: "gpt-x", Stream: true})
	require.NoError(t, err)

	var schema map[string]any
	require.NoError(t, json.Unmarshal(weatherSchema, &schema))
	ref := openai.ChatCompletionNewParams{
		Model: "gpt-x",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("be brief"),
			openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
				openai.TextContentPart("what is this?"),
				openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "https://example.com/a.png"}),
				openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64,AQID"}),
			}),
			{OfAssistant: &openai.ChatCompletionAssistantMessageParam{ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: "call_1",
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "weather", Arguments: `{"city":"Oslo"}`}},
			}}}},
			openai.ToolMessage(`{"temp":3}`, "call_1"),
		},
		MaxCompletionTokens: openai.Int(64), Temperature: openai.Float(0.7), Seed: openai.Int(7), N: openai.Int(2),
		PresencePenalty: openai.Float(0.5), FrequencyPenalty: openai.Float(0.25),
		Logprobs: openai.Bool(true), TopLogprobs: openai.Int(3),
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "weather", Description: openai.String("weather in a city"), Parameters: schema,
		})},
		ToolChoice:        openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "weather"}),
		ParallelToolCalls: openai.Bool(false),
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "answer", Schema: schema, Strict: openai.Bool(true)},
		}},
		ReasoningEffort: shared.ReasoningEffortHigh,
		StreamOptions:   openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	want, err := json.Marshal(ref)
	require.NoError(t, err)
	var w, g map[string]any
	require.NoError(t, json.Unmarshal(want, &w))
	require.NoError(t, json.Unmarshal(got, &g))
	w["stream"] = true // openai-go sets it in NewStreaming, not in the params
	// openai-go writes an assistant message without content as no member;
	// this package writes null, which the API takes as the same.
	msgs := g["messages"].([]any)
	asst := msgs[2].(map[string]any)
	assert.Nil(t, asst["content"])
	delete(asst, "content")
	assert.Equal(t, w, g)
}

func TestChatToolChoiceModesAndJSONMode(t *testing.T) {
	for mode, want := range map[string]string{"auto": `"auto"`, "none": `"none"`, "required": `"required"`} {
		g := &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "x"}},
			Tools: []cloudreq.Tool{{Name: "f"}}, ToolChoice: &cloudreq.ToolChoice{Mode: mode},
			ResponseFormat: &cloudreq.ResponseFormat{Type: cloudreq.FormatJSON}}
		b, err := EncodeChat(g, EncodeOptions{})
		require.NoError(t, err)
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(b, &m))
		assert.JSONEq(t, want, string(m["tool_choice"]), mode)
		assert.JSONEq(t, `{"type":"json_object"}`, string(m["response_format"]))
		assert.JSONEq(t, `[{"type":"function","function":{"name":"f"}}]`, string(m["tools"]))
		_, has := m["max_tokens"]
		assert.False(t, has, "no max_tokens without MaxTokens")
	}
}

func TestChatRefusesThinkingBudgetAndExtraClash(t *testing.T) {
	g := &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "x"}}, Reasoning: &cloudreq.Reasoning{BudgetTokens: 100}}
	_, err := EncodeChat(g, EncodeOptions{Dialect: "test chat"})
	var r *Refusal
	require.ErrorAs(t, err, &r)
	assert.Equal(t, "test chat", r.Dialect)
	assert.Contains(t, err.Error(), "BudgetTokens")

	g = &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "x"}}, MaxTokens: 5,
		Extra: map[string]any{"guided_json": map[string]any{"type": "object"}, "chat_template_kwargs": map[string]bool{"enable_thinking": true}}}
	b, err := EncodeChat(g, EncodeOptions{})
	require.NoError(t, err)
	assert.JSONEq(t, `{"messages":[{"role":"user","content":"x"}],"max_tokens":5,"guided_json":{"type":"object"},"chat_template_kwargs":{"enable_thinking":true}}`, string(b))

	g.Extra = map[string]any{"max_tokens": 9}
	_, err = EncodeChat(g, EncodeOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `Generate.Extra["max_tokens"] clashes`)
}

func TestCompletionRefusesWhatAPromptCannotCarry(t *testing.T) {
	base := func() *cloudreq.GenerateInput {
		return &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "x"}}}
	}
	cases := map[string]func(g *cloudreq.GenerateInput){
		"Tools": func(g *cloudreq.GenerateInput) { g.Tools = []cloudreq.Tool{{Name: "f"}} },
		"image": func(g *cloudreq.GenerateInput) {
			g.Messages[0].Parts = []cloudreq.Part{{Type: "image", ImageURL: "https://x/a.png"}}
		},
		"ResponseFormat": func(g *cloudreq.GenerateInput) {
			g.ResponseFormat = &cloudreq.ResponseFormat{Type: cloudreq.FormatJSON}
		},
		"Reasoning":      func(g *cloudreq.GenerateInput) { g.Reasoning = &cloudreq.Reasoning{Effort: "low"} },
		"max_completion": func(g *cloudreq.GenerateInput) { g.TokenLimit = cloudreq.TokenLimitMaxCompletionTokens },
		"tool calls": func(g *cloudreq.GenerateInput) {
			g.Messages = append(g.Messages, cloudreq.Message{Role: "tool", ToolCallID: "a"})
		},
	}
	for name, f := range cases {
		g := base()
		f(g)
		_, err := EncodeCompletion(g, EncodeOptions{Dialect: "test completions"})
		var r *Refusal
		require.True(t, errors.As(err, &r), name)
		assert.Equal(t, "test completions", r.Dialect, name)
	}
	seed := int64(3)
	g := base()
	g.Seed, g.N, g.Logprobs, g.TopLogprobs, g.TopK = &seed, 2, true, 2, 40
	b, err := EncodeCompletion(g, EncodeOptions{})
	require.NoError(t, err)
	assert.JSONEq(t, `{"prompt":"x","seed":3,"n":2,"logprobs":2,"top_k":40}`, string(b))
}

// TestDecodeRichAnswer: tool calls, reasoning, logprobs, reasoning tokens
// and choices of a whole answer.
func TestDecodeRichAnswer(t *testing.T) {
	body := `{"choices":[
	 {"index":0,"message":{"role":"assistant","content":null,"reasoning_content":"think","tool_calls":[{"id":"call_a","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Oslo\"}"}}]},
	  "logprobs":{"content":[{"token":"a","logprob":-0.5,"top_logprobs":[{"token":"a","logprob":-0.5},{"token":"b","logprob":-1.5}]}]},"finish_reason":"tool_calls"},
	 {"index":1,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],
	 "usage":{"prompt_tokens":5,"completion_tokens":9,"completion_tokens_details":{"reasoning_tokens":4}}}`
	r, err := Decode([]byte(body))
	require.NoError(t, err)
	assert.Equal(t, "hi", r.Text)
	assert.Equal(t, "think", r.Reasoning)
	assert.Equal(t, "tool_calls", r.FinishReason)
	assert.Equal(t, []cloudreq.ToolCall{{Index: 0, ID: "call_a", Name: "weather", Arguments: `{"city":"Oslo"}`}}, r.ToolCalls)
	assert.Equal(t, []cloudreq.TokenLogprob{{Token: "a", Logprob: -0.5, Top: []cloudreq.TopLogprob{{Token: "a", Logprob: -0.5}, {Token: "b", Logprob: -1.5}}}}, r.Logprobs)
	assert.Equal(t, &cloudreq.Usage{InputTokens: 5, OutputTokens: 9, ReasoningTokens: 4, Source: "server"}, r.Usage)
	require.Len(t, r.Choices, 2)
	assert.Equal(t, "hi", r.Choices[1].Text)
	assert.Equal(t, 1, r.Choices[1].Index)

	// The completions form of logprobs.
	r, err = Decode([]byte(`{"choices":[{"text":"ab","logprobs":{"tokens":["a","b"],"token_logprobs":[-0.1,null],"top_logprobs":[{"a":-0.1,"z":-2},{"b":-0.3}]}}]}`))
	require.NoError(t, err)
	require.Len(t, r.Logprobs, 2)
	assert.Equal(t, cloudreq.TokenLogprob{Token: "a", Logprob: -0.1, Top: []cloudreq.TopLogprob{{Token: "a", Logprob: -0.1}, {Token: "z", Logprob: -2}}}, r.Logprobs[0])
	assert.True(t, math.IsNaN(r.Logprobs[1].Logprob), "a null logprob is NaN")
}

// TestStreamDecoderToolCallFragments: each chunk's fragments reach the
// StreamChunk as they are (the client assembles them).
func TestStreamDecoderToolCallFragments(t *testing.T) {
	d := &StreamDecoder{Provider: "p"}
	frames := []string{
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_x","type":"function","function":{"name":"weather","arguments":""}}]},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Oslo\"}"}}]},"finish_reason":"tool_calls"}]}`,
	}
	var asm cloudreq.ToolCallAssembler
	var contents int
	for _, f := range frames {
		ch, _, err := d.Decode([]byte(f))
		require.NoError(t, err)
		if ch.Content {
			contents++
		}
		asm.Add(ch.ToolCallDeltas)
	}
	assert.Equal(t, 3, contents, "the role chunk is no content, each fragment is")
	assert.Equal(t, []cloudreq.ToolCall{{Index: 0, ID: "call_x", Name: "weather", Arguments: `{"city":"Oslo"}`}}, asm.Flush())
	ch, _, err := d.Decode([]byte(`{"choices":[{"delta":{"reasoning_content":"hm"}}]}`))
	require.NoError(t, err)
	assert.Equal(t, "hm", ch.Reasoning)
	assert.True(t, ch.Content)
}

// TestCompletionMatchesOpenAIGo: a completions body of every member a
// prompt carries is what openai-go's CompletionNewParams writes (top_k,
// which the OpenAI API lacks, aside).
func TestCompletionMatchesOpenAIGo(t *testing.T) {
	seed, temp, topP, pp, fp := int64(7), 0.7, 0.9, 0.5, 0.25
	g := &cloudreq.GenerateInput{
		Messages:  []cloudreq.Message{{Role: "user", Content: "Once upon a time"}},
		MaxTokens: 64, Temperature: &temp, TopP: &topP, Stop: []string{"\n\n", "END"}, Seed: &seed, N: 2,
		PresencePenalty: &pp, FrequencyPenalty: &fp, Logprobs: true, TopLogprobs: 3,
	}
	got, err := EncodeCompletion(g, EncodeOptions{Model: "gpt-x", Stream: true})
	require.NoError(t, err)
	ref := openai.CompletionNewParams{
		Model:     openai.CompletionNewParamsModel("gpt-x"),
		Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String(Prompt(g.Messages))},
		MaxTokens: openai.Int(64), Temperature: openai.Float(0.7), TopP: openai.Float(0.9),
		Stop: openai.CompletionNewParamsStopUnion{OfStringArray: []string{"\n\n", "END"}},
		Seed: openai.Int(7), N: openai.Int(2), PresencePenalty: openai.Float(0.5), FrequencyPenalty: openai.Float(0.25),
		Logprobs:      openai.Int(3),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	want, err := json.Marshal(ref)
	require.NoError(t, err)
	var w, gm map[string]any
	require.NoError(t, json.Unmarshal(want, &w))
	require.NoError(t, json.Unmarshal(got, &gm))
	w["stream"] = true // openai-go sets it in NewStreaming, not in the params
	assert.Equal(t, w, gm)
}
