package paieas

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/md5" //nolint:gosec // the EAS signature is defined over an MD5 of the body
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
	"github.com/cloudinfer/cloudinfer/internal/openaiwire"
)

// Auth selects how requests are authenticated.
type Auth string

// Auth modes (see the package doc).
const (
	AuthAuto      Auth = ""
	AuthToken     Auth = "token"
	AuthBearer    Auth = "bearer"
	AuthSignature Auth = "signature"
)

// Dialect is the generate dialect.
type Dialect string

// Dialects (see the package doc).
const (
	DialectOpenAI Dialect = "openai"
	DialectLegacy Dialect = "legacy"
)

// StreamFormat forces how a stream's body is framed.
type StreamFormat string

// Stream formats. StreamAuto reads SSE when the response says
// text/event-stream, NUL-delimited records for the legacy dialect, and raw
// bytes otherwise.
const (
	StreamAuto  StreamFormat = ""
	StreamSSE   StreamFormat = "sse"
	StreamNUL   StreamFormat = "nul"
	StreamPlain StreamFormat = "plain"
)

// LegacyStream says what each "response" of a legacy stream holds.
type LegacyStream string

// Legacy stream kinds. LegacyAuto decides at the second record: if it
// extends the first, the records are cumulative.
const (
	LegacyAuto       LegacyStream = ""
	LegacyCumulative LegacyStream = "cumulative"
	LegacyDelta      LegacyStream = "delta"
)

// Defaults.
const (
	// OpenAIChatPath is the generate path of the OpenAI dialect.
	OpenAIChatPath = "/v1/chat/completions"
	// HeaderRequestID is the request id header (sent and read).
	HeaderRequestID = "X-Request-Id"
)

// Limits bound what the adapter reads: MaxResponseBytes a non-streaming
// response body (default 64 MiB), MaxErrorBytes an error body (default
// 64 KiB; the rest is never read), MaxEventBytes one SSE line or event,
// or one NUL record (default 1 MiB). A field left zero takes its default.
type Limits = httpadapter.Limits

// Options configures an Adapter. Pass it to New; option functions change a
// copy.
type Options struct {
	// Endpoint is the EAS endpoint root, e.g.
	// "https://123456789.cn-hangzhou.pai-eas.aliyuncs.com" (or the
	// emulator's URL). A Target.Endpoint that is a full service URL
	// (…/api/predict/<service>) needs none; a service URL here is refused.
	Endpoint string
	// Token is the service token.
	Token string
	// Auth is how the token is sent (default AuthAuto).
	Auth Auth
	// Dialect is the generate dialect (default DialectOpenAI).
	Dialect Dialect
	// StreamFormat forces a stream framing (default StreamAuto).
	StreamFormat StreamFormat
	// LegacyStream says whether legacy stream records are cumulative
	// (default LegacyAuto: detected).
	LegacyStream LegacyStream
	// HTTPClient sends the requests. A caller's client is the caller's to
	// tune and to close: its timeout, if any, applies too, and the
	// adapter's Close leaves its connections alone. Nil: the adapter builds
	// its own transport (a clone of http.DefaultTransport keeping 256 idle
	// connections per host, with a 10-minute response header timeout; see
	// the package doc), which its Close closes.
	HTTPClient *http.Client
	// AllowInsecureHTTP permits sending the token over plain http. Use it
	// for the local emulator only.
	AllowInsecureHTTP bool
	// OmitStreamUsage leaves stream_options.include_usage out of OpenAI
	// dialect streams.
	OmitStreamUsage bool
	// Limits bound what is read (o.MaxResponseBytes, o.MaxErrorBytes,
	// o.MaxEventBytes).
	Limits
	// Now is the clock of the signature's Date header (default time.Now).
	Now func() time.Time
}

// Adapter is the cloudreq adapter for PAI-EAS. It implements
// cloudreq.Adapter, cloudreq.Streamer, cloudreq.Encoder and io.Closer, and
// is safe for concurrent use.
type Adapter struct {
	opts Options
	core *httpadapter.Core
	base string
}

var (
	_ cloudreq.Adapter  = (*Adapter)(nil)
	_ cloudreq.Streamer = (*Adapter)(nil)
	_ cloudreq.Encoder  = (*Adapter)(nil)
	_ io.Closer         = (*Adapter)(nil)
)

