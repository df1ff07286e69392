package openaiwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

// Result is what a whole response or one streamed chunk says, in portable
// terms.
type Result struct {
	// Text is the generated text (a delta, for a chunk).
	Text string
	// Content is true when the chunk carries generated content: text, a
	// tool-call delta or reasoning text. Role-only, empty and usage-only
	// chunks are not content.
	Content bool
	// FinishReason is set when a choice finished.
	FinishReason string
	// Reasoning is the reasoning text (a delta, for a chunk), apart from
	// Text.
	Reasoning string
	// ToolCalls are the first choice's tool calls (fragments, for a
	// chunk).
	ToolCalls []cloudreq.ToolCall
	// Logprobs are the first choice's token log probabilities.
	Logprobs []cloudreq.TokenLogprob
	// Choices holds each choice of a whole answer that has more than one.
	Choices []cloudreq.Choice
	// Usage is set when the body reported token usage.
	Usage *cloudreq.Usage
	// Error is set when the body is an error object (a mid-stream error).
	Error *ErrorBody
}

type wireUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// wireDelta is a chunk's delta or a whole response's message. Reasoning
// text comes as "reasoning" (vLLM since its rename, OpenRouter) or
// "reasoning_content" (DeepSeek, SGLang, older vLLM); "reasoning" is kept
// raw, as some servers send an object there.
type wireDelta struct {
	Content          string          `json:"content"`
	ReasoningContent string          `json:"reasoning_content"`
	Reasoning        json.RawMessage `json:"reasoning"`
	ToolCalls        json.RawMessage `json:"tool_calls"`
}

type wireChoice struct {
	Delta        wireDelta `json:"delta"`
	Message      wireDelta `json:"message"`
	Text         string    `json:"text"`
	FinishReason string    `json:"finish_reason"`
}

// wireBody is a chat completion, a completion or a chunk of either. The
// error members are read only when the body has an "error" key or value
// (errorKey), so a content chunk decodes without them.
type wireBody struct {
	Choices []wireChoice `json:"choices"`
	Usage   *wireUsage   `json:"usage"`
}

var errorKey, choicesKey = []byte(`"error"`), []byte(`"choices"`)

// ErrNotJSON is returned by Decode for a body that is not a JSON object.
var ErrNotJSON = errors.New("openaiwire: body is not a JSON object")

// Decode reads a chat completion, a completion or a streamed chunk of
// either. A body that is an error object returns a Result whose Error is
// set. Several choices' texts are concatenated in order, and listed in
// Choices.
func Decode(data []byte) (Result, error) {
	var d decoder
	d.whole = true
	return d.decode(data)
}

// decoder decodes bodies one after the other, reusing its buffers so that
// a streamed chunk costs few allocations.
type decoder struct {
	w         wireBody
	text      []byte // the fast path's text, reused
	reasoning []byte // the fast path's reasoning text, reused
	whole     bool   // whole answers: fill Choices
}

func (d *decoder) decode(data []byte) (Result, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return Result{}, ErrNotJSON
	}
	// Every content or usage chunk has choices; an error object has an
	// "error" key or value, or (Azure's flat form) neither.
	if bytes.Contains(data, errorKey) || !bytes.Contains(data, choicesKey) {
		if eb, ok := errorObject(data); ok {
			return Result{Error: &eb}, nil
		}
	}
	r, extra, ok := d.fast(data)
	if !ok {
		var err error
		if r, err = d.slow(data); err != nil {
			return r, err
		}
		extra = true
	}
	// A body fast read whole, with none of the members extras reads and
	// at most one choice, has nothing more for extras: its second decode,
	// by encoding/json, was most of a whole answer's cost.
	if extra {
		extras(data, &r, !ok, d.whole)
	}
	return r, nil
}

// slow decodes data with encoding/json. It is the reference for fast, and
// decodes every body that fast declines: its errors are encoding/json's.
func (d *decoder) slow(data []byte) (Result, error) {
	clear(d.w.Choices[:cap(d.w.Choices)])
	d.w.Choices, d.w.Usage = d.w.Choices[:0], nil
	if err := json.Unmarshal(data, &d.w); err != nil {
		return Result{}, err
	}
	var r Result
	var text joiner
	for i := range d.w.Choices {
		c := &d.w.Choices[i]
		for _, dl := range []*wireDelta{&c.Delta, &c.Message} {
			text.add(dl.Content)
			if dl.ReasoningContent != "" || hasReasoning(dl.Reasoning) || hasToolCalls(dl.ToolCalls) {
				r.Content = true
			}
		}
		text.add(c.Text)
		if c.FinishReason != "" && r.FinishReason == "" {
			r.FinishReason = c.FinishReason
		}
	}
	r.Text = text.String()
	if r.Text != "" {
		r.Content = true
	}
	if u := d.w.Usage; u != nil {
		r.Usage = &cloudreq.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, Source: "server"}
	}
	return r, nil
}

// joiner concatenates texts in linear time, without allocating while at
// most one of them is not empty (one choice, the usual case).
type joiner struct {
	one  string
	many strings.Builder
}

func (j *joiner) add(s string) {
	switch {
	case s == "":
	case j.one == "" && j.many.Len() == 0:
		j.one = s
	default:
		if j.many.Len() == 0 {
			j.many.WriteString(j.one)
		}
		j.many.WriteString(s)
	}
}

// String returns the texts joined.
func (j *joiner) String() string {
	if j.many.Len() > 0 {
		return j.many.String()
	}
	return j.one
}

// errorObject reports whether data is an error object: a non-null "error"
// member, "object":"error", or Azure's flat form (a numeric "status" of
// 400 or more with a "message"). Members of unexpected types are read as
// absent, as ParseError reads them: a string "status" beside an "error"
// object must not hide the error.
func errorObject(data []byte) (ErrorBody, bool) {
	var probe struct {
		Object  json.RawMessage `json:"object"`
		Error   json.RawMessage `json:"error"`
		Status  json.RawMessage `json:"status"`  // Azure's flat form
		Message json.RawMessage `json:"message"` // with Status
	}
	if json.Unmarshal(data, &probe) != nil {
		return ErrorBody{}, false
	}
	flat := num(probe.Status) >= 400 && present(probe.Message)
	if !present(probe.Error) && str(probe.Object) != "error" && !flat {
		return ErrorBody{}, false
	}
	return ParseError(data)
}

// present reports whether a member is there and not null.
func present(r json.RawMessage) bool {
	return len(r) > 0 && !bytes.Equal(r, []byte("null"))
}

// hasToolCalls reports whether raw is a non-empty array: not null, not
// [] however spaced.
func hasToolCalls(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 2 && raw[0] == '[' && len(bytes.TrimSpace(raw[1:len(raw)-1])) > 0
}

// hasReasoning reports whether a raw "reasoning" member carries anything:
// not absent, null, "" or an empty object.
func hasReasoning(raw json.RawMessage) bool {
	switch string(bytes.TrimSpace(raw)) {
	case "", "null", `""`, "{}":
		return false
	}
	return true
}

// Done is the data of the SSE event that ends an OpenAI stream.
var Done = []byte("[DONE]")

// IsDone reports whether an SSE event's data is the [DONE] end marker.
func IsDone(data []byte) bool { return bytes.Equal(bytes.TrimSpace(data), Done) }
