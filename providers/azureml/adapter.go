package azureml

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
	"github.com/cloudinfer/cloudinfer/internal/openaiwire"
)

// API selects the route requests take.
type API string

// APIs (see the package doc).
const (
	APIScore API = "score"
	APIChat  API = "chat"
)

// ScoreDialect is the generate body written for /score.
type ScoreDialect string

// Score dialects (see the package doc for their exact shapes).
const (
	ScoreMessages  ScoreDialect = "messages"
	ScoreInputData ScoreDialect = "input_data"
)

// Defaults and header names.
const (
	// DefaultEndpointURL is the managed online endpoint root template.
	DefaultEndpointURL = "https://{endpoint}.{region}.inference.ml.azure.com"
	// DefaultScope is the Microsoft Entra scope of Azure ML endpoints.
	DefaultScope = "https://ml.azure.com/.default"
	// DefaultAPIVersion is the api-version of serverless chat completions.
	DefaultAPIVersion = "2024-05-01-preview"

	HeaderDeployment       = "azureml-model-deployment"
	HeaderClientRequestID  = "x-ms-client-request-id"
	HeaderRequestID        = "x-request-id"
	HeaderMSRequestID      = "x-ms-request-id"
	HeaderErrorCode        = "x-ms-error-code"
	HeaderModelErrorStatus = "ms-azureml-model-error-statuscode"
	HeaderModelErrorReason = "ms-azureml-model-error-reason"
	// HeaderExtraParameters tells the model inference API (serverless
	// chat) what to do with body members it does not define: "error" (its
	// default), "drop" or "pass-through".
	HeaderExtraParameters = "extra-parameters"
)

// moduleName and moduleVersion identify the adapter in azcore's telemetry
// (User-Agent).
const (
	moduleName    = "cloudinfer/azureml"
	moduleVersion = "v1"
)

// Limits bound what the adapter reads: MaxResponseBytes a non-streaming
// response body (default 64 MiB), MaxErrorBytes an error body (default
// 64 KiB; the rest is never read), MaxEventBytes one SSE line and event
// (default 1 MiB). A field left zero takes its default.
type Limits = httpadapter.Limits

// Options configures an Adapter. Pass it to New; option functions change a
// copy.
type Options struct {
	// EndpointURL is the endpoint root, with "{endpoint}" (and
	// "{region}") placeholders (default DefaultEndpointURL). For the
	// emulator: srv.URL() + "/azureml/{endpoint}".
	EndpointURL string
	// Region fills "{region}".
	Region string
	// Key is an endpoint key; Token an AML token. Either is sent as
	// "Authorization: Bearer …" as it is: AML tokens expire, so a
	// long-running service sets Credential to a refreshing source instead
	// (NewAMLTokenCredential, NewEndpointTokenCredential).
	Key   string
	Token string
	// Credential is a Microsoft Entra token credential. When Key, Token
	// and Credential are all empty (and not Anonymous), the adapter uses
	// a default credential, created at the first request:
	// azidentity.DefaultAzureCredential's chain, which finds managed
	// identity only where the host announces it, without probing IMDS
	// (see the package doc, Credentials).
	Credential azcore.TokenCredential
	// Scope is the Entra token scope. Default, by route: ScopeManagedOnline
	// (ml.azure.com) for APIScore, ScopeFoundry (cognitiveservices.azure.com)
	// for APIChat, serverless and AI Foundry endpoints. An AML token
	// (NewAMLTokenCredential) ignores it.
	Scope string
	// Anonymous sends no credential (local servers).
	Anonymous bool
	// API is the route (default APIScore); APIVersion the serverless
	// api-version (default DefaultAPIVersion), sent on the chat route when
	// the endpoint URL and Target.Path give none.
	API        API
	APIVersion string
	// ScoreDialect is the generate body for /score (default ScoreMessages).
	ScoreDialect ScoreDialect
	// AllowInsecureHTTP permits a credential over plain http (azcore's
	// InsecureAllowCredentialWithHTTP). Use it for the local emulator only.
	AllowInsecureHTTP bool
	// HTTPClient sends the requests. A caller's client is the caller's to
	// tune and to close: its timeout, if any, applies too, and the
	// adapter's Close leaves its connections alone. Nil: the adapter builds
	// its own transport (a clone of http.DefaultTransport keeping 256 idle
	// connections per host, with a 10-minute response header timeout; see
	// the package doc), which its Close closes.
	HTTPClient *http.Client
	// ClientOptions are azcore client options (logging, telemetry,
	// per-call policies). Their Retry is overridden (MaxRetries -1) and
	// their Transport by HTTPClient.
	ClientOptions policy.ClientOptions
	// OmitStreamUsage leaves stream_options.include_usage out of streams.
	OmitStreamUsage bool
	// Limits bound what is read (o.MaxResponseBytes, o.MaxErrorBytes,
	// o.MaxEventBytes).
	Limits
}

