package cloudreq

import (
	"io"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
)

// Providers, services and actions of a CloudRequest, in the vocabulary of the
// product (see the table in the package doc).
const (
	ProviderAWS     = "aws"
	ProviderAzure   = "azure"
	ProviderGCP     = "gcp"
	ProviderAlibaba = "alibaba"
	ProviderOpenAI  = "openai"

	ServiceSageMaker        = "sagemaker"
	ServiceAzureML          = "azureml"
	ServiceVertex           = "vertex"
	ServicePAIEAS           = "pai-eas"
	ServiceOpenAICompatible = "openai-compatible"

	// ActionInvoke sends the caller's Payload bytes as they are.
	ActionInvoke = "invoke"
	// ActionGenerate is portable text generation from Generate; the adapter
	// writes its provider's LLM dialect.
	ActionGenerate = "generate"
)

// CloudRequest is one inference call, in portable terms. The client never
// modifies the caller's CloudRequest: hooks work on a copy, which shares
// Payload.Body's bytes (hooks replace the body, never write into it).
type CloudRequest struct {
	// Provider and Service select the adapter, Action what it does.
	Provider string
	// Service may be left empty: the client then routes the request to the
	// adapter registered for Provider when exactly one is (always the case
	// with the built-in providers, each of which has one service), and
	// fills Service on its working copy, so that hooks, observers, errors
	// and endpoint keys see it. When two adapters of the Provider are
	// registered, a request without Service fails with ERR_INVALID_PARAM
	// naming their services.
	Service string
	Action  string
	// Target says where the request goes.
	Target Target
	// Payload is the request body for ActionInvoke.
	Payload Payload
	// Generate is the portable generation input for ActionGenerate.
	Generate *GenerateInput
	// Attributes are provider-specific request attributes.
	Attributes Attributes
	// Header holds extra HTTP headers (or gRPC metadata) to send.
	Header http.Header
	// RequestID is a client request id sent to the provider where it takes
	// one (x-ms-client-request-id, X-Amzn-SageMaker-Inference-Id, …). The
	// hooks.RequestID built-in fills it when empty.
	RequestID string
	// Class names the request's class (for weighted mixes and per-class SLAs).
	Class string
	// Tags are free-form dimensions (region, device, …) carried to reports.
	Tags map[string]string
	// IntendedSend is when a load schedule wanted this request sent; zero
	// means the first attempt's send time (no schedule: a closed loop, or a
	// plain call). Measurements corrected for coordinated omission start here.
	IntendedSend time.Time
}

// Target says where a request goes.
type Target struct {
	// Endpoint is the endpoint's name (SageMaker endpoint, Azure ML endpoint,
	// Vertex endpoint id or resource name, EAS service) or its full URL.
	Endpoint string
	// Variant is the SageMaker production variant or Azure ML deployment.
	Variant string
	// Model is the model name (OpenAI-compatible "model", SageMaker target
	// model, Vertex publisher model).
	Model string
	// Path is an optional sub-path under the endpoint (PAI-EAS
	// "/v1/chat/completions", for instance).
	Path string
}

// Payload is a request body.
type Payload struct {
	// Body is the bytes to send. It is replayed byte-identical on each attempt.
	Body []byte
	// Reader is a one-shot body, used when Body is nil (a large upload that
	// should not be held in memory). It cannot be replayed, so a call whose
	// body is a Reader makes exactly one attempt.
	Reader io.Reader
	// ContentType is the body's media type (default application/json).
	ContentType string
	// Accept is the media type asked for in the response, if any.
	Accept string
}

