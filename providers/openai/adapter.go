package openai

import (
	"context"
	"net/http"
	"net/url"
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
	// DefaultMaxErrorBytes bounds what is read of an error body.
	DefaultMaxErrorBytes = httpadapter.DefaultMaxErrorBody
	// DefaultMaxResponseBytes bounds a non-streaming response body.
	DefaultMaxResponseBytes = httpadapter.DefaultMaxResponse
	// DefaultMaxEventBytes bounds one SSE line and one event.
	DefaultMaxEventBytes = 1 << 20
)

// Headers the adapter reads.
const (
	// HeaderRequestID is the server's request id (also sent with the
	// CloudRequest's RequestID).
	HeaderRequestID = "X-Request-Id"
	// HeaderProcessingMs is OpenAI's server processing time, kept in Metadata.
	HeaderProcessingMs = "Openai-Processing-Ms"
)

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
	// MaxResponseBytes, MaxErrorBytes and MaxEventBytes bound what is read
	// (defaults DefaultMaxResponseBytes, DefaultMaxErrorBytes,
	// DefaultMaxEventBytes).
	MaxResponseBytes int64
	MaxErrorBytes    int64
	MaxEventBytes    int
}

// Adapter is the cloudreq adapter for OpenAI-compatible servers. It
// implements cloudreq.Adapter, cloudreq.Streamer, cloudreq.Encoder and
// io.Closer, and is safe for concurrent use.
type Adapter struct {
	opts   Options
	base   string // BaseURL without its query
	query  string // BaseURL's query
	client *http.Client
	own    *http.Transport // the transport New built, nil for the caller's client
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
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if opts.MaxErrorBytes <= 0 {
		opts.MaxErrorBytes = DefaultMaxErrorBytes
	}
	if opts.MaxEventBytes <= 0 {
		opts.MaxEventBytes = DefaultMaxEventBytes
	}
	a := &Adapter{opts: opts}
	a.client, a.own = httpadapter.Client(opts.HTTPClient)
	base, query, err := a.checkBase(opts.BaseURL)
	if err != nil {
		return nil, err
	}
	a.base, a.query = base, query
	return a, nil
}

// checkBase validates a base URL and the credential rule for it, and
// returns it without user info, query and fragment, and its query apart.
func (a *Adapter) checkBase(raw string) (base, query string, err error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", "", invalid("base URL %q is not an absolute http(s) URL", httpadapter.URLForMessage(raw))
	}
	if u.Scheme == "http" && a.opts.APIKey != "" && !a.opts.AllowInsecureHTTP {
		return "", "", invalid("refusing to send the API key over plain http to %s; use https, or set AllowInsecureHTTP for a local emulator", u.Host)
	}
	query = u.RawQuery
	u.User, u.RawQuery, u.ForceQuery, u.Fragment = nil, "", false, ""
	return strings.TrimRight(u.String(), "/"), query, nil
}

// invalid returns an ERR_INVALID_PARAM error of provider openai (which its
// text names: the message does not repeat it).
func invalid(format string, args ...any) *errcodes.Error {
	e := errcodes.Errorf(errcodes.InvalidParam, format, args...)
	e.Provider = cloudreq.ProviderOpenAI
	return e
}

// Describe implements cloudreq.Adapter.
func (a *Adapter) Describe() cloudreq.Description {
	return cloudreq.Description{
		Provider: cloudreq.ProviderOpenAI, Service: cloudreq.ServiceOpenAICompatible,
		Actions: []string{cloudreq.ActionInvoke, cloudreq.ActionGenerate},
	}
}

// Close closes the idle connections of the transport the adapter built
// for itself; a caller's Options.HTTPClient is left alone. Requests in
// flight are not interrupted.
func (a *Adapter) Close() error {
	if a.own != nil {
		a.own.CloseIdleConnections()
	}
	return nil
}

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
	o := openaiwire.EncodeOptions{Model: model(req.Target), Stream: stream, OmitUsage: a.opts.OmitStreamUsage}
	enc := openaiwire.EncodeChat
	if openaiwire.IsCompletionsPath(path(req.Target)) {
		enc = openaiwire.EncodeCompletion
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
	base, query := a.base, a.query
	if httpadapter.IsAbsoluteURL(t.Endpoint) {
		b, q, err := a.checkBase(t.Endpoint)
		if err != nil {
			return "", err
		}
		base, query = b, q
	}
	u := httpadapter.JoinPath(base, path(t))
	switch {
	case query == "":
	case strings.Contains(u, "?"):
		u += "&" + query
	default:
		u += "?" + query
	}
	return u, nil
}

