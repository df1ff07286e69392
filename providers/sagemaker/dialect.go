package sagemaker

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/openaiwire"
)

// Dialect is the LLM request format a SageMaker endpoint's container speaks
// for ActionGenerate.
type Dialect string

// Dialects.
const (
	// DialectMessages is the OpenAI chat completions body served by the
	// Messages API of LMI (vLLM, TensorRT-LLM) and TGI containers:
	// {"messages":[…],"max_tokens":…,"stream":…}.
	DialectMessages Dialect = "messages"
	// DialectTGI is the Text Generation Inference body of the Hugging Face
	// LLM containers (and LMI's TGI-compatible schema):
	// {"inputs":…,"parameters":{"max_new_tokens":…},"stream":…}.
	DialectTGI Dialect = "tgi"
)

func (d Dialect) valid() bool { return d == "" || d == DialectMessages || d == DialectTGI }

// dialect returns the dialect of req: its Attributes.Dialect, its
// endpoint's, or the adapter's default.
func (a *Adapter) dialect(req *cloudreq.CloudRequest) (Dialect, error) {
	if v := Dialect(req.Attributes.Dialect); v != "" {
		if !v.valid() {
			return "", errcodes.Errorf(errcodes.InvalidParam, "sagemaker: unknown Attributes.Dialect %q (want %q or %q)", v, DialectMessages, DialectTGI)
		}
		return v, nil
	}
	d := a.opts.Dialect
	if v, ok := a.opts.EndpointDialects[req.Target.Endpoint]; ok {
		d = v
	}
	if !d.valid() {
		return "", errcodes.Errorf(errcodes.InvalidParam, "sagemaker: unknown dialect %q (want %q or %q)", d, DialectMessages, DialectTGI)
	}
	if d == "" {
		d = DialectMessages
	}
	return d, nil
}

type tgiParameters struct {
	MaxNewTokens int      `json:"max_new_tokens,omitempty"`
	Temperature  *float64 `json:"temperature,omitempty"`
	TopP         *float64 `json:"top_p,omitempty"`
	Stop         []string `json:"stop,omitempty"`
	DoSample     *bool    `json:"do_sample,omitempty"`
	// Details asks for finish_reason and generated_tokens in the response.
	Details bool `json:"details"`
	// The members of the richer generate input (see tgi.go).
	TopK             int         `json:"top_k,omitempty"`
	Seed             *int64      `json:"seed,omitempty"`
	FrequencyPenalty *float64    `json:"frequency_penalty,omitempty"`
	Grammar          *tgiGrammar `json:"grammar,omitempty"`
	TopNTokens       int         `json:"top_n_tokens,omitempty"`
}

type tgiRequest struct {
	Inputs     string        `json:"inputs"`
	Parameters tgiParameters `json:"parameters"`
	Stream     bool          `json:"stream"`
}

// Encode implements cloudreq.Encoder: it writes req.Generate in the
// endpoint's dialect. Streams of the messages dialect ask for a final usage
// chunk (stream_options.include_usage) unless Options.OmitStreamUsage is
// set. For TGI, a temperature of 0 becomes
// greedy decoding (do_sample false) and a top_p of 1 is left out, since TGI
// accepts neither.
func (a *Adapter) Encode(req *cloudreq.CloudRequest, stream bool) (cloudreq.Payload, error) {
	g := req.Generate
	if g == nil || len(g.Messages) == 0 {
		return cloudreq.Payload{}, errcodes.New(errcodes.InvalidParam, "sagemaker: generate needs Generate.Messages")
	}
	d, err := a.dialect(req)
	if err != nil {
		return cloudreq.Payload{}, err
	}
	var v any
	switch d {
	case DialectTGI:
		prompt := a.opts.Prompt
		if prompt == nil {
			prompt = DefaultPrompt
		}
		p := tgiParameters{MaxNewTokens: g.MaxTokens, TopP: g.TopP, Stop: g.Stop, Details: true}
		if t := g.Temperature; t != nil {
			if *t == 0 {
				p.DoSample = new(bool)
			} else {
				p.Temperature = t
			}
		}
		if p.TopP != nil && *p.TopP >= 1 {
			p.TopP = nil
		}
		if err := tgiFeatures(g, &p); err != nil {
			return cloudreq.Payload{}, errcodes.Wrap(err, errcodes.InvalidParam, "sagemaker: "+err.Error())
		}
		v = tgiRequest{Inputs: prompt(g.Messages), Parameters: p, Stream: stream}
	default:
		b, err := openaiwire.EncodeChat(g, openaiwire.EncodeOptions{Stream: stream, OmitUsage: a.opts.OmitStreamUsage, Dialect: "sagemaker messages"})
		if err != nil {
			return cloudreq.Payload{}, errcodes.Wrap(err, errcodes.InvalidParam, "sagemaker: "+err.Error())
		}
		accept := "application/json"
		if stream {
			accept = "text/event-stream"
		}
		return cloudreq.Payload{Body: b, ContentType: "application/json", Accept: accept}, nil
	}
	b, err := json.Marshal(v)
	if err == nil {
		b, err = tgiExtra(b, g.Extra)
	}
	if err != nil {
		return cloudreq.Payload{}, errcodes.Wrap(err, errcodes.InvalidParam, "sagemaker: encoding the generate request failed: "+err.Error())
	}
	return cloudreq.Payload{Body: b, ContentType: "application/json", Accept: "application/json"}, nil
}