// GenerateInput is portable text-generation input.
type GenerateInput struct {
	// Messages is the conversation, in order; at least one is required.
	Messages []Message
	// MaxTokens caps the output tokens (0: the provider's default).
	MaxTokens int
	// Temperature and TopP are sampling parameters (nil: provider default).
	Temperature *float64
	TopP        *float64
	// Stop holds stop sequences.
	Stop []string
	// IgnoreEOS asks the server to go on past the end-of-sequence token
	// until MaxTokens, so that the output has exactly MaxTokens tokens
	// (benchmarks that replay output lengths). It is vLLM's ignore_eos
	// request field, written by the OpenAI-compatible encoders (openai,
	// PAI-EAS's OpenAI dialect); a server that does not know it may
	// refuse the request (Azure's serverless API without
	// extra-parameters), and the other dialects leave it out.
	IgnoreEOS bool

	// Tools are the functions the model may call; ToolChoice says whether
	// and which it must (nil: the dialect's default, auto when tools are
	// offered); ParallelToolCalls allows several calls in one answer (nil:
	// the dialect's default).
	Tools             []Tool
	ToolChoice        *ToolChoice
	ParallelToolCalls *bool
	// ResponseFormat constrains the answer to JSON, or to JSON of a schema.
	ResponseFormat *ResponseFormat
	// Seed asks for reproducible sampling (nil: none).
	Seed *int64
	// N is the number of choices (0 or 1: one). Dialects that generate one
	// refuse more.
	N int
	// PresencePenalty and FrequencyPenalty penalise repeated tokens (nil:
	// the provider's default).
	PresencePenalty  *float64
	FrequencyPenalty *float64
	// TopK samples among the K most likely tokens (0: the default).
	TopK int
	// Logprobs asks for each output token's log probability, TopLogprobs
	// (0 to 20) for the most likely tokens at each place too.
	Logprobs    bool
	TopLogprobs int
	// TokenLimit is the member MaxTokens is sent as on OpenAI-style
	// dialects: TokenLimitMaxTokens or TokenLimitMaxCompletionTokens
	// (which OpenAI's reasoning models require). Empty: the dialect's
	// default (max_completion_tokens for providers/openai when
	// Options.MaxCompletionTokens is set, else max_tokens).
	TokenLimit string
	// Reasoning sets a reasoning model's effort or thinking budget.
	Reasoning *Reasoning
	// Extra holds provider-specific members merged into the top level of
	// the generated JSON body (like LiteLLM's extra_body): safetySettings
	// or cachedContent for Gemini, guided_json or chat_template_kwargs for
	// vLLM, … A key the body already sets is refused with
	// ERR_INVALID_PARAM, never overridden.
	Extra map[string]any
}

// Message is one chat message.
type Message struct {
	// Role is RoleSystem, RoleUser, RoleAssistant or RoleTool.
	Role string
	// Content is the message's text. A message has Content or Parts.
	Content string
	// Parts is the message's content in parts: text and images.
	Parts []Part
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall
	// ToolCallID is the id of the call a RoleTool message answers, and
	// Name that call's function (Gemini's functionResponse needs it; the
	// encoder finds it from the earlier call when empty).
	ToolCallID string
	Name       string
}

// Attributes are provider request attributes. Each adapter documents which
// it honours; others are ignored.
type Attributes struct {
	// CustomAttributes is SageMaker's X-Amzn-SageMaker-Custom-Attributes.
	CustomAttributes string
	// InferenceComponent is the SageMaker inference component name.
	InferenceComponent string
	// SessionID is a SageMaker stateful session id.
	SessionID string
	// InferenceID is a SageMaker inference id.
	InferenceID string
	// TargetContainerHostname is SageMaker's multi-container target.
	TargetContainerHostname string
	// EnableExplanations is SageMaker's JMESPath override of an endpoint's
	// Clarify EnableExplanations (InvokeEndpoint only; a stream refuses
	// it).
	EnableExplanations string
	// PrefixAwareID is SageMaker's routing hint for endpoints with the
	// PREFIX_AWARE routing strategy: requests with the same prompt prefix
	// and id go to the same instance.
	PrefixAwareID string
	// Dialect is the request format of an ActionGenerate call, for the
	// providers that speak more than one: SageMaker (sagemaker.DialectMessages,
	// sagemaker.DialectTGI) and PAI-EAS (paieas.DialectOpenAI,
	// paieas.DialectLegacy). Empty: the adapter's configured dialect. An
	// adapter refuses a value it does not know with ERR_INVALID_PARAM.
	Dialect string
	// Method is the RPC of a Vertex AI ActionInvoke call
	// (vertex.MethodPredict, vertex.MethodRawPredict,
	// vertex.MethodGenerateContent, vertex.MethodStreamGenerateContent or
	// vertex.MethodServerStreamingPredict). Empty: the adapter
	// chooses from the body. An unknown value is refused with
	// ERR_INVALID_PARAM.
	Method string
	// Extra holds any other attribute by name, for adapters outside this
	// module; the built-in adapters read none.
	Extra map[string]string
}

// cloneInto writes into dst a copy of r that shares no maps or slices
// with it. The copy of r.Generate goes to gen, its messages into msgs's
// array while they fit: storage the caller lends (a call's own), so that
// a call with one message allocates neither.
func (r *CloudRequest) cloneInto(dst *CloudRequest, gen *GenerateInput, msgs []Message) {
	c := dst
	*c = *r
	c.Header = r.Header.Clone()
	c.Tags = maps.Clone(r.Tags)
	c.Attributes.Extra = maps.Clone(r.Attributes.Extra)
	// The body is shared, not copied (hooks replace it, never write into
	// it); clipped, so that appending to it cannot reach the caller's array.
	c.Payload.Body = slices.Clip(r.Payload.Body)
	if r.Generate != nil {
		g := gen
		*g = *r.Generate
		if g.Messages != nil {
			g.Messages = append(msgs[:0], g.Messages...)
		}
		g.Stop = slices.Clone(g.Stop)
		g.Tools = slices.Clone(g.Tools)
		g.Extra = maps.Clone(g.Extra)
		c.Generate = g
	}
}

