package sagemaker

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/providers/openai"
)

// ServiceOpenAI is the service of OpenAIAdapter: SageMaker AI real-time
// endpoints' OpenAI-compatible chat completions route, provider "aws".
const ServiceOpenAI = "sagemaker-openai"

// OpenAIChatPath is the route under an endpoint (or an endpoint's
// inference component) that serves OpenAI chat completions.
const OpenAIChatPath = "/openai/v1/chat/completions"

// OpenAIOptions configures an OpenAIAdapter.
type OpenAIOptions struct {
	// Region is the endpoints' region: requests go to
	// https://runtime.sagemaker.REGION.amazonaws.com (.amazonaws.com.cn in
	// China) and tokens are signed for it. Empty: the AWS configuration's.
	Region string
	// BaseURL overrides the runtime root, e.g. the emulator's
	// "http://127.0.0.1:PORT".
	BaseURL string
	// Config is the AWS configuration whose credentials mint the tokens
	// (nil: config.LoadDefaultConfig, unless TokenSource or Anonymous).
	Config *aws.Config
	// Credentials overrides the configuration's credentials.
	Credentials aws.CredentialsProvider
	// TokenSource gives the bearer tokens. Nil: a PresignedTokens minting
	// them from the credentials, refreshed before they expire.
	TokenSource BearerTokenSource
	// TokenLifetime is the lifetime of minted tokens (0: 12 hours, the
	// maximum).
	TokenLifetime time.Duration
	// Anonymous sends no token (an emulator without credentials).
	Anonymous bool
	// HTTPClient's transport sends the requests (default: the openai
	// adapter's own).
	HTTPClient *http.Client
	// AllowInsecureHTTP permits a token over plain http (the emulator).
	AllowInsecureHTTP bool
}

// OpenAIAdapter is the cloudreq adapter for SageMaker AI's OpenAI-compatible
// route (provider "aws", service ServiceOpenAI, actions invoke and
// generate, SSE streams included): the openai adapter's wire at
// POST /endpoints/{Target.Endpoint}[/inference-components/{Attributes.InferenceComponent}]/openai/v1/chat/completions
// on the runtime host, authenticated by a bearer token
// ("Authorization: Bearer sagemaker-api-key-…"). Target.Model, when set,
// is the body's "model"; SageMaker routes by the URL, so it is left out
// otherwise.
type OpenAIAdapter struct {
	inner  *openai.Adapter
	tokens BearerTokenSource
	last   atomic.Pointer[string]
}

var (
	_ cloudreq.Adapter          = (*OpenAIAdapter)(nil)
	_ cloudreq.Streamer         = (*OpenAIAdapter)(nil)
	_ cloudreq.Encoder          = (*OpenAIAdapter)(nil)
	_ cloudreq.Validator        = (*OpenAIAdapter)(nil)
	_ cloudreq.CredentialSource = (*OpenAIAdapter)(nil)
)

func invalidf(format string, a ...any) *errcodes.Error {
	e := errcodes.Errorf(errcodes.InvalidParam, format, a...)
	e.Provider = cloudreq.ProviderAWS
	return e
}

// RuntimeURL returns the SageMaker AI runtime root of region, which
// serves the OpenAI-compatible route (not the sagemaker-runtime.REGION
// host of InvokeEndpoint's older name).
func RuntimeURL(region string) string {
	suffix := ".amazonaws.com"
	if strings.HasPrefix(region, "cn-") {
		suffix = ".amazonaws.com.cn"
	}
	return "https://runtime.sagemaker." + region + suffix
}

