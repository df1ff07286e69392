package sagemaker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// ServiceAsync is the service of AsyncAdapter: SageMaker asynchronous
// inference (InvokeEndpointAsync), provider "aws".
const ServiceAsync = "sagemaker-async"

// MaxAsyncInlineBody is the largest request body InvokeEndpointAsync takes
// inline (its Body); a larger input goes through an S3 InputLocation.
const MaxAsyncInlineBody = 128000

// Metadata keys of an asynchronous response (cloudreq.CloudResponse.Metadata),
// named after the headers InvokeEndpointAsync answers with.
const (
	HeaderOutputLocation  = "X-Amzn-SageMaker-OutputLocation"
	HeaderFailureLocation = "X-Amzn-SageMaker-FailureLocation"
	HeaderInferenceID     = "X-Amzn-SageMaker-Inference-Id"
)

// AsyncInput is one InvokeEndpointAsync request. Exactly one of Body and
// InputLocation is set.
type AsyncInput struct {
	// Endpoint is the endpoint name (required).
	Endpoint string
	// InputLocation is the s3:// URI of the request payload.
	InputLocation string
	// Body is the payload sent inline, at most MaxAsyncInlineBody bytes.
	Body []byte
	// ContentType and Accept are the payload's and the wanted answer's
	// MIME types.
	ContentType, Accept string
	// CustomAttributes is forwarded to the container as it is.
	CustomAttributes string
	// InferenceID names the request; empty: SageMaker assigns one.
	InferenceID string
	// Filename is the output object's file name; S3OutputPathExtension a
	// path appended to the endpoint's S3 output path.
	Filename, S3OutputPathExtension string
	// InvocationTimeout bounds the processing (SageMaker's default 15
	// minutes); RequestTTL the time in the queue (default 6 hours). They
	// are sent in whole seconds, rounded up; zero leaves the default.
	InvocationTimeout, RequestTTL time.Duration
	// Header holds extra HTTP headers, as CloudRequest.Header.
	Header http.Header
}

// AsyncInvocation is what InvokeEndpointAsync answers: the request is
// queued, its result will be written to OutputLocation, or its failure to
// FailureLocation.
type AsyncInvocation struct {
	InferenceID     string
	OutputLocation  string
	FailureLocation string
	// RequestID is the x-amzn-RequestId of the submission.
	RequestID string
	// StatusCode is the submission's HTTP status (202).
	StatusCode int
}

// InvokeAsync submits one asynchronous inference with InvokeEndpointAsync
// and returns where its result will be. It does not wait: WaitAsync does.
// Errors are mapped as InvokeEndpoint's (package doc).
func (a *Adapter) InvokeAsync(ctx context.Context, in *AsyncInput) (*AsyncInvocation, error) {
	if err := checkAsyncInput(in); err != nil {
		return nil, err
	}
	sdkIn := &sagemakerruntime.InvokeEndpointAsyncInput{
		EndpointName:             aws.String(in.Endpoint),
		InputLocation:            optional(in.InputLocation),
		ContentType:              optional(in.ContentType),
		Accept:                   optional(in.Accept),
		CustomAttributes:         optional(in.CustomAttributes),
		InferenceId:              optional(in.InferenceID),
		Filename:                 optional(in.Filename),
		S3OutputPathExtension:    optional(in.S3OutputPathExtension),
		InvocationTimeoutSeconds: seconds(in.InvocationTimeout),
		RequestTTLSeconds:        seconds(in.RequestTTL),
	}
	if len(in.Body) > 0 {
		sdkIn.Body = in.Body
	}
	out, err := a.client.InvokeEndpointAsync(ctx, sdkIn, withHeaders(in.Header, nil))
	if err != nil {
		return nil, mapError(err)
	}
	return &AsyncInvocation{
		InferenceID:     aws.ToString(out.InferenceId),
		OutputLocation:  aws.ToString(out.OutputLocation),
		FailureLocation: aws.ToString(out.FailureLocation),
		RequestID:       requestID(out.ResultMetadata),
		StatusCode:      statusOf(rawResponse(out.ResultMetadata)),
	}, nil
}

