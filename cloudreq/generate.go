package cloudreq

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	// RoleTool is a tool result: Message.ToolCallID names the call it
	// answers, Content (or Parts' text) is the result.
	RoleTool = "tool"
)

// Part types.
const (
	PartText  = "text"
	PartImage = "image"
)

// Part is one piece of a message's content.
type Part struct {
	// Type is PartText or PartImage.
	Type string
	// Text is a text part's text.
	Text string
	// ImageURL is an image part's http(s) or data: URL. An image is either
	// a URL or inline Data, not both.
	ImageURL string
	// Data is an inline image's bytes, of media type MediaType
	// ("image/png", …), which inline data requires.
	Data      []byte
	MediaType string
}

// Tool is a function the model may call.
type Tool struct {
	// Name is the function's name: letters, digits, '_', '-' or '.', at
	// most 64 bytes.
	Name string
	// Description says what it does and when to call it.
	Description string
	// Parameters is the JSON Schema of its arguments, an object schema;
	// nil declares a function without parameters.
	Parameters json.RawMessage
}

// Tool choice modes.
const (
	// ToolChoiceAuto lets the model choose between answering and calling.
	ToolChoiceAuto = "auto"
	// ToolChoiceNone forbids calls.
	ToolChoiceNone = "none"
	// ToolChoiceRequired makes the model call at least one function.
	ToolChoiceRequired = "required"
	// ToolChoiceFunction makes the model call ToolChoice.Name.
	ToolChoiceFunction = "function"
)

// ToolChoice says whether and which functions the model must call.
type ToolChoice struct {
	// Mode is one of the ToolChoice* constants.
	Mode string
	// Name is the function of ToolChoiceFunction, one of Tools.
	Name string
}

// Response format types.
const (
	// FormatText is plain text (the default).
	FormatText = "text"
	// FormatJSON is JSON mode: the answer is one JSON object, any schema.
	FormatJSON = "json_object"
	// FormatJSONSchema is JSON that validates against ResponseFormat.Schema.
	FormatJSONSchema = "json_schema"
)

// ResponseFormat constrains the answer's form.
type ResponseFormat struct {
	// Type is FormatText, FormatJSON or FormatJSONSchema.
	Type string
	// Name names the schema (OpenAI requires one: default "response").
	Name string
	// Schema is the JSON Schema of FormatJSONSchema.
	Schema json.RawMessage
	// Strict asks for strict schema adherence where the dialect has the
	// switch (OpenAI json_schema.strict).
	Strict bool
}

// Token limit members: what the output cap is sent as.
const (
	// TokenLimitMaxTokens sends "max_tokens" (the default of every
	// OpenAI-compatible dialect except the OpenAI API itself).
	TokenLimitMaxTokens = "max_tokens"
	// TokenLimitMaxCompletionTokens sends "max_completion_tokens", which
	// OpenAI's reasoning models require.
	TokenLimitMaxCompletionTokens = "max_completion_tokens"
)

// Reasoning asks a reasoning model how much to think.
type Reasoning struct {
	// Effort is "minimal", "low", "medium" or "high" (OpenAI
	// reasoning_effort, Gemini thinkingLevel where the model has levels).
	Effort string
	// BudgetTokens is a thinking budget in tokens (Gemini thinkingBudget;
	// 0: the model's default). Dialects with effort levels only refuse it.
	BudgetTokens int
	// IncludeThoughts asks for the reasoning text where the dialect hides
	// it by default (Gemini includeThoughts).
	IncludeThoughts bool
}

// ToolCall is a function call the model made. In a StreamChunk's
// ToolCallDeltas it is a fragment: the first fragment of a call has its
// ID and Name, later ones only more Arguments, keyed by Index.
type ToolCall struct {
	// Index is the call's position among the answer's calls.
	Index int
	// ID is the call's id, which the tool result (Message.ToolCallID)
	// names. Dialects without ids (Gemini) get "call_<index>".
	ID string
	// Name is the function's name.
	Name string
	// Arguments is the arguments' JSON text ("{}" for none, once whole).
	Arguments string
}

