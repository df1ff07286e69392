package openaiwire

import (
	"encoding/json"
	"strings"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

// Message is one chat message on the wire.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// StreamOptions is the stream_options member of a request.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// ChatRequest is the body of POST /v1/chat/completions as this package
// writes it.
type ChatRequest struct {
	Model         string         `json:"model,omitempty"`
	Messages      []Message      `json:"messages"`
	MaxTokens     int            `json:"max_tokens,omitempty"`
	Temperature   *float64       `json:"temperature,omitempty"`
	TopP          *float64       `json:"top_p,omitempty"`
	Stop          []string       `json:"stop,omitempty"`
	Stream        bool           `json:"stream,omitempty"`
	StreamOptions *StreamOptions `json:"stream_options,omitempty"`
	// IgnoreEOS is vLLM's ignore_eos: generate until max_tokens.
	IgnoreEOS bool `json:"ignore_eos,omitempty"`
}

// CompletionRequest is the body of POST /v1/completions as this package
// writes it.
type CompletionRequest struct {
	Model         string         `json:"model,omitempty"`
	Prompt        string         `json:"prompt"`
	MaxTokens     int            `json:"max_tokens,omitempty"`
	Temperature   *float64       `json:"temperature,omitempty"`
	TopP          *float64       `json:"top_p,omitempty"`
	Stop          []string       `json:"stop,omitempty"`
	Stream        bool           `json:"stream,omitempty"`
	StreamOptions *StreamOptions `json:"stream_options,omitempty"`
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
}

// Chat converts a GenerateInput to a ChatRequest.
func Chat(g *cloudreq.GenerateInput, o EncodeOptions) ChatRequest {
	msgs := make([]Message, len(g.Messages))
	for i, m := range g.Messages {
		msgs[i] = Message{Role: m.Role, Content: m.Content}
	}
	r := ChatRequest{
		Model: o.Model, Messages: msgs, MaxTokens: g.MaxTokens,
		Temperature: g.Temperature, TopP: g.TopP, Stop: g.Stop, Stream: o.Stream,
		IgnoreEOS: g.IgnoreEOS,
	}
	if o.Stream && !o.OmitUsage {
		r.StreamOptions = &StreamOptions{IncludeUsage: true}
	}
	return r
}

// EncodeChat writes the chat completions body for g.
func EncodeChat(g *cloudreq.GenerateInput, o EncodeOptions) ([]byte, error) {
	return json.Marshal(Chat(g, o))
}

// EncodeCompletion writes the completions body for g. The prompt is the
// content of a lone message as it is; otherwise each message becomes a
// "role: content" line, followed by "assistant:".
func EncodeCompletion(g *cloudreq.GenerateInput, o EncodeOptions) ([]byte, error) {
	r := CompletionRequest{
		Model: o.Model, Prompt: Prompt(g.Messages), MaxTokens: g.MaxTokens,
		Temperature: g.Temperature, TopP: g.TopP, Stop: g.Stop, Stream: o.Stream,
		IgnoreEOS: g.IgnoreEOS,
	}
	if o.Stream && !o.OmitUsage {
		r.StreamOptions = &StreamOptions{IncludeUsage: true}
	}
	return json.Marshal(r)
}

// Prompt flattens chat messages into one prompt string: a lone message's
// content as it is, else "role: content" lines ending with "assistant:".
func Prompt(msgs []cloudreq.Message) string {
	if len(msgs) == 1 {
		return msgs[0].Content
	}
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Role)
		b.WriteString(": ")
		b.WriteString(m.Content)
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
