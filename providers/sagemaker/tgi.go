package sagemaker

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/internal/openaiwire"
)

// tgiDialect names TGI's /generate body in refusals.
const tgiDialect = "sagemaker tgi"

// tgiGrammar is TGI's parameters.grammar: {"type":"json","value":schema}
// constrains the output to JSON of the schema.
type tgiGrammar struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// anyObject is the schema of JSON mode: any object.
var anyObject = json.RawMessage(`{"type":"object"}`)

// tgiFeatures sets the TGI parameters of g's richer fields, or refuses
// what TGI's /generate cannot express: it takes one prompt string, so
// tools, tool turns and images need the messages dialect (TGI's Messages
// API), and it has no choice count, presence penalty or reasoning
// settings. JSON mode and JSON schemas become a JSON grammar, top
// logprobs top_n_tokens (each token's own logprob is in the details TGI
// always returns here).
func tgiFeatures(g *cloudreq.GenerateInput, p *tgiParameters) error {
	if err := openaiwire.RefusePromptOnly(without(g), tgiDialect); err != nil {
		if r, ok := err.(*openaiwire.Refusal); ok {
			r.Hint = "use DialectMessages (TGI's Messages API, LMI)"
		}
		return err
	}
	r := func(f, hint string) error { return &openaiwire.Refusal{Dialect: tgiDialect, Feature: f, Hint: hint} }
	switch {
	case g.N > 1:
		return r("N > 1", "TGI generates one sequence per request")
	case g.PresencePenalty != nil:
		return r("PresencePenalty", "TGI has frequency_penalty and repetition_penalty (Generate.Extra)")
	case g.Reasoning != nil:
		return r("Reasoning", "TGI has no reasoning settings")
	case g.TokenLimit == cloudreq.TokenLimitMaxCompletionTokens:
		return r("TokenLimit max_completion_tokens", "TGI takes max_new_tokens")
	}
	p.TopK, p.Seed, p.FrequencyPenalty = g.TopK, g.Seed, g.FrequencyPenalty
	if g.Logprobs {
		p.TopNTokens = g.TopLogprobs
	}
	if rf := g.ResponseFormat; rf != nil {
		switch rf.Type {
		case cloudreq.FormatJSON:
			p.Grammar = &tgiGrammar{Type: "json", Value: anyObject}
		case cloudreq.FormatJSONSchema:
			p.Grammar = &tgiGrammar{Type: "json", Value: rf.Schema}
		}
	}
	return nil
}

// without returns g without its response format, which TGI expresses as
// a grammar and RefusePromptOnly would refuse.
func without(g *cloudreq.GenerateInput) *cloudreq.GenerateInput {
	c := *g
	c.ResponseFormat = nil
	return &c
}

// tgiExtra merges extra into the body's "parameters", where TGI takes
// every generation member (repetition_penalty, watermark, …). A key the
// encoder already set is refused.
func tgiExtra(body []byte, extra map[string]any) ([]byte, error) {
	if len(extra) == 0 {
		return body, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	params, err := cloudreq.MergeExtra(m["parameters"], extra)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (TGI takes Generate.Extra in \"parameters\")", tgiDialect, err)
	}
	m["parameters"] = params
	return json.Marshal(m)
}

// Markers of the members richAnswer and richChunk read: a body without
// any of them is read by the dialect parsers alone.
var (
	markToolCalls = []byte(`"tool_calls"`)
	markReasoning = []byte(`"reasoning`)
	markLogprobs  = []byte(`"logprob":`)
	markDetails   = []byte(`"completion_tokens_details"`)
)

// rich reports whether b may hold more than text; logprobs are looked for
// only when asked (every TGI event has a token logprob: a text chunk of a
// request without logprobs is then read by the dialect parser alone).
func rich(b []byte, logprobs bool) bool {
	return bytes.Contains(b, markToolCalls) || bytes.Contains(b, markReasoning) ||
		(logprobs && bytes.Contains(b, markLogprobs)) || bytes.Contains(b, markDetails)
}

// richAnswer fills a messages-dialect answer's tool calls, reasoning,
// logprobs, choices and reasoning tokens (openaiwire reads them), and,
// when logprobs were asked for, a TGI answer's token logprobs
// (details.tokens, with details.top_tokens).
func richAnswer(resp *cloudreq.CloudResponse, logprobs bool) {
	if !rich(resp.Data, logprobs) && !bytes.Contains(resp.Data, []byte(`"choices"`)) {
		return
	}
	if r, err := openaiwire.Decode(resp.Data); err == nil && r.Error == nil {
		resp.ToolCalls, resp.Reasoning, resp.Logprobs, resp.Choices = r.ToolCalls, r.Reasoning, r.Logprobs, r.Choices
		if len(r.Choices) > 1 {
			resp.Text = r.Text // the choices' texts joined, as CloudResponse.Text says
		}
		if r.Usage != nil {
			resp.Usage.ReasoningTokens = r.Usage.ReasoningTokens
		}
		if len(r.ToolCalls) > 0 || r.Reasoning != "" || len(r.Logprobs) > 0 {
			return
		}
	}
	if logprobs {
		resp.Logprobs = tgiLogprobs(resp.Data)
	}
}

// richChunk fills a messages-dialect chunk's reasoning, tool-call
// fragments and logprobs, and, when logprobs were asked for, a TGI
// chunk's token logprob and top tokens.
func richChunk(ch *cloudreq.StreamChunk, logprobs bool) {
	if !rich(ch.Data, logprobs) {
		return
	}
	if r, err := openaiwire.Decode(ch.Data); err == nil && r.Error == nil && (r.Reasoning != "" || len(r.ToolCalls) > 0 || len(r.Logprobs) > 0) {
		ch.Reasoning, ch.ToolCallDeltas, ch.Logprobs = r.Reasoning, r.ToolCalls, r.Logprobs
		return
	}
	var t struct {
		Token *tgiToken  `json:"token"`
		Top   []tgiToken `json:"top_tokens"`
	}
	if json.Unmarshal(ch.Data, &t) == nil && t.Token != nil {
		ch.Logprobs = []cloudreq.TokenLogprob{t.Token.logprob(t.Top)}
	}
}

// tgiToken is one token of TGI's details.
type tgiToken struct {
	Text    string  `json:"text"`
	Logprob float64 `json:"logprob"`
}

func (t tgiToken) logprob(top []tgiToken) cloudreq.TokenLogprob {
	out := cloudreq.TokenLogprob{Token: t.Text, Logprob: t.Logprob}
	for _, a := range top {
		out.Top = append(out.Top, cloudreq.TopLogprob{Token: a.Text, Logprob: a.Logprob})
	}
	return out
}

// tgiLogprobs reads the token logprobs of a TGI answer (an object or a
// one-element list): details.tokens, with details.top_tokens.
func tgiLogprobs(body []byte) []cloudreq.TokenLogprob {
	type gen struct {
		Details *struct {
			Tokens []tgiToken   `json:"tokens"`
			Top    [][]tgiToken `json:"top_tokens"`
		} `json:"details"`
	}
	var one gen
	if json.Unmarshal(body, &one) != nil {
		var list []gen
		if json.Unmarshal(body, &list) != nil || len(list) == 0 {
			return nil
		}
		one = list[0]
	}
	if one.Details == nil {
		return nil
	}
	var out []cloudreq.TokenLogprob
	for i, t := range one.Details.Tokens {
		var top []tgiToken
		if i < len(one.Details.Top) {
			top = one.Details.Top[i]
		}
		out = append(out, t.logprob(top))
	}
	return out
}