// checkAsyncInput refuses what InvokeEndpointAsync would refuse, before
// anything is sent.
func checkAsyncInput(in *AsyncInput) error {
	var msg string
	code := errcodes.InvalidParam
	switch {
	case in == nil:
		msg = "sagemaker: InvokeAsync needs an AsyncInput"
	case in.Endpoint == "":
		msg = "sagemaker: InvokeAsync needs AsyncInput.Endpoint, the endpoint name"
	case (len(in.Body) == 0) == (in.InputLocation == ""):
		msg = "sagemaker: InvokeAsync needs exactly one of AsyncInput.Body and AsyncInput.InputLocation"
	case len(in.Body) > MaxAsyncInlineBody:
		code = errcodes.PayloadTooLarge
		msg = fmt.Sprintf("sagemaker: an inline asynchronous body is at most %d bytes (this one %d): upload it and give its InputLocation", MaxAsyncInlineBody, len(in.Body))
	case in.InputLocation != "":
		if _, _, err := ParseS3URI(in.InputLocation); err != nil {
			msg = "sagemaker: AsyncInput.InputLocation: " + err.Error()
		}
	}
	if msg == "" && (in.InvocationTimeout < 0 || in.RequestTTL < 0) {
		msg = "sagemaker: AsyncInput.InvocationTimeout and RequestTTL cannot be negative"
	}
	if msg == "" {
		return nil
	}
	e := errcodes.New(code, msg)
	e.Provider, e.Retryable = cloudreq.ProviderAWS, false
	return e
}

// seconds returns d in whole seconds, rounded up; nil for 0.
func seconds(d time.Duration) *int32 {
	if d <= 0 {
		return nil
	}
	s := (d + time.Second - 1) / time.Second
	if s > 1<<31-1 {
		s = 1<<31 - 1
	}
	return aws.Int32(int32(s))
}

// WaitOptions says how WaitAsync polls.
type WaitOptions struct {
	// PollInterval is the first wait between polls (default 1s); each
	// later wait doubles, up to MaxPollInterval (default 15s).
	PollInterval, MaxPollInterval time.Duration
}

// AsyncResult is an asynchronous inference's output.
type AsyncResult struct {
	// Object is the output object: the model's answer.
	Object
	// Location is its s3:// URI.
	Location string
	// Polls counts the reads of the output location it took.
	Polls int
}

// maxFailureMessage bounds the part of a failure object quoted in an error.
const maxFailureMessage = 1024