// TokenLogprob is one output token's log probability.
type TokenLogprob struct {
	Token   string
	Logprob float64
	// Top holds the most likely tokens at this place, when asked for.
	Top []TopLogprob
}

// TopLogprob is one candidate token at a place.
type TopLogprob struct {
	Token   string
	Logprob float64
}

// Choice is one of several answers (GenerateInput.N > 1).
type Choice struct {
	Index        int
	Text         string
	Reasoning    string
	ToolCalls    []ToolCall
	FinishReason string
	Logprobs     []TokenLogprob
}

// CheckGenerate checks what every dialect needs of g (the client runs it
// for every generate call, before the adapter's encoder), with messages that
// name the field: at least one message, known roles, parts well formed,
// tool names valid and unique, a tool choice that names an offered tool,
// a response format with the schema its type needs, numbers in range,
// extras that are not JSON-encodable refused. An empty role is a user
// message. Each adapter's encoder then refuses, naming its dialect, what
// that dialect cannot express.
func CheckGenerate(g *GenerateInput) error {
	if g == nil || len(g.Messages) == 0 {
		return fmt.Errorf("generate needs Generate.Messages (at least one)")
	}
	for i := range g.Messages {
		if err := checkMessage(i, &g.Messages[i]); err != nil {
			return err
		}
	}
	names := make(map[string]bool, len(g.Tools))
	for i, t := range g.Tools {
		if !validToolName(t.Name) {
			return fmt.Errorf("Generate.Tools[%d].Name %q: want 1 to 64 letters, digits, '_', '-' or '.'", i, t.Name)
		}
		if names[t.Name] {
			return fmt.Errorf("Generate.Tools[%d].Name %q is declared twice", i, t.Name)
		}
		names[t.Name] = true
		if len(t.Parameters) > 0 && !isJSONObject(t.Parameters) {
			return fmt.Errorf("Generate.Tools[%d].Parameters must be a JSON Schema object", i)
		}
	}
	if tc := g.ToolChoice; tc != nil {
		switch tc.Mode {
		case ToolChoiceAuto, ToolChoiceNone, ToolChoiceRequired:
			if tc.Name != "" {
				return fmt.Errorf("Generate.ToolChoice.Name is only for mode %q", ToolChoiceFunction)
			}
		case ToolChoiceFunction:
			if !names[tc.Name] {
				return fmt.Errorf("Generate.ToolChoice names %q, which is not in Generate.Tools", tc.Name)
			}
		default:
			return fmt.Errorf("Generate.ToolChoice.Mode %q: want auto, none, required or function", tc.Mode)
		}
		if len(g.Tools) == 0 && tc.Mode != ToolChoiceNone {
			return fmt.Errorf("Generate.ToolChoice %q needs Generate.Tools", tc.Mode)
		}
	}
	if g.ParallelToolCalls != nil && len(g.Tools) == 0 {
		return fmt.Errorf("Generate.ParallelToolCalls needs Generate.Tools")
	}
	if rf := g.ResponseFormat; rf != nil {
		switch rf.Type {
		case FormatText, FormatJSON:
			if len(rf.Schema) > 0 {
				return fmt.Errorf("Generate.ResponseFormat.Schema is only for type %q", FormatJSONSchema)
			}
		case FormatJSONSchema:
			if !isJSONObject(rf.Schema) {
				return fmt.Errorf("Generate.ResponseFormat type %q needs Schema, a JSON Schema object", FormatJSONSchema)
			}
		default:
			return fmt.Errorf("Generate.ResponseFormat.Type %q: want text, json_object or json_schema", rf.Type)
		}
	}
	switch {
	case g.MaxTokens < 0:
		return fmt.Errorf("Generate.MaxTokens %d is negative", g.MaxTokens)
	case g.N < 0:
		return fmt.Errorf("Generate.N %d is negative", g.N)
	case g.TopK < 0:
		return fmt.Errorf("Generate.TopK %d is negative", g.TopK)
	case g.TopLogprobs < 0 || g.TopLogprobs > 20:
		return fmt.Errorf("Generate.TopLogprobs %d: want 0 to 20", g.TopLogprobs)
	case g.TopLogprobs > 0 && !g.Logprobs:
		return fmt.Errorf("Generate.TopLogprobs needs Generate.Logprobs")
	}
	switch g.TokenLimit {
	case "", TokenLimitMaxTokens, TokenLimitMaxCompletionTokens:
	default:
		return fmt.Errorf("Generate.TokenLimit %q: want %q or %q", g.TokenLimit, TokenLimitMaxTokens, TokenLimitMaxCompletionTokens)
	}
	if r := g.Reasoning; r != nil {
		switch r.Effort {
		case "", "minimal", "low", "medium", "high":
		default:
			return fmt.Errorf("Generate.Reasoning.Effort %q: want minimal, low, medium or high", r.Effort)
		}
		if r.BudgetTokens < 0 {
			return fmt.Errorf("Generate.Reasoning.BudgetTokens %d is negative", r.BudgetTokens)
		}
	}
	for k, v := range g.Extra {
		if k == "" {
			return fmt.Errorf("Generate.Extra has an empty key")
		}
		if _, err := json.Marshal(v); err != nil {
			return fmt.Errorf("Generate.Extra[%q] is not JSON: %v", k, err)
		}
	}
	return nil
}

