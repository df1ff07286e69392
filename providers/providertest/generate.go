package providertest

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/latency"
)

// Feature is one capability of the richer generate input, checked per
// dialect by RunConformance ("Features").
type Feature string

// The features.
const (
	// FeatureTools: a forced function call comes back whole (id, name,
	// arguments valid for the parameters schema), streamed fragments are
	// assembled and the completing chunk marked, usage and TTFT stay
	// right; a conversation with a tool call and its result is accepted.
	FeatureTools Feature = "tools"
	// FeatureJSON: JSON mode answers a JSON object.
	FeatureJSON Feature = "json"
	// FeatureJSONSchema: the answer validates against the given schema.
	FeatureJSONSchema Feature = "json-schema"
	// FeatureImages: image parts (a URL and inline bytes) are accepted and
	// count in the prompt.
	FeatureImages Feature = "images"
	// FeatureLogprobs: each output token's logprob, with two top
	// logprobs (the token itself first), one per output token, in the
	// whole answer and in the stream's chunks.
	FeatureLogprobs Feature = "logprobs"
	// FeatureChoices: N = 2 gives two choices, indexed 0 and 1, whose
	// texts Text joins.
	FeatureChoices Feature = "choices"
	// FeatureReasoning: on the emulator's "reasoning" endpoint, with
	// IncludeThoughts, reasoning text comes apart from the answer,
	// reasoning tokens are in usage, and latency measures TTFR before
	// TTFT (and, with Harness.HidesThoughts, without IncludeThoughts no
	// reasoning text comes but the tokens are counted).
	FeatureReasoning Feature = "reasoning"
	// FeatureSampling: seed, presence and frequency penalties and top-k
	// are sent and accepted.
	FeatureSampling Feature = "sampling"
	// FeatureSeed, FeatureTopK, FeaturePenalties and FeatureStop: each of
	// seed, top-k, presence with frequency penalty, and stop sequences
	// alone is sent and accepted.
	FeatureSeed      Feature = "seed"
	FeatureTopK      Feature = "top-k"
	FeaturePenalties Feature = "penalties"
	FeatureStop      Feature = "stop"
	// FeatureParallelToolCalls: ParallelToolCalls false with a forced call
	// is sent and answered with the call.
	FeatureParallelToolCalls Feature = "parallel-tool-calls"
	// FeatureMaxCompletionTokens: TokenLimit max_completion_tokens is sent
	// and caps the answer.
	FeatureMaxCompletionTokens Feature = "max-completion-tokens"
	// FeatureThinkingBudget: Reasoning.BudgetTokens is sent and accepted.
	FeatureThinkingBudget Feature = "thinking-budget"
	// FeatureExtra: Generate.Extra ({"labels":{…}}, a member Gemini's
	// request has and the others' servers ignore) is merged and accepted.
	FeatureExtra Feature = "extra"
)

// AllFeatures lists every feature, in the order the suite checks them.
func AllFeatures() []Feature {
	return []Feature{FeatureTools, FeatureJSON, FeatureJSONSchema, FeatureImages, FeatureLogprobs, FeatureChoices, FeatureReasoning,
		FeatureSampling, FeatureSeed, FeatureTopK, FeaturePenalties, FeatureStop, FeatureParallelToolCalls,
		FeatureMaxCompletionTokens, FeatureThinkingBudget, FeatureExtra}
}

// weather is the tool and schema of the feature checks.
var weather = json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","minLength":2},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["city","days"]}`)