// WaitAsync waits for an asynchronous inference's result: it reads the
// output location, and the failure location, from store until one of them
// holds an object, or ctx ends (ERR_TIMEOUT or ERR_CANCELED). An object at
// the failure location is ERR_MODEL_ERROR, not retryable, quoting the
// object's start, with the location and the inference id in Details
// ("failure_location", "inference_id"). A store error other than
// ErrNoObject ends the wait with it.
//
// Polling costs two S3 GETs a poll; a service that has SageMaker's SNS
// notifications configured may read the locations when told instead.
func WaitAsync(ctx context.Context, store ObjectStore, inv *AsyncInvocation, opts WaitOptions) (*AsyncResult, error) {
	if store == nil || inv == nil || inv.OutputLocation == "" {
		e := errcodes.New(errcodes.InvalidParam, "sagemaker: WaitAsync needs a store and an invocation with its OutputLocation")
		e.Provider, e.Retryable = cloudreq.ProviderAWS, false
		return nil, e
	}
	wait := opts.PollInterval
	if wait <= 0 {
		wait = time.Second
	}
	maxWait := opts.MaxPollInterval
	if maxWait <= 0 {
		maxWait = 15 * time.Second
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for polls := 1; ; polls++ {
		obj, err := store.Get(ctx, inv.OutputLocation)
		if err == nil {
			return &AsyncResult{Object: *obj, Location: inv.OutputLocation, Polls: polls}, nil
		}
		if !errors.Is(err, ErrNoObject) {
			return nil, storeError(ctx, err)
		}
		if inv.FailureLocation != "" {
			f, err := store.Get(ctx, inv.FailureLocation)
			if err == nil {
				return nil, asyncFailure(inv, f.Body)
			}
			if !errors.Is(err, ErrNoObject) {
				return nil, storeError(ctx, err)
			}
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			e := errcodes.FromContext(ctx)
			e.Provider = cloudreq.ProviderAWS
			e.Message = fmt.Sprintf("sagemaker: waiting for asynchronous inference %s: %s after %d polls", inv.InferenceID, e.Message, polls)
			return nil, e
		case <-timer.C:
		}
		wait = min(2*wait, maxWait)
	}
}

// storeError is err as an *errcodes.Error, a context's end as such.
func storeError(ctx context.Context, err error) error {
	if ce := errcodes.FromContext(ctx); ce != nil {
		ce.Provider = cloudreq.ProviderAWS
		return ce
	}
	var e *errcodes.Error
	if errors.As(err, &e) {
		return e
	}
	e = errcodes.Wrap(err, errcodes.Unknown, "sagemaker: reading an asynchronous result failed")
	e.Provider = cloudreq.ProviderAWS
	return e
}

// asyncFailure is the error of an inference whose failure object exists.
func asyncFailure(inv *AsyncInvocation, body []byte) *errcodes.Error {
	msg := strings.TrimSpace(string(body))
	if len(msg) > maxFailureMessage {
		msg = msg[:maxFailureMessage] + "…"
	}
	e := errcodes.New(errcodes.ModelError, "sagemaker: asynchronous inference "+inv.InferenceID+" failed: "+redact(msg))
	e.Provider, e.Retryable, e.ProviderCode = cloudreq.ProviderAWS, false, "AsyncInferenceFailure"
	e.RequestID = inv.RequestID
	e.Details = map[string]string{"failure_location": inv.FailureLocation, "inference_id": inv.InferenceID}
	return e
}

// AsyncOptions configures an AsyncAdapter.
type AsyncOptions struct {
	// Store reads results (and writes large inputs). Nil: an S3Store on
	// the adapter's AWS configuration and HTTP client, at S3Endpoint when
	// set.
	Store ObjectStore
	// S3Endpoint points the default store's S3 client elsewhere, with
	// path-style addressing: the emulator's "http://127.0.0.1:PORT/s3".
	S3Endpoint string
	// InputPrefix is the s3:// prefix where a body over MaxAsyncInlineBody
	// is uploaded (as PREFIX/ID.in) to be sent as the InputLocation.
	// Empty: such a body is refused with ERR_PAYLOAD_TOO_LARGE.
	InputPrefix string
	// InvocationTimeout and RequestTTL are sent with every request (see
	// AsyncInput).
	InvocationTimeout, RequestTTL time.Duration
	// Wait says how results are polled.
	Wait WaitOptions
}

// AsyncAdapter is the cloudreq adapter for SageMaker asynchronous
// inference (provider "aws", service ServiceAsync, actions invoke and
// generate, no streams): one call submits the payload with
// InvokeEndpointAsync, waits for the result in S3 (WaitAsync) and returns
// it as InvokeEndpoint's answer would be, with the output and failure
// locations and the inference id in Metadata. It implements
// cloudreq.Adapter, cloudreq.Encoder, cloudreq.Validator and io.Closer.
type AsyncAdapter struct {
	sync  *Adapter
	store ObjectStore
	opts  AsyncOptions
}

var (
	_ cloudreq.Adapter   = (*AsyncAdapter)(nil)
	_ cloudreq.Encoder   = (*AsyncAdapter)(nil)
	_ cloudreq.Validator = (*AsyncAdapter)(nil)
)

// NewAsync returns an AsyncAdapter on a sagemakerruntime client built as
// New builds it from opts.
func NewAsync(ctx context.Context, opts Options, aopts AsyncOptions) (*AsyncAdapter, error) {
	ad, err := New(ctx, opts)
	if err != nil {
		return nil, err
	}
	if aopts.InputPrefix != "" {
		if _, _, err := ParseS3URI(aopts.InputPrefix); err != nil {
			return nil, errcodes.Errorf(errcodes.InvalidParam, "sagemaker: AsyncOptions.InputPrefix: %v", err)
		}
	}
	if aopts.InvocationTimeout < 0 || aopts.RequestTTL < 0 {
		return nil, errcodes.New(errcodes.InvalidParam, "sagemaker: AsyncOptions.InvocationTimeout and RequestTTL cannot be negative")
	}
	store := aopts.Store
	if store == nil {
		s, err := ad.s3Store(aopts.S3Endpoint)
		if err != nil {
			return nil, err
		}
		store = s
	}
	return &AsyncAdapter{sync: ad, store: store, opts: aopts}, nil
}

// Sync returns the real-time adapter whose client the AsyncAdapter uses.
func (a *AsyncAdapter) Sync() *Adapter { return a.sync }

// Store returns the store results are read from.
func (a *AsyncAdapter) Store() ObjectStore { return a.store }

// Close closes the idle connections of the adapter's own HTTP client.
func (a *AsyncAdapter) Close() error { return a.sync.Close() }

// Describe implements cloudreq.Adapter.
func (a *AsyncAdapter) Describe() cloudreq.Description {
	return cloudreq.Description{
		Provider: cloudreq.ProviderAWS,
		Service:  ServiceAsync,
		Actions:  []string{cloudreq.ActionInvoke, cloudreq.ActionGenerate},
	}
}

// Validate implements cloudreq.Validator: an endpoint name, and none of
// the inputs InvokeEndpointAsync does not have (variant, model, inference
// component, session, container host name, explanations, prefix-aware id).
func (a *AsyncAdapter) Validate(req *cloudreq.CloudRequest) error {
	if err := a.sync.Validate(req); err != nil {
		return err
	}
	var field string
	switch {
	case req.Target.Variant != "":
		field = "Target.Variant"
	case req.Target.Model != "":
		field = "Target.Model"
	case req.Attributes.InferenceComponent != "":
		field = "Attributes.InferenceComponent"
	case req.Attributes.SessionID != "":
		field = "Attributes.SessionID"
	case req.Attributes.TargetContainerHostname != "":
		field = "Attributes.TargetContainerHostname"
	case req.Attributes.EnableExplanations != "":
		field = "Attributes.EnableExplanations"
	case req.Attributes.PrefixAwareID != "":
		field = "Attributes.PrefixAwareID"
	default:
		return nil
	}
	e := errcodes.New(errcodes.InvalidParam, "sagemaker-async: InvokeEndpointAsync has no "+field+"; leave it empty")
	e.Provider = cloudreq.ProviderAWS
	return e
}

// Encode implements cloudreq.Encoder as Adapter.Encode does, for a whole
// (non-streamed) answer.
func (a *AsyncAdapter) Encode(req *cloudreq.CloudRequest, _ bool) (cloudreq.Payload, error) {
	return a.sync.Encode(req, false)
}

// Invoke implements cloudreq.Adapter: submit, wait, read.
func (a *AsyncAdapter) Invoke(ctx context.Context, call *cloudreq.Call) (*cloudreq.CloudResponse, error) {
	req := call.Request
	body, err := payloadBytes(call)
	if err != nil {
		return nil, err
	}
	in := &AsyncInput{
		Endpoint:          req.Target.Endpoint,
		ContentType:       contentType(call.Payload),
		Accept:            call.Payload.Accept,
		CustomAttributes:  req.Attributes.CustomAttributes,
		InferenceID:       inferenceID(req),
		InvocationTimeout: a.opts.InvocationTimeout,
		RequestTTL:        a.opts.RequestTTL,
		Header:            req.Header,
	}
	if len(body) > MaxAsyncInlineBody && a.opts.InputPrefix != "" {
		id := in.InferenceID
		if id == "" {
			id = randomID()
		}
		loc := strings.TrimSuffix(a.opts.InputPrefix, "/") + "/" + id + ".in"
		if err := a.store.Put(ctx, loc, body, in.ContentType); err != nil {
			return nil, storeError(ctx, err)
		}
		in.InputLocation = loc
	} else {
		in.Body = body
	}
	inv, err := a.sync.InvokeAsync(ctx, in)
	if err != nil {
		return nil, err
	}
	res, err := WaitAsync(ctx, a.store, inv, a.opts.Wait)
	if err != nil {
		return nil, err
	}
	if max := a.sync.opts.MaxResponseBytes; int64(len(res.Body)) > max {
		e := errcodes.Errorf(errcodes.PayloadTooLarge, "sagemaker: asynchronous result exceeds %d bytes", max)
		e.Provider, e.Retryable, e.RequestID = cloudreq.ProviderAWS, false, inv.RequestID
		return nil, e
	}
	resp := &cloudreq.CloudResponse{
		StatusCode:  http.StatusOK,
		Data:        res.Body,
		ContentType: res.ContentType,
		RequestID:   inv.RequestID,
		Metadata: map[string]string{
			HeaderOutputLocation: inv.OutputLocation, HeaderInferenceID: inv.InferenceID,
			"polls": strconv.Itoa(res.Polls),
		},
	}
	if inv.FailureLocation != "" {
		resp.Metadata[HeaderFailureLocation] = inv.FailureLocation
	}
	g, err := parseGeneration(res.Body)
	if req.Action != cloudreq.ActionGenerate {
		if err == nil {
			resp.Text, resp.FinishReason, resp.Usage = g.Text, g.Finish, g.Usage
		}
		return resp, nil
	}
	if err != nil {
		e := errcodes.Wrap(err, errcodes.ModelError, "sagemaker: the asynchronous result is not a generation: "+err.Error())
		e.Provider, e.RequestID, e.Retryable = cloudreq.ProviderAWS, inv.RequestID, false
		return nil, e
	}
	resp.Text, resp.FinishReason, resp.Usage = g.Text, g.Finish, g.Usage
	return resp, nil
}

// randomID is a fresh object name.
func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
