package vertex

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
	"golang.org/x/oauth2"
	"google.golang.org/api/option"
	"google.golang.org/api/transport"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
)

// Transport says how the adapter's calls travel (Options.Transport).
type Transport string

// Transports. The empty value is TransportGRPC.
const (
	// TransportGRPC sends calls through the aiplatform gRPC client.
	TransportGRPC Transport = "grpc"
	// TransportREST sends calls as Vertex AI's REST API takes them, JSON
	// over HTTPS (for networks that let no gRPC through).
	TransportREST Transport = "rest"
)

// timeNow is the clock of Retry-After dates.
var timeNow = time.Now

// protoIn reads JSON answers: fields newer than the protos are skipped.
var protoIn = protojson.UnmarshalOptions{DiscardUnknown: true}

// restTransport is the adapter's REST transport.
type restTransport struct {
	core *httpadapter.Core
	// base is the scheme and host the calls go to, e.g.
	// https://us-central1-aiplatform.googleapis.com.
	base string
	// own is the transport the adapter built, closed by Close; nil with
	// the caller's Options.HTTPClient.
	own  *http.Transport
	last atomic.Pointer[string] // the last token sent, for Credentials
}

// restBase returns the scheme and host of the REST calls: Options.Endpoint
// (a URL, or a host[:port] taken as https, http with Insecure), else the
// dedicated endpoint's DNS name, else the regional host.
func restBase(opts Options) (string, error) {
	switch {
	case opts.Endpoint != "":
		e := strings.TrimRight(opts.Endpoint, "/")
		if !strings.Contains(e, "://") {
			scheme := "https://"
			if opts.Insecure {
				scheme = "http://"
			}
			e = scheme + e
		}
		return e, nil
	case opts.DedicatedEndpoint != "":
		h, err := dedicatedHost(opts.DedicatedEndpoint)
		if err != nil {
			return "", err
		}
		return "https://" + strings.TrimSuffix(h, ":443"), nil
	case opts.Location == "" || opts.Location == "global":
		return "https://aiplatform.googleapis.com", nil
	case !validID(opts.Location):
		return "", invalid("malformed Options.Location %q", opts.Location)
	}
	return "https://" + opts.Location + "-aiplatform.googleapis.com", nil
}