// features checks each feature of the harness: supported ones end to end
// against the emulator, refused ones refused with ERR_INVALID_PARAM
// naming the dialect.
func (e *env) features(t *testing.T) {
	for _, f := range AllFeatures() {
		ok, listed := e.h.Features[f]
		if !listed {
			continue
		}
		t.Run(string(f), func(t *testing.T) {
			if !ok {
				r := e.featureRequest(f)
				_, err := e.client.Invoke(ctx(t), r)
				CheckInvalid(t, err, e.h.Provider, e.h.Dialect)
				return
			}
			switch f {
			case FeatureTools:
				e.checkTools(t)
			case FeatureJSON:
				resp := e.must(t, e.featureRequest(f))
				var obj map[string]any
				require.NoError(t, json.Unmarshal([]byte(resp.Text), &obj), "JSON mode answers an object: %q", resp.Text)
			case FeatureJSONSchema:
				resp := e.must(t, e.featureRequest(f))
				ValidateJSON(t, weather, resp.Text)
				s := Stream(t, e.client, e.featureRequest(f))
				require.NoError(t, s.Err)
				ValidateJSON(t, weather, s.Text())
			case FeatureImages:
				plain := e.must(t, e.request(cloudreq.ActionGenerate))
				resp := e.must(t, e.featureRequest(f))
				assert.NotEmpty(t, resp.Text)
				if plain.Usage.InputTokens > 0 {
					assert.Greater(t, resp.Usage.InputTokens, plain.Usage.InputTokens, "images count in the prompt")
				}
			case FeatureLogprobs:
				e.checkLogprobs(t)
			case FeatureChoices:
				resp := e.must(t, e.featureRequest(f))
				require.Len(t, resp.Choices, 2)
				for i, c := range resp.Choices {
					assert.Equal(t, i, c.Index)
					assert.NotEmpty(t, c.Text)
					assert.NotEmpty(t, c.FinishReason)
				}
				assert.Equal(t, resp.Choices[0].Text+resp.Choices[1].Text, resp.Text, "Text joins the choices' texts")
			case FeatureReasoning:
				e.checkReasoning(t)
			case FeatureSampling, FeatureSeed, FeatureTopK, FeaturePenalties, FeatureStop, FeatureExtra, FeatureThinkingBudget:
				resp := e.must(t, e.featureRequest(f))
				assert.NotEmpty(t, resp.Text)
			case FeatureParallelToolCalls:
				resp := e.must(t, e.featureRequest(f))
				require.Len(t, resp.ToolCalls, 1)
				assert.Equal(t, "weather", resp.ToolCalls[0].Name)
			case FeatureMaxCompletionTokens:
				resp := e.must(t, e.featureRequest(f))
				assert.NotEmpty(t, resp.Text)
				assert.Equal(t, "length", resp.FinishReason, "the limit caps the answer")
				if resp.Usage.OutputTokens > 0 {
					assert.Equal(t, 3, resp.Usage.OutputTokens)
				}
			}
		})
	}
}

func (e *env) must(t *testing.T, r *cloudreq.CloudRequest) *cloudreq.CloudResponse {
	t.Helper()
	resp, err := e.client.Invoke(ctx(t), r)
	require.NoError(t, err)
	return resp
}

