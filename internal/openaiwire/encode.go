package openaiwire

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

// Message is one chat message on the wire. Content is a string, a list of
// parts (ContentPart) or, for an assistant message of tool calls alone,
// null.
type Message struct {
	Role       string         `json:"role"`
	Content    any            `json:"content"`
	ToolCalls  []WireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

// ContentPart is one element of a message's content list.
type ContentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *ImageURL `json:"image_url,omitempty"`
}

// ImageURL is an image_url part's member: an http(s) URL or a data: URL.
type ImageURL struct {
	URL string `json:"url"`
}

// WireToolCall is an assistant message's tool call.
type WireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is a tool call's function and its arguments' JSON text.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// WireTool is one element of "tools".
type WireTool struct {
	Type     string       `json:"type"`
	Function FunctionDecl `json:"function"`
}

// FunctionDecl declares a function.
type FunctionDecl struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// WireResponseFormat is "response_format".
type WireResponseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *JSONSchema `json:"json_schema,omitempty"`
}

// JSONSchema is response_format.json_schema.
type JSONSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict,omitempty"`
}

// StreamOptions is the stream_options member of a request.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// ChatRequest is the body of POST /v1/chat/completions as this package
// writes it.
type ChatRequest struct {
	Model               string              `json:"model,omitempty"`
	Messages            []Message           `json:"messages"`
	MaxTokens           int                 `json:"max_tokens,omitempty"`
	MaxCompletionTokens int                 `json:"max_completion_tokens,omitempty"`
	Temperature         *float64            `json:"temperature,omitempty"`
	TopP                *float64            `json:"top_p,omitempty"`
	TopK                int                 `json:"top_k,omitempty"`
	Stop                []string            `json:"stop,omitempty"`
	Seed                *int64              `json:"seed,omitempty"`
	N                   int                 `json:"n,omitempty"`
	PresencePenalty     *float64            `json:"presence_penalty,omitempty"`
	FrequencyPenalty    *float64            `json:"frequency_penalty,omitempty"`
	Logprobs            bool                `json:"logprobs,omitempty"`
	TopLogprobs         int                 `json:"top_logprobs,omitempty"`
	Tools               []WireTool          `json:"tools,omitempty"`
	ToolChoice          any                 `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool               `json:"parallel_tool_calls,omitempty"`
	ResponseFormat      *WireResponseFormat `json:"response_format,omitempty"`
	ReasoningEffort     string              `json:"reasoning_effort,omitempty"`
	Stream              bool                `json:"stream,omitempty"`
	StreamOptions       *StreamOptions      `json:"stream_options,omitempty"`
	// IgnoreEOS is vLLM's ignore_eos: generate until max_tokens.
	IgnoreEOS bool `json:"ignore_eos,omitempty"`
}

// CompletionRequest is the body of POST /v1/completions as this package
// writes it.
type CompletionRequest struct {
	Model            string         `json:"model,omitempty"`
	Prompt           string         `json:"prompt"`
	MaxTokens        int            `json:"max_tokens,omitempty"`
	Temperature      *float64       `json:"temperature,omitempty"`
	TopP             *float64       `json:"top_p,omitempty"`
	TopK             int            `json:"top_k,omitempty"`
	Stop             []string       `json:"stop,omitempty"`
	Seed             *int64         `json:"seed,omitempty"`
	N                int            `json:"n,omitempty"`
	PresencePenalty  *float64       `json:"presence_penalty,omitempty"`
	FrequencyPenalty *float64       `json:"frequency_penalty,omitempty"`
	Logprobs         *int           `json:"logprobs,omitempty"`
	Stream           bool           `json:"stream,omitempty"`
	StreamOptions    *StreamOptions `json:"stream_options,omitempty"`
	// IgnoreEOS is vLLM's ignore_eos: generate until max_tokens.
	IgnoreEOS bool `json:"ignore_eos,omitempty"`
}

// EncodeOptions tunes the request encoders.
type EncodeOptions struct {
	// Model is the "model" member; empty leaves it out (servers that serve
	// one model accept that).
	Model string
	// Stream asks for an SSE stream.
	Stream bool
	// OmitUsage leaves out stream_options.include_usage on streams, for
	// servers that reject the member.
	OmitUsage bool
	// Dialect names the dialect in refusals ("openai-compatible chat");
	// empty: "OpenAI chat" or "OpenAI completions".
	Dialect string
	// TokenLimit is the default member of the output cap when
	// GenerateInput.TokenLimit is empty (empty: max_tokens).
	TokenLimit string
}

// Refusal is the error of a feature a dialect cannot express. Adapters
// return it as ERR_INVALID_PARAM.
type Refusal struct {
	Dialect, Feature, Hint string
}

func (r *Refusal) Error() string {
	s := r.Dialect + " cannot express " + r.Feature
	if r.Hint != "" {
		s += ": " + r.Hint
	}
	return s
}

func (o EncodeOptions) dialect(chat bool) string {
	switch {
	case o.Dialect != "":
		return o.Dialect
	case chat:
		return "OpenAI chat"
	}
	return "OpenAI completions"
}

// Messages converts messages to their chat wire form.
func Messages(msgs []cloudreq.Message) []Message {
	out := make([]Message, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		w := Message{Role: m.Role, ToolCallID: m.ToolCallID}
		switch {
		case len(m.Parts) > 0:
			parts := make([]ContentPart, len(m.Parts))
			for j, p := range m.Parts {
				if p.Type == cloudreq.PartImage {
					u := p.ImageURL
					if u == "" {
						u = "data:" + p.MediaType + ";base64," + base64.StdEncoding.EncodeToString(p.Data)
					}
					parts[j] = ContentPart{Type: "image_url", ImageURL: &ImageURL{URL: u}}
					continue
				}
				parts[j] = ContentPart{Type: "text", Text: p.Text}
			}
			w.Content = parts
		case m.Content == "" && len(m.ToolCalls) > 0:
			w.Content = nil
		default:
			w.Content = m.Content
		}
		for _, tc := range m.ToolCalls {
			args := tc.Arguments
			if args == "" {
				args = "{}"
			}
			w.ToolCalls = append(w.ToolCalls, WireToolCall{ID: tc.ID, Type: "function", Function: FunctionCall{Name: tc.Name, Arguments: args}})
		}
		out[i] = w
	}
	return out
}

// Chat converts a GenerateInput to a ChatRequest. It refuses (a *Refusal)
// what chat cannot say: a thinking budget (reasoning_effort only).
func Chat(g *cloudreq.GenerateInput, o EncodeOptions) (ChatRequest, error) {
	r := ChatRequest{
		Model: o.Model, Messages: Messages(g.Messages),
		Temperature: g.Temperature, TopP: g.TopP, TopK: g.TopK, Stop: g.Stop, Stream: o.Stream,
		Seed: g.Seed, PresencePenalty: g.PresencePenalty, FrequencyPenalty: g.FrequencyPenalty,
		Logprobs: g.Logprobs, TopLogprobs: g.TopLogprobs, ParallelToolCalls: g.ParallelToolCalls,
		IgnoreEOS: g.IgnoreEOS,
	}
	if g.N > 1 {
		r.N = g.N
	}
	limit := g.TokenLimit
	if limit == "" {
		limit = o.TokenLimit
	}
	if limit == cloudreq.TokenLimitMaxCompletionTokens {
		r.MaxCompletionTokens = g.MaxTokens
	} else {
		r.MaxTokens = g.MaxTokens
	}
	for _, t := range g.Tools {
		r.Tools = append(r.Tools, WireTool{Type: "function", Function: FunctionDecl{Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
	}
	if tc := g.ToolChoice; tc != nil {
		if tc.Mode == cloudreq.ToolChoiceFunction {
			r.ToolChoice = map[string]any{"type": "function", "function": map[string]string{"name": tc.Name}}
		} else {
			r.ToolChoice = tc.Mode
		}
	}
	if rf := g.ResponseFormat; rf != nil {
		r.ResponseFormat = &WireResponseFormat{Type: rf.Type}
		if rf.Type == cloudreq.FormatJSONSchema {
			name := rf.Name
			if name == "" {
				name = "response"
			}
			r.ResponseFormat.JSONSchema = &JSONSchema{Name: name, Schema: rf.Schema, Strict: rf.Strict}
		}
	}
	if rs := g.Reasoning; rs != nil {
		if rs.BudgetTokens > 0 {
			return ChatRequest{}, &Refusal{o.dialect(true), "Reasoning.BudgetTokens", "it takes reasoning_effort (Reasoning.Effort) only"}
		}
		r.ReasoningEffort = rs.Effort
	}
	if o.Stream && !o.OmitUsage {
		r.StreamOptions = &StreamOptions{IncludeUsage: true}
	}
	return r, nil
}

// EncodeChat writes the chat completions body for g, with g.Extra merged
// in.
func EncodeChat(g *cloudreq.GenerateInput, o EncodeOptions) ([]byte, error) {
	r, err := Chat(g, o)
	if err != nil {
		return nil, err
	}
	b, ok := appendChat(nil, &r)
	if !ok {
		if b, err = json.Marshal(r); err != nil {
			return nil, err
		}
	}
	return cloudreq.MergeExtra(b, g.Extra)
}

// EncodeCompletion writes the completions body for g. The prompt is the
// content of a lone message as it is; otherwise each message becomes a
// "role: content" line, followed by "assistant:". What a prompt cannot
// carry (tools, tool turns, images, a response format, reasoning,
// max_completion_tokens) is refused with a *Refusal.
func EncodeCompletion(g *cloudreq.GenerateInput, o EncodeOptions) ([]byte, error) {
	d := o.dialect(false)
	if err := RefusePromptOnly(g, d); err != nil {
		return nil, err
	}
	if g.TokenLimit == cloudreq.TokenLimitMaxCompletionTokens {
		return nil, &Refusal{d, "TokenLimit max_completion_tokens", "completions take max_tokens"}
	}
	r := CompletionRequest{
		Model: o.Model, Prompt: Prompt(g.Messages), MaxTokens: g.MaxTokens,
		Temperature: g.Temperature, TopP: g.TopP, TopK: g.TopK, Stop: g.Stop, Stream: o.Stream,
		Seed: g.Seed, PresencePenalty: g.PresencePenalty, FrequencyPenalty: g.FrequencyPenalty,
		IgnoreEOS: g.IgnoreEOS,
	}
	if g.N > 1 {
		r.N = g.N
	}
	if g.Logprobs {
		k := g.TopLogprobs
		r.Logprobs = &k
	}
	if o.Stream && !o.OmitUsage {
		r.StreamOptions = &StreamOptions{IncludeUsage: true}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return cloudreq.MergeExtra(b, g.Extra)
}

// RefusePromptOnly refuses, naming dialect d, what a prompt-only dialect
// cannot carry: tools and tool turns, images, a response format other
// than text, reasoning settings.
func RefusePromptOnly(g *cloudreq.GenerateInput, d string) error {
	switch {
	case len(g.Tools) > 0 || g.ToolChoice != nil || g.ParallelToolCalls != nil:
		return &Refusal{d, "Tools", "it has no function calling; use a chat route"}
	case g.HasToolTurns():
		return &Refusal{d, "tool calls and tool results in Messages", "use a chat route"}
	case g.HasImages():
		return &Refusal{d, "image parts", "it takes text only"}
	case g.ResponseFormat != nil && g.ResponseFormat.Type != cloudreq.FormatText:
		return &Refusal{d, "ResponseFormat " + g.ResponseFormat.Type, "use a chat route, or the server's own member in Generate.Extra"}
	case g.Reasoning != nil:
		return &Refusal{d, "Reasoning", "it has no reasoning settings"}
	}
	return nil
}

// RefuseFixedFields refuses what a template body of fixed generation
// fields cannot carry (Azure's /score input_data, EAS's legacy template):
// what RefusePromptOnly refuses, and stop sequences, n > 1, logprobs, a
// seed, penalties and max_completion_tokens; top-k too unless the body has
// it (topK). hint says where to go instead.
func RefuseFixedFields(g *cloudreq.GenerateInput, d, hint string, topK bool) error {
	if err := RefusePromptOnly(g, d); err != nil {
		return err
	}
	var f string
	switch {
	case len(g.Stop) > 0:
		f = "Stop"
	case g.N > 1:
		f = "N > 1"
	case g.Logprobs:
		f = "Logprobs"
	case g.Seed != nil:
		f = "Seed"
	case g.TopK > 0 && !topK:
		f = "TopK"
	case g.PresencePenalty != nil || g.FrequencyPenalty != nil:
		f = "presence and frequency penalties"
	case g.TokenLimit == cloudreq.TokenLimitMaxCompletionTokens:
		f = "TokenLimit max_completion_tokens"
	default:
		return nil
	}
	return &Refusal{Dialect: d, Feature: f, Hint: hint}
}

// Prompt flattens chat messages into one prompt string: a lone message's
// content as it is, else "role: content" lines ending with "assistant:".
func Prompt(msgs []cloudreq.Message) string {
	if len(msgs) == 1 {
		return msgs[0].Text()
	}
	var b strings.Builder
	for i := range msgs {
		b.WriteString(msgs[i].Role)
		b.WriteString(": ")
		b.WriteString(msgs[i].Text())
		b.WriteString("\n")
	}
	b.WriteString("assistant:")
	return b.String()
}

// IsCompletionsPath reports whether path is a (legacy) completions route
// rather than chat completions.
func IsCompletionsPath(path string) bool {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	path = strings.TrimRight(path, "/")
	return strings.HasSuffix(path, "/completions") && !strings.HasSuffix(path, "/chat/completions")
}