// newREST builds the REST transport. Without Insecure the requests carry
// the OAuth tokens of the credentials Options.ClientOptions name
// (option.WithCredentialsFile, option.WithTokenSource, …), else of
// Application Default Credentials, scope cloud-platform, cached and
// refreshed before they expire.
func newREST(ctx context.Context, opts Options) (*restTransport, error) {
	base, err := restBase(opts)
	if err != nil {
		return nil, err
	}
	r := &restTransport{}
	var rt http.RoundTripper
	client := opts.HTTPClient
	switch {
	case client == nil:
		r.own = httpadapter.NewTransport()
		rt = r.own
	case client.Transport != nil:
		rt = client.Transport
	default:
		rt = http.DefaultTransport
	}
	cfg := httpadapter.Config{
		Provider: cloudreq.ProviderGCP, Service: cloudreq.ServiceVertex, Name: "vertex",
		Limits: httpadapter.Limits{MaxResponseBytes: int64(opts.MaxResponseBytes), MaxEventBytes: opts.MaxResponseBytes},
		Errors: restErrorTable, IDHeaders: []string{"X-Request-Id"},
	}
	if !opts.Insecure {
		co := append([]option.ClientOption{option.WithScopes(cloudPlatformScope)}, opts.ClientOptions...)
		creds, err := transport.Creds(ctx, co...)
		if err != nil {
			return nil, newClientError(err)
		}
		rt = &tokenTransport{next: rt, ts: oauth2.ReuseTokenSource(nil, creds.TokenSource), last: &r.last}
	}
	c := &http.Client{Transport: rt}
	if client != nil {
		c.Timeout, c.Jar, c.CheckRedirect = client.Timeout, client.Jar, client.CheckRedirect
	}
	cfg.HTTPClient = c
	r.core = httpadapter.New(cfg)
	if r.base, _, err = r.core.CheckURL(base); err != nil {
		return nil, err
	}
	if !opts.Insecure {
		// A token goes over plain http only to this machine (a local
		// emulator or proxy), where it crosses no network.
		u, _ := url.Parse(r.base)
		if err := httpadapter.CheckPlainHTTP(cloudreq.ProviderGCP, u, "a Google access token", httpadapter.PlainHTTPLoopback); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// close closes the idle connections of the transport the adapter built.
func (r *restTransport) close() error {
	if r.own != nil {
		r.own.CloseIdleConnections()
	}
	return nil
}

// url returns the URL of method on res (query, when set, added).
func (r *restTransport) url(res resource, method, query string) string {
	u := r.base + "/v1/" + res.String() + ":" + method
	if query != "" {
		u += "?" + query
	}
	return u
}

// do sends one attempt of method and returns a 2xx response.
func (r *restTransport) do(ctx context.Context, call *cloudreq.Call, res resource, method, query, accept string, b []byte) (*http.Response, error) {
	resp, err := r.core.Do(ctx, call, httpadapter.Request{URL: r.url(res, method, query), Body: bytes.NewReader(b), Accept: accept})
	return resp, tokenFailure(err)
}

// tokenFailure makes a token source's failure ERR_UNAUTHENTICATED, not
// retryable.
func tokenFailure(err error) error {
	var te *tokenError
	if err == nil || !errors.As(err, &te) {
		return err
	}
	e := errcodes.Wrap(err, errcodes.Unauthenticated, "vertex: "+te.Error())
	e.Provider, e.Retryable = cloudreq.ProviderGCP, false
	return e
}

// Credentials implements cloudreq.CredentialSource: the last access token
// the REST transport sent (the gRPC transport's tokens are not seen).
func (a *Adapter) Credentials() []string {
	if a.rest == nil {
		return nil
	}
	if p := a.rest.last.Load(); p != nil {
		return []string{*p}
	}
	return nil
}

// restHead starts a response from a REST answer's head: kept Vertex
// headers (x-vertex-ai-*, lower-case) and the deployed model id, as the
// gRPC path keeps its metadata.
func restHead(h *cloudreq.CloudResponse) *cloudreq.CloudResponse {
	for k, vs := range h.Header {
		lk := strings.ToLower(k)
		if len(vs) > 0 && strings.HasPrefix(lk, mdVertexPfx) {
			setMeta(h, lk, vs[0])
		}
	}
	if v := h.Header.Get(mdDeployedID); v != "" {
		setMeta(h, MetaDeployedModelID, v)
	}
	return h
}

// malformed is the error of a 2xx answer that is not the method's.
func malformed(out *cloudreq.CloudResponse, what string, err error) *errcodes.Error {
	e := httpadapter.Malformed(cloudreq.ProviderGCP, "vertex: the response is not a "+what, err)
	e.HTTPStatus, e.RequestID = out.StatusCode, out.RequestID
	return e
}

// restInvoke is Invoke over REST: generateContent, predict or rawPredict
// as the gRPC path picks them, the JSON (or the raw body) as it is.
func (a *Adapter) restInvoke(ctx context.Context, call *cloudreq.Call) (*cloudreq.CloudResponse, error) {
	_, res, err := a.prepare(ctx, call)
	if err != nil {
		return nil, err
	}
	b, err := body(call)
	if err != nil {
		return nil, err
	}
	req := call.Request
	r := a.rest
	switch {
	case serverStreaming(req):
		return nil, errServerStreamingUnary()
	case req.Action == cloudreq.ActionGenerate || rawGemini(req):
		resp, err := r.do(ctx, call, res, MethodGenerateContent, "", "application/json", b)
		if err != nil {
			return nil, err
		}
		out, err := r.core.Read(resp)
		if err != nil {
			return nil, err
		}
		restHead(out)
		m := &aiplatformpb.GenerateContentResponse{}
		if err := protoIn.Unmarshal(out.Data, m); err != nil {
			return nil, malformed(out, "GenerateContentResponse", err)
		}
		ans := answerOf(m, 0)
		ans.fill(out)
		if u := usageOf(m); u != nil {
			out.Usage = *u
		}
		out.RequestID = m.GetResponseId()
		setMeta(out, MetaModelVersionID, m.GetModelVersion())
		return out, nil
	}
	method, _, e := invokeMethod(req, cloudreq.Payload{Body: b, ContentType: call.Payload.ContentType})
	if e != nil {
		return nil, e
	}
	resp, err := r.do(ctx, call, res, method, "", "", b)
	if err != nil {
		return nil, err
	}
	out, err := r.core.Read(resp)
	if err != nil {
		return nil, err
	}
	restHead(out)
	if method == MethodPredict {
		m := &aiplatformpb.PredictResponse{}
		if err := protoIn.Unmarshal(out.Data, m); err != nil {
			return nil, malformed(out, "PredictResponse", err)
		}
		setMeta(out, MetaDeployedModelID, m.GetDeployedModelId())
		setMeta(out, MetaModelVersionID, m.GetModelVersionId())
		setMeta(out, MetaModel, m.GetModel())
	}
	var u *cloudreq.Usage
	out.Text, out.FinishReason, u = invokeText(out.Data, out.ContentType)
	if u != nil && method == MethodRawPredict {
		out.Usage = *u
	}
	return out, nil
}