// Adapter is the cloudreq adapter for Azure ML online endpoints. It
// implements cloudreq.Adapter, cloudreq.Streamer, cloudreq.Encoder and
// io.Closer, and is safe for concurrent use.
type Adapter struct {
	opts   Options
	core   *httpadapter.Core
	pl     runtime.Pipeline
	lazy   *lazyDefaultCredential // the default credential, when used
	tokens *tokenSource           // the token credential's wrapper, when used
}

var (
	_ cloudreq.Adapter          = (*Adapter)(nil)
	_ cloudreq.Streamer         = (*Adapter)(nil)
	_ cloudreq.Encoder          = (*Adapter)(nil)
	_ cloudreq.CredentialSource = (*Adapter)(nil)
	_ io.Closer                 = (*Adapter)(nil)
)

// New returns an Adapter. It makes no network call (a default Azure
// credential is created at the first request).
func New(opts Options, optFns ...func(*Options)) (*Adapter, error) {
	for _, f := range optFns {
		f(&opts)
	}
	if opts.EndpointURL == "" {
		opts.EndpointURL = DefaultEndpointURL
	}
	if opts.API == "" {
		opts.API = APIScore
	}
	if opts.Scope == "" {
		opts.Scope = scopeFor(opts.API)
	}
	if opts.API != APIScore && opts.API != APIChat {
		return nil, invalid("unknown API %q (want %q or %q)", opts.API, APIScore, APIChat)
	}
	if opts.APIVersion == "" {
		opts.APIVersion = DefaultAPIVersion
	}
	if opts.ScoreDialect == "" {
		opts.ScoreDialect = ScoreMessages
	}
	if opts.ScoreDialect != ScoreMessages && opts.ScoreDialect != ScoreInputData {
		return nil, invalid("unknown ScoreDialect %q (want %q or %q)", opts.ScoreDialect, ScoreMessages, ScoreInputData)
	}
	opts.Limits = opts.Limits.WithDefaults()
	if n := btoi(opts.Key != "") + btoi(opts.Token != "") + btoi(opts.Credential != nil); n > 1 {
		return nil, invalid("set only one of Key, Token and Credential")
	}
	cfg := httpadapter.Config{
		Provider: cloudreq.ProviderAzure, Service: cloudreq.ServiceAzureML, Name: "azureml",
		HTTPClient: opts.HTTPClient, Limits: opts.Limits, AllowInsecureHTTP: opts.AllowInsecureHTTP,
		KeepHeaders: keepHeaders, IDHeaders: idHeaders, Errors: errorTable,
	}
	if !opts.Anonymous {
		cfg.Credential = "an Azure credential (Anonymous sends none)"
	}
	a := &Adapter{opts: opts, core: httpadapter.New(cfg)}
	root := opts.EndpointURL
	if strings.Contains(root, "{endpoint}") {
		root = strings.NewReplacer("{endpoint}", "x", "{region}", "r").Replace(root)
	}
	if _, _, err := a.core.CheckURL(root); err != nil {
		return nil, err
	}

	var perRetry []policy.Policy
	switch {
	case opts.Anonymous:
	case opts.Key != "" || opts.Token != "":
		secret := opts.Key
		if secret == "" {
			secret = opts.Token
		}
		perRetry = append(perRetry, runtime.NewKeyCredentialPolicy(azcore.NewKeyCredential(secret), "Authorization",
			&runtime.KeyCredentialPolicyOptions{Prefix: "Bearer ", InsecureAllowCredentialWithHTTP: opts.AllowInsecureHTTP}))
	default:
		cred := opts.Credential
		if cred == nil {
			a.lazy = &lazyDefaultCredential{}
			cred = a.lazy
		}
		a.tokens = &tokenSource{cred: cred}
		perRetry = append(perRetry, runtime.NewBearerTokenPolicy(a.tokens, []string{opts.Scope},
			&policy.BearerTokenOptions{InsecureAllowCredentialWithHTTP: opts.AllowInsecureHTTP}))
	}
	co := opts.ClientOptions
	co.Retry = policy.RetryOptions{MaxRetries: -1}
	co.Transport = boundedErrors{next: a.core.Client(), max: opts.MaxErrorBytes}
	co.InsecureAllowCredentialWithHTTP = opts.AllowInsecureHTTP
	a.pl = runtime.NewPipeline(moduleName, moduleVersion, runtime.PipelineOptions{PerRetry: perRetry}, &co)
	return a, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// invalid returns an ERR_INVALID_PARAM error of provider azure (which its
// text names: the message does not repeat it).
func invalid(format string, args ...any) *errcodes.Error {
	return httpadapter.Invalid(cloudreq.ProviderAzure, format, args...)
}

// Describe implements cloudreq.Adapter.
func (a *Adapter) Describe() cloudreq.Description { return a.core.Describe() }

// Close closes the idle connections of the transport the adapter built
// for itself; a caller's Options.HTTPClient is left alone. Requests in
// flight are not interrupted.
func (a *Adapter) Close() error { return a.core.Close() }

// templateForMessage returns an endpoint URL template fit for an error
// message: without user info, query or fragment, which may hold
// credentials. A template does not parse as a URL ({endpoint} is no host),
// so the parts are cut as text.
func templateForMessage(t string) string {
	t, _, _ = strings.Cut(t, "#")
	t, _, _ = strings.Cut(t, "?")
	scheme, rest, ok := strings.Cut(t, "://")
	if !ok {
		return t
	}
	host, path, _ := strings.Cut(rest, "/")
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		host = host[i+1:]
	}
	if path != "" {
		return scheme + "://" + host + "/" + path
	}
	return scheme + "://" + host
}

