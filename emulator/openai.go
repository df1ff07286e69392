package emulator

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// openAIError is the vLLM error envelope.
type openAIError struct {
	Error openAIErrorBody `json:"error"`
}

type openAIErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    any     `json:"code"`
}

// gatewayOverflowText is the plain-text 503 of an Envoy proxy in front of
// the server when its upstream connection pool overflows.
const gatewayOverflowText = "upstream connect error or disconnect/reset before headers. reset reason: overflow"

// openAIErrorFor maps a fault to its OpenAI-compatible answer: vLLM's
// envelope {"error":{"message","type","param","code":<status>}}, except
// quota, which only OpenAI itself has ("insufficient_quota"), and
// gateway-overflow, whose 503 is a fronting proxy's plain text
// (writeOpenAIError writes it; the body returned is not used).
func openAIErrorFor(f Fault, model string) (int, openAIError) {
	mk := func(status int, typ, msg string) (int, openAIError) {
		return status, openAIError{openAIErrorBody{Message: msg, Type: typ, Code: status}}
	}
	switch f {
	case FaultThrottle:
		return mk(429, "RateLimitError", "Too many requests: rate limit exceeded, retry later")
	case FaultQuota:
		return 429, openAIError{openAIErrorBody{Message: "You exceeded your current quota, please check your plan and billing details.", Type: "insufficient_quota", Code: "insufficient_quota"}}
	case FaultModelNotReady:
		return mk(503, "ServiceUnavailableError", fmt.Sprintf("The model `%s` is loading, retry later", model))
	case FaultModelError:
		return mk(500, "InternalServerError", "The model raised an exception while generating")
	case FaultInvalid:
		return mk(400, "BadRequestError", "Invalid request body")
	case FaultNotFound:
		return mk(404, "NotFoundError", fmt.Sprintf("The model `%s` does not exist.", model))
	case FaultUnauthenticated:
		return mk(401, "AuthenticationError", "Unauthorized: invalid or missing API key")
	case FaultForbidden:
		return mk(403, "PermissionDeniedError", "The API key is not allowed to use this model")
	case FaultUnavailable:
		return mk(503, "ServiceUnavailableError", "The server is temporarily unavailable")
	case FaultTimeout:
		return mk(504, "TimeoutError", "The request timed out")
	case FaultPayloadTooLarge:
		return mk(413, "BadRequestError", "Request body too large")
	case FaultQueueFull:
		return mk(429, "RateLimitError", "Too many pending requests: the server queue is full")
	case FaultModelOverloaded:
		return mk(429, "RateLimitError", "Model is overloaded, retry later")
	case FaultModelUnavailable:
		return mk(503, "ServiceUnavailableError", "The engine is temporarily unable to take requests")
	case FaultGatewayOverflow:
		return mk(503, "ServiceUnavailableError", gatewayOverflowText)
	}
	return mk(500, "InternalServerError", "Internal server error")
}

func writeOpenAIError(w http.ResponseWriter, f Fault, model, msg string) {
	if f == FaultGatewayOverflow {
		writeGatewayOverflow(w)
		return
	}
	status, body := openAIErrorFor(f, model)
	if msg != "" {
		body.Error.Message = msg
	}
	writeJSON(w, status, body)
}

// writeGatewayOverflow answers as an Envoy proxy whose upstream pool
// overflowed: 503 with a plain-text body.
func writeGatewayOverflow(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/plain")
	h.Set(headerContentLength, itoa(int64(len(gatewayOverflowText))))
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, gatewayOverflowText)
}

// serveOpenAI serves the OpenAI-compatible routes at /v1/… (epName "":
// the endpoint is the body's model).
func (s *Server) serveOpenAI(w http.ResponseWriter, r *http.Request, _ string, path string) {
	if path == "/v1/models" || strings.HasPrefix(path, "/v1/models/") {
		if r.Method != http.MethodGet {
			methodNotAllowed(w, OpenAI, http.MethodGet)
			return
		}
		s.serveModels(w, r, strings.TrimPrefix(strings.TrimPrefix(path, "/v1/models"), "/"))
		return
	}
	chat := path == "/v1/chat/completions"
	s.serveOpenAIGen(w, r, nil, OpenAI, chat, writeOpenAIError)
}