// New returns an Adapter. It refuses unknown modes, an Endpoint that is not
// an absolute http(s) URL, and a token over plain http unless
// AllowInsecureHTTP.
func New(opts Options, optFns ...func(*Options)) (*Adapter, error) {
	for _, f := range optFns {
		f(&opts)
	}
	switch opts.Auth {
	case AuthAuto, AuthToken, AuthBearer, AuthSignature:
	default:
		return nil, invalid("unknown Auth %q", opts.Auth)
	}
	if opts.Dialect == "" {
		opts.Dialect = DialectOpenAI
	}
	if !opts.Dialect.valid() {
		return nil, invalid("unknown Dialect %q (want %q or %q)", opts.Dialect, DialectOpenAI, DialectLegacy)
	}
	switch opts.StreamFormat {
	case StreamAuto, StreamSSE, StreamNUL, StreamPlain:
	default:
		return nil, invalid("unknown StreamFormat %q", opts.StreamFormat)
	}
	switch opts.LegacyStream {
	case LegacyAuto, LegacyCumulative, LegacyDelta:
	default:
		return nil, invalid("unknown LegacyStream %q", opts.LegacyStream)
	}
	opts.Limits = opts.Limits.WithDefaults()
	if opts.Now == nil {
		opts.Now = time.Now
	}
	cfg := httpadapter.Config{
		Provider: cloudreq.ProviderAlibaba, Service: cloudreq.ServicePAIEAS, Name: "paieas",
		HTTPClient: opts.HTTPClient, Limits: opts.Limits, AllowInsecureHTTP: opts.AllowInsecureHTTP,
		RequestIDHeader: HeaderRequestID, KeepHeaders: keepHeaders, IDHeaders: idHeaders, Errors: errorTable,
	}
	if opts.Token != "" {
		cfg.Credential = "the EAS token"
	}
	a := &Adapter{opts: opts, core: httpadapter.New(cfg)}
	if opts.Endpoint != "" {
		b, _, err := a.core.CheckURL(opts.Endpoint)
		if err != nil {
			return nil, err
		}
		if strings.Contains(b+"/", "/api/predict/") {
			// A service URL here would be joined with the service name
			// again (…/api/predict/s/api/predict/s) and answered 404.
			return nil, invalid("Options.Endpoint %s is a service URL; give the endpoint root (the URL before /api/predict/) with the service name as Target.Endpoint, or the whole service URL as Target.Endpoint", httpadapter.URLForMessage(b))
		}
		a.base = b
	}
	return a, nil
}

func (d Dialect) valid() bool { return d == DialectOpenAI || d == DialectLegacy }

// invalid returns an ERR_INVALID_PARAM error of provider alibaba (which its
// text names: the message does not repeat it).
func invalid(format string, args ...any) *errcodes.Error {
	return httpadapter.Invalid(cloudreq.ProviderAlibaba, format, args...)
}

// Describe implements cloudreq.Adapter.
func (a *Adapter) Describe() cloudreq.Description { return a.core.Describe() }

// Close closes the idle connections of the transport the adapter built
// for itself; a caller's Options.HTTPClient is left alone. Requests in
// flight are not interrupted.
func (a *Adapter) Close() error { return a.core.Close() }

// dialect returns the generate dialect of r: its Attributes.Dialect, or
// the adapter's.
func (a *Adapter) dialect(r *cloudreq.CloudRequest) (Dialect, error) {
	if v := r.Attributes.Dialect; v != "" {
		d := Dialect(v)
		if !d.valid() {
			return "", invalid("unknown Attributes.Dialect %q (want %q or %q)", v, DialectOpenAI, DialectLegacy)
		}
		return d, nil
	}
	return a.opts.Dialect, nil
}

// subPath returns the path under the service: Target.Path, or the OpenAI
// chat path for an OpenAI-dialect generate.
func (a *Adapter) subPath(r *cloudreq.CloudRequest) string {
	p := r.Target.Path
	if p == "" && r.Action == cloudreq.ActionGenerate {
		if d, _ := a.dialect(r); d == DialectOpenAI {
			p = OpenAIChatPath
		}
	}
	if p != "" && p[0] != '/' {
		p = "/" + p
	}
	return p
}

// isOpenAIPath reports whether a sub-path is an OpenAI-compatible route.
func isOpenAIPath(p string) bool { return strings.HasPrefix(p, "/v1/") }