// url returns the request URL for r. Its query is the endpoint URL's
// followed by Target.Path's; the chat route's holds exactly one
// api-version (see withAPIVersion).
func (a *Adapter) url(r *cloudreq.CloudRequest) (string, error) {
	ep := r.Target.Endpoint
	var root, query string
	var err error
	switch {
	case httpadapter.IsAbsoluteURL(ep):
		root, query, err = a.core.CheckURL(ep)
		root = strings.TrimSuffix(strings.TrimSuffix(root, "/score"), "/chat/completions")
	case ep == "":
		return "", invalid("Target.Endpoint (the endpoint name or URL) is required")
	default:
		tmpl := a.opts.EndpointURL
		if strings.Contains(tmpl, "{region}") && a.opts.Region == "" {
			return "", invalid("Options.Region is required by the endpoint URL template %s", templateForMessage(tmpl))
		}
		root, query, err = a.core.CheckURL(strings.NewReplacer("{endpoint}", url.PathEscape(ep), "{region}", a.opts.Region).Replace(tmpl))
	}
	if err != nil {
		return "", err
	}
	p, _, _ := strings.Cut(r.Target.Path, "#")
	switch {
	case p != "":
		if p[0] != '/' && p[0] != '?' {
			p = "/" + p
		}
	case a.opts.API == APIChat:
		p = "/chat/completions"
	default:
		p = "/score"
	}
	p, pathQuery, _ := strings.Cut(p, "?")
	switch {
	case query == "":
		query = pathQuery
	case pathQuery != "":
		query += "&" + pathQuery
	}
	if a.opts.API == APIChat {
		query = withAPIVersion(query, a.opts.APIVersion)
	}
	if query != "" {
		p += "?" + query
	}
	return root + p, nil
}

// withAPIVersion returns the raw query q with exactly one api-version,
// last: the last non-empty one q holds, as written, else v. Other
// parameters are kept as written, in order.
func withAPIVersion(q, v string) string {
	version := "api-version=" + url.QueryEscape(v)
	var keep []string
	for _, kv := range strings.Split(q, "&") {
		rawName, value, _ := strings.Cut(kv, "=")
		switch name, err := url.QueryUnescape(rawName); {
		case kv == "":
		case err != nil || name != "api-version":
			keep = append(keep, kv)
		case value != "":
			version = kv
		}
	}
	return strings.Join(append(keep, version), "&")
}