func checkMessage(i int, m *Message) error {
	switch m.Role {
	case RoleSystem, RoleUser, RoleAssistant, RoleTool, "":
	default:
		return fmt.Errorf("Generate.Messages[%d].Role %q: want system, user, assistant or tool", i, m.Role)
	}
	if m.Content != "" && len(m.Parts) > 0 {
		return fmt.Errorf("Generate.Messages[%d] has both Content and Parts: use one", i)
	}
	for j, p := range m.Parts {
		switch p.Type {
		case PartText:
			if p.ImageURL != "" || p.Data != nil {
				return fmt.Errorf("Generate.Messages[%d].Parts[%d]: a text part has no image", i, j)
			}
		case PartImage:
			if m.Role != RoleUser && m.Role != "" {
				return fmt.Errorf("Generate.Messages[%d].Parts[%d]: images go in user messages", i, j)
			}
			switch {
			case (p.ImageURL == "") == (len(p.Data) == 0):
				return fmt.Errorf("Generate.Messages[%d].Parts[%d]: an image needs ImageURL or Data, one of them", i, j)
			case len(p.Data) > 0 && !strings.HasPrefix(p.MediaType, "image/"):
				return fmt.Errorf("Generate.Messages[%d].Parts[%d]: inline image data needs MediaType image/…", i, j)
			case p.ImageURL != "" && !strings.HasPrefix(p.ImageURL, "https://") && !strings.HasPrefix(p.ImageURL, "http://") &&
				!strings.HasPrefix(p.ImageURL, "data:image/") && !strings.HasPrefix(p.ImageURL, "gs://"):
				return fmt.Errorf("Generate.Messages[%d].Parts[%d].ImageURL: want an http(s), gs:// or data:image/ URL", i, j)
			}
		default:
			return fmt.Errorf("Generate.Messages[%d].Parts[%d].Type %q: want text or image", i, j, p.Type)
		}
	}
	if len(m.ToolCalls) > 0 && m.Role != RoleAssistant {
		return fmt.Errorf("Generate.Messages[%d]: only assistant messages carry ToolCalls", i)
	}
	for j, tc := range m.ToolCalls {
		if tc.ID == "" || !validToolName(tc.Name) {
			return fmt.Errorf("Generate.Messages[%d].ToolCalls[%d] needs an ID and a valid Name", i, j)
		}
		if tc.Arguments != "" && !isJSONObject(json.RawMessage(tc.Arguments)) {
			return fmt.Errorf("Generate.Messages[%d].ToolCalls[%d].Arguments must be a JSON object", i, j)
		}
	}
	if (m.Role == RoleTool) != (m.ToolCallID != "") {
		if m.Role == RoleTool {
			return fmt.Errorf("Generate.Messages[%d]: a tool result needs ToolCallID", i)
		}
		return fmt.Errorf("Generate.Messages[%d]: ToolCallID is only for role tool", i)
	}
	return nil
}

