package openaiwire

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

// The members extras reads, leniently: a member of an unexpected shape is
// left out, never an error, as the reference decoding (text, finish
// reason, usage) does not depend on them.
type xBody struct {
	Choices []xChoice `json:"choices"`
	Usage   *struct {
		Details *struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
}

type xChoice struct {
	Index        *int            `json:"index"`
	Delta        *xDelta         `json:"delta"`
	Message      *xDelta         `json:"message"`
	Text         string          `json:"text"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

type xDelta struct {
	Content          *string         `json:"content"`
	ReasoningContent string          `json:"reasoning_content"`
	Reasoning        json.RawMessage `json:"reasoning"`
	ToolCalls        []xToolCall     `json:"tool_calls"`
}

type xToolCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// chat logprobs {"content":[{token, logprob, top_logprobs:[…]}]} or the
// completions form {"tokens":[…],"token_logprobs":[…],"top_logprobs":[{…}]}.
type xLogprobs struct {
	Content []struct {
		Token       string  `json:"token"`
		Logprob     float64 `json:"logprob"`
		TopLogprobs []struct {
			Token   string  `json:"token"`
			Logprob float64 `json:"logprob"`
		} `json:"top_logprobs"`
	} `json:"content"`
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []*float64           `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
}

// MaxChoices is the most choices a whole answer's Choices lists (OpenAI's
// bound on "n"); an answer with more keeps its joined Text only.
const MaxChoices = 128

// extras fills r's tool calls, logprobs, reasoning token count and, for a
// whole answer with several choices, Choices; with reasoning set (a body
// the fast path declined), its reasoning text too.
func extras(data []byte, r *Result, reasoning, whole bool) {
	var b xBody
	if json.Unmarshal(data, &b) != nil {
		// One member of an unexpected shape spoils the lot: read the
		// choices one by one, then the usage.
		b = lenientBody(data)
	}
	if u := b.Usage; u != nil && u.Details != nil && r.Usage != nil {
		r.Usage.ReasoningTokens = u.Details.ReasoningTokens
	}
	var choices []cloudreq.Choice
	keep := whole && len(b.Choices) > 1 && len(b.Choices) <= MaxChoices
	for i := range b.Choices {
		if i > 0 && !keep && !reasoning {
			break
		}
		c := choiceOf(&b.Choices[i], i)
		if i == 0 {
			r.ToolCalls, r.Logprobs = c.ToolCalls, c.Logprobs
		}
		if reasoning && c.Reasoning != "" {
			r.Reasoning += c.Reasoning
		}
		if keep {
			choices = append(choices, c)
		}
	}
	r.Choices = choices
}

// lenientBody reads what it can of a body whose members are not all of
// the expected shapes.
func lenientBody(data []byte) xBody {
	var raw struct {
		Choices []json.RawMessage `json:"choices"`
		Usage   json.RawMessage   `json:"usage"`
	}
	var b xBody
	if json.Unmarshal(data, &raw) != nil {
		return b
	}
	for _, c := range raw.Choices {
		var x xChoice
		if json.Unmarshal(c, &x) != nil {
			x = xChoice{}
			var parts map[string]json.RawMessage
			_ = json.Unmarshal(c, &parts)
			var d xDelta
			for _, k := range []string{"delta", "message"} {
				if json.Unmarshal(parts[k], &d) == nil && parts[k] != nil {
					if k == "delta" {
						x.Delta = &d
					} else {
						x.Message = &d
					}
				}
			}
			x.Logprobs = parts["logprobs"]
		}
		b.Choices = append(b.Choices, x)
	}
	_ = json.Unmarshal(raw.Usage, &b.Usage)
	return b
}

// choiceOf converts one choice.
func choiceOf(c *xChoice, i int) cloudreq.Choice {
	if c.Index != nil {
		i = *c.Index
	}
	out := cloudreq.Choice{Index: i, FinishReason: c.FinishReason, Text: c.Text}
	for _, d := range []*xDelta{c.Delta, c.Message} {
		if d == nil {
			continue
		}
		if d.Content != nil {
			out.Text += *d.Content
		}
		out.Reasoning += d.ReasoningContent
		var s string
		if json.Unmarshal(d.Reasoning, &s) == nil {
			out.Reasoning += s
		}
		for j, tc := range d.ToolCalls {
			idx := j
			if tc.Index != nil {
				idx = *tc.Index
			}
			out.ToolCalls = append(out.ToolCalls, cloudreq.ToolCall{
				Index: idx, ID: tc.ID, Name: tc.Function.Name, Arguments: arguments(tc.Function.Arguments),
			})
		}
	}
	out.Logprobs = logprobsOf(c.Logprobs)
	return out
}

// arguments returns a tool call's arguments: the string they are sent as,
// or an object some servers send as it is, in its JSON text.
func arguments(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// logprobsOf converts either logprobs form; nil for none.
func logprobsOf(raw json.RawMessage) []cloudreq.TokenLogprob {
	if !present(raw) {
		return nil
	}
	var x xLogprobs
	if json.Unmarshal(raw, &x) != nil {
		return nil
	}
	var out []cloudreq.TokenLogprob
	for _, c := range x.Content {
		t := cloudreq.TokenLogprob{Token: c.Token, Logprob: c.Logprob}
		for _, a := range c.TopLogprobs {
			t.Top = append(t.Top, cloudreq.TopLogprob{Token: a.Token, Logprob: a.Logprob})
		}
		out = append(out, t)
	}
	for i, tok := range x.Tokens {
		t := cloudreq.TokenLogprob{Token: tok, Logprob: math.NaN()}
		if i < len(x.TokenLogprobs) && x.TokenLogprobs[i] != nil {
			t.Logprob = *x.TokenLogprobs[i]
		}
		if i < len(x.TopLogprobs) {
			for k, v := range x.TopLogprobs[i] {
				t.Top = append(t.Top, cloudreq.TopLogprob{Token: k, Logprob: v})
			}
			sortTop(t.Top)
		}
		out = append(out, t)
	}
	return out
}

// sortTop orders candidates most likely first, then by token (a map has
// no order of its own).
func sortTop(top []cloudreq.TopLogprob) {
	for i := 1; i < len(top); i++ {
		for j := i; j > 0 && less(top[j], top[j-1]); j-- {
			top[j], top[j-1] = top[j-1], top[j]
		}
	}
}

func less(a, b cloudreq.TopLogprob) bool {
	if a.Logprob != b.Logprob {
		return a.Logprob > b.Logprob
	}
	return strings.Compare(a.Token, b.Token) < 0
}