// EndpointKey identifies the request's endpoint for per-endpoint state
// (cold-start classification, reports).
func (r *CloudRequest) EndpointKey() string {
	// One concatenation, so one allocation: this runs on every call.
	var slash, hash string
	if r.Target.Variant != "" {
		slash = "/"
	}
	if r.Target.Model != "" {
		hash = "#"
	}
	return r.Provider + "/" + r.Service + "/" + r.Target.Endpoint + slash + r.Target.Variant + hash + r.Target.Model
}

// CloudResponse is the outcome of a successful call.
type CloudResponse struct {
	// StatusCode is the HTTP status (or the HTTP equivalent of a gRPC code).
	StatusCode int
	// Data is the response body (nil for streams: read the chunks).
	Data []byte
	// ContentType is the body's media type, if known.
	ContentType string
	// Text is the generated text of a non-streaming call: always for
	// ActionGenerate; for ActionInvoke, on every provider, when the body is
	// recognisably a generation in a dialect the adapter knows (OpenAI chat
	// or completions, TGI generated_text, Vertex predictions or
	// GenerateContentResponse, EAS's response) and holds text, else empty
	// (the bytes are in Data either way).
	Text string
	// FinishReason is why generation stopped ("stop", "length",
	// "tool_calls", …), if known.
	FinishReason string
	// ToolCalls are the function calls of the answer (generate), whole: for
	// a stream, assembled from its chunks once it ended.
	ToolCalls []ToolCall
	// Reasoning is the reasoning text the model returned, kept apart from
	// Text (non-streaming calls; a stream's is in its chunks).
	Reasoning string
	// Logprobs holds each output token's log probability, when asked for
	// and returned (non-streaming calls; a stream's is in its chunks).
	Logprobs []TokenLogprob
	// Choices holds every choice when the answer has more than one
	// (Generate.N > 1); Text then joins their texts, in order.
	Choices []Choice
	// Errors holds the errors of the attempts that failed before the one
	// that succeeded, and any in-band errors the provider reported.
	Errors []*errcodes.Error
	// Metadata holds provider response metadata worth keeping (invoked
	// variant, deployed model id, …), keyed by the provider's header name.
	Metadata map[string]string
	// RequestID is the provider's request id.
	RequestID string
	// Header holds the response's headers as received: the HTTP response
	// headers, or for a gRPC call its header metadata (keys canonicalised
	// as HTTP header names) followed by a unary call's trailer metadata, so
	// that Get finds a header's value before a trailer's. Adapters fill it
	// for every response, a stream's when it opens; PostDeserialize hooks
	// read it to extract what a server reports beyond the provider's
	// contract (see ServerStart). It may hold anything the server sent:
	// cloudinfer never logs it (telemetry logs allow-listed headers only).
	// It may be shared with the transport's response: treat it as
	// read-only.
	Header http.Header
	// Usage is the token usage, when known.
	Usage Usage
	// Timing is the call's latency timeline.
	Timing *latency.Timeline
	// Start is the cold/warm verdict.
	Start latency.Start
	// ServerStart is the server's own report of whether it cold-started
	// (the strongest evidence of the start verdict); nil when it said
	// nothing. No provider's contract carries such a report, so adapters
	// leave it nil: a PostDeserialize hook that knows a server's report
	// sets it from Header, before the client classifies the start.
	ServerStart *ServerStart
}

// ServerStart is a server's own report of a cold start.
type ServerStart struct {
	// Cold is true when the server had to bring the model up for this
	// request, false when it reported a warm start.
	Cold bool
	// Setup is the model setup time the server reported, if any.
	Setup time.Duration
}

// Usage is token usage.
type Usage struct {
	// InputTokens and OutputTokens count the prompt's and the generated
	// tokens (0: unknown).
	InputTokens  int
	OutputTokens int
	// ReasoningTokens is the part of OutputTokens spent reasoning, when
	// the provider reports it (OpenAI reasoning_tokens, Gemini
	// thoughtsTokenCount, which Gemini counts apart and this adds in).
	ReasoningTokens int
	// Source says where OutputTokens came from: "server" (the provider's
	// usage) or "counted" (counted from the stream's chunks).
	Source string
}
