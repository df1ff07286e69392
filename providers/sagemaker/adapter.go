package sagemaker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/aws/smithy-go/transport/http/protocol/restjson1"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
)

// Response headers kept in cloudreq.CloudResponse.Metadata.
const (
	HeaderInvokedVariant   = "X-Amzn-Invoked-Production-Variant"
	HeaderNewSessionID     = "X-Amzn-SageMaker-New-Session-Id"
	HeaderClosedSessionID  = "X-Amzn-SageMaker-Closed-Session-Id"
	HeaderCustomAttributes = "X-Amzn-SageMaker-Custom-Attributes"
)

// Options configures an Adapter. Pass it to New; option functions change a
// copy.
type Options struct {
	// Config is the AWS configuration to use. When nil, New loads the
	// default one (environment, shared files, IMDS) with
	// config.LoadDefaultConfig. Region and Credentials below override it.
	Config *aws.Config
	// Region overrides the configuration's region.
	Region string
	// Credentials overrides the configuration's credentials, for example
	// credentials.NewStaticCredentialsProvider(id, secret, ""). New wraps a
	// provider (here or in Config) in an aws.CredentialsCache unless it is
	// one already, as config.LoadDefaultConfig does: requests then sign
	// with cached credentials, and Retrieve runs only when they near
	// expiry, not once per request.
	Credentials aws.CredentialsProvider
	// BaseEndpoint overrides the service endpoint, e.g. the emulator's
	// "http://127.0.0.1:PORT".
	BaseEndpoint string
	// HTTPClient sends the requests (an *http.Client works). A caller's
	// client is the caller's to tune and to close: the adapter's Close
	// leaves its connections alone. An *http.Client is copied, set never
	// to follow redirects. Nil (and no HTTPClient in Config): the SDK's
	// default client, with the adapter's connection pool and header
	// timeout (256 idle connections per host instead of the SDK's 10,
	// ResponseHeaderTimeout; see the package doc), which the adapter's
	// Close closes.
	HTTPClient aws.HTTPClient
	// AllowInsecureHTTP permits a plain-http endpoint. Requests are signed
	// with the credentials, so New refuses an http:// endpoint unless this
	// is set. Use it for the local emulator only.
	AllowInsecureHTTP bool
	// Dialect is the generate dialect of endpoints not listed in
	// EndpointDialects (default DialectMessages).
	Dialect Dialect
	// EndpointDialects sets the generate dialect per endpoint name.
	EndpointDialects map[string]Dialect
	// OmitStreamUsage leaves stream_options.include_usage out of messages
	// dialect streams, for containers that reject it; usage is then
	// counted.
	OmitStreamUsage bool
	// Prompt flattens chat messages into the TGI "inputs" string. Nil: a
	// lone user message is sent as it is; otherwise each message becomes a
	// "role: content" line, followed by "assistant:".
	Prompt func([]cloudreq.Message) string
	// ClientOptions are applied last to the sagemakerruntime client
	// options. The client's own retries stay off whatever they set.
	ClientOptions []func(*sagemakerruntime.Options)
	// MaxResponseBytes bounds an InvokeEndpoint answer's body, which the
	// SDK reads whole into memory (default DefaultMaxResponseBytes): a
	// longer one fails with ERR_PAYLOAD_TOO_LARGE once the limit is read.
	// Streams are bounded per event instead.
	MaxResponseBytes int64
}

// DefaultMaxResponseBytes bounds an InvokeEndpoint answer's body.
const DefaultMaxResponseBytes = httpadapter.DefaultMaxResponse

// ResponseHeaderTimeout bounds the wait for a response's headers on the
// adapter's own HTTP client (no Options.HTTPClient): 15 minutes, the
// inactivity timeout aws-sdk-go-v2 itself assigns SageMaker Runtime (its
// opt-in default socket read timeouts), longer than the HTTP adapters'
// 10: an InvokeEndpoint answer comes with its headers only once the model
// produced all of it. It only keeps an endpoint that never answers from
// holding a call forever; bound calls more tightly with cloudreq's
// Timeout, AttemptTimeout and FirstChunkTimeout.
const ResponseHeaderTimeout = 15 * time.Minute