// methodNotAllowed answers 405 with the Allow header, in the form of
// prov's server: FastAPI's {"detail":…} for the OpenAI-compatible servers
// (vLLM, SGLang), the gateway's plain text for PAI-EAS, an Azure error
// body for Azure ML.
func methodNotAllowed(w http.ResponseWriter, prov Provider, allow string) {
	w.Header().Set("Allow", allow)
	switch prov {
	case PAIEAS:
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	case AzureML:
		writeAzureError(w, azureErr{status: http.StatusMethodNotAllowed, code: "MethodNotAllowed", msg: "use " + allow})
	default:
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"detail": "Method Not Allowed"})
	}
}

// errorWriter answers fault f for the endpoint named name, with msg (if
// not empty) as the message, in one provider's form.
type errorWriter func(w http.ResponseWriter, f Fault, name, msg string)

// serveOpenAIGen serves an OpenAI-style generation. With ep nil the body's
// model picks the endpoint (OpenAI-compatible servers); else ep is the one
// the path named (PAI-EAS /v1/…, Azure serverless). errw writes errors in
// the provider's form.
func (s *Server) serveOpenAIGen(w http.ResponseWriter, r *http.Request, ep *endpoint, prov Provider, chat bool, errw errorWriter) {
	fail := func(f Fault, model, msg string) { errw(w, f, model, msg) }
	if r.Method != http.MethodPost {
		methodNotAllowed(w, prov, http.MethodPost)
		return
	}
	body, tooLarge, err := s.readBody(w, r, maxBody)
	if err != nil {
		return
	}
	if tooLarge {
		fail(FaultPayloadTooLarge, "", "")
		return
	}
	// An endpoint named by the path has its credentials checked before
	// the body, as the provider's gateway does; one named by the body's
	// model, once the body names it.
	if ep != nil && !s.authorized(ep, prov, r, body) {
		fail(FaultUnauthenticated, ep.Name, "")
		return
	}
	parse := parseCompletion
	route := "completions"
	if chat {
		parse, route = parseChat, "chat/completions"
	}
	gen, perr := parse(body)
	if perr != nil {
		fail(FaultInvalid, "", perr.Error())
		return
	}
	if prov == AzureML {
		// The model inference API refuses members it does not define,
		// unless told to drop or pass them.
		if extra := azureExtraParams(body, r.Header.Get("extra-parameters")); len(extra) > 0 {
			writeAzureExtraParams(w, extra)
			return
		}
	}
	if ep == nil {
		if gen.model == "" {
			fail(FaultInvalid, "", "field \"model\" is required")
			return
		}
		ep = s.lookup(gen.model, prov)
		if ep == nil {
			fail(FaultNotFound, gen.model, "")
			return
		}
		if !s.authorized(ep, prov, r, body) {
			fail(FaultUnauthenticated, ep.Name, "")
			return
		}
	}
	c, err := s.newCall(ep, prov, route, gen, r.Header.Get, arrivalOf(r))
	if err != nil {
		c.end(http.StatusBadRequest, "error")
		fail(FaultInvalid, ep.Name, err.Error())
		return
	}
	model := gen.model
	if model == "" {
		model = ep.Name
	}
	wr := &openAIWire{chat: chat, model: model, created: time.Now().Unix(), errw: errw}
	if prov == AzureML {
		// Azure serverless streams carry the model inference API's own in-band errors.
		s.serveGen(w, r, c, azureChatWire{wr})
		return
	}
	s.serveGen(w, r, c, wr)
}

