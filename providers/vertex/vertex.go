package vertex

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"time"

	aiplatform "cloud.google.com/go/aiplatform/apiv1"
	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
	gax "github.com/googleapis/gax-go/v2"
	"google.golang.org/api/option"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/latency/grpctrace"
)

// Options configure an Adapter.
type Options struct {
	// Project and Location complete bare endpoint ids and model names into
	// resource names. Location also picks the regional service host
	// ({Location}-aiplatform.googleapis.com:443) when Endpoint is empty.
	Project  string
	Location string
	// Endpoint overrides the service's host:port, e.g. "127.0.0.1:8081" for
	// the emulator or a private service connect address.
	Endpoint string
	// DedicatedEndpoint is the DNS name of an endpoint with a dedicated
	// public endpoint (ENDPOINT_ID.REGION-PROJECT_NUMBER.prediction.vertexai.goog,
	// the endpoint's dedicatedEndpointDns): the adapter dials it (port 443
	// unless given) instead of the shared regional host, and sends each call
	// the x-vertex-ai-endpoint-id metadata that gRPC requests to a dedicated
	// endpoint need. Endpoint, when set too, is dialled instead (a proxy or
	// the emulator); the metadata is still sent. Only endpoints (not
	// publisher models) can be dedicated.
	DedicatedEndpoint string
	// ClientOptions are passed to aiplatform.NewPredictionClient after the
	// adapter's own, so they win. Without credentials options the client
	// uses Application Default Credentials.
	ClientOptions []option.ClientOption
	// Insecure dials Endpoint in plain text, for the emulator. It also turns
	// authentication off: credentials are never sent over a plain-text
	// connection (gRPC refuses to, and there is no switch to allow it).
	Insecure bool
	// MaxResponseBytes bounds a response message, which gRPC reads whole
	// into memory (default DefaultMaxResponseBytes, as the HTTP adapters):
	// a larger one fails with ERR_PAYLOAD_TOO_LARGE. For a stream it
	// bounds each message. The aiplatform client's own default is 2 GiB.
	// A gRPC dial option in ClientOptions
	// (grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(n))) overrides
	// it.
	MaxResponseBytes int
	// Transport is how calls travel: TransportGRPC (the default, also
	// "") or TransportREST, Vertex AI's REST API (JSON over HTTPS; see
	// the package doc). With REST, Endpoint is a host[:port] (https, or
	// http with Insecure) or a URL, ClientOptions name the credentials
	// (their gRPC dial options are ignored), and HTTPClient sends the
	// requests.
	Transport Transport
	// HTTPClient sends the REST transport's requests: the caller's
	// transport, timeout and redirect policy, its connections left alone
	// by Close. Nil: the adapter's own transport (the HTTP adapters').
	HTTPClient *http.Client
}

// DefaultMaxResponseBytes bounds a response message: 64 MiB, the HTTP
// adapters' bound on a response body.
const DefaultMaxResponseBytes = httpadapter.DefaultMaxResponse

// Keepalive pings of the client's connections (see the package doc):
// a connection with calls in flight that received nothing for
// keepaliveTime is pinged, and closed, failing its calls, when the answer
// does not come within keepaliveTimeout.
const (
	keepaliveTime    = 5 * time.Minute
	keepaliveTimeout = 20 * time.Second
)

// Adapter is the Vertex AI adapter: a cloudreq.Adapter, Streamer, Encoder
// and io.Closer over one aiplatform PredictionClient. It is safe for
// concurrent use.
type Adapter struct {
	opts   Options
	client *aiplatform.PredictionClient // nil with TransportREST
	rest   *restTransport               // nil with TransportGRPC
}

// Interface checks.
var (
	_ cloudreq.Adapter  = (*Adapter)(nil)
	_ cloudreq.Streamer = (*Adapter)(nil)
	_ cloudreq.Encoder  = (*Adapter)(nil)
	_ io.Closer         = (*Adapter)(nil)
)

