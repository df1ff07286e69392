package openai

import (
	"context"
	"net/http"
	"strings"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
	"github.com/cloudinfer/cloudinfer/internal/openaiwire"
)

// Defaults.
const (
	// DefaultBaseURL is OpenAI's API root.
	DefaultBaseURL = "https://api.openai.com"
	// DefaultPath is where requests go when Target.Path is empty.
	DefaultPath = "/v1/chat/completions"
)

// Headers the adapter reads.
const (
	// HeaderRequestID is the server's request id (also sent with the
	// CloudRequest's RequestID).
	HeaderRequestID = "X-Request-Id"
	// HeaderProcessingMs is OpenAI's server processing time, kept in Metadata.
	HeaderProcessingMs = "Openai-Processing-Ms"
)

// Limits bound what the adapter reads: MaxResponseBytes a non-streaming
// response body (default 64 MiB), MaxErrorBytes an error body (default
// 64 KiB; the rest is never read), MaxEventBytes one SSE line and event
// (default 1 MiB). A field left zero takes its default.
type Limits = httpadapter.Limits

// APIError is the error an OpenAI-compatible server returned, as parsed
// from its body (Provider "openai"): the native error every HTTP or
// in-stream *errcodes.Error of this adapter wraps (reach it with
// errors.As). The paieas adapter's errors wrap the same type.
type APIError = httpadapter.APIError

// Options configures an Adapter. Pass it to New; option functions change a
// copy.
type Options struct {
	// BaseURL is the server root, e.g. "http://127.0.0.1:8000" for vLLM
	// (a trailing "/v1" is fine: it is not repeated). Default
	// DefaultBaseURL. A query it holds (a gateway's "?api-version=…") is
	// added to every request's URL. A Target.Endpoint that is an http(s)
	// URL overrides it for one request.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <APIKey>"; empty sends none.
	APIKey string
	// HTTPClient sends the requests. A caller's client is the caller's to
	// tune and to close: its timeout, if any, applies too, and the
	// adapter's Close leaves its connections alone. Nil: the adapter builds
	// its own transport (a clone of http.DefaultTransport keeping 256 idle
	// connections per host, with a 10-minute response header timeout; see
	// the package doc), which its Close closes.
	HTTPClient *http.Client
	// AllowInsecureHTTP permits sending the API key over plain http. Use it
	// for the local emulator only.
	AllowInsecureHTTP bool
	// OmitStreamUsage leaves stream_options.include_usage out of generate
	// streams, for servers that reject it; usage is then counted.
	OmitStreamUsage bool
	// MaxCompletionTokens sends Generate.MaxTokens as
	// "max_completion_tokens", which the OpenAI API's reasoning models
	// require, unless a request's Generate.TokenLimit says otherwise. The
	// default is "max_tokens", which vLLM, SGLang and TGI read.
	MaxCompletionTokens bool
	// Limits bound what is read (o.MaxResponseBytes, o.MaxErrorBytes,
	// o.MaxEventBytes).
	Limits
}

// Adapter is the cloudreq adapter for OpenAI-compatible servers. It
// implements cloudreq.Adapter, cloudreq.Streamer, cloudreq.Encoder and
// io.Closer, and is safe for concurrent use.
type Adapter struct {
	opts  Options
	core  *httpadapter.Core
	base  string // BaseURL without its query
	query string // BaseURL's query
	// defaultURL is the URL of a request with neither Target.Path nor an
	// absolute Target.Endpoint (the usual one), built once.
	defaultURL string
	// prepare finishes each request's headers (see do), made once.
	prepare func(*http.Request)
}

var (
	_ cloudreq.Adapter          = (*Adapter)(nil)
	_ cloudreq.Streamer         = (*Adapter)(nil)
	_ cloudreq.Encoder          = (*Adapter)(nil)
	_ cloudreq.CredentialSource = (*Adapter)(nil)
)

// Credentials implements cloudreq.CredentialSource: the API key.
func (a *Adapter) Credentials() []string {
	if a.opts.APIKey == "" {
		return nil
	}
	return []string{a.opts.APIKey}
}

// New returns an Adapter. It refuses a BaseURL that is not an absolute
// http(s) URL, and an API key over plain http unless AllowInsecureHTTP.
func New(opts Options, optFns ...func(*Options)) (*Adapter, error) {
	for _, f := range optFns {
		f(&opts)
	}
	if opts.BaseURL == "" {
		opts.BaseURL = DefaultBaseURL
	}
	opts.Limits = opts.Limits.WithDefaults()
	cfg := httpadapter.Config{
		Provider: cloudreq.ProviderOpenAI, Service: cloudreq.ServiceOpenAICompatible, Name: "openai",
		HTTPClient: opts.HTTPClient, Limits: opts.Limits, AllowInsecureHTTP: opts.AllowInsecureHTTP,
		RequestIDHeader: HeaderRequestID, KeepHeaders: keepHeaders, IDHeaders: idHeaders, Errors: errorTable,
	}
	if opts.APIKey != "" {
		cfg.Credential = "the API key"
	}
	a := &Adapter{opts: opts, core: httpadapter.New(cfg)}
	base, query, err := a.core.CheckURL(opts.BaseURL)
	if err != nil {
		return nil, err
	}
	a.base, a.query = base, query
	a.defaultURL = a.join(base, query, DefaultPath)
	a.prepare = a.prepareRequest
	return a, nil
}