// NewOpenAI returns an OpenAIAdapter. ctx bounds the loading of the AWS
// configuration and is not kept.
func NewOpenAI(ctx context.Context, o OpenAIOptions) (*OpenAIAdapter, error) {
	region := o.Region
	var creds aws.CredentialsProvider = o.Credentials
	if !o.Anonymous && o.TokenSource == nil && (creds == nil || region == "") {
		var cfg aws.Config
		if o.Config != nil {
			cfg = o.Config.Copy()
		} else {
			var lo []func(*config.LoadOptions) error
			if region != "" {
				lo = append(lo, config.WithRegion(region))
			}
			if creds != nil {
				lo = append(lo, config.WithCredentialsProvider(creds))
			}
			var err error
			if cfg, err = config.LoadDefaultConfig(ctx, lo...); err != nil {
				e := errcodes.Wrap(err, errcodes.InvalidParam, "sagemaker-openai: loading the AWS configuration failed")
				e.Provider = cloudreq.ProviderAWS
				return nil, e
			}
		}
		region = cmpOr(region, cfg.Region)
		if creds == nil {
			creds = cfg.Credentials
		}
	}
	base := o.BaseURL
	if base == "" {
		if !validRegion(region) {
			return nil, invalidf("sagemaker-openai: NewOpenAI needs OpenAIOptions.Region (or BaseURL), got %q", region)
		}
		base = RuntimeURL(region)
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return nil, invalidf("sagemaker-openai: OpenAIOptions.BaseURL %q is not an absolute URL", base)
	}
	a := &OpenAIAdapter{}
	client := o.HTTPClient
	if !o.Anonymous {
		if u.Scheme != "https" && !o.AllowInsecureHTTP {
			return nil, invalidf("sagemaker-openai: refusing to send a bearer token over plain http to %s; set AllowInsecureHTTP for a local emulator", u.Host)
		}
		a.tokens = o.TokenSource
		if a.tokens == nil {
			if creds == nil {
				e := errcodes.New(errcodes.Unauthenticated, "sagemaker-openai: no AWS credentials to mint bearer tokens with")
				e.Provider = cloudreq.ProviderAWS
				return nil, e
			}
			if a.tokens, err = NewPresignedTokens(creds, region, o.TokenLifetime); err != nil {
				return nil, err
			}
		}
		var rt http.RoundTripper = http.DefaultTransport
		if o.HTTPClient != nil && o.HTTPClient.Transport != nil {
			rt = o.HTTPClient.Transport
		}
		c := &http.Client{Transport: &bearerTransport{next: rt, src: a.tokens, last: &a.last}}
		if o.HTTPClient != nil {
			c.Timeout, c.Jar, c.CheckRedirect = o.HTTPClient.Timeout, o.HTTPClient.Jar, o.HTTPClient.CheckRedirect
		}
		client = c
	}
	inner, err := openai.New(openai.Options{BaseURL: strings.TrimSuffix(base, "/"), HTTPClient: client, AllowInsecureHTTP: o.AllowInsecureHTTP})
	if err != nil {
		return nil, err
	}
	a.inner = inner
	return a, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// bearerTransport adds the source's bearer token to each request, and
// drops the token after the route refused it (401, 403).
type bearerTransport struct {
	next http.RoundTripper
	src  BearerTokenSource
	last *atomic.Pointer[string]
}

// RoundTrip implements http.RoundTripper.
func (t *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, err := t.src.BearerToken(r.Context())
	if err != nil {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, &tokenError{err}
	}
	t.last.Store(&tok.Value)
	r2 := r.Clone(r.Context())
	r2.Header.Set("Authorization", "Bearer "+tok.Value)
	resp, err := t.next.RoundTrip(r2)
	if err == nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
		if inv, ok := t.src.(interface{ Invalidate() }); ok {
			inv.Invalidate()
		}
	}
	return resp, err
}

// tokenError is a token source's failure.
type tokenError struct{ err error }

func (e *tokenError) Error() string { return e.err.Error() }
func (e *tokenError) Unwrap() error { return e.err }

// Credentials implements cloudreq.CredentialSource: the last token sent.
func (a *OpenAIAdapter) Credentials() []string {
	if p := a.last.Load(); p != nil {
		return []string{*p}
	}
	return nil
}

// Close closes the idle connections of the adapter's own transport.
func (a *OpenAIAdapter) Close() error { return a.inner.Close() }

// Describe implements cloudreq.Adapter.
func (a *OpenAIAdapter) Describe() cloudreq.Description {
	return cloudreq.Description{Provider: cloudreq.ProviderAWS, Service: ServiceOpenAI,
		Actions: []string{cloudreq.ActionInvoke, cloudreq.ActionGenerate}}
}

// endpointName matches SageMaker endpoint and inference component names:
// up to 63 letters, digits and hyphens, starting and ending with a letter
// or digit.
var endpointName = regexp.MustCompile(`^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$`)

// Validate implements cloudreq.Validator: an endpoint name, and an
// inference component name when one is given.
func (a *OpenAIAdapter) Validate(req *cloudreq.CloudRequest) error {
	if !endpointName.MatchString(req.Target.Endpoint) {
		return invalidf("sagemaker-openai needs Target.Endpoint, a SageMaker endpoint name (1-63 letters, digits and hyphens), got %q", req.Target.Endpoint)
	}
	if ic := req.Attributes.InferenceComponent; ic != "" && !endpointName.MatchString(ic) {
		return invalidf("sagemaker-openai: Attributes.InferenceComponent %q is not an inference component name", ic)
	}
	return nil
}

// routed returns req as the openai adapter is to send it: the path under
// the runtime root, the model only when Target.Model names one.
func routed(req *cloudreq.CloudRequest) *cloudreq.CloudRequest {
	r := *req
	p := "/endpoints/" + url.PathEscape(req.Target.Endpoint)
	if ic := req.Attributes.InferenceComponent; ic != "" {
		p += "/inference-components/" + url.PathEscape(ic)
	}
	r.Target = cloudreq.Target{Model: req.Target.Model, Path: p + OpenAIChatPath}
	return &r
}