// url returns the request URL: the service URL plus the sub-path.
func (a *Adapter) url(r *cloudreq.CloudRequest) (string, error) {
	svc := r.Target.Endpoint
	var base string
	switch {
	case httpadapter.IsAbsoluteURL(svc):
		b, _, err := a.core.CheckURL(svc)
		if err != nil {
			return "", err
		}
		base = b
	case svc == "":
		return "", invalid("Target.Endpoint (the service name) is required")
	case a.base == "":
		return "", invalid("Options.Endpoint is required when Target.Endpoint is a service name")
	default:
		base = a.base + "/api/predict/" + url.PathEscape(svc)
	}
	return base + a.subPath(r), nil
}

// Encode implements cloudreq.Encoder.
func (a *Adapter) Encode(req *cloudreq.CloudRequest, stream bool) (cloudreq.Payload, error) {
	if req.Generate == nil {
		return cloudreq.Payload{}, invalid("generate needs Generate input")
	}
	d, err := a.dialect(req)
	if err != nil {
		return cloudreq.Payload{}, err
	}
	var b []byte
	if d == DialectLegacy {
		b, err = encodeLegacy(req.Generate, stream)
	} else {
		o := openaiwire.EncodeOptions{Model: req.Target.Model, Stream: stream, OmitUsage: a.opts.OmitStreamUsage, Dialect: "pai-eas openai chat"}
		if openaiwire.IsCompletionsPath(a.subPath(req)) {
			o.Dialect = "pai-eas openai completions"
			b, err = openaiwire.EncodeCompletion(req.Generate, o)
		} else {
			b, err = openaiwire.EncodeChat(req.Generate, o)
		}
	}
	if err != nil {
		return cloudreq.Payload{}, errcodes.Wrap(err, errcodes.InvalidParam, "paieas: encoding the request: "+err.Error())
	}
	p := cloudreq.Payload{Body: b, ContentType: "application/json"}
	if stream && d == DialectOpenAI {
		p.Accept = "text/event-stream"
	}
	return p, nil
}

// sign returns the EAS SDK signature headers for body sent to path.
func sign(token, path, date string, body []byte) (auth, contentMD5 string) {
	sum := md5.Sum(body) //nolint:gosec // protocol-defined
	contentMD5 = hex.EncodeToString(sum[:])
	m := hmac.New(sha1.New, []byte(token))
	m.Write([]byte("POST\n" + contentMD5 + "\n" + signedContentType + "\n" + date + "\n" + path))
	return "EAS " + base64.StdEncoding.EncodeToString(m.Sum(nil)), contentMD5
}

// signedContentType is the Content-Type of signed requests, as the EAS SDKs
// send it.
const signedContentType = "application/octet-stream"

// do sends one attempt and returns a 2xx response, or the mapped error.
func (a *Adapter) do(ctx context.Context, call *cloudreq.Call, stream bool) (*http.Response, error) {
	r := call.Request
	u, err := a.url(r)
	if err != nil {
		return nil, err
	}
	openaiPath := isOpenAIPath(a.subPath(r))
	req := httpadapter.Request{URL: u}
	if stream && openaiPath {
		req.Accept = "text/event-stream"
	}
	tok := a.opts.Token
	var raw []byte
	if a.opts.Auth == AuthSignature && tok != "" {
		// The signature covers the body's MD5: it must be in memory.
		if raw = call.Payload.Body; raw == nil {
			if raw, err = io.ReadAll(call.Body()); err != nil {
				return nil, errcodes.Wrap(err, errcodes.InvalidParam, "paieas: reading the request body failed")
			}
		}
		req.Body = bytes.NewReader(raw)
	}
	req.Prepare = func(hr *http.Request) {
		switch {
		case tok == "":
		case a.opts.Auth == AuthToken, a.opts.Auth == AuthAuto && !openaiPath:
			hr.Header.Set("Authorization", tok)
		case a.opts.Auth == AuthBearer, a.opts.Auth == AuthAuto:
			hr.Header.Set("Authorization", "Bearer "+tok)
		case a.opts.Auth == AuthSignature:
			date := a.opts.Now().UTC().Format(http.TimeFormat)
			auth, sum := sign(tok, hr.URL.Path, date, raw)
			hr.Header.Set("Content-Type", signedContentType)
			hr.Header.Set("Content-MD5", sum)
			hr.Header.Set("Date", date)
			hr.Header.Set("Authorization", auth)
		}
	}
	return a.core.Do(ctx, call, req)
}