func validToolName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func isJSONObject(b json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil && m != nil
}

// Text returns a message's text: Content, or its text parts joined.
func (m *Message) Text() string {
	if len(m.Parts) == 0 {
		return m.Content
	}
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Type == PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// HasImages reports whether any message has an image part.
func (g *GenerateInput) HasImages() bool {
	for i := range g.Messages {
		for _, p := range g.Messages[i].Parts {
			if p.Type == PartImage {
				return true
			}
		}
	}
	return false
}

// HasToolTurns reports whether any message is a tool call or result.
func (g *GenerateInput) HasToolTurns() bool {
	for i := range g.Messages {
		if m := &g.Messages[i]; len(m.ToolCalls) > 0 || m.Role == RoleTool {
			return true
		}
	}
	return false
}

// MergeExtra merges extra into the JSON object body at its top level and
// returns the new body. A key the body already has is refused: extras add
// what the typed fields cannot say, they never override them.
func MergeExtra(body []byte, extra map[string]any) ([]byte, error) {
	if len(extra) == 0 {
		return body, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	for k, v := range extra {
		if _, ok := m[k]; ok {
			return nil, fmt.Errorf("Generate.Extra[%q] clashes with a member the request already sets", k)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("Generate.Extra[%q] is not JSON: %v", k, err)
		}
		m[k] = b
	}
	return json.Marshal(m)
}

// ToolCallAssembler assembles streamed tool-call fragments into whole
// calls. The client runs one per stream; adapters that assemble calls
// themselves may use it too. Its zero value is ready.
type ToolCallAssembler struct {
	calls []ToolCall
	done  int // calls[:done] are complete
}

// Add takes one chunk's fragments and returns the calls they completed:
// a fragment for a higher index completes every call before it, as
// servers stream calls one after the other. A fragment for a call already
// complete, or with an index out of order by more than one, is appended
// to the call of its index anyway (a server's own order wins), but a
// completed call is never returned twice.
func (a *ToolCallAssembler) Add(frags []ToolCall) []ToolCall {
	var out []ToolCall
	for _, f := range frags {
		if f.Index < 0 || f.Index > 1<<10 {
			continue
		}
		for len(a.calls) <= f.Index {
			a.calls = append(a.calls, ToolCall{Index: len(a.calls)})
		}
		c := &a.calls[f.Index]
		if f.ID != "" && c.ID == "" {
			c.ID = f.ID
		}
		if f.Name != "" && c.Name == "" {
			c.Name = f.Name
		}
		c.Arguments += f.Arguments
		if f.Index > a.done {
			out = append(out, a.complete(f.Index)...)
		}
	}
	return out
}

// complete marks calls[done:n] complete and returns them.
func (a *ToolCallAssembler) complete(n int) []ToolCall {
	if n <= a.done {
		return nil
	}
	out := make([]ToolCall, 0, n-a.done)
	for i := a.done; i < n; i++ {
		c := a.calls[i]
		if c.Arguments == "" {
			c.Arguments = "{}"
			a.calls[i].Arguments = "{}"
		}
		out = append(out, c)
	}
	a.done = n
	return out
}

// Flush completes every call still open (the stream finished) and
// returns those it completed.
func (a *ToolCallAssembler) Flush() []ToolCall { return a.complete(len(a.calls)) }

// Calls returns every call seen so far, complete or not.
func (a *ToolCallAssembler) Calls() []ToolCall {
	if len(a.calls) == 0 {
		return nil
	}
	return append([]ToolCall(nil), a.calls...)
}
