package httpadapter

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// DefaultMaxEvent bounds one stream frame (an SSE line and event, a
// NUL-delimited record): 1 MiB.
const DefaultMaxEvent = 1 << 20

// Limits bound what an adapter reads of a response. A field left zero (or
// negative) takes its default.
type Limits struct {
	// MaxResponseBytes bounds a non-streaming response body, and a whole
	// body read as one stream chunk (default DefaultMaxResponse, 64 MiB).
	MaxResponseBytes int64
	// MaxErrorBytes bounds what is read of an error body (default
	// DefaultMaxErrorBody, 64 KiB); the rest is never read.
	MaxErrorBytes int64
	// MaxEventBytes bounds one stream frame: an SSE line and event, or a
	// NUL-delimited record (default DefaultMaxEvent, 1 MiB).
	MaxEventBytes int
}

// WithDefaults returns l with its unset fields at their defaults.
func (l Limits) WithDefaults() Limits {
	if l.MaxResponseBytes <= 0 {
		l.MaxResponseBytes = DefaultMaxResponse
	}
	if l.MaxErrorBytes <= 0 {
		l.MaxErrorBytes = DefaultMaxErrorBody
	}
	if l.MaxEventBytes <= 0 {
		l.MaxEventBytes = DefaultMaxEvent
	}
	return l
}

// ErrorTable is an adapter's error table: it maps a response whose status
// is not 2xx, of which body is what was read (at most
// Limits.MaxErrorBytes) and requestID the id its headers carry, to the
// adapter's error (NewError builds one).
type ErrorTable func(resp *http.Response, body []byte, requestID string) *errcodes.Error

// Config configures a Core.
type Config struct {
	// Provider and Service are the adapter's cloudreq names; Actions the
	// actions it serves (default invoke and generate). Provider fills the
	// Provider of the errors the core returns.
	Provider, Service string
	Actions           []string
	// Name begins the core's messages ("openai: building the request
	// failed").
	Name string
	// HTTPClient sends the requests: the caller's, whose timeout applies
	// and whose connections Close leaves alone. Nil: the core builds its
	// own client on a NewTransport, whose idle connections Close closes.
	HTTPClient *http.Client
	// Limits bound what is read.
	Limits Limits
	// Credential names the credential the adapter sends, for the refusal
	// of plain http ("the API key"); "" when it sends none.
	// AllowInsecureHTTP permits plain http with one (CheckPlainHTTP).
	Credential        string
	AllowInsecureHTTP bool
	// RequestIDHeader, when set, carries CloudRequest.RequestID, unless
	// the caller's headers set it.
	RequestIDHeader string
	// KeepHeaders are the response headers kept in Metadata; the first
	// present of IDHeaders is the request id.
	KeepHeaders, IDHeaders []string
	// Errors is the adapter's error table (nil: StatusError).
	Errors ErrorTable
}

// Core is the HTTP plumbing of one adapter: its description, its client
// (and the transport it owns), its limits, the base URL and plain-http
// rule, the sending of an attempt with the status check and the bounded
// read of an error body handed to the adapter's error table, the read of
// a whole response and the framing of a stream. The adapter keeps its
// dialect: URLs, bodies, authentication and its error table. A Core is
// safe for concurrent use.
type Core struct {
	cfg    Config
	idKey  string // Config.RequestIDHeader, canonical
	client *http.Client
	own    *http.Transport // the transport New built, nil for the caller's client
}

// New returns a Core for cfg, its limits at their defaults.
func New(cfg Config) *Core {
	cfg.Limits = cfg.Limits.WithDefaults()
	if cfg.Actions == nil {
		cfg.Actions = []string{cloudreq.ActionInvoke, cloudreq.ActionGenerate}
	}
	c := &Core{cfg: cfg}
	if cfg.RequestIDHeader != "" {
		c.idKey = http.CanonicalHeaderKey(cfg.RequestIDHeader)
	}
	if c.client = cfg.HTTPClient; c.client == nil {
		c.own = NewTransport()
		c.client = &http.Client{Transport: c.own}
	}
	return c
}

// Describe returns the adapter's cloudreq.Description.
func (c *Core) Describe() cloudreq.Description {
	return cloudreq.Description{Provider: c.cfg.Provider, Service: c.cfg.Service, Actions: slices.Clone(c.cfg.Actions)}
}

// Close closes the idle connections of the transport the core built for
// itself; a caller's client is left alone. Requests in flight are not
// interrupted.
func (c *Core) Close() error {
	if c.own != nil {
		c.own.CloseIdleConnections()
	}
	return nil
}

// Client returns the client that sends the requests.
func (c *Core) Client() *http.Client { return c.client }

// OwnTransport returns the transport the core built, nil when it sends
// through the caller's client.
func (c *Core) OwnTransport() *http.Transport { return c.own }

// Limits returns the limits, at their defaults where unset.
func (c *Core) Limits() Limits { return c.cfg.Limits }

// Invalid returns an ERR_INVALID_PARAM error of provider, which its text
// need not name.
func Invalid(provider, format string, args ...any) *errcodes.Error {
	e := errcodes.Errorf(errcodes.InvalidParam, format, args...)
	e.Provider = provider
	return e
}

