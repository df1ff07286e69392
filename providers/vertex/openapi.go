package vertex

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/providers/openai"
)

// ServiceOpenAPI is the service of OpenAPIAdapter: Vertex AI's
// OpenAI-compatible chat completions (endpoints/openapi), provider "gcp".
const ServiceOpenAPI = "vertex-openai"

// cloudPlatformScope is the OAuth scope of Vertex AI's REST API.
const cloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform"

// OpenAPIOptions configures an OpenAPIAdapter.
type OpenAPIOptions struct {
	// Project and Location name the openapi endpoint
	// (projects/P/locations/L/endpoints/openapi). Location "global" uses
	// aiplatform.googleapis.com, any other its regional host.
	Project, Location string
	// BaseURL overrides the endpoint root, up to and including
	// ".../endpoints/openapi" (the emulator's
	// URL()+"/v1/projects/P/locations/L/endpoints/openapi").
	BaseURL string
	// TokenSource gives the OAuth access tokens sent as "Authorization:
	// Bearer"; they are cached and refreshed by oauth2.ReuseTokenSource.
	// Nil: Application Default Credentials (google.DefaultTokenSource,
	// scope cloud-platform), looked up at New.
	TokenSource oauth2.TokenSource
	// Anonymous sends no token (the emulator).
	Anonymous bool
	// HTTPClient's transport sends the requests (default: the openai
	// adapter's own).
	HTTPClient *http.Client
	// AllowInsecureHTTP permits a token over plain http (the emulator).
	AllowInsecureHTTP bool
}

// OpenAPIAdapter is the cloudreq adapter for Vertex AI's OpenAI-compatible
// chat completions endpoint (provider "gcp", service ServiceOpenAPI,
// actions invoke and generate, streams included): the openai adapter's
// wire, at .../endpoints/openapi/chat/completions, with Application
// Default Credentials' tokens. Target.Model (or Target.Endpoint) is the
// model, as Vertex names it ("google/gemini-2.0-flash-001",
// "meta/llama-3.1-8b-instruct-maas", or a deployed endpoint's id).
type OpenAPIAdapter struct {
	inner *openai.Adapter
	last  atomic.Pointer[string] // the last token sent, for Credentials
}

var (
	_ cloudreq.Adapter          = (*OpenAPIAdapter)(nil)
	_ cloudreq.Streamer         = (*OpenAPIAdapter)(nil)
	_ cloudreq.Encoder          = (*OpenAPIAdapter)(nil)
	_ cloudreq.Validator        = (*OpenAPIAdapter)(nil)
	_ cloudreq.CredentialSource = (*OpenAPIAdapter)(nil)
)

// NewOpenAPI returns an OpenAPIAdapter. ctx bounds the lookup of
// Application Default Credentials and is not kept.
func NewOpenAPI(ctx context.Context, o OpenAPIOptions) (*OpenAPIAdapter, error) {
	base := o.BaseURL
	if base == "" {
		if !validID(o.Project) || !validID(o.Location) {
			return nil, invalid("NewOpenAPI needs OpenAPIOptions.Project and Location (or BaseURL)")
		}
		host := "https://aiplatform.googleapis.com"
		if o.Location != "global" {
			host = "https://" + o.Location + "-aiplatform.googleapis.com"
		}
		base = host + "/v1/projects/" + o.Project + "/locations/" + o.Location + "/endpoints/openapi"
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return nil, invalid("OpenAPIOptions.BaseURL %q is not an absolute URL", base)
	}
	a := &OpenAPIAdapter{}
	var rt http.RoundTripper = http.DefaultTransport
	if o.HTTPClient != nil && o.HTTPClient.Transport != nil {
		rt = o.HTTPClient.Transport
	}
	client := o.HTTPClient
	if !o.Anonymous {
		if u.Scheme != "https" && !o.AllowInsecureHTTP {
			return nil, invalid("refusing to send a Google token over plain http to %s; set AllowInsecureHTTP for a local emulator", u.Host)
		}
		ts := o.TokenSource
		if ts == nil {
			ts, err = google.DefaultTokenSource(ctx, cloudPlatformScope)
			if err != nil {
				e := errcodes.Wrap(err, errcodes.Unauthenticated, "vertex: no Application Default Credentials: "+err.Error())
				e.Provider, e.Retryable = cloudreq.ProviderGCP, false
				return nil, e
			}
		} else {
			ts = oauth2.ReuseTokenSource(nil, ts)
		}
		c := &http.Client{Transport: &tokenTransport{next: rt, ts: ts, last: &a.last}}
		if o.HTTPClient != nil {
			c.Timeout, c.Jar, c.CheckRedirect = o.HTTPClient.Timeout, o.HTTPClient.Jar, o.HTTPClient.CheckRedirect
		}
		client = c
	}
	inner, err := openai.New(openai.Options{BaseURL: base, HTTPClient: client, AllowInsecureHTTP: o.AllowInsecureHTTP})
	if err != nil {
		return nil, err
	}
	a.inner = inner
	return a, nil
}