// do sends one attempt and returns a 2xx response, or the mapped error.
func (a *Adapter) do(ctx context.Context, call *cloudreq.Call, stream bool) (*http.Response, error) {
	r := call.Request
	u, err := a.url(r.Target)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, call.Body())
	if err != nil {
		return nil, errcodes.Wrap(err, errcodes.InvalidParam, "openai: building the request failed")
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	ct := call.Payload.ContentType
	if ct == "" {
		ct = "application/json"
	}
	req.Header.Set("Content-Type", ct)
	switch {
	case call.Payload.Accept != "":
		req.Header.Set("Accept", call.Payload.Accept)
	case stream:
		req.Header.Set("Accept", "text/event-stream")
	case req.Header.Get("Accept") == "":
		req.Header.Set("Accept", "application/json")
	}
	if r.RequestID != "" && req.Header.Get(HeaderRequestID) == "" {
		req.Header.Set(HeaderRequestID, r.RequestID)
	}
	if a.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+a.opts.APIKey)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, httpadapter.TransportError(cloudreq.ProviderOpenAI, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, a.responseError(resp)
	}
	return resp, nil
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
	defer resp.Body.Close()
	out := httpadapter.Head(resp, keepHeaders, idHeaders)
	if e := httpadapter.ReadResponse(resp, out, cloudreq.ProviderOpenAI, "openai", a.opts.MaxResponseBytes); e != nil {
		return nil, e
	}
	body := out.Data
	if !httpadapter.IsJSON(out.ContentType) && call.Request.Action != cloudreq.ActionGenerate {
		return out, nil
	}
	res, derr := openaiwire.Decode(body)
	switch {
	case derr == nil && res.Error != nil:
		return nil, a.bodyError(resp, *res.Error, out.RequestID)
	case derr == nil:
		out.Text, out.FinishReason = res.Text, res.FinishReason
		if res.Usage != nil {
			out.Usage = *res.Usage
		}
	case call.Request.Action == cloudreq.ActionGenerate:
		e := httpadapter.Malformed(cloudreq.ProviderOpenAI, "openai: the response is not an OpenAI completion", derr)
		e.HTTPStatus, e.RequestID = resp.StatusCode, out.RequestID
		return nil, e
	}
	return out, nil
}

// Stream implements cloudreq.Streamer. An SSE response is read event by
// event; a JSON response (a server that ignored "stream") is one chunk.
func (a *Adapter) Stream(ctx context.Context, call *cloudreq.Call) (cloudreq.ChunkStream, error) {
	resp, err := a.do(ctx, call, true)
	if err != nil {
		return nil, err
	}
	head := httpadapter.Head(resp, keepHeaders, idHeaders)
	cfg := httpadapter.StreamConfig{Provider: cloudreq.ProviderOpenAI, MaxFrame: a.opts.MaxEventBytes}
	switch {
	case httpadapter.IsEventStream(head.ContentType):
		cfg.Framing = httpadapter.FramingSSE
	case httpadapter.IsJSON(head.ContentType):
		cfg.Framing, cfg.MaxFrame = httpadapter.FramingWhole, int(a.opts.MaxResponseBytes)
	default:
		cfg.Framing, cfg.Decoder = httpadapter.FramingRaw, httpadapter.TextDecoder{}
	}
	if cfg.Decoder == nil {
		cfg.Decoder = &openaiwire.StreamDecoder{Provider: cloudreq.ProviderOpenAI, RequestID: head.RequestID, Native: native(0)}
	}
	return httpadapter.NewStream(head, resp.Body, cfg), nil
}
