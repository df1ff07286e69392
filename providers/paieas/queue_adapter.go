package paieas

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

// ServiceQueue is the service of QueueAdapter: an asynchronous EAS
// service reached through its queue service, provider "alibaba".
const ServiceQueue = "pai-eas-queue"

// QueueAdapter is the cloudreq adapter for an asynchronous PAI-EAS
// service (provider "alibaba", service ServiceQueue, actions invoke and
// generate, no stream): one call enqueues the body (QueueClient.Put) and
// waits for its result (QueueClient.Wait, which deletes it once read),
// then answers as the synchronous service would: Data is the result,
// Text, FinishReason and Usage are read from it by the dialect.
// Target.Endpoint is the service name; Metadata holds the queue index and
// request id (X-Eas-Queueservice-Index, X-Eas-Queueservice-Request-Id).
type QueueAdapter struct {
	inner *Adapter
	opts  Options
	wait  WaitOptions

	mu      sync.Mutex
	clients map[string]*QueueClient
}

// HeaderQueueIndex is the Metadata key of a queued request's index.
const HeaderQueueIndex = "X-Eas-Queueservice-Index"

var (
	_ cloudreq.Adapter   = (*QueueAdapter)(nil)
	_ cloudreq.Encoder   = (*QueueAdapter)(nil)
	_ cloudreq.Validator = (*QueueAdapter)(nil)
)

// NewQueueAdapter returns a QueueAdapter for the services at
// o.Endpoint, with o.Token, o.Dialect and o.HTTPClient; w tunes the wait.
func NewQueueAdapter(o Options, w WaitOptions) (*QueueAdapter, error) {
	if o.Endpoint == "" {
		return nil, invalid("paieas queue: NewQueueAdapter needs Options.Endpoint, the EAS endpoint root")
	}
	inner, err := New(o)
	if err != nil {
		return nil, err
	}
	return &QueueAdapter{inner: inner, opts: o, wait: w, clients: map[string]*QueueClient{}}, nil
}

// Describe implements cloudreq.Adapter.
func (a *QueueAdapter) Describe() cloudreq.Description {
	return cloudreq.Description{Provider: cloudreq.ProviderAlibaba, Service: ServiceQueue,
		Actions: []string{cloudreq.ActionInvoke, cloudreq.ActionGenerate}}
}

// Close closes the idle connections of the adapter's own transport.
func (a *QueueAdapter) Close() error { return a.inner.Close() }

// Validate implements cloudreq.Validator: a service name, and no stream.
func (a *QueueAdapter) Validate(req *cloudreq.CloudRequest) error {
	if req.Target.Endpoint == "" || strings.ContainsAny(req.Target.Endpoint, "/?#:") {
		return invalid("pai-eas-queue needs Target.Endpoint, the asynchronous service's name, got %q", req.Target.Endpoint)
	}
	return nil
}

// Encode implements cloudreq.Encoder: the body in the dialect, whole.
func (a *QueueAdapter) Encode(req *cloudreq.CloudRequest, _ bool) (cloudreq.Payload, error) {
	return a.inner.Encode(req, false)
}

// client returns the queue client of a service.
func (a *QueueAdapter) client(service string) (*QueueClient, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c := a.clients[service]; c != nil {
		return c, nil
	}
	c, err := NewQueueClient(QueueOptions{Endpoint: a.opts.Endpoint, Service: service, Token: a.opts.Token,
		HTTPClient: a.opts.HTTPClient, AllowInsecureHTTP: a.opts.AllowInsecureHTTP})
	if err != nil {
		return nil, err
	}
	a.clients[service] = c
	return c, nil
}

// Invoke implements cloudreq.Adapter: enqueue, wait, read the result.
func (a *QueueAdapter) Invoke(ctx context.Context, call *cloudreq.Call) (*cloudreq.CloudResponse, error) {
	q, err := a.client(call.Request.Target.Endpoint)
	if err != nil {
		return nil, err
	}
	body := call.Payload.Body
	if body == nil && call.Payload.Reader != nil {
		if body, err = io.ReadAll(call.Payload.Reader); err != nil {
			return nil, invalid("paieas queue: reading the payload: %v", err)
		}
	}
	e, err := q.Put(ctx, body, PutOptions{})
	if err != nil {
		return nil, err
	}
	f, err := q.Wait(ctx, e, a.wait)
	if err != nil {
		return nil, err
	}
	resp := &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(bytes.NewReader(f.Data)),
		Header: http.Header{"Content-Type": {"application/json"}, HeaderQueueRequestID: {e.RequestID}}}
	out, err := a.inner.answer(call.Request, resp)
	if err != nil {
		return nil, err
	}
	if out.Metadata == nil {
		out.Metadata = map[string]string{}
	}
	out.Metadata[HeaderQueueIndex] = strconv.FormatUint(e.Index, 10)
	out.Metadata[HeaderQueueRequestID] = e.RequestID
	out.RequestID = e.RequestID
	return out, nil
}

// answer reads a whole answer of the service as Invoke does.
func (a *Adapter) answer(req *cloudreq.CloudRequest, resp *http.Response) (*cloudreq.CloudResponse, error) {
	switch d, _ := a.dialect(req); {
	case req.Action == cloudreq.ActionGenerate && d == DialectLegacy:
		return a.core.Invoke(resp, req.Action, `paieas: the response is not {"response":…}`, legacyAnswer)
	case req.Action == cloudreq.ActionGenerate:
		return a.core.Invoke(resp, req.Action, "paieas: the response is not an OpenAI completion", answers)
	}
	return a.core.Invoke(resp, req.Action, "", invokeAnswers)
}