// CheckURL validates a base URL: an absolute http(s) URL, to which the
// adapter's credential may go (CheckPlainHTTP: over plain http only with
// AllowInsecureHTTP). It returns the URL without user info, query,
// fragment and trailing slash, and its raw query apart.
func (c *Core) CheckURL(raw string) (base, query string, err error) {
	u, perr := url.Parse(raw)
	if perr != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", "", Invalid(c.cfg.Provider, "%q is not an absolute http(s) URL", URLForMessage(raw))
	}
	if err := CheckPlainHTTP(c.cfg.Provider, u, c.cfg.Credential, Insecure(c.cfg.AllowInsecureHTTP)); err != nil {
		return "", "", err
	}
	query = u.RawQuery
	u.User, u.RawQuery, u.ForceQuery, u.Fragment = nil, "", false, ""
	return strings.TrimRight(u.String(), "/"), query, nil
}

// Request is what an adapter's dialect says of one attempt's HTTP request
// (Core.Do).
type Request struct {
	// URL is where the POST goes.
	URL string
	// Body, when set, is sent instead of the call's payload.
	Body io.Reader
	// Accept is sent when the payload names none ("": the caller's
	// headers decide).
	Accept string
	// DefaultAccept is sent when neither the payload, Accept nor the
	// caller's headers name one.
	DefaultAccept string
	// Prepare, when set, finishes the request: authentication and the
	// dialect's own headers.
	Prepare func(*http.Request)
}

// Do sends one attempt: a POST of the call's body to r.URL with the
// caller's headers, Content-Type (the payload's, default
// application/json), Accept (the payload's, else r.Accept, else the
// caller's, else r.DefaultAccept), the request id
// (Config.RequestIDHeader) and what r.Prepare sets. It returns a 2xx
// response, whose body the caller closes, or the error: the transport's
// (TransportError), or the error table's for another status (Check).
func (c *Core) Do(ctx context.Context, call *cloudreq.Call, r Request) (*http.Response, error) {
	body := r.Body
	if body == nil {
		body = call.Body()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, body)
	if err != nil {
		return nil, errcodes.Wrap(err, errcodes.InvalidParam, c.cfg.Name+": building the request failed")
	}
	h := req.Header
	addHeaders(h, call)
	var vals headerValues
	accept := acceptOf(call, r.Accept)
	if accept == "" && h.Get("Accept") == "" {
		accept = r.DefaultAccept
	}
	if accept != "" {
		vals.set(h, "Accept", accept)
	}
	vals.set(h, "Content-Type", ContentType(call.Payload))
	if k, id := c.idKey, call.Request.RequestID; k != "" && id != "" && h.Get(k) == "" {
		vals.set(h, k, id)
	}
	if r.Prepare != nil {
		r.Prepare(req)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, TransportError(c.cfg.Provider, err)
	}
	return c.Check(resp)
}

// headerValues hands out the one-value slices of the headers Do sets
// from one array, so that they cost one allocation between them rather
// than one each (as Header.Set's would). Each slice's capacity is its
// length, so an append to one copies it.
type headerValues struct{ buf []string }

// set sets header k (canonical) of h to v.
func (hv *headerValues) set(h http.Header, k, v string) {
	if len(hv.buf) == cap(hv.buf) {
		hv.buf = make([]string, 0, 4)
	}
	hv.buf = append(hv.buf, v)
	n := len(hv.buf)
	h[k] = hv.buf[n-1 : n : n]
}

// addHeaders adds the call's request headers to h.
func addHeaders(h http.Header, call *cloudreq.Call) {
	for k, vs := range call.Request.Header {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
}

// SetHeaders adds the call's request headers to h and sets Accept: the
// payload's, else accept when it is not "".
func SetHeaders(h http.Header, call *cloudreq.Call, accept string) {
	addHeaders(h, call)
	if accept = acceptOf(call, accept); accept != "" {
		h.Set("Accept", accept)
	}
}

// acceptOf returns the Accept a call asks for: its payload's, else accept.
func acceptOf(call *cloudreq.Call, accept string) string {
	if a := call.Payload.Accept; a != "" {
		return a
	}
	return accept
}

// ContentType returns a payload's Content-Type, default application/json.
func ContentType(p cloudreq.Payload) string {
	if p.ContentType != "" {
		return p.ContentType
	}
	return "application/json"
}

// Check returns a 2xx response as it is. Any other status is the error
// table's mapping of its body, of which at most Limits.MaxErrorBytes is
// read (the rest never is); the body is closed.
func (c *Core) Check(resp *http.Response) (*http.Response, error) {
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return resp, nil
	}
	defer resp.Body.Close()
	body, _, _ := ReadLimited(resp.Body, c.cfg.Limits.MaxErrorBytes)
	rid := FirstHeader(resp.Header, c.cfg.IDHeaders...)
	if c.cfg.Errors == nil {
		return nil, StatusError(c.cfg.Provider, resp, body, rid)
	}
	return nil, c.cfg.Errors(resp, body, rid)
}

