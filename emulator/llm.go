package emulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// dialect is the LLM payload form of a request.
type dialect int

const (
	dialectChat       dialect = iota + 1 // OpenAI chat completions (also LMI, EAS /v1, Azure serverless)
	dialectCompletion                    // OpenAI completions
	dialectTGI                           // {"inputs":…,"parameters":{"max_new_tokens":…},"stream":…}
	dialectInstances                     // Vertex Model Garden vLLM: {"instances":[{"prompt":…,"max_tokens":…}]}
	dialectContents                      // Vertex generateContent: {"contents":[{"parts":[{"text":…}]}]}
	dialectEASPrompt                     // PAI-EAS legacy: {"prompt":…,"use_stream_chat":"True"}
	dialectAMLInput                      // Azure ML model catalog: {"input_data":{"input_string":[…],"parameters":{…}}}
)

// genRequest is what the emulator needs from an LLM request body.
type genRequest struct {
	dialect      dialect
	model        string
	promptTokens int
	maxTokens    int // 0: no limit asked
	stream       bool
	includeUsage bool
	instances    int  // Vertex predict: number of instances
	details      bool // TGI: parameters.details asks for finish reason and token count
	choices      int  // OpenAI "n", Gemini candidateCount (0 or 1: one choice)
	logprobs     bool // logprobs asked for (chat: logprobs true; completions: logprobs k; Gemini responseLogprobs; TGI details or a stream)
	topLogprobs  int  // OpenAI top_logprobs (chat) or logprobs (completions) k, Gemini logprobs, TGI top_n_tokens
	ignoreEOS    bool // vLLM's ignore_eos: generate maxTokens tokens
	// includeThoughts is Gemini's thinkingConfig.includeThoughts: thought
	// parts are sent only when it is set.
	includeThoughts bool
	tgi             tgiOptions // TGI's details members
	plan            answerPlan // tools, tool choice, JSON output
	// prompt is the prompt's text (the messages' contents, in order), for
	// the prefix cache.
	prompt string
}

// promptTokens estimates tokens the way the profiles assume: one token per
// 4 bytes of UTF-8 text, rounded up. A 512-token reference prompt is 2,048
// bytes of text.
func countTokens(n int) int { return (n + 3) / 4 }

// maxBody is the largest request body read (bigger bodies get the
// provider's payload-too-large answer).
const maxBody = 8 << 20

// vertexMaxBody is the largest body Vertex AI's REST routes take.
const vertexMaxBody = 1572864

var errNotObject = errors.New("request body must be a JSON object")

// decodeObject decodes body into v, requiring one JSON object.
func decodeObject(body []byte, v any) error {
	b := bytes.TrimSpace(body)
	if len(b) == 0 || b[0] != '{' {
		return errNotObject
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid JSON: %s", jsonErrText(err))
	}
	if dec.More() {
		return errors.New("invalid JSON: trailing data after the object")
	}
	return nil
}

// jsonErrText shortens a decoding error to what a client can act on.
func jsonErrText(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Sprintf("field %q has the wrong type (%s)", te.Field, te.Value)
		}
		return fmt.Sprintf("wrong type (%s)", te.Value)
	}
	return err.Error()
}

// textContent is OpenAI message content: a string, null, or a list of parts.
type textContent struct {
	n    int
	text string
}

// UnmarshalJSON accepts a string, null, or [{"type":"text","text":…},…].
func (t *textContent) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		t.n, t.text = len(s), s
		return nil
	case len(b) > 0 && b[0] == '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		for _, p := range parts {
			t.n += len(p.Text)
			t.text += p.Text
		}
		return nil
	}
	return errors.New("content must be a string, null or a list of parts")
}

type chatMessage struct {
	Role    string      `json:"role"`
	Content textContent `json:"content"`
}

// maxTokensField is an optional positive integer.
type maxTokensField struct{ intField }

// UnmarshalJSON accepts null or an integer from 1 to 1<<20.
func (m *maxTokensField) UnmarshalJSON(b []byte) error {
	var f intField
	if err := f.UnmarshalJSON(b); err != nil || (f.set && (f.n < 1 || f.n > 1<<20)) {
		return fmt.Errorf("must be an integer between 1 and %d", 1<<20)
	}
	m.intField = f
	return nil
}

func (m maxTokensField) or(o maxTokensField) int {
	if m.set {
		return m.n
	}
	return o.n
}