// Adapter is the cloudreq adapter for SageMaker real-time endpoints
// (provider "aws", service "sagemaker", actions invoke and generate). It
// implements cloudreq.Adapter, cloudreq.Streamer, cloudreq.Encoder and
// io.Closer, and is safe for concurrent use.
type Adapter struct {
	client *sagemakerruntime.Client
	opts   Options
	own    *http.Transport // the transport of the adapter's own client; nil for the caller's
	cfg    aws.Config      // the configuration the client was built from (NewAsync's S3 client)
}

var (
	_ cloudreq.Adapter  = (*Adapter)(nil)
	_ cloudreq.Streamer = (*Adapter)(nil)
	_ cloudreq.Encoder  = (*Adapter)(nil)
	_ io.Closer         = (*Adapter)(nil)
)

// New returns an Adapter. ctx bounds loading the default AWS configuration
// and is not kept.
func New(ctx context.Context, opts Options, optFns ...func(*Options)) (*Adapter, error) {
	for _, f := range optFns {
		f(&opts)
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if !opts.Dialect.valid() {
		return nil, errcodes.Errorf(errcodes.InvalidParam, "sagemaker: unknown dialect %q (want %q or %q)", opts.Dialect, DialectMessages, DialectTGI)
	}
	for ep, d := range opts.EndpointDialects {
		if !d.valid() {
			return nil, errcodes.Errorf(errcodes.InvalidParam, "sagemaker: unknown dialect %q for endpoint %q", d, ep)
		}
	}
	var cfg aws.Config
	if opts.Config != nil {
		cfg = opts.Config.Copy()
	} else {
		var lo []func(*config.LoadOptions) error
		if opts.Region != "" {
			lo = append(lo, config.WithRegion(opts.Region))
		}
		if opts.Credentials != nil {
			lo = append(lo, config.WithCredentialsProvider(opts.Credentials))
		}
		var err error
		if cfg, err = config.LoadDefaultConfig(ctx, lo...); err != nil {
			e := errcodes.Wrap(err, errcodes.InvalidParam, "sagemaker: loading the AWS configuration failed")
			e.Provider = cloudreq.ProviderAWS
			return nil, e
		}
	}
	if opts.Region != "" {
		cfg.Region = opts.Region
	}
	if opts.Credentials != nil {
		cfg.Credentials = opts.Credentials
	}
	cfg.Credentials = cached(cfg.Credentials)
	callerClient := opts.HTTPClient != nil || (opts.Config != nil && opts.Config.HTTPClient != nil)
	var own *http.Transport
	client := sagemakerruntime.NewFromConfig(cfg, func(o *sagemakerruntime.Options) {
		if opts.BaseEndpoint != "" {
			o.BaseEndpoint = aws.String(opts.BaseEndpoint)
		}
		if opts.HTTPClient != nil {
			o.HTTPClient = opts.HTTPClient
		}
		var mine aws.HTTPClient
		if b, ok := o.HTTPClient.(*awshttp.BuildableClient); ok && !callerClient {
			mine, own = ownClient(b)
			o.HTTPClient = mine
		}
		for _, f := range opts.ClientOptions {
			f(o)
		}
		if own != nil && o.HTTPClient != mine {
			own = nil // ClientOptions set a client of their own
		}
		// cloudreq's retry loop is in charge: one attempt per call here.
		o.Retryer = aws.NopRetryer{}
		o.RetryMaxAttempts = 0
		o.HTTPClient = ownBody{next: noRedirects(o.HTTPClient)}
		o.APIOptions = append(o.APIOptions, limitErrorBody)
	})
	if ep := aws.ToString(client.Options().BaseEndpoint); ep != "" {
		u, err := url.Parse(ep)
		if err != nil || u.Host == "" {
			return nil, errcodes.Errorf(errcodes.InvalidParam, "sagemaker: BaseEndpoint %q is not an absolute URL", ep)
		}
		if err := httpadapter.CheckPlainHTTP(cloudreq.ProviderAWS, u, "AWS credentials", httpadapter.Insecure(opts.AllowInsecureHTTP)); err != nil {
			return nil, err
		}
	}
	return &Adapter{client: client, opts: opts, own: own, cfg: cfg}, nil
}

// ownClient returns the adapter's own client, built from the SDK's default
// one with its settings resolved (dialer, TLS, timeouts, the read timeout
// when one is set), a connection pool for concurrent calls and a bound on
// the wait for response headers, and the transport it owns. The SDK would
// freeze b into a client whose transport is a copy of b's hidden in a
// wrapper without CloseIdleConnections: the adapter builds the client
// itself, so that Close can reach the transport.
func ownClient(b *awshttp.BuildableClient) (*http.Client, *http.Transport) {
	t := b.GetTransport()
	httpadapter.TuneTransport(t)
	t.ResponseHeaderTimeout = ResponseHeaderTimeout
	if d, ok := b.GetReadTimeout(); ok && d > 0 {
		dial := t.DialContext
		if dial == nil {
			dial = b.GetDialer().DialContext
		}
		t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &readTimeoutConn{Conn: c, timeout: d}, nil
		}
	}
	return &http.Client{Transport: t, Timeout: b.GetTimeout()}, t
}