// featureRequest is a generate request that uses feature f.
func (e *env) featureRequest(f Feature) *cloudreq.CloudRequest {
	r := e.request(cloudreq.ActionGenerate)
	g := r.Generate
	switch f {
	case FeatureTools:
		g.Tools = []cloudreq.Tool{{Name: "weather", Description: "the forecast for a city", Parameters: weather}, {Name: "time", Description: "the time in a city"}}
		g.ToolChoice = &cloudreq.ToolChoice{Mode: cloudreq.ToolChoiceFunction, Name: "weather"}
	case FeatureJSON:
		g.ResponseFormat = &cloudreq.ResponseFormat{Type: cloudreq.FormatJSON}
	case FeatureJSONSchema:
		g.ResponseFormat = &cloudreq.ResponseFormat{Type: cloudreq.FormatJSONSchema, Name: "forecast", Schema: weather}
	case FeatureImages:
		g.Messages = append(g.Messages, cloudreq.Message{Role: "user", Parts: []cloudreq.Part{
			{Type: cloudreq.PartText, Text: "What is in these?"},
			{Type: cloudreq.PartImage, ImageURL: "https://example.com/cat.png"},
			{Type: cloudreq.PartImage, Data: []byte("\x89PNG\r\n\x1a\n"), MediaType: "image/png"},
		}})
	case FeatureLogprobs:
		g.Logprobs, g.TopLogprobs = true, 2
	case FeatureChoices:
		g.N = 2
	case FeatureReasoning:
		r.Target = e.h.Target("reasoning")
		g.Reasoning = &cloudreq.Reasoning{Effort: "low", IncludeThoughts: true}
		g.MaxTokens = 0
	case FeatureSampling:
		seed, pp, fp := int64(42), 0.1, 0.2
		g.Seed, g.PresencePenalty, g.FrequencyPenalty, g.TopK = &seed, &pp, &fp, 40
	case FeatureSeed:
		seed := int64(42)
		g.Seed = &seed
	case FeatureTopK:
		g.TopK = 40
	case FeaturePenalties:
		pp, fp := 0.1, 0.2
		g.PresencePenalty, g.FrequencyPenalty = &pp, &fp
	case FeatureStop:
		g.Stop = []string{"\n\n"}
	case FeatureParallelToolCalls:
		off := false
		g.Tools = []cloudreq.Tool{{Name: "weather", Parameters: weather}, {Name: "time"}}
		g.ToolChoice = &cloudreq.ToolChoice{Mode: cloudreq.ToolChoiceFunction, Name: "weather"}
		g.ParallelToolCalls = &off
	case FeatureMaxCompletionTokens:
		g.TokenLimit, g.MaxTokens = cloudreq.TokenLimitMaxCompletionTokens, 3
	case FeatureThinkingBudget:
		r.Target = e.h.Target("reasoning")
		g.Reasoning = &cloudreq.Reasoning{BudgetTokens: 256}
	case FeatureExtra:
		g.Extra = map[string]any{"labels": map[string]string{"suite": "conformance"}}
	}
	return r
}

func (e *env) checkTools(t *testing.T) {
	resp := e.must(t, e.featureRequest(FeatureTools))
	require.Len(t, resp.ToolCalls, 1, "a forced call")
	c := resp.ToolCalls[0]
	assert.Equal(t, "weather", c.Name)
	assert.NotEmpty(t, c.ID)
	ValidateJSON(t, weather, c.Arguments)
	assert.Equal(t, "tool_calls", resp.FinishReason)
	assert.Positive(t, resp.Usage.OutputTokens)

	s := Stream(t, e.client, e.featureRequest(FeatureTools))
	require.NoError(t, s.Err)
	var completed []cloudreq.ToolCall
	marked := 0
	for _, ch := range s.Chunks {
		if len(ch.ToolCalls) > 0 {
			marked++
			completed = append(completed, ch.ToolCalls...)
		}
	}
	assert.Equal(t, 1, marked, "one chunk completes the call")
	require.Len(t, completed, 1)
	assert.Equal(t, completed, s.Resp.ToolCalls)
	assert.Equal(t, "weather", completed[0].Name)
	ValidateJSON(t, weather, completed[0].Arguments)
	assert.Equal(t, "tool_calls", s.Resp.FinishReason)
	assert.Positive(t, s.Resp.Usage.OutputTokens, "usage with a tool call first")
	m := latency.Measure(s.Resp.Timing, latency.Outcome{OutputTokens: s.Resp.Usage.OutputTokens})
	assert.True(t, m.Has.Has(latency.TTFT), "TTFT when the first content is a tool call")

	// The next turn: the call and its result.
	r := e.request(cloudreq.ActionGenerate)
	r.Generate.Tools = []cloudreq.Tool{{Name: "weather", Parameters: weather}}
	r.Generate.ToolChoice = &cloudreq.ToolChoice{Mode: cloudreq.ToolChoiceNone}
	r.Generate.Messages = append(r.Generate.Messages,
		cloudreq.Message{Role: cloudreq.RoleAssistant, ToolCalls: []cloudreq.ToolCall{c}},
		cloudreq.Message{Role: cloudreq.RoleTool, ToolCallID: c.ID, Content: `{"forecast":"sun"}`})
	resp = e.must(t, r)
	assert.NotEmpty(t, resp.Text, "an answer after the tool result")
	assert.Empty(t, resp.ToolCalls, "tool choice none")
}