// boolish accepts true/false and the strings "True"/"False" (PAI-EAS).
type boolish bool

// UnmarshalJSON accepts a JSON boolean, null or a string spelling one.
func (v *boolish) UnmarshalJSON(b []byte) error {
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	switch t := x.(type) {
	case nil:
		*v = false
	case bool:
		*v = boolish(t)
	case string:
		switch strings.ToLower(t) {
		case "true", "1", "yes":
			*v = true
		case "false", "0", "no", "":
			*v = false
		default:
			return fmt.Errorf("%q is not a boolean", t)
		}
	default:
		return errors.New("must be a boolean")
	}
	return nil
}

type chatBody struct {
	Model               *string        `json:"model"`
	Messages            []chatMessage  `json:"messages"`
	MaxTokens           maxTokensField `json:"max_tokens"`
	MaxCompletionTokens maxTokensField `json:"max_completion_tokens"`
	Stream              boolish        `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage boolish `json:"include_usage"`
	} `json:"stream_options"`
	N           intField `json:"n"`
	Logprobs    boolish  `json:"logprobs"`
	TopLogprobs intField `json:"top_logprobs"`
	IgnoreEOS   boolish  `json:"ignore_eos"`
}

// joinContents returns the messages' contents, in order.
func joinContents(msgs []chatMessage) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Content.text)
	}
	return b.String()
}

// parseChat parses an OpenAI chat completions body.
func parseChat(body []byte) (genRequest, error) {
	var c chatBody
	if err := decodeObject(body, &c); err != nil {
		return genRequest{}, err
	}
	if c.Messages == nil {
		return genRequest{}, errors.New("field \"messages\" is required")
	}
	if len(c.Messages) == 0 {
		return genRequest{}, errors.New("\"messages\" must not be empty")
	}
	n := 0
	for i, m := range c.Messages {
		switch m.Role {
		case "system", "user", "assistant", "tool", "developer", "function":
		default:
			return genRequest{}, fmt.Errorf("messages[%d]: invalid role %q", i, m.Role)
		}
		n += m.Content.n
	}
	g := genRequest{dialect: dialectChat, promptTokens: countTokens(n), maxTokens: c.MaxCompletionTokens.or(c.MaxTokens), stream: bool(c.Stream),
		ignoreEOS: bool(c.IgnoreEOS), prompt: joinContents(c.Messages)}
	if c.Model != nil {
		g.model = *c.Model
	}
	if c.StreamOptions != nil {
		g.includeUsage = bool(c.StreamOptions.IncludeUsage)
	}
	if err := g.setChoices(c.N, bool(c.Logprobs), c.TopLogprobs); err != nil {
		return genRequest{}, err
	}
	plan, err := parseChatPlan(body)
	if err != nil {
		return genRequest{}, err
	}
	g.plan = plan
	g.promptTokens += plan.images * imageTokens
	return g, nil
}

// promptField is a completions prompt: a string, a list of strings, or token ids.
type promptField struct {
	set  bool
	n    int // tokens
	text string
}

// UnmarshalJSON accepts a string, a list of strings, or a list of token ids.
func (p *promptField) UnmarshalJSON(b []byte) error {
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	switch t := x.(type) {
	case string:
		p.set, p.n, p.text = true, countTokens(len(t)), t
		return nil
	case []any:
		bytes, ids := 0, 0
		for _, e := range t {
			switch v := e.(type) {
			case string:
				bytes += len(v)
				p.text += v
			case float64:
				ids++
			default:
				return errors.New("prompt must be a string, a list of strings or a list of token ids")
			}
		}
		p.set, p.n = true, countTokens(bytes)+ids
		return nil
	}
	return errors.New("prompt must be a string, a list of strings or a list of token ids")
}

type completionBody struct {
	Model         *string        `json:"model"`
	Prompt        promptField    `json:"prompt"`
	MaxTokens     maxTokensField `json:"max_tokens"`
	Stream        boolish        `json:"stream"`
	StreamOptions *struct {
		IncludeUsage boolish `json:"include_usage"`
	} `json:"stream_options"`
	N         intField `json:"n"`
	Logprobs  intField `json:"logprobs"`
	IgnoreEOS boolish  `json:"ignore_eos"`
}

// parseCompletion parses an OpenAI completions body.
func parseCompletion(body []byte) (genRequest, error) {
	var c completionBody
	if err := decodeObject(body, &c); err != nil {
		return genRequest{}, err
	}
	if !c.Prompt.set {
		return genRequest{}, errors.New("field \"prompt\" is required")
	}
	g := genRequest{dialect: dialectCompletion, promptTokens: c.Prompt.n, maxTokens: c.MaxTokens.n, stream: bool(c.Stream),
		ignoreEOS: bool(c.IgnoreEOS), prompt: c.Prompt.text}
	if c.Model != nil {
		g.model = *c.Model
	}
	if c.StreamOptions != nil {
		g.includeUsage = bool(c.StreamOptions.IncludeUsage)
	}
	if err := g.setChoices(c.N, false, c.Logprobs); err != nil {
		return genRequest{}, err
	}
	return g, nil
}

type tgiBody struct {
	Inputs     *string `json:"inputs"`
	Parameters *struct {
		MaxNewTokens        maxTokensField `json:"max_new_tokens"`
		Details             boolish        `json:"details"`
		DecoderInputDetails boolish        `json:"decoder_input_details"`
		TopNTokens          intField       `json:"top_n_tokens"`
		Seed                intField       `json:"seed"`
		DoSample            boolish        `json:"do_sample"`
		// Grammar constrains the output: {"type":"json","value":schema}.
		Grammar *struct {
			Type  string          `json:"type"`
			Value json.RawMessage `json:"value"`
		} `json:"grammar"`
	} `json:"parameters"`
	Stream boolish `json:"stream"`
}

// parseSageMakerLLM parses what SageMaker LLM containers accept: TGI's
// {"inputs","parameters","stream"} or OpenAI chat messages (LMI).
func parseSageMakerLLM(body []byte) (genRequest, error) {
	var probe map[string]json.RawMessage
	if err := decodeObject(body, &probe); err != nil {
		return genRequest{}, err
	}
	if _, ok := probe["messages"]; ok {
		return parseChat(body)
	}
	if _, ok := probe["inputs"]; !ok {
		return genRequest{}, errors.New("expected a TGI body {\"inputs\":…,\"parameters\":{…}} or a chat body {\"messages\":[…]}")
	}
	var t tgiBody
	if err := decodeObject(body, &t); err != nil {
		return genRequest{}, err
	}
	if t.Inputs == nil {
		return genRequest{}, errors.New("field \"inputs\" must be a string")
	}
	g := genRequest{dialect: dialectTGI, promptTokens: countTokens(len(*t.Inputs)), stream: bool(t.Stream), prompt: *t.Inputs, logprobs: true}
	if t.Parameters != nil {
		p := t.Parameters
		g.maxTokens = p.MaxNewTokens.n
		g.details = bool(p.Details)
		if err := g.setTGI(p.TopNTokens, bool(p.DecoderInputDetails), bool(p.DoSample), p.Seed); err != nil {
			return genRequest{}, err
		}
		if gr := t.Parameters.Grammar; gr != nil {
			if gr.Type != "json" {
				return genRequest{}, fmt.Errorf("grammar type %q: the emulator serves \"json\"", gr.Type)
			}
			g.plan.schema = gr.Value
		}
	}
	return g, nil
}

type instance struct {
	Prompt    *string        `json:"prompt"`
	MaxTokens maxTokensField `json:"max_tokens"`
}

type instancesBody struct {
	Instances  []json.RawMessage `json:"instances"`
	Parameters *struct {
		MaxTokens       maxTokensField `json:"max_tokens"`
		MaxOutputTokens maxTokensField `json:"maxOutputTokens"`
	} `json:"parameters"`
}

// parseInstances parses a Vertex predict body in Model Garden's vLLM form.
func parseInstances(body []byte) (genRequest, error) {
	var b instancesBody
	if err := decodeObject(body, &b); err != nil {
		return genRequest{}, err
	}
	if len(b.Instances) == 0 {
		return genRequest{}, errors.New("\"instances\" must be a non-empty list")
	}
	g := genRequest{dialect: dialectInstances, instances: len(b.Instances)}
	for i, raw := range b.Instances {
		var in instance
		if err := decodeObject(raw, &in); err != nil {
			return genRequest{}, fmt.Errorf("instances[%d]: %w", i, err)
		}
		if in.Prompt == nil {
			return genRequest{}, fmt.Errorf("instances[%d]: field \"prompt\" is required", i)
		}
		g.promptTokens = max(g.promptTokens, countTokens(len(*in.Prompt)))
		if in.MaxTokens.set {
			g.maxTokens = in.MaxTokens.n
		}
	}
	if b.Parameters != nil && g.maxTokens == 0 {
		g.maxTokens = b.Parameters.MaxTokens.or(b.Parameters.MaxOutputTokens)
	}
	return g, nil
}

type contentsBody struct {
	Contents []struct {
		Role  string `json:"role"`
		Parts []struct {
			Text       *string         `json:"text"`
			InlineData json.RawMessage `json:"inlineData"`
			FileData   json.RawMessage `json:"fileData"`
		} `json:"parts"`
	} `json:"contents"`
	GenerationConfig *struct {
		MaxOutputTokens    maxTokensField  `json:"maxOutputTokens"`
		ResponseMimeType   string          `json:"responseMimeType"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
		ResponseSchema     json.RawMessage `json:"responseSchema"`
		CandidateCount     intField        `json:"candidateCount"`
		ResponseLogprobs   boolish         `json:"responseLogprobs"`
		Logprobs           intField        `json:"logprobs"`
		ThinkingConfig     *struct {
			IncludeThoughts boolish `json:"includeThoughts"`
		} `json:"thinkingConfig"`
	} `json:"generationConfig"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name                 string          `json:"name"`
			Parameters           json.RawMessage `json:"parameters"`
			ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	ToolConfig *struct {
		FunctionCallingConfig *struct {
			Mode                 string   `json:"mode"`
			AllowedFunctionNames []string `json:"allowedFunctionNames"`
		} `json:"functionCallingConfig"`
	} `json:"toolConfig"`
}

// contentsPlan reads the answer plan of a generateContent body: function
// declarations and the calling mode (AUTO, ANY, NONE), JSON output
// (responseMimeType application/json, with responseJsonSchema or
// responseSchema).
func contentsPlan(b *contentsBody) answerPlan {
	var p answerPlan
	for _, t := range b.Tools {
		for _, f := range t.FunctionDeclarations {
			params := f.ParametersJSONSchema
			if len(params) == 0 {
				params = lowerTypes(f.Parameters)
			}
			p.tools = append(p.tools, toolSpec{f.Name, params})
		}
	}
	if tc := b.ToolConfig; tc != nil && tc.FunctionCallingConfig != nil {
		switch fc := tc.FunctionCallingConfig; fc.Mode {
		case "NONE":
			p.toolChoice = "none"
		case "ANY":
			p.toolChoice = "required"
			if len(fc.AllowedFunctionNames) > 0 {
				p.toolChoice = "fn:" + fc.AllowedFunctionNames[0]
			}
		}
	}
	if gc := b.GenerationConfig; gc != nil && gc.ResponseMimeType == "application/json" {
		switch {
		case len(gc.ResponseJSONSchema) > 0:
			p.schema = gc.ResponseJSONSchema
		case len(gc.ResponseSchema) > 0:
			p.schema = lowerTypes(gc.ResponseSchema)
		default:
			p.jsonMode = true
		}
	}
	for _, c := range b.Contents {
		for _, pt := range c.Parts {
			if len(pt.InlineData) > 0 || len(pt.FileData) > 0 {
				p.images++
			}
		}
	}
	return p
}

// lowerTypes turns an OpenAPI Schema's upper-case types (protojson writes
// the enum's names: "OBJECT", "STRING") into JSON Schema's.
func lowerTypes(schema json.RawMessage) json.RawMessage {
	if len(schema) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(schema, &v) != nil {
		return schema
	}
	var walk func(any) any
	walk = func(x any) any {
		switch t := x.(type) {
		case map[string]any:
			for k, e := range t {
				if s, ok := e.(string); ok && k == "type" {
					t[k] = strings.ToLower(s)
				} else {
					t[k] = walk(e)
				}
			}
		case []any:
			for i := range t {
				t[i] = walk(t[i])
			}
		}
		return x
	}
	b, _ := json.Marshal(walk(v))
	return b
}

// parseContents parses a Vertex generateContent body.
func parseContents(body []byte) (genRequest, error) {
	var b contentsBody
	if err := decodeObject(body, &b); err != nil {
		return genRequest{}, err
	}
	if len(b.Contents) == 0 {
		return genRequest{}, errors.New("contents is not specified")
	}
	n := 0
	for i, c := range b.Contents {
		if len(c.Parts) == 0 {
			return genRequest{}, fmt.Errorf("contents[%d].parts must not be empty", i)
		}
		for _, p := range c.Parts {
			if p.Text != nil {
				n += len(*p.Text)
			}
		}
	}
	g := genRequest{dialect: dialectContents, promptTokens: countTokens(n), plan: contentsPlan(&b)}
	g.promptTokens += g.plan.images * imageTokens
	if gc := b.GenerationConfig; gc != nil {
		g.maxTokens = gc.MaxOutputTokens.n
		if err := g.setCandidates(gc.CandidateCount, bool(gc.ResponseLogprobs), gc.Logprobs); err != nil {
			return genRequest{}, err
		}
		if gc.ThinkingConfig != nil {
			g.includeThoughts = bool(gc.ThinkingConfig.IncludeThoughts)
		}
	}
	return g, nil
}

// setCandidates sets Gemini's candidate count (1 to maxCandidates) and
// logprobs: responseLogprobs, with logprobs k top candidates (0 to
// maxLogprobs, and only with responseLogprobs), as Vertex AI checks them.
func (g *genRequest) setCandidates(n intField, logprobs bool, k intField) error {
	if n.set {
		if n.n < 1 || n.n > maxCandidates {
			return fmt.Errorf("generation_config.candidate_count must be between 1 and %d (got %d)", maxCandidates, n.n)
		}
		g.choices = n.n
	}
	if k.set {
		if !logprobs {
			return errors.New("generation_config.logprobs needs generation_config.response_logprobs set to true")
		}
		if k.n < 0 || k.n > maxLogprobs {
			return fmt.Errorf("generation_config.logprobs must be between 0 and %d (got %d)", maxLogprobs, k.n)
		}
		g.topLogprobs = k.n
	}
	g.logprobs = logprobs
	return nil
}

type easBody struct {
	Prompt        *string        `json:"prompt"`
	UseStreamChat boolish        `json:"use_stream_chat"`
	MaxNewTokens  maxTokensField `json:"max_new_tokens"`
	MaxTokens     maxTokensField `json:"max_tokens"`
	History       []any          `json:"history"`
}

// parseEASPrompt parses the legacy PAI-EAS LLM body.
func parseEASPrompt(body []byte) (genRequest, error) {
	var b easBody
	if err := decodeObject(body, &b); err != nil {
		return genRequest{}, err
	}
	if b.Prompt == nil {
		return genRequest{}, errors.New("field \"prompt\" is required")
	}
	return genRequest{dialect: dialectEASPrompt, promptTokens: countTokens(len(*b.Prompt)), maxTokens: b.MaxNewTokens.or(b.MaxTokens), stream: bool(b.UseStreamChat), prompt: *b.Prompt}, nil
}

type amlBody struct {
	InputData *struct {
		InputString []chatMessage `json:"input_string"`
		Parameters  *struct {
			MaxNewTokens maxTokensField `json:"max_new_tokens"`
			MaxTokens    maxTokensField `json:"max_tokens"`
		} `json:"parameters"`
	} `json:"input_data"`
}

// parseAMLScore parses what an Azure ML LLM /score accepts: the model
// catalog's {"input_data":{"input_string":[messages],"parameters":{…}}} or
// an OpenAI chat body.
func parseAMLScore(body []byte) (genRequest, error) {
	var probe map[string]json.RawMessage
	if err := decodeObject(body, &probe); err != nil {
		return genRequest{}, err
	}
	if _, ok := probe["messages"]; ok {
		return parseChat(body)
	}
	var b amlBody
	if err := decodeObject(body, &b); err != nil {
		return genRequest{}, err
	}
	if b.InputData == nil || len(b.InputData.InputString) == 0 {
		return genRequest{}, errors.New("expected {\"input_data\":{\"input_string\":[{\"role\":…,\"content\":…}],\"parameters\":{…}}} or {\"messages\":[…]}")
	}
	n := 0
	for _, m := range b.InputData.InputString {
		n += m.Content.n
	}
	g := genRequest{dialect: dialectAMLInput, promptTokens: countTokens(n), prompt: joinContents(b.InputData.InputString)}
	if p := b.InputData.Parameters; p != nil {
		g.maxTokens = p.MaxNewTokens.or(p.MaxTokens)
	}
	return g, nil
}