// readTimeoutConn fails a read that waits longer than timeout for data, as
// the SDK's BuildableClient does with a read timeout: the deadline moves
// with each read, so a slow but progressing body is never cut.
type readTimeoutConn struct {
	net.Conn
	timeout time.Duration
}

// Read implements io.Reader.
func (c *readTimeoutConn) Read(p []byte) (int, error) {
	if err := c.Conn.SetReadDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(p)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return n, &awshttp.ResponseTimeoutError{TimeoutDur: c.timeout}
	}
	return n, err
}

// cached returns p wrapped in an aws.CredentialsCache, unless it is nil,
// one already, or anonymous. The sagemakerruntime client uses its
// Credentials as they are: an uncached provider would be asked for
// credentials on every request (an STS or IMDS round trip for most).
//
// The provider is then marked (credentialSource), so that a failure to get
// credentials is reported as one.
func cached(p aws.CredentialsProvider) aws.CredentialsProvider {
	switch p.(type) {
	case nil, aws.AnonymousCredentials, *aws.AnonymousCredentials:
		return p
	case *aws.CredentialsCache:
		return credentialSource{p}
	}
	return credentialSource{aws.NewCredentialsCache(p)}
}

// credentialSource is a credentials provider whose failures are marked as
// such (credentialsError): the SDK reports them wrapped in operation
// errors that say nothing of where they came from. It answers the SDK's
// type and source questions for the provider it holds.
type credentialSource struct{ aws.CredentialsProvider }

// Retrieve implements aws.CredentialsProvider.
func (c credentialSource) Retrieve(ctx context.Context) (aws.Credentials, error) {
	v, err := c.CredentialsProvider.Retrieve(ctx)
	if err != nil {
		return v, &credentialsError{err: err}
	}
	return v, nil
}

// IsCredentialsProvider answers aws.IsCredentialsProvider for the provider held.
func (c credentialSource) IsCredentialsProvider(target aws.CredentialsProvider) bool {
	return aws.IsCredentialsProvider(c.CredentialsProvider, target)
}

// ProviderSources reports the sources of the provider held, for the SDK's
// user agent.
func (c credentialSource) ProviderSources() []aws.CredentialSource {
	if s, ok := c.CredentialsProvider.(aws.CredentialProviderSource); ok {
		return s.ProviderSources()
	}
	return nil
}

// credentialsError is a credentials provider's failure.
type credentialsError struct{ err error }