// chatRoute reports whether r goes to a chat completions route: APIChat,
// or a Target.Path that names one.
func (a *Adapter) chatRoute(r *cloudreq.CloudRequest) bool {
	p, _, _ := strings.Cut(r.Target.Path, "?")
	return a.opts.API == APIChat || strings.HasSuffix(p, "/chat/completions")
}

// chat reports whether r's generate body is OpenAI chat JSON.
func (a *Adapter) chat() bool { return a.opts.API == APIChat || a.opts.ScoreDialect == ScoreMessages }

// Encode implements cloudreq.Encoder.
func (a *Adapter) Encode(req *cloudreq.CloudRequest, stream bool) (cloudreq.Payload, error) {
	if req.Generate == nil {
		return cloudreq.Payload{}, invalid("generate needs Generate input")
	}
	var b []byte
	var err error
	if a.chat() {
		d := "azureml serverless chat"
		if a.opts.API != APIChat {
			d = "azureml /score messages"
		} else if err := refuseServerless(req); err != nil {
			return cloudreq.Payload{}, errcodes.Wrap(err, errcodes.InvalidParam, "azureml: "+err.Error())
		}
		b, err = openaiwire.EncodeChat(req.Generate, openaiwire.EncodeOptions{Model: req.Target.Model, Stream: stream, OmitUsage: a.opts.OmitStreamUsage, Dialect: d})
	} else {
		b, err = encodeInputData(req.Generate)
	}
	if err != nil {
		return cloudreq.Payload{}, errcodes.Wrap(err, errcodes.InvalidParam, "azureml: encoding the request: "+err.Error())
	}
	p := cloudreq.Payload{Body: b, ContentType: "application/json"}
	if stream && a.chat() {
		p.Accept = "text/event-stream"
	}
	return p, nil
}

// do sends one attempt through the pipeline and returns a 2xx response, or
// the mapped error.
func (a *Adapter) do(ctx context.Context, call *cloudreq.Call, stream bool) (*http.Response, error) {
	r := call.Request
	u, err := a.url(r)
	if err != nil {
		return nil, err
	}
	req, err := runtime.NewRequest(ctx, http.MethodPost, u)
	if err != nil {
		return nil, errcodes.Wrap(err, errcodes.InvalidParam, "azureml: building the request failed")
	}
	runtime.SkipBodyDownload(req) // bodies are read here, with bounds
	h := req.Raw().Header
	accept := ""
	if stream && a.chat() {
		accept = "text/event-stream"
	}
	httpadapter.SetHeaders(h, call, accept)
	body := call.Payload.Body
	if body == nil && call.Payload.Reader != nil {
		// azcore needs a seekable body; a one-shot body is made one.
		if body, err = io.ReadAll(call.Payload.Reader); err != nil {
			return nil, errcodes.Wrap(err, errcodes.InvalidParam, "azureml: reading the request body failed")
		}
	}
	if err := req.SetBody(streaming.NopCloser(bytes.NewReader(body)), httpadapter.ContentType(call.Payload)); err != nil {
		return nil, errcodes.Wrap(err, errcodes.InvalidParam, "azureml: setting the request body failed")
	}
	if v := r.Target.Variant; v != "" {
		h.Set(HeaderDeployment, v)
	}
	if id := r.RequestID; id != "" {
		h.Set(HeaderClientRequestID, id)
	}
	if stream && r.Action == cloudreq.ActionGenerate && a.opts.API == APIChat && !a.opts.OmitStreamUsage && h.Get(HeaderExtraParameters) == "" {
		// stream_options is no parameter of the model inference API, which
		// refuses unknown ones unless told otherwise: a deployment that
		// does not know it drops it (usage then comes as the service
		// sends it) instead of failing the call with a 422.
		h.Set(HeaderExtraParameters, "drop")
	}
	resp, err := a.pl.Do(req)
	if err != nil {
		return nil, a.sendError(ctx, err)
	}
	return a.core.Check(resp)
}

var (
	keepHeaders = []string{HeaderDeployment, HeaderRequestID, HeaderMSRequestID}
	idHeaders   = []string{HeaderRequestID, HeaderMSRequestID}
)