// Encode implements cloudreq.Encoder: OpenAI chat JSON.
func (a *OpenAIAdapter) Encode(req *cloudreq.CloudRequest, stream bool) (cloudreq.Payload, error) {
	p, err := a.inner.Encode(routed(req), stream)
	return p, restampOpenAI(err)
}

// Invoke implements cloudreq.Adapter.
func (a *OpenAIAdapter) Invoke(ctx context.Context, call *cloudreq.Call) (*cloudreq.CloudResponse, error) {
	c := *call
	c.Request = routed(call.Request)
	resp, err := a.inner.Invoke(ctx, &c)
	return resp, restampOpenAI(err)
}

// Stream implements cloudreq.Streamer.
func (a *OpenAIAdapter) Stream(ctx context.Context, call *cloudreq.Call) (cloudreq.ChunkStream, error) {
	c := *call
	c.Request = routed(call.Request)
	s, err := a.inner.Stream(ctx, &c)
	if err != nil {
		return nil, restampOpenAI(err)
	}
	return restampedStream{s}, nil
}

// noCapacityMessage recognizes the front end's answer for an endpoint (or
// inference component) scaled to zero, whose capacity is coming back.
var noCapacityMessage = regexp.MustCompile(`(?i)^(inference component|endpoint)\b[^.]*\bhas no capacity\b`)

// containerMessage recognizes the front end's quotation of the container's
// own error answer, as InvokeEndpoint's ModelError quotes it.
var containerMessage = regexp.MustCompile(`^Received (client|server) error \(\d+\) from \S+ with message `)

// restampOpenAI gives an error of the openai wire provider "aws" and
// SageMaker's own meanings: a token that could not be made is
// ERR_UNAUTHENTICATED (a credentials failure as the sagemaker adapter maps
// it); an error type SageMaker's front end uses (ThrottlingException,
// UnrecognizedClientException, AccessDeniedException, …) has its code as
// in InvokeEndpoint's table; a 500 quoting the container's own error
// ("Received server error (500) from primary with message …") is
// ERR_MODEL_ERROR (its other statuses keep their codes); a 400 whose message says the endpoint or
// component has no capacity is ERR_MODEL_NOT_READY, retryable, and one that
// says it is not found ERR_NOT_FOUND.
func restampOpenAI(err error) error {
	if err == nil {
		return nil
	}
	var te *tokenError
	if errors.As(err, &te) {
		var cred *credentialsError
		if errors.As(err, &cred) {
			e := credentialsFailure(err, cred)
			e.Message = strings.Replace(e.Message, "sagemaker:", "sagemaker-openai:", 1)
			return e
		}
		e := errcodes.Wrap(err, errcodes.Unauthenticated, "sagemaker-openai: "+te.Error())
		e.Provider, e.Retryable = cloudreq.ProviderAWS, false
		return e
	}
	var ce *errcodes.Error
	if !errors.As(err, &ce) {
		return err
	}
	cp := *ce
	cp.Provider = cloudreq.ProviderAWS
	cp.Message = strings.Replace(cp.Message, "openai:", "sagemaker-openai:", 1)
	msg, typ := ce.Message, ""
	var api *openai.APIError
	if errors.As(ce, &api) {
		msg, typ = api.Message, cmpOr(api.Type, api.Code)
	}
	bad := cp.HTTPStatus == http.StatusBadRequest
	switch {
	case throttleCodes[typ]:
		cp.Code, cp.Retryable = errcodes.Throttled, true
	case authCodes[typ]:
		cp.Code, cp.Retryable = errcodes.Unauthenticated, false
	case deniedCodes[typ]:
		cp.Code, cp.Retryable = errcodes.PermissionDenied, false
	case cp.HTTPStatus == http.StatusInternalServerError && containerMessage.MatchString(msg):
		cp.Code, cp.Retryable = errcodes.ModelError, errcodes.ModelError.Retryable()
	case bad && noCapacityMessage.MatchString(msg):
		cp.Code, cp.Retryable = errcodes.ModelNotReady, true
	case bad && notFoundMessage.MatchString(msg):
		cp.Code, cp.Retryable = errcodes.NotFound, false
	}
	return &cp
}

// restampedStream re-stamps its stream's errors.
type restampedStream struct{ cloudreq.ChunkStream }

// Next implements cloudreq.ChunkStream.
func (s restampedStream) Next() (cloudreq.StreamChunk, error) {
	c, err := s.ChunkStream.Next()
	if err != nil && err != io.EOF {
		return c, restampOpenAI(err)
	}
	return c, err
}