func (e *credentialsError) Error() string { return "getting AWS credentials: " + e.err.Error() }
func (e *credentialsError) Unwrap() error { return e.err }

// maxErrorBody bounds what is read of an error response's body.
const maxErrorBody = 64 << 10

// limitErrorBody caps what the SDK reads of an error response's body. The
// SDK reads the whole body into memory to parse it, so a 100 MB error page
// from a proxy would cost 100 MB; SageMaker's own error bodies are small,
// and one cut at the limit is reported by its HTTP status.
func limitErrorBody(s *middleware.Stack) error {
	return s.Deserialize.Add(middleware.DeserializeMiddlewareFunc("cloudinferErrorBodyLimit",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleDeserialize(ctx, in)
			if r, ok := out.RawResponse.(*smithyhttp.Response); ok && err == nil && r.Body != nil && r.StatusCode >= 300 {
				r.Body = struct {
					io.Reader
					io.Closer
				}{io.LimitReader(r.Body, maxErrorBody), r.Body}
			}
			return out, md, err
		}), middleware.After)
}

// tooLarge is the read error of a successful answer's body past its limit.
type tooLarge struct{ limit int64 }

func (e *tooLarge) Error() string {
	return "response body exceeds " + strconv.FormatInt(e.limit, 10) + " bytes"
}

// cappedBody fails a read once more than its limit was read.
type cappedBody struct {
	io.ReadCloser
	left, limit int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, &tooLarge{b.limit}
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if b.left -= int64(n); b.left < 0 {
		return n, &tooLarge{b.limit}
	}
	return n, err
}

// limitBody bounds a successful answer's body to limit bytes, for one
// InvokeEndpoint call: the SDK reads it whole into memory before returning.
func limitBody(limit int64) func(*sagemakerruntime.Options) {
	return func(o *sagemakerruntime.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Deserialize.Add(middleware.DeserializeMiddlewareFunc("cloudinferBodyLimit",
				func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
					out, md, err := next.HandleDeserialize(ctx, in)
					if r, ok := out.RawResponse.(*smithyhttp.Response); ok && err == nil && r.Body != nil && r.StatusCode < 300 {
						r.Body = &cappedBody{ReadCloser: r.Body, left: limit, limit: limit}
					}
					return out, md, err
				}), middleware.After)
		})
	}
}

// noRedirects returns c set never to follow a redirect: net/http would
// send the signed headers, the session token among them, to wherever a
// 307 or 308 points (across hosts it strips only Authorization), and
// SageMaker does not redirect. A BuildableClient (a caller's: the
// adapter's own is an *http.Client, see ownClient) is frozen into the
// *http.Client it builds, with all its settings; another aws.HTTPClient
// is used as it is.
func noRedirects(c aws.HTTPClient) aws.HTTPClient {
	if b, ok := c.(*awshttp.BuildableClient); ok {
		c = b.Freeze()
	}
	hc, ok := c.(*http.Client)
	if !ok {
		return c
	}
	cc := *hc
	cc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &cc
}

// ownBody is an aws.HTTPClient that hands the transport its own in-memory
// copy of the request body. smithy-go closes the request body as soon as
// Do returns, that is when the response headers arrive; net/http may still
// be reading that body then (it reads once more to check for extra bytes),
// gets io.EOF from the closed reader and tears the connection down,
// cutting a streamed response short. A copy the SDK does not hold cannot be
// closed under the transport.
type ownBody struct{ next aws.HTTPClient }

// Do implements aws.HTTPClient.
func (c ownBody) Do(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return c.next.Do(req)
	}
	b, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, err
	}
	r := new(http.Request)
	*r = *req
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	r.ContentLength = int64(len(b))
	return c.next.Do(r)
}