var (
	keepHeaders = []string{HeaderRequestID}
	idHeaders   = []string{HeaderRequestID}
)

// Invoke implements cloudreq.Adapter. Text, FinishReason and Usage are
// filled from an OpenAI completion or a legacy {"response":…} body.
func (a *Adapter) Invoke(ctx context.Context, call *cloudreq.Call) (*cloudreq.CloudResponse, error) {
	resp, err := a.do(ctx, call, false)
	if err != nil {
		return nil, err
	}
	action := call.Request.Action
	switch d, _ := a.dialect(call.Request); {
	case action == cloudreq.ActionGenerate && d == DialectLegacy:
		return a.core.Invoke(resp, action, `paieas: the response is not {"response":…}`, legacyAnswer)
	case action == cloudreq.ActionGenerate:
		return a.core.Invoke(resp, action, "paieas: the response is not an OpenAI completion", answers)
	}
	return a.core.Invoke(resp, action, "", invokeAnswers)
}

var (
	// answers reads a whole OpenAI-dialect answer.
	answers = openaiwire.Answers(openaiwire.Decode, bodyError)
	// invokeAnswers reads an invoke's answer: an OpenAI completion, else
	// a legacy {"response":…}.
	invokeAnswers = openaiwire.Answers(func(body []byte) (openaiwire.Result, error) {
		r, err := openaiwire.Decode(body)
		if err == nil && r.Error == nil && r.Text == "" {
			r.Text, _ = decodeLegacy(body)
		}
		return r, err
	}, bodyError)
)

// legacyAnswer reads a legacy generate answer, {"response":…}.
func legacyAnswer(_ *http.Response, out *cloudreq.CloudResponse) (httpadapter.Answer, error) {
	text, err := decodeLegacy(out.Data)
	return httpadapter.Answer{Text: text}, err
}

// Stream implements cloudreq.Streamer.
func (a *Adapter) Stream(ctx context.Context, call *cloudreq.Call) (cloudreq.ChunkStream, error) {
	resp, err := a.do(ctx, call, true)
	if err != nil {
		return nil, err
	}
	return a.core.Stream(resp, func(head *cloudreq.CloudResponse) (httpadapter.Framing, httpadapter.Decoder) {
		return a.framing(call.Request, head)
	}), nil
}

// framing says how a stream's body is framed and decoded: by
// Options.StreamFormat, else by its Content-Type and the dialect.
func (a *Adapter) framing(r *cloudreq.CloudRequest, head *cloudreq.CloudResponse) (httpadapter.Framing, httpadapter.Decoder) {
	d, _ := a.dialect(r)
	legacy := r.Action == cloudreq.ActionGenerate && d == DialectLegacy
	openai := isOpenAIPath(a.subPath(r)) || r.Action == cloudreq.ActionGenerate
	format := a.opts.StreamFormat
	if format == StreamAuto {
		switch {
		case httpadapter.IsEventStream(head.ContentType):
			format = StreamSSE
		case legacy:
			format = StreamNUL
		default:
			format = StreamPlain
		}
	}
	openaiDec := &openaiwire.StreamDecoder{Provider: cloudreq.ProviderAlibaba, RequestID: head.RequestID, Native: native(0)}
	switch {
	case format == StreamSSE && legacy:
		return httpadapter.FramingSSE, &legacyDecoder{mode: a.opts.LegacyStream}
	case format == StreamSSE && openai:
		return httpadapter.FramingSSE, openaiDec
	case format == StreamSSE:
		return httpadapter.FramingSSE, httpadapter.TextDecoder{}
	case format == StreamNUL && (legacy || !isOpenAIPath(a.subPath(r))):
		return httpadapter.FramingNUL, &legacyDecoder{mode: a.opts.LegacyStream, raw: !legacy}
	case format == StreamNUL:
		return httpadapter.FramingNUL, openaiDec
	case !legacy && openai && httpadapter.IsJSON(head.ContentType):
		return httpadapter.FramingWhole, openaiDec
	}
	return httpadapter.FramingRaw, httpadapter.TextDecoder{}
}