// serveModels answers GET /v1/models[/{id}]. The list holds the models
// the request's credentials may use; when they may use none of those
// served, or not the one asked for, the answer is 401.
func (s *Server) serveModels(w http.ResponseWriter, r *http.Request, id string) {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
		Root    string `json:"root"`
	}
	var data []model
	refused := false
	for _, n := range s.order {
		ep := s.endpoints[n]
		if !ep.serves(OpenAI) || (id != "" && id != n) {
			continue
		}
		if !s.authorized(ep, OpenAI, r, nil) {
			refused = true
			continue
		}
		data = append(data, model{ID: n, Object: "model", Created: 1700000000, OwnedBy: "vllm", Root: n})
	}
	if len(data) == 0 && refused {
		writeOpenAIError(w, FaultUnauthenticated, id, "")
		return
	}
	if id != "" {
		if len(data) == 0 {
			writeOpenAIError(w, FaultNotFound, id, "")
			return
		}
		writeJSON(w, http.StatusOK, data[0])
		return
	}
	if data == nil {
		data = []model{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// openAIWire writes chat completions or completions, streamed as SSE
// (data: {chunk}\n\n … data: [DONE]\n\n) or whole.
type openAIWire struct {
	chat    bool
	model   string
	created int64
	errw    errorWriter
	draws   *choiceDraws // drawn at first use
}

// choices returns the call's choices, drawn once.
func (o *openAIWire) choices(c *call) *choiceDraws {
	if o.draws == nil {
		o.draws = drawChoices(c)
	}
	return o.draws
}

// usage is the call's usage: the tokens of every choice.
func (o *openAIWire) usage(c *call) *usage {
	u := callUsage(c)
	if n := len(o.choices(c).words); n > 1 {
		u.CompletionTokens *= n
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	return u
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// CompletionTokensDetails says how many output tokens were reasoning
	// (a reasoning profile's answers).
	CompletionTokensDetails *completionDetails `json:"completion_tokens_details,omitempty"`
}

type completionDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

func callUsage(c *call) *usage {
	u := &usage{PromptTokens: c.gen.promptTokens, CompletionTokens: c.n, TotalTokens: c.gen.promptTokens + c.n}
	if c.reasoningN > 0 {
		u.CompletionTokensDetails = &completionDetails{ReasoningTokens: c.reasoningN}
	}
	return u
}

type delta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content,omitempty"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCallDelta `json:"tool_calls,omitempty"`
}

// toolCallDelta is a streamed tool call's fragment: the first has the
// id, type and name, the others more arguments.
type toolCallDelta struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function functionDelta `json:"function"`
}

type functionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// chatDelta is token i's delta: reasoning, a tool-call fragment or text.
func chatDelta(c *call, words []string, i int) *delta {
	text := words[i]
	switch {
	case c.isReasoning(i):
		return &delta{ReasoningContent: &text}
	case c.tool != nil:
		tc := toolCallDelta{Function: functionDelta{Arguments: text}}
		if i == c.reasoningN {
			tc.ID, tc.Type, tc.Function.Name = c.tool.id, "function", c.tool.name
		}
		return &delta{ToolCalls: []toolCallDelta{tc}}
	}
	return &delta{Content: &text}
}

type chunkChoice struct {
	Index        int     `json:"index"`
	Delta        *delta  `json:"delta,omitempty"`
	Text         *string `json:"text,omitempty"`
	Logprobs     any     `json:"logprobs"`
	FinishReason *string `json:"finish_reason"`
}

type chunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *usage        `json:"usage,omitempty"`
}

func (o *openAIWire) id(c *call) string {
	if o.chat {
		return "chatcmpl-" + c.rec.ID
	}
	return "cmpl-" + c.rec.ID
}

func (o *openAIWire) chunk(c *call, ch chunkChoice) chunk {
	obj := "text_completion"
	if o.chat {
		obj = "chat.completion.chunk"
	}
	return chunk{ID: o.id(c), Object: obj, Created: o.created, Model: o.model, Choices: []chunkChoice{ch}}
}

func writeSSE(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	buf := make([]byte, 0, len(b)+8)
	buf = append(buf, "data: "...)
	buf = append(buf, b...)
	buf = append(buf, "\n\n"...)
	_, err = w.Write(buf)
	return err
}

func (o *openAIWire) writeError(w http.ResponseWriter, c *call, f Fault) { o.errw(w, f, c.ep.Name, "") }

func (o *openAIWire) streamContentType() string { return "text/event-stream; charset=utf-8" }

// begin writes, on chat, each choice's role-only first chunk.
func (o *openAIWire) begin(w io.Writer, c *call) error {
	if !o.chat {
		return nil
	}
	empty := ""
	for j := range o.choices(c).words {
		if err := writeSSE(w, o.chunk(c, chunkChoice{Index: j, Delta: &delta{Role: "assistant", Content: &empty}})); err != nil {
			return err
		}
	}
	return nil
}