// DefaultPrompt is the TGI prompt used when Options.Prompt is nil: a lone
// user message as it is; otherwise one "role: content" line per message and
// a final "assistant:" line. Endpoints whose model needs a chat template
// should set Options.Prompt, or use the messages dialect.
func DefaultPrompt(msgs []cloudreq.Message) string {
	if len(msgs) == 1 && (msgs[0].Role == "user" || msgs[0].Role == "") {
		return msgs[0].Text()
	}
	var b strings.Builder
	for _, m := range msgs {
		role := m.Role
		if role == "" {
			role = "user"
		}
		b.WriteString(role)
		b.WriteString(": ")
		b.WriteString(m.Text())
		b.WriteByte('\n')
	}
	b.WriteString("assistant:")
	return b.String()
}

// generation is a parsed non-streaming generate response.
type generation struct {
	Text   string
	Finish string
	Usage  cloudreq.Usage
}

type tgiDetails struct {
	FinishReason    string `json:"finish_reason"`
	GeneratedTokens int    `json:"generated_tokens"`
	InputLength     int    `json:"input_length"`
}

type tgiGenerated struct {
	GeneratedText *string     `json:"generated_text"`
	Details       *tgiDetails `json:"details"`
}

type openAIUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// generatedBody is the union of the response shapes parseGeneration accepts.
type generatedBody struct {
	tgiGenerated
	Choices []struct {
		Message *struct {
			Content *string `json:"content"`
		} `json:"message"`
		Text         *string `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *openAIUsage `json:"usage"`
}

var (
	errNotGeneration = errors.New("neither OpenAI choices nor TGI generated_text")
	errEmptyList     = errors.New("empty TGI response list")
)

// parseGeneration reads a non-streaming generate response, whatever the
// dialect asked: an OpenAI chat (or completions) response, a TGI list
// [{"generated_text":…,"details":…}] or a single TGI object. A body that
// is an error object yields an error carrying its message.
func parseGeneration(body []byte) (generation, error) {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var list []tgiGenerated
		if err := json.Unmarshal(body, &list); err != nil {
			return generation{}, err
		}
		if len(list) == 0 {
			return generation{}, errEmptyList
		}
		return tgiGeneration(list[0])
	}
	var g generatedBody
	if err := json.Unmarshal(body, &g); err != nil {
		return generation{}, err
	}
	switch {
	case len(g.Choices) > 0:
		c := g.Choices[0]
		var out generation
		if c.Message != nil && c.Message.Content != nil {
			out.Text = *c.Message.Content
		} else if c.Text != nil {
			out.Text = *c.Text
		}
		if c.FinishReason != nil {
			out.Finish = normalizeFinish(*c.FinishReason)
		}
		if u := g.Usage; u != nil {
			out.Usage = cloudreq.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, Source: "server"}
		}
		return out, nil
	case g.GeneratedText != nil:
		return tgiGeneration(g.tgiGenerated)
	}
	if ie, ok := parseInbandError(body); ok {
		return generation{}, ie
	}
	return generation{}, errNotGeneration
}

func tgiGeneration(t tgiGenerated) (generation, error) {
	if t.GeneratedText == nil {
		return generation{}, errNotGeneration
	}
	out := generation{Text: *t.GeneratedText}
	if d := t.Details; d != nil {
		out.Finish = normalizeFinish(d.FinishReason)
		if d.GeneratedTokens > 0 {
			out.Usage = cloudreq.Usage{InputTokens: d.InputLength, OutputTokens: d.GeneratedTokens, Source: "server"}
		}
	}
	return out, nil
}

// normalizeFinish maps TGI finish reasons to OpenAI's ("eos_token" and
// "stop_sequence" are "stop"); others pass through.
func normalizeFinish(s string) string {
	n, _ := knownFinish(s)
	return n
}

// knownFinish normalizes s and reports whether it is a known reason; known
// reasons come back as constants, so the stream parser need not copy them.
func knownFinish(s string) (string, bool) {
	switch s {
	case "stop", "eos_token", "stop_sequence":
		return "stop", true
	case "length":
		return "length", true
	case "tool_calls":
		return "tool_calls", true
	case "content_filter":
		return "content_filter", true
	}
	return s, false
}