// New dials the prediction service and returns an Adapter. Option
// functions are applied to a copy of opts. ctx is used only while
// dialing and looking up credentials.
//
// The client it builds has no gax retries and no default timeouts (the
// cloudreq retry loop and deadlines are in charge), gRPC's own retries are
// disabled, the SDK's default OpenTelemetry handler is off (cloudreq's
// observers trace calls), and a gRPC stats handler times each attempt.
// Response messages are bounded by Options.MaxResponseBytes and
// connections with calls in flight send keepalive pings (after 5 minutes
// without a frame, answer within 20 s); Options.ClientOptions come after
// these and override them.
func New(ctx context.Context, opts Options, optFns ...func(*Options)) (*Adapter, error) {
	for _, f := range optFns {
		f(&opts)
	}
	opts.ClientOptions = append([]option.ClientOption(nil), opts.ClientOptions...)
	if opts.Insecure && opts.Endpoint == "" {
		return nil, invalid("Options.Insecure needs Options.Endpoint (the emulator's gRPC address)")
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	switch opts.Transport {
	case "", TransportGRPC:
	case TransportREST:
		r, err := newREST(ctx, opts)
		if err != nil {
			return nil, err
		}
		return &Adapter{opts: opts, rest: r}, nil
	default:
		return nil, invalid("unknown Options.Transport %q: want %q or %q", opts.Transport, TransportGRPC, TransportREST)
	}
	host := opts.Endpoint
	if host == "" && opts.DedicatedEndpoint != "" {
		h, err := dedicatedHost(opts.DedicatedEndpoint)
		if err != nil {
			return nil, err
		}
		host = h
	}
	if host == "" {
		host = "aiplatform.googleapis.com:443"
		if opts.Location != "" && opts.Location != "global" {
			if !validID(opts.Location) {
				return nil, invalid("malformed Options.Location %q", opts.Location)
			}
			host = opts.Location + "-aiplatform.googleapis.com:443"
		}
	}
	co := []option.ClientOption{
		option.WithEndpoint(host),
		option.WithTelemetryDisabled(),
		option.WithGRPCDialOption(grpc.WithStatsHandler(grpctrace.NewStatsHandler())),
		option.WithGRPCDialOption(grpc.WithDisableRetry()),
		option.WithGRPCDialOption(grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(opts.MaxResponseBytes))),
		option.WithGRPCDialOption(grpc.WithKeepaliveParams(keepalive.ClientParameters{
			Time:                keepaliveTime,
			Timeout:             keepaliveTimeout,
			PermitWithoutStream: false,
		})),
	}
	if opts.Insecure {
		co = append(co,
			option.WithoutAuthentication(),
			option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	}
	co = append(co, opts.ClientOptions...)
	c, err := aiplatform.NewPredictionClient(ctx, co...)
	if err != nil {
		return nil, newClientError(err)
	}
	return &Adapter{opts: opts, client: c}, nil
}

// newClientError maps the error of aiplatform.NewPredictionClient:
// credentials that Application Default Credentials could not find or read
// are ERR_UNAUTHENTICATED, anything else (conflicting options) is
// ERR_INVALID_PARAM; neither is retryable. The auth library's errors have
// no type of their own, so they are told apart by what they are made of: a
// file that is not there (GOOGLE_APPLICATION_CREDENTIALS, a certificate
// configuration), JSON that does not parse (a credentials file), or its
// "credentials: " messages, among them "could not find default
// credentials" (a documented last-resort string match).
func newClientError(err error) *errcodes.Error {
	code := errcodes.InvalidParam
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	msg := err.Error()
	if errors.Is(err, fs.ErrNotExist) || errors.As(err, &syntax) || errors.As(err, &typ) ||
		strings.Contains(msg, "could not find default credentials") || strings.Contains(msg, "credentials: ") {
		code = errcodes.Unauthenticated
	}
	e := errcodes.Wrap(err, code, "vertex: creating the prediction client: "+msg)
	e.Provider = cloudreq.ProviderGCP
	e.Retryable = false
	return e
}

// Close closes the prediction client and its connections (with
// TransportREST, the idle connections of the adapter's own transport).
func (a *Adapter) Close() error {
	if a.rest != nil {
		return a.rest.close()
	}
	return a.client.Close()
}

// Client returns the underlying PredictionClient, for calls the adapter
// does not make (Explain, EmbedContent, …); nil with TransportREST.
func (a *Adapter) Client() *aiplatform.PredictionClient { return a.client }

// Describe implements cloudreq.Adapter.
func (a *Adapter) Describe() cloudreq.Description {
	return cloudreq.Description{
		Provider: cloudreq.ProviderGCP,
		Service:  cloudreq.ServiceVertex,
		Actions:  []string{cloudreq.ActionInvoke, cloudreq.ActionGenerate},
	}
}

// noRetry turns gax retries off for one call, whatever the client's
// CallOptions say; gax.WithTimeout(0) likewise sets no timeout.
var noRetry = []gax.CallOption{
	gax.WithRetry(func() gax.Retryer { return nil }),
	gax.WithTimeout(0),
}

// prepare resolves the target and builds the RPC context: the attempt's
// trace for the stats handler and the request's headers as outgoing
// metadata.
func (a *Adapter) prepare(ctx context.Context, call *cloudreq.Call) (context.Context, resource, error) {
	if call == nil || call.Request == nil {
		return ctx, resource{}, invalid("nil call")
	}
	res, e := resolveTarget(call.Request.Target, a.opts.Project, a.opts.Location)
	if e != nil {
		return ctx, resource{}, e
	}
	if a.opts.Endpoint == "" && a.opts.Location != "" && res.Location != a.opts.Location {
		return ctx, resource{}, invalid("resource %s is in location %q but the adapter serves %q: use an adapter per location", res, res.Location, a.opts.Location)
	}
	if a.opts.DedicatedEndpoint != "" {
		if res.Endpoint == "" {
			return ctx, resource{}, invalid("a dedicated endpoint serves endpoints, not the publisher model %s", res)
		}
		ctx = metadata.AppendToOutgoingContext(ctx, HeaderDedicatedEndpointID, res.Endpoint)
	}
	ctx = latency.ContextWithTrace(ctx, call.Trace)
	if h := call.Request.Header; len(h) > 0 {
		kv := make([]string, 0, 2*len(h))
		for k, vs := range h {
			lk := strings.ToLower(k)
			for _, v := range vs {
				kv = append(kv, lk, v)
			}
		}
		ctx = metadata.AppendToOutgoingContext(ctx, kv...)
	}
	return ctx, res, nil
}

// body returns the attempt's payload bytes.
func body(call *cloudreq.Call) ([]byte, error) {
	if call.Payload.Body != nil || call.Payload.Reader == nil {
		return call.Payload.Body, nil
	}
	return io.ReadAll(call.Body())
}

// Invoke implements cloudreq.Adapter: generateContent for ActionGenerate,
// predict or rawPredict for ActionInvoke (see the package doc for the
// rule).
func (a *Adapter) Invoke(ctx context.Context, call *cloudreq.Call) (*cloudreq.CloudResponse, error) {
	if a.rest != nil {
		return a.restInvoke(ctx, call)
	}
	ctx, res, err := a.prepare(ctx, call)
	if err != nil {
		return nil, err
	}
	b, err := body(call)
	if err != nil {
		return nil, err
	}
	var hdr, trl metadata.MD
	opts := append(noRetry[:len(noRetry):len(noRetry)], gax.WithGRPCOptions(grpc.Header(&hdr), grpc.Trailer(&trl)))
	req := call.Request
	if req.Action == cloudreq.ActionGenerate || rawGemini(req) {
		gr, e := decodeGenerate(b, res.String())
		if e != nil {
			return nil, e
		}
		out, err := a.client.GenerateContent(ctx, gr, opts...)
		if err != nil {
			return nil, mapError(err)
		}
		resp := newResponse(hdr, trl)
		data, err := protojson.Marshal(out)
		if err != nil {
			return nil, errcodes.Wrap(err, errcodes.Internal, "vertex: encoding the response")
		}
		resp.Data, resp.ContentType = data, "application/json"
		ans := answerOf(out, 0)
		ans.fill(resp)
		if u := usageOf(out); u != nil {
			resp.Usage = *u
		}
		resp.RequestID = out.GetResponseId()
		setMeta(resp, MetaModelVersionID, out.GetModelVersion())
		return resp, nil
	}
	if serverStreaming(req) {
		return nil, errServerStreamingUnary()
	}
	method, pr, e := invokeMethod(req, cloudreq.Payload{Body: b, ContentType: call.Payload.ContentType})
	if e != nil {
		return nil, e
	}
	if method == MethodPredict {
		pr.Endpoint = res.String()
		out, err := a.client.Predict(ctx, pr, opts...)
		if err != nil {
			return nil, mapError(err)
		}
		resp := newResponse(hdr, trl)
		data, err := protojson.Marshal(out)
		if err != nil {
			return nil, errcodes.Wrap(err, errcodes.Internal, "vertex: encoding the response")
		}
		resp.Data, resp.ContentType = data, "application/json"
		resp.Text, resp.FinishReason, _ = invokeText(data, resp.ContentType)
		setMeta(resp, MetaDeployedModelID, out.GetDeployedModelId())
		setMeta(resp, MetaModelVersionID, out.GetModelVersionId())
		setMeta(resp, MetaModel, out.GetModel())
		return resp, nil
	}
	out, err := a.client.RawPredict(ctx, &aiplatformpb.RawPredictRequest{
		Endpoint: res.String(),
		HttpBody: &httpbody.HttpBody{ContentType: rawContentType(call.Payload), Data: b},
	}, opts...)
	if err != nil {
		return nil, mapError(err)
	}
	resp := newResponse(hdr, trl)
	resp.Data, resp.ContentType = out.GetData(), out.GetContentType()
	var u *cloudreq.Usage
	resp.Text, resp.FinishReason, u = invokeText(resp.Data, resp.ContentType)
	if u != nil {
		resp.Usage = *u
	}
	return resp, nil
}

// Stream implements cloudreq.Streamer: streamGenerateContent for
// ActionGenerate, streamRawPredict for ActionInvoke. It returns once the
// response headers arrived; a status that ends the RPC before any message
// is returned as the error of the attempt.
func (a *Adapter) Stream(ctx context.Context, call *cloudreq.Call) (cloudreq.ChunkStream, error) {
	if a.rest != nil {
		return a.restStream(ctx, call)
	}
	ctx, res, err := a.prepare(ctx, call)
	if err != nil {
		return nil, err
	}
	b, err := body(call)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	cs := &chunkStream{ctx: ctx, cancel: cancel}
	var gs grpc.ClientStream
	switch {
	case serverStreaming(call.Request):
		sr, e := decodeStreamingPredict(b, res.String())
		if e != nil {
			cancel()
			return nil, e
		}
		s, err := a.client.ServerStreamingPredict(ctx, sr, noRetry...)
		if err != nil {
			cancel()
			return nil, mapError(err)
		}
		cs.ssp, gs = s, s
	case call.Request.Action == cloudreq.ActionGenerate || rawGemini(call.Request):
		gr, e := decodeGenerate(b, res.String())
		if e != nil {
			cancel()
			return nil, e
		}
		s, err := a.client.StreamGenerateContent(ctx, gr, noRetry...)
		if err != nil {
			cancel()
			return nil, mapError(err)
		}
		cs.gen, gs = s, s
	default:
		s, err := a.client.StreamRawPredict(ctx, &aiplatformpb.StreamRawPredictRequest{
			Endpoint: res.String(),
			HttpBody: &httpbody.HttpBody{ContentType: rawContentType(call.Payload), Data: b},
		}, noRetry...)
		if err != nil {
			cancel()
			return nil, mapError(err)
		}
		cs.raw, gs = s, s
	}
	hdr, err := gs.Header()
	if err != nil {
		cancel()
		return nil, mapError(err)
	}
	if hdr == nil {
		// The RPC ended without headers: its status is what the first
		// read returns. An error there is this attempt's error.
		if err := cs.peek(); err != nil {
			cancel()
			return nil, err
		}
	}
	cs.resp = newResponse(hdr, nil)
	return cs, nil
}