// invalid returns an ERR_INVALID_PARAM error of provider openai (which its
// text names: the message does not repeat it).
func invalid(format string, args ...any) *errcodes.Error {
	return httpadapter.Invalid(cloudreq.ProviderOpenAI, format, args...)
}

// Describe implements cloudreq.Adapter.
func (a *Adapter) Describe() cloudreq.Description { return a.core.Describe() }

// Close closes the idle connections of the transport the adapter built
// for itself; a caller's Options.HTTPClient is left alone. Requests in
// flight are not interrupted.
func (a *Adapter) Close() error { return a.core.Close() }

// path returns the request's path: Target.Path or DefaultPath.
func path(t cloudreq.Target) string {
	if t.Path != "" {
		return t.Path
	}
	return DefaultPath
}

// model returns the model name: Target.Model, else a Target.Endpoint that
// is a name rather than a URL.
func model(t cloudreq.Target) string {
	if t.Model != "" || httpadapter.IsAbsoluteURL(t.Endpoint) {
		return t.Model
	}
	return t.Endpoint
}

// Encode implements cloudreq.Encoder: OpenAI chat JSON, or a completions
// body when Target.Path is a completions route.
func (a *Adapter) Encode(req *cloudreq.CloudRequest, stream bool) (cloudreq.Payload, error) {
	if req.Generate == nil {
		return cloudreq.Payload{}, invalid("generate needs Generate input")
	}
	o := openaiwire.EncodeOptions{Model: model(req.Target), Stream: stream, OmitUsage: a.opts.OmitStreamUsage, Dialect: "openai-compatible chat"}
	if a.opts.MaxCompletionTokens {
		o.TokenLimit = cloudreq.TokenLimitMaxCompletionTokens
	}
	enc := openaiwire.EncodeChat
	if openaiwire.IsCompletionsPath(path(req.Target)) {
		enc, o.Dialect = openaiwire.EncodeCompletion, "openai-compatible completions"
	}
	b, err := enc(req.Generate, o)
	if err != nil {
		return cloudreq.Payload{}, errcodes.Wrap(err, errcodes.InvalidParam, "openai: encoding the request: "+err.Error())
	}
	p := cloudreq.Payload{Body: b, ContentType: "application/json"}
	if stream {
		p.Accept = "text/event-stream"
	}
	return p, nil
}

// url returns the request URL.
func (a *Adapter) url(t cloudreq.Target) (string, error) {
	absolute := httpadapter.IsAbsoluteURL(t.Endpoint)
	if !absolute && t.Path == "" {
		return a.defaultURL, nil
	}
	base, query := a.base, a.query
	if absolute {
		b, q, err := a.core.CheckURL(t.Endpoint)
		if err != nil {
			return "", err
		}
		base, query = b, q
	}
	return a.join(base, query, path(t)), nil
}

// join returns the URL of path under base, with query.
func (a *Adapter) join(base, query, path string) string {
	u := httpadapter.JoinPath(base, path)
	switch {
	case query == "":
	case strings.Contains(u, "?"):
		u += "&" + query
	default:
		u += "?" + query
	}
	return u
}

// prepareRequest sets the API key. (do asks the core for Accept:
// application/json unless the caller's headers or the payload set one.)
func (a *Adapter) prepareRequest(req *http.Request) {
	if a.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+a.opts.APIKey)
	}
}

// do sends one attempt and returns a 2xx response, or the mapped error.
func (a *Adapter) do(ctx context.Context, call *cloudreq.Call, stream bool) (*http.Response, error) {
	u, err := a.url(call.Request.Target)
	if err != nil {
		return nil, err
	}
	r := httpadapter.Request{URL: u, DefaultAccept: "application/json", Prepare: a.prepare}
	if stream {
		r.Accept = "text/event-stream"
	}
	return a.core.Do(ctx, call, r)
}

var (
	keepHeaders = []string{HeaderRequestID, HeaderProcessingMs}
	idHeaders   = []string{HeaderRequestID}
)

// Invoke implements cloudreq.Adapter. For a JSON completion the response's
// Text, FinishReason and Usage are filled, for invoke as for generate. An
// invoke answer that is not recognisably a generation (not JSON, or JSON
// that is no chat completion or completion) is left in Data alone; a
// generate answer that is not one is ERR_MODEL_ERROR.
func (a *Adapter) Invoke(ctx context.Context, call *cloudreq.Call) (*cloudreq.CloudResponse, error) {
	resp, err := a.do(ctx, call, false)
	if err != nil {
		return nil, err
	}
	return a.core.Invoke(resp, call.Request.Action, "openai: the response is not an OpenAI completion", answers)
}

// answers reads a whole answer: an OpenAI chat completion or completion.
var answers = openaiwire.Answers(openaiwire.Decode, bodyError)

// Stream implements cloudreq.Streamer. An SSE response is read event by
// event; a JSON response (a server that ignored "stream") is one chunk.
func (a *Adapter) Stream(ctx context.Context, call *cloudreq.Call) (cloudreq.ChunkStream, error) {
	resp, err := a.do(ctx, call, true)
	if err != nil {
		return nil, err
	}
	return a.core.Stream(resp, func(head *cloudreq.CloudResponse) (httpadapter.Framing, httpadapter.Decoder) {
		f := httpadapter.FramingOf(head.ContentType)
		if f == httpadapter.FramingRaw {
			return f, httpadapter.TextDecoder{}
		}
		return f, &openaiwire.StreamDecoder{Provider: cloudreq.ProviderOpenAI, RequestID: head.RequestID, Native: native(0)}
	}), nil
}