// Invoke implements cloudreq.Adapter.
func (a *Adapter) Invoke(ctx context.Context, call *cloudreq.Call) (*cloudreq.CloudResponse, error) {
	resp, err := a.do(ctx, call, false)
	if err != nil {
		return nil, err
	}
	return a.core.Invoke(resp, call.Request.Action, unreadableMsg, answers)
}

// answers reads a whole answer (decodeScore).
var answers = openaiwire.Answers(decodeScore, bodyError)

// Stream implements cloudreq.Streamer: SSE when the response says
// text/event-stream (OpenAI chunks for generate and the chat route, each
// event's data as text for an invoke of /score), one chunk for a JSON
// response, raw bytes otherwise.
func (a *Adapter) Stream(ctx context.Context, call *cloudreq.Call) (cloudreq.ChunkStream, error) {
	resp, err := a.do(ctx, call, true)
	if err != nil {
		return nil, err
	}
	generate := call.Request.Action == cloudreq.ActionGenerate
	return a.core.Stream(resp, func(head *cloudreq.CloudResponse) (httpadapter.Framing, httpadapter.Decoder) {
		switch f := httpadapter.FramingOf(head.ContentType); {
		case f == httpadapter.FramingSSE && (generate || a.chatRoute(call.Request)):
			return f, &openaiwire.StreamDecoder{Provider: cloudreq.ProviderAzure, RequestID: head.RequestID, Native: native(0), Class: streamClass}
		case f == httpadapter.FramingSSE:
			return f, httpadapter.TextDecoder{}
		case f == httpadapter.FramingWhole && generate:
			return f, &wholeDecoder{}
		}
		return httpadapter.FramingRaw, httpadapter.TextDecoder{}
	}), nil
}

// boundedErrors is the pipeline's transport: it reads at most max bytes of
// an error response's body into memory before azcore's body download
// policy (which reads error bodies whole) sees it, so a huge error page
// costs no more than max.
type boundedErrors struct {
	next *http.Client
	max  int64
}

// Do implements policy.Transporter.
func (b boundedErrors) Do(req *http.Request) (*http.Response, error) {
	resp, err := b.next.Do(req)
	if err != nil || resp.StatusCode < http.StatusBadRequest {
		return resp, err
	}
	body, _, _ := httpadapter.ReadLimited(resp.Body, b.max)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp, nil
}

// tokenSource wraps a credential so that a failure to get a token is told
// apart from a failure to reach the endpoint, and remembers the last token
// for Credentials.
type tokenSource struct {
	cred azcore.TokenCredential
	last atomic.Pointer[string]
}

// GetToken implements azcore.TokenCredential.
func (t *tokenSource) GetToken(ctx context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	tok, err := t.cred.GetToken(ctx, o)
	if err != nil {
		return tok, &credentialError{err: err}
	}
	t.last.Store(&tok.Token)
	return tok, nil
}

// Credentials implements cloudreq.CredentialSource: the endpoint key or
// AML token, or the last Microsoft Entra token obtained.
func (a *Adapter) Credentials() []string {
	switch {
	case a.opts.Key != "":
		return []string{a.opts.Key}
	case a.opts.Token != "":
		return []string{a.opts.Token}
	case a.tokens != nil:
		if tok := a.tokens.last.Load(); tok != nil {
			return []string{*tok}
		}
	}
	return nil
}

// credentialError marks an error from the token credential.
type credentialError struct{ err error }

func (e *credentialError) Error() string { return "getting an Azure token: " + e.err.Error() }
func (e *credentialError) Unwrap() error { return e.err }

// sendError maps an error from the pipeline (no response).
func (a *Adapter) sendError(ctx context.Context, err error) *errcodes.Error {
	var ce *credentialError
	if errors.As(err, &ce) && ctx.Err() == nil {
		e := errcodes.Wrap(err, errcodes.Unauthenticated, clip("azureml: "+ce.Error()))
		e.Provider, e.Retryable = cloudreq.ProviderAzure, false
		return e
	}
	if ctx.Err() == nil && strings.Contains(err.Error(), "non TLS protected") {
		// azcore's credential policies refuse plain http (documented
		// last resort: azcore has no typed error for it).
		return invalid("refusing to send a credential over plain http; set AllowInsecureHTTP for a local emulator")
	}
	return httpadapter.TransportError(cloudreq.ProviderAzure, err)
}

// clip bounds a message taken from a credential's error.
func clip(s string) string { return httpadapter.ErrorText([]byte(s), "text/plain") }