// tokenTransport adds the token source's bearer token to each request.
type tokenTransport struct {
	next http.RoundTripper
	ts   oauth2.TokenSource
	last *atomic.Pointer[string]
}

// tokenError is a token source's failure.
type tokenError struct{ err error }

func (e *tokenError) Error() string { return "getting a Google access token: " + e.err.Error() }
func (e *tokenError) Unwrap() error { return e.err }

// RoundTrip implements http.RoundTripper.
func (t *tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, err := t.ts.Token()
	if err != nil {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, &tokenError{err}
	}
	t.last.Store(&tok.AccessToken)
	r2 := r.Clone(r.Context())
	r2.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	return t.next.RoundTrip(r2)
}

// Credentials implements cloudreq.CredentialSource: the last token sent.
func (a *OpenAPIAdapter) Credentials() []string {
	if p := a.last.Load(); p != nil {
		return []string{*p}
	}
	return nil
}

// Close closes the idle connections of the adapter's own transport.
func (a *OpenAPIAdapter) Close() error { return a.inner.Close() }

// Describe implements cloudreq.Adapter.
func (a *OpenAPIAdapter) Describe() cloudreq.Description {
	return cloudreq.Description{Provider: cloudreq.ProviderGCP, Service: ServiceOpenAPI,
		Actions: []string{cloudreq.ActionInvoke, cloudreq.ActionGenerate}}
}

// Validate implements cloudreq.Validator: a model (Target.Model or
// Target.Endpoint).
func (a *OpenAPIAdapter) Validate(req *cloudreq.CloudRequest) error {
	if req.Target.Model == "" && req.Target.Endpoint == "" {
		return invalid("vertex-openai needs Target.Model (or Target.Endpoint), the model as Vertex names it")
	}
	return nil
}

// routed returns req with the chat completions path, unless it names one.
func routed(req *cloudreq.CloudRequest) *cloudreq.CloudRequest {
	if req.Target.Path != "" {
		return req
	}
	r := *req
	r.Target.Path = "/chat/completions"
	return &r
}

// Encode implements cloudreq.Encoder: OpenAI chat JSON.
func (a *OpenAPIAdapter) Encode(req *cloudreq.CloudRequest, stream bool) (cloudreq.Payload, error) {
	p, err := a.inner.Encode(routed(req), stream)
	return p, restamp(err)
}

// Invoke implements cloudreq.Adapter.
func (a *OpenAPIAdapter) Invoke(ctx context.Context, call *cloudreq.Call) (*cloudreq.CloudResponse, error) {
	c := *call
	c.Request = routed(call.Request)
	resp, err := a.inner.Invoke(ctx, &c)
	return resp, restamp(err)
}

// Stream implements cloudreq.Streamer.
func (a *OpenAPIAdapter) Stream(ctx context.Context, call *cloudreq.Call) (cloudreq.ChunkStream, error) {
	c := *call
	c.Request = routed(call.Request)
	s, err := a.inner.Stream(ctx, &c)
	if err != nil {
		return nil, restamp(err)
	}
	return restampStream{s}, nil
}

// restamp gives an error of the openai wire provider "gcp"; a token
// failure is ERR_UNAUTHENTICATED.
func restamp(err error) error {
	if err == nil {
		return nil
	}
	var te *tokenError
	if errors.As(err, &te) {
		e := errcodes.Wrap(err, errcodes.Unauthenticated, "vertex: "+te.Error())
		e.Provider, e.Retryable = cloudreq.ProviderGCP, false
		return e
	}
	var ce *errcodes.Error
	if errors.As(err, &ce) {
		cp := *ce
		cp.Provider = cloudreq.ProviderGCP
		cp.Message = strings.Replace(cp.Message, "openai:", "vertex-openai:", 1)
		return &cp
	}
	return err
}

// restampStream re-stamps its stream's errors.
type restampStream struct{ cloudreq.ChunkStream }

// Next implements cloudreq.ChunkStream.
func (s restampStream) Next() (cloudreq.StreamChunk, error) {
	c, err := s.ChunkStream.Next()
	if err != nil && err != io.EOF {
		return c, restamp(err)
	}
	return c, err
}