// CloseIdleConnections closes the idle connections of the wrapped client,
// when it can.
func (c ownBody) CloseIdleConnections() {
	if ci, ok := c.next.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// Client returns the underlying sagemakerruntime client.
func (a *Adapter) Client() *sagemakerruntime.Client { return a.client }

// Close closes the idle connections of the adapter's own HTTP client (the
// SDK's default one); a caller's HTTPClient is left alone. Requests in
// flight are not interrupted.
func (a *Adapter) Close() error {
	if a.own != nil {
		a.own.CloseIdleConnections()
	}
	return nil
}

// Describe implements cloudreq.Adapter.
func (a *Adapter) Describe() cloudreq.Description {
	return cloudreq.Description{
		Provider: cloudreq.ProviderAWS,
		Service:  cloudreq.ServiceSageMaker,
		Actions:  []string{cloudreq.ActionInvoke, cloudreq.ActionGenerate},
	}
}

// Invoke implements cloudreq.Adapter with InvokeEndpoint.
func (a *Adapter) Invoke(ctx context.Context, call *cloudreq.Call) (*cloudreq.CloudResponse, error) {
	req := call.Request
	body, err := payloadBytes(call)
	if err != nil {
		return nil, err
	}
	at := req.Attributes
	in := &sagemakerruntime.InvokeEndpointInput{
		EndpointName:            aws.String(req.Target.Endpoint),
		Body:                    body,
		ContentType:             aws.String(contentType(call.Payload)),
		Accept:                  optional(call.Payload.Accept),
		TargetVariant:           optional(req.Target.Variant),
		TargetModel:             optional(req.Target.Model),
		InferenceComponentName:  optional(at.InferenceComponent),
		CustomAttributes:        optional(at.CustomAttributes),
		SessionId:               optional(at.SessionID),
		InferenceId:             optional(inferenceID(req)),
		TargetContainerHostname: optional(at.TargetContainerHostname),
		EnableExplanations:      optional(at.EnableExplanations),
		PrefixAwareId:           optional(at.PrefixAwareID),
	}
	out, err := a.client.InvokeEndpoint(ctx, in, withHeaders(req.Header, nil), limitBody(a.opts.MaxResponseBytes))
	var tl *tooLarge
	if errors.As(err, &tl) {
		e := errcodes.Wrap(err, errcodes.PayloadTooLarge, fmt.Sprintf("sagemaker: response body exceeds %d bytes", tl.limit))
		e.Provider, e.Retryable = cloudreq.ProviderAWS, false
		e.HTTPStatus, e.RequestID, _ = responseOf(err)
		return nil, e
	}
	if err != nil {
		return nil, mapError(err)
	}
	raw := rawResponse(out.ResultMetadata)
	resp := &cloudreq.CloudResponse{
		StatusCode:  statusOf(raw),
		Data:        out.Body,
		ContentType: aws.ToString(out.ContentType),
		Metadata:    metadata(out.InvokedProductionVariant, out.NewSessionId, out.ClosedSessionId, out.CustomAttributes),
		RequestID:   requestID(out.ResultMetadata),
		Header:      headerOf(raw),
	}
	if req.Action != cloudreq.ActionGenerate {
		// A raw invoke's body is the caller's: Text, FinishReason and
		// Usage are filled when it is recognisably a generation of the
		// container dialects (TGI, OpenAI chat or completions), and left
		// empty, with no error, otherwise.
		if g, err := parseGeneration(out.Body); err == nil {
			resp.Text, resp.FinishReason, resp.Usage = g.Text, g.Finish, g.Usage
		}
		return resp, nil
	}
	g, err := parseGeneration(out.Body)
	if err != nil {
		e := errcodes.Wrap(err, errcodes.ModelError, "sagemaker: the model's response is not a generation: "+err.Error())
		e.Provider, e.HTTPStatus, e.RequestID, e.Retryable = cloudreq.ProviderAWS, resp.StatusCode, resp.RequestID, false
		var ie *inbandError
		if errors.As(err, &ie) {
			e.ProviderCode = ie.Code // the model's own error type or code
		}
		return nil, e
	}
	resp.Text, resp.FinishReason, resp.Usage = g.Text, g.Finish, g.Usage
	richAnswer(resp, req.Generate != nil && req.Generate.Logprobs)
	return resp, nil
}

// Stream implements cloudreq.Streamer with InvokeEndpointWithResponseStream.
// For ActionInvoke each chunk is one PayloadPart's bytes; for
// ActionGenerate each chunk is one parsed line of the model's stream.
func (a *Adapter) Stream(ctx context.Context, call *cloudreq.Call) (cloudreq.ChunkStream, error) {
	req := call.Request
	if req.Target.Model != "" {
		e := errcodes.New(errcodes.InvalidParam, "sagemaker: InvokeEndpointWithResponseStream has no target model; leave Target.Model empty for streams")
		e.Provider = cloudreq.ProviderAWS
		return nil, e
	}
	if req.Attributes.EnableExplanations != "" {
		e := errcodes.New(errcodes.InvalidParam, "sagemaker: InvokeEndpointWithResponseStream has no EnableExplanations; leave Attributes.EnableExplanations empty for streams")
		e.Provider = cloudreq.ProviderAWS
		return nil, e
	}
	body, err := payloadBytes(call)
	if err != nil {
		return nil, err
	}
	at := req.Attributes
	in := &sagemakerruntime.InvokeEndpointWithResponseStreamInput{
		EndpointName:            aws.String(req.Target.Endpoint),
		Body:                    body,
		ContentType:             aws.String(contentType(call.Payload)),
		Accept:                  optional(call.Payload.Accept),
		TargetVariant:           optional(req.Target.Variant),
		InferenceComponentName:  optional(at.InferenceComponent),
		CustomAttributes:        optional(at.CustomAttributes),
		SessionId:               optional(at.SessionID),
		InferenceId:             optional(inferenceID(req)),
		TargetContainerHostname: optional(at.TargetContainerHostname),
		PrefixAwareId:           optional(at.PrefixAwareID),
	}
	watch := new(bodyWatch)
	out, err := a.client.InvokeEndpointWithResponseStream(ctx, in, withHeaders(req.Header, watch))
	if err != nil {
		return nil, mapError(err)
	}
	raw := rawResponse(out.ResultMetadata)
	head := &cloudreq.CloudResponse{
		StatusCode:  statusOf(raw),
		ContentType: aws.ToString(out.ContentType),
		Metadata:    metadata(out.InvokedProductionVariant, nil, nil, out.CustomAttributes),
		RequestID:   requestID(out.ResultMetadata),
		Header:      headerOf(raw),
	}
	cs := newChunkStream(ctx, out.GetStream(), watch, head, req.Action == cloudreq.ActionGenerate)
	cs.logprobs = req.Generate != nil && req.Generate.Logprobs
	return cs, nil
}

// payloadBytes returns the call's body as bytes (the SDK takes a []byte).
func payloadBytes(call *cloudreq.Call) ([]byte, error) {
	if call.Payload.Body != nil || call.Payload.Reader == nil {
		return call.Payload.Body, nil
	}
	b, err := io.ReadAll(call.Payload.Reader)
	if err != nil {
		e := errcodes.Wrap(err, errcodes.InvalidParam, "sagemaker: reading the request body failed")
		e.Provider = cloudreq.ProviderAWS
		return nil, e
	}
	return b, nil
}

func contentType(p cloudreq.Payload) string {
	if p.ContentType != "" {
		return p.ContentType
	}
	return "application/json"
}

// inferenceID is the request's SageMaker inference id: the attribute, or
// the client request id when it is a valid inference id (SageMaker refuses
// the whole call otherwise, and the caller did not ask for one).
func inferenceID(req *cloudreq.CloudRequest) string {
	if req.Attributes.InferenceID != "" {
		return req.Attributes.InferenceID
	}
	if validInferenceID(req.RequestID) {
		return req.RequestID
	}
	return ""
}

// maxInferenceID is the longest inference id SageMaker accepts.
const maxInferenceID = 64

// validInferenceID reports whether s is an inference id SageMaker accepts:
// 1 to 64 printable ASCII characters, the first not a space (its pattern
// \A\S[\p{Print}]*\z).
func validInferenceID(s string) bool {
	if s == "" || len(s) > maxInferenceID || s[0] == ' ' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}

// reservedHeaders are never taken from CloudRequest.Header: the SDK and the
// signer own them.
var reservedHeaders = map[string]bool{
	"Authorization": true, "Host": true, "Content-Length": true, "Content-Type": true,
	"X-Amz-Date": true, "X-Amz-Security-Token": true, "X-Amz-Content-Sha256": true,
}

// withHeaders returns a per-call option that adds the request's extra
// headers before signing and, for streams, watches the response body.
func withHeaders(h http.Header, watch *bodyWatch) func(*sagemakerruntime.Options) {
	return func(o *sagemakerruntime.Options) {
		if len(h) > 0 {
			o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
				return s.Build.Add(middleware.BuildMiddlewareFunc("cloudinferHeaders",
					func(ctx context.Context, in middleware.BuildInput, next middleware.BuildHandler) (middleware.BuildOutput, middleware.Metadata, error) {
						if r, ok := in.Request.(*smithyhttp.Request); ok {
							for k, vs := range h {
								k = http.CanonicalHeaderKey(k)
								if reservedHeaders[k] {
									continue
								}
								r.Header[k] = append([]string(nil), vs...)
							}
						}
						return next.HandleBuild(ctx, in)
					}), middleware.After)
			})
		}
		if watch != nil {
			// Each stream its own protocol: smithy-go's restJson1 keeps one
			// event stream decoder, with one payload buffer, per protocol
			// value, and the streams of one client would share and race
			// on it (go test -race). New ignores its schema argument.
			o.Protocol = restjson1.New(nil)
			o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
				return s.Deserialize.Add(middleware.DeserializeMiddlewareFunc("cloudinferBodyWatch",
					func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
						out, md, err := next.HandleDeserialize(ctx, in)
						if r, ok := out.RawResponse.(*smithyhttp.Response); ok && err == nil && r.Body != nil && r.StatusCode < 300 {
							watch.rc = r.Body
							r.Body = watch
						}
						return out, md, err
					}), middleware.After)
			})
			o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
				return s.Deserialize.Add(middleware.DeserializeMiddlewareFunc("cloudinferCloseOnError",
					func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
						out, md, err := next.HandleDeserialize(ctx, in)
						// The SDK's event stream deserializer leaves the
						// body of an error response open: close it, so a
						// failed attempt never holds its connection.
						if r, ok := out.RawResponse.(*smithyhttp.Response); ok && err != nil && r.Body != nil {
							_ = r.Body.Close()
						}
						return out, md, err
					}), middleware.Before)
			})
		}
	}
}

func rawResponse(md middleware.Metadata) *smithyhttp.Response {
	r, _ := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response)
	return r
}

func statusOf(r *smithyhttp.Response) int {
	if r == nil || r.Response == nil {
		return http.StatusOK
	}
	return r.StatusCode
}

func requestID(md middleware.Metadata) string {
	id, _ := awsmiddleware.GetRequestIDMetadata(md)
	return id
}

// metadata collects the response headers worth keeping.
func metadata(variant, newSession, closedSession, custom *string) map[string]string {
	m := map[string]string{}
	for k, v := range map[string]*string{
		HeaderInvokedVariant: variant, HeaderNewSessionID: newSession,
		HeaderClosedSessionID: closedSession, HeaderCustomAttributes: custom,
	} {
		if v != nil && *v != "" {
			m[k] = *v
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// headerOf returns the raw response's headers, nil when there is none.
func headerOf(r *smithyhttp.Response) http.Header {
	if r == nil || r.Response == nil {
		return nil
	}
	return r.Header
}