// token writes token i of each choice, one chunk per choice, with its
// logprobs when asked.
func (o *openAIWire) token(w io.Writer, c *call, i int) error {
	d := o.choices(c)
	for j, words := range d.words {
		text := words[i]
		ch := chunkChoice{Index: j}
		if o.chat {
			ch.Delta = chatDelta(c, words, i)
		} else {
			ch.Text = &text
		}
		if d.logprobs != nil {
			if o.chat {
				ch.Logprobs = chatLogprobsOf(words, d.logprobs[j], i, i+1)
			} else {
				off := 0
				for _, w := range words[:i] {
					off += len(w)
				}
				ch.Logprobs = completionLogprobsOf(words, d.logprobs[j], i, i+1, off)
			}
		}
		if i == c.n-1 {
			ch.FinishReason = &c.finish
		}
		if err := writeSSE(w, o.chunk(c, ch)); err != nil {
			return err
		}
	}
	return nil
}

func (o *openAIWire) end(w io.Writer, c *call) error {
	if c.gen.includeUsage {
		ch := o.chunk(c, chunkChoice{})
		ch.Choices = []chunkChoice{}
		ch.Usage = o.usage(c)
		if err := writeSSE(w, ch); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, "data: [DONE]\n\n")
	return err
}

func (o *openAIWire) streamError(w io.Writer, c *call) error {
	_, body := openAIErrorFor(FaultInternal, c.ep.Name)
	body.Error.Message = "The model stream failed: engine error during generation"
	if err := writeSSE(w, body); err != nil {
		return err
	}
	_, err := io.WriteString(w, "data: [DONE]\n\n")
	return err
}

// streamErrorFirst opens the stream with a rate-limit error event, then
// [DONE], as vLLM ends a stream after an error.
func (o *openAIWire) streamErrorFirst(w io.Writer, c *call) error {
	_, body := openAIErrorFor(FaultThrottle, c.ep.Name)
	if err := writeSSE(w, body); err != nil {
		return err
	}
	_, err := io.WriteString(w, "data: [DONE]\n\n")
	return err
}

func (o *openAIWire) malformed(w io.Writer, _ *call) error {
	_, err := io.WriteString(w, "data: {\"id\":\"chatcmpl-broken\",\"choices\":[{\"delta\":{\"content\n\n")
	return err
}

func (o *openAIWire) whole(c *call) (string, []byte) {
	type toolCall struct {
		ID       string        `json:"id"`
		Type     string        `json:"type"`
		Function functionDelta `json:"function"`
	}
	type message struct {
		Role             string     `json:"role"`
		Content          *string    `json:"content"`
		ReasoningContent *string    `json:"reasoning_content,omitempty"`
		ToolCalls        []toolCall `json:"tool_calls,omitempty"`
	}
	type choice struct {
		Index        int      `json:"index"`
		Message      *message `json:"message,omitempty"`
		Text         *string  `json:"text,omitempty"`
		Logprobs     any      `json:"logprobs"`
		FinishReason string   `json:"finish_reason"`
	}
	d := o.choices(c)
	obj := "text_completion"
	if o.chat {
		obj = "chat.completion"
	}
	choices := make([]choice, len(d.words))
	for j, words := range d.words {
		text := strings.Join(words[c.reasoningN:], "")
		ch := choice{Index: j, FinishReason: c.finish}
		if o.chat {
			m := &message{Role: "assistant", Content: &text}
			if c.reasoningN > 0 {
				r := strings.Join(words[:c.reasoningN], "")
				m.ReasoningContent = &r
			}
			if c.tool != nil {
				m.Content = nil
				m.ToolCalls = []toolCall{{ID: c.tool.id, Type: "function", Function: functionDelta{Name: c.tool.name, Arguments: text}}}
			}
			ch.Message = m
		} else {
			ch.Text = &text
		}
		if d.logprobs != nil {
			if o.chat {
				ch.Logprobs = chatLogprobsOf(words, d.logprobs[j], 0, len(words))
			} else {
				ch.Logprobs = completionLogprobsOf(words, d.logprobs[j], 0, len(words), 0)
			}
		}
		choices[j] = ch
	}
	b, _ := json.Marshal(map[string]any{
		"id": o.id(c), "object": obj, "created": o.created, "model": o.model,
		"choices": choices, "usage": o.usage(c),
	})
	return "application/json", b
}