func (e *env) checkLogprobs(t *testing.T) {
	check := func(t *testing.T, lps []cloudreq.TokenLogprob, text string, outputTokens int) {
		t.Helper()
		require.NotEmpty(t, lps)
		var joined strings.Builder
		for _, lp := range lps {
			joined.WriteString(lp.Token)
			assert.LessOrEqual(t, lp.Logprob, 0.0)
			if assert.Len(t, lp.Top, 2, "top logprobs") {
				assert.Equal(t, lp.Token, lp.Top[0].Token, "the token leads its top logprobs")
				assert.GreaterOrEqual(t, lp.Top[0].Logprob, lp.Top[1].Logprob)
			}
		}
		assert.Equal(t, text, joined.String(), "the tokens are the text")
		if outputTokens > 0 {
			assert.Len(t, lps, outputTokens, "one logprob per output token")
		}
	}
	resp := e.must(t, e.featureRequest(FeatureLogprobs))
	check(t, resp.Logprobs, resp.Text, resp.Usage.OutputTokens)

	s := Stream(t, e.client, e.featureRequest(FeatureLogprobs))
	require.NoError(t, s.Err)
	var lps []cloudreq.TokenLogprob
	for _, ch := range s.Chunks {
		lps = append(lps, ch.Logprobs...)
	}
	check(t, lps, s.Text(), s.Resp.Usage.OutputTokens)
}

func (e *env) checkReasoning(t *testing.T) {
	if e.h.HidesThoughts {
		r := e.featureRequest(FeatureReasoning)
		r.Generate.Reasoning.IncludeThoughts = false
		resp := e.must(t, r)
		assert.Empty(t, resp.Reasoning, "no reasoning text without IncludeThoughts")
		assert.NotEmpty(t, resp.Text)
		assert.Positive(t, resp.Usage.ReasoningTokens, "the reasoning tokens are counted")
		s := Stream(t, e.client, r)
		require.NoError(t, s.Err)
		for _, ch := range s.Chunks {
			assert.Empty(t, ch.Reasoning, "no reasoning chunk without IncludeThoughts")
		}
		assert.NotEmpty(t, s.Text())
		assert.Positive(t, s.Resp.Usage.ReasoningTokens)
		m := latency.Measure(s.Resp.Timing, latency.Outcome{OutputTokens: s.Resp.Usage.OutputTokens})
		assert.False(t, m.Has.Has(latency.TTFR), "no TTFR without reasoning chunks")
		assert.True(t, m.Has.Has(latency.TTFT))
	}
	resp := e.must(t, e.featureRequest(FeatureReasoning))
	assert.NotEmpty(t, resp.Reasoning, "reasoning text")
	assert.NotEmpty(t, resp.Text, "answer text")
	assert.NotContains(t, resp.Text, resp.Reasoning, "reasoning kept apart from the answer")
	assert.Positive(t, resp.Usage.ReasoningTokens)
	assert.Greater(t, resp.Usage.OutputTokens, resp.Usage.ReasoningTokens)

	s := Stream(t, e.client, e.featureRequest(FeatureReasoning))
	require.NoError(t, s.Err)
	var reasoning strings.Builder
	for _, ch := range s.Chunks {
		reasoning.WriteString(ch.Reasoning)
		if ch.Reasoning != "" {
			assert.Empty(t, ch.Text, "a reasoning chunk carries no answer")
		}
	}
	assert.NotEmpty(t, reasoning.String())
	assert.NotEmpty(t, s.Text())
	m := latency.Measure(s.Resp.Timing, latency.Outcome{OutputTokens: s.Resp.Usage.OutputTokens})
	require.True(t, m.Has.Has(latency.TTFR), "TTFR measured")
	require.True(t, m.Has.Has(latency.TTFT))
	assert.Less(t, m.TTFR, m.TTFT, "the reasoning comes before the answer")
}

// ValidateJSON asserts that doc is JSON valid against schema.
func ValidateJSON(t testing.TB, schema json.RawMessage, doc string) {
	t.Helper()
	sch, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("schema.json", sch))
	compiled, err := c.Compile("schema.json")
	require.NoError(t, err)
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
	require.NoError(t, err, "not JSON: %q", doc)
	assert.NoError(t, compiled.Validate(v), "%s", doc)
}