// StatusError is the error table of a provider that has none of its own:
// the code errcodes.ForHTTPStatus gives the status (ERR_UNKNOWN for one
// it does not know), the status as ProviderCode and the body's text
// (ErrorText) as the message.
func StatusError(provider string, resp *http.Response, body []byte, requestID string) *errcodes.Error {
	code := errcodes.ForHTTPStatus(resp.StatusCode)
	if code == "" {
		code = errcodes.Unknown
	}
	return NewError(code, provider, resp, strconv.Itoa(resp.StatusCode), ErrorText(body, resp.Header.Get("Content-Type")), requestID, nil)
}

// Head returns the CloudResponse known from a response's status and
// headers: status, content type, the kept headers as Metadata, the request
// id and the headers themselves.
func (c *Core) Head(resp *http.Response) *cloudreq.CloudResponse {
	return &cloudreq.CloudResponse{
		StatusCode:  resp.StatusCode,
		ContentType: resp.Header.Get("Content-Type"),
		Metadata:    Metadata(resp.Header, c.cfg.KeepHeaders...),
		RequestID:   FirstHeader(resp.Header, c.cfg.IDHeaders...),
		Header:      resp.Header,
	}
}

// Read reads a 2xx response whole, at most Limits.MaxResponseBytes, and
// closes its body: its Head with the body in Data. A read failure is a
// transport error and a longer body ERR_PAYLOAD_TOO_LARGE, both with the
// response's request id.
func (c *Core) Read(resp *http.Response) (*cloudreq.CloudResponse, error) {
	defer resp.Body.Close()
	out := c.Head(resp)
	limit := c.cfg.Limits.MaxResponseBytes
	body, cut, err := ReadLimitedSize(resp.Body, limit, resp.ContentLength)
	if err != nil {
		e := TransportError(c.cfg.Provider, err)
		e.RequestID = out.RequestID
		return nil, e
	}
	if cut {
		e := errcodes.Errorf(errcodes.PayloadTooLarge, "%s: response body exceeds %d bytes", c.cfg.Name, limit)
		e.Provider, e.HTTPStatus, e.RequestID = c.cfg.Provider, resp.StatusCode, out.RequestID
		return nil, e
	}
	out.Data = body
	return out, nil
}

// Answer is what a dialect read of a whole 2xx answer's body.
type Answer struct {
	// Text, FinishReason and Usage fill the CloudResponse.
	Text, FinishReason string
	Usage              *cloudreq.Usage
	// Err, when set, is the error the body is (an error object in a 2xx
	// answer), mapped by the adapter's error table.
	Err error
}

// AnswerDecoder reads a whole 2xx answer, out with its body in Data, that
// came with resp. Its error says that the body is no answer of the
// dialect.
type AnswerDecoder func(resp *http.Response, out *cloudreq.CloudResponse) (Answer, error)

// Invoke reads a 2xx response whole (Read) and fills its Text,
// FinishReason and Usage with what decode reads of it, for invoke as for
// generate. An invoke answer that is not JSON is not decoded, and one that
// decode cannot read is left in Data alone; a generate answer that decode
// cannot read is ERR_MODEL_ERROR (Malformed, msg naming what was expected,
// "openai: the response is not an OpenAI completion"). An error object in
// the answer is its error.
func (c *Core) Invoke(resp *http.Response, action, msg string, decode AnswerDecoder) (*cloudreq.CloudResponse, error) {
	out, err := c.Read(resp)
	if err != nil {
		return nil, err
	}
	generate := action == cloudreq.ActionGenerate
	if !generate && !IsJSON(out.ContentType) {
		return out, nil
	}
	a, err := decode(resp, out)
	switch {
	case err != nil && generate:
		e := Malformed(c.cfg.Provider, msg, err)
		e.HTTPStatus, e.RequestID = out.StatusCode, out.RequestID
		return nil, e
	case err != nil:
		return out, nil
	case a.Err != nil:
		return nil, a.Err
	}
	out.Text, out.FinishReason = a.Text, a.FinishReason
	if a.Usage != nil {
		out.Usage = *a.Usage
	}
	return out, nil
}

// FramingOf returns how a stream's body is framed by its Content-Type: SSE
// for text/event-stream, one whole chunk for JSON (a server that answered
// with a plain response), raw bytes otherwise.
func FramingOf(contentType string) Framing {
	switch {
	case IsEventStream(contentType):
		return FramingSSE
	case IsJSON(contentType):
		return FramingWhole
	}
	return FramingRaw
}

// Stream returns the stream of a 2xx response. pick says, from the
// response's head, how the body is framed and decoded; a frame is bounded
// by Limits.MaxEventBytes, a whole body by Limits.MaxResponseBytes.
func (c *Core) Stream(resp *http.Response, pick func(head *cloudreq.CloudResponse) (Framing, Decoder)) *Stream {
	head := c.Head(resp)
	f, dec := pick(head)
	limit := c.cfg.Limits.MaxEventBytes
	if f == FramingWhole {
		limit = int(c.cfg.Limits.MaxResponseBytes)
	}
	return NewStream(head, resp.Body, StreamConfig{Provider: c.cfg.Provider, Framing: f, Decoder: dec, MaxFrame: limit})
}
