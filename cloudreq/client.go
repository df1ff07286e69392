package cloudreq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/nilerr"
	"github.com/cloudinfer/cloudinfer/latency"
)

// Client sends CloudRequests through hooks, the adapter of their
// Provider/Service and the retry loop, and times every call. It is safe for
// concurrent use; create one per process and reuse it.
type Client struct {
	opts       Options
	classifier *latency.Classifier
	// adapters lists the registered adapters. Routing scans it: a client
	// has a handful, which a scan finds sooner than a map hashes two names.
	adapters []*registered
	// lastKey is the endpoint key of the latest call, kept so that calls
	// to one endpoint, the usual case, build no string.
	lastKey atomic.Pointer[endpointKey]
	// closed is set by the first Close: later calls fail at once.
	closed atomic.Bool
}

// endpointKey is a request's EndpointKey with the fields it was built from.
type endpointKey struct {
	provider, service        string
	endpoint, variant, model string
	key                      string
}

// endpointKey returns r.EndpointKey(), reusing the latest call's string
// when r goes to the same endpoint.
func (c *Client) endpointKey(r *CloudRequest) string {
	t := &r.Target
	if k := c.lastKey.Load(); k != nil && k.endpoint == t.Endpoint && k.model == t.Model && k.variant == t.Variant &&
		k.provider == r.Provider && k.service == r.Service {
		return k.key
	}
	k := &endpointKey{provider: r.Provider, service: r.Service, endpoint: t.Endpoint, variant: t.Variant, model: t.Model,
		key: r.EndpointKey()}
	c.lastKey.Store(k)
	return k.key
}

// New returns a Client. Option functions are applied to a copy of opts;
// the client keeps its own copy of its slices. Its CallOptions are the
// defaults of every call.
func New(opts Options, optFns ...func(*Options)) (*Client, error) {
	opts.Adapters = slices.Clone(opts.Adapters)
	opts.Observers = slices.Clone(opts.Observers)
	for _, f := range optFns {
		f(&opts)
	}
	opts.Retry.setDefaults()
	if opts.Retry.Budget == nil && !opts.Retry.NoBudget {
		opts.Retry.Budget = NewRetryBudget(DefaultBudgetTokens)
	}
	c := &Client{
		opts:       opts,
		classifier: latency.NewClassifier(opts.ScaleToZeroWindow, opts.ScaleToZeroWindow > 0),
	}
	for _, a := range opts.Adapters {
		if a == nil {
			return nil, errcodes.New(errcodes.InvalidParam, "cloudreq: nil adapter")
		}
		var d Description
		if err := safely(func() error { d = a.Describe(); return nil }); err != nil {
			return nil, err.(*errcodes.Error)
		}
		k := adapterID{d.Provider, d.Service}
		if c.find(d.Provider, d.Service) != nil {
			return nil, errcodes.Errorf(errcodes.InvalidParam, "cloudreq: two adapters for %s", adapterKey(d.Provider, d.Service))
		}
		_, streams := a.(Streamer)
		creds, _ := a.(CredentialSource)
		c.adapters = append(c.adapters, &registered{id: k, ad: a, desc: d, streams: streams, creds: creds})
	}
	return c, nil
}

// Close closes the client and the adapters that hold resources
// (io.Closer), and returns their errors joined. Only the first Close
// closes anything; a later one returns nil.
//
// After Close, Invoke and Stream fail at once, before any hook or observer
// runs, with a non-retryable ERR_INVALID_PARAM "cloudreq: the client is
// closed". Close does not wait for calls in flight nor cancel them; what
// becomes of them is the adapter's Close: the HTTP adapters close only
// idle connections, so calls in flight run to their end (their
// connections go idle afterwards and close after the idle timeout), while
// Vertex closes its gRPC connections, which ends calls in flight with
// ERR_CANCELED. Close a client once its calls have ended (cancel their
// contexts first to stop them).
func (c *Client) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	var errs []error
	for _, r := range c.adapters {
		if cl, ok := r.ad.(io.Closer); ok {
			errs = append(errs, safely(cl.Close))
		}
	}
	return errors.Join(errs...)
}

// Supported lists the Provider/Service/Action combinations the client
// serves, as "provider/service: action, action (stream)" lines.
func (c *Client) Supported() []string {
	var out []string
	for _, r := range c.adapters {
		s := adapterKey(r.id.provider, r.id.service) + ": " + strings.Join(r.desc.Actions, ", ")
		if r.streams {
			s += " (stream)"
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// registered is an adapter with its description, read once at New.
type registered struct {
	id      adapterID
	ad      Adapter
	desc    Description
	streams bool
	creds   CredentialSource // nil when the adapter is not one
}

// adapterID is the routing key of an adapter.
type adapterID struct{ provider, service string }

func adapterKey(provider, service string) string { return provider + "/" + service }

// Invoke sends req and returns its response once the whole body arrived.
// On failure the error is an *errcodes.Error and the response is nil.
// Option functions change a copy of the client's CallOptions for this
// call.
func (c *Client) Invoke(ctx context.Context, req *CloudRequest, optFns ...func(*CallOptions)) (*CloudResponse, error) {
	cl, ctx, cancel, err := c.prepare(ctx, req, false, optFns)
	defer cancel()
	if err != nil {
		return nil, cl.fail(err)
	}
	for n := 1; ; n++ {
		resp, e := cl.attemptInvoke(ctx, n)
		if e == nil {
			return cl.succeed(resp), nil
		}
		if err := cl.backoff(ctx, n, e); err != nil {
			return nil, cl.fail(err)
		}
	}
}

// call is the state of one Invoke or Stream call.
type call struct {
	o        *CallOptions // the client's, or a copy with the call's options
	c        *Client
	req      *CloudRequest // the working copy hooks may rewrite
	reg      *registered   // the adapter the call routes to
	payload  Payload
	tl       *latency.Timeline
	retry    retrier       // whether and when to retry
	wait     time.Duration // backoff before the next attempt
	errs     []*errcodes.Error
	notReady bool
	// sendIsIntended: the request set no IntendedSend, so the first
	// attempt's send time is the intended one (closed-loop load).
	sendIsIntended bool
	obs            []CallObserver

	// Storage for the per-call values above, so that a call allocates them
	// with itself: the working request, the first attempt's trace and
	// Call. The timeline is apart (see timing).
	reqv   CloudRequest
	genv   GenerateInput // the working request's Generate
	msg1   [1]Message    // its messages, while there is one
	trace1 latency.AttemptTrace
	call1  Call
	// optv holds the call's options when it has option functions, its
	// observers in observersv's array while they fit; obsv holds the
	// call observers while they fit.
	optv       CallOptions
	observersv [4]Observer
	obsv       [2]CallObserver
	sent       sentSecrets // the credentials the attempts sent
	// attemptSent collects the credentials the latest attempt sent (sent,
	// or a stream attempt's own), for its observers.
	attemptSent *sentSecrets
}

// timing is a call's Timeline with room for its first attempt and chunk.
// It is the part of a call the caller keeps (CloudResponse.Timing), so it
// is allocated apart from the call: keeping a response's timeline keeps
// neither the call's request nor its payload.
type timing struct {
	tl       latency.Timeline
	attempt1 [1]latency.Attempt
	chunk1   [1]latency.Chunk
}

// newTrace starts the trace of attempt n: the call's own for the first,
// a new one for a retry (a late callback of an abandoned attempt may still
// reach the old one, which ignores it once finished).
func (cl *call) newTrace(n int) *latency.AttemptTrace {
	cl.startAttempt(n)
	tr := &cl.trace1
	if n > 1 {
		tr = new(latency.AttemptTrace)
	}
	send := cl.now()
	if n == 1 && cl.sendIsIntended {
		cl.tl.IntendedSend = send
	}
	tr.StartAt(n, cl.wait, send)
	return tr
}

// newCall returns what the adapter gets for attempt n: the call's own for
// the first, a new one for a retry.
func (cl *call) newCall(n int, tr *latency.AttemptTrace) *Call {
	c := &cl.call1
	if n > 1 {
		c = new(Call)
	}
	*c = Call{Request: cl.req, Payload: cl.payload, Attempt: n, Trace: tr}
	return c
}

// now reads the clock for the call's timeline: the call's start plus the
// monotonic time since, which reads one clock instead of two (wall and
// monotonic) and keeps every stamp of the call on the same monotonic scale.
func (cl *call) now() time.Time { return cl.tl.Start.Add(time.Since(cl.tl.Start)) }

// initTimeline starts the call's timeline. A zero intended send time
// means the first attempt's send time; until one starts, the call's start.
func (cl *call) initTimeline(intended time.Time) {
	now := time.Now()
	if intended.IsZero() {
		intended, cl.sendIsIntended = now, true
	}
	t := new(timing)
	tl := &t.tl
	tl.IntendedSend, tl.Start = intended, now
	tl.Attempts, tl.Chunks = t.attempt1[:0:1], t.chunk1[:0:1]
	cl.tl = tl
}

// prepare resolves options, starts observers, validates, runs the
// PreValidate and PreSerialize hooks and encodes the payload. The returned
// call is usable (for fail) even when err is set.
func (c *Client) prepare(ctx context.Context, req *CloudRequest, stream bool, optFns []func(*CallOptions)) (*call, context.Context, context.CancelFunc, *errcodes.Error) {
	cl := &call{o: &c.opts.CallOptions, c: c}
	if c.closed.Load() {
		cl.initTimeline(time.Time{})
		return cl, ctx, func() {}, errClientClosed()
	}
	if len(optFns) > 0 {
		o := &cl.optv
		*o = c.opts.CallOptions
		o.Observers = append(cl.observersv[:0], o.Observers...)
		for _, f := range optFns {
			f(o)
		}
		if o.clientOnly != "" {
			cl.initTimeline(time.Time{})
			e := errcodes.Errorf(errcodes.InvalidParam, "cloudreq: %s is a client option: a call cannot change it", o.clientOnly)
			e.Retryable = false
			return cl, ctx, func() {}, e
		}
		o.Retry.setDefaults()
		if o.Retry.Budget == nil {
			o.Retry.Budget = c.opts.Retry.Budget // nil when the client has none
		}
		cl.o = o
	}
	if req == nil {
		cl.initTimeline(time.Time{})
		return cl, ctx, func() {}, errcodes.New(errcodes.InvalidParam, "cloudreq: nil request")
	}
	cl.initTimeline(req.IntendedSend)
	cl.tl.Streamed = stream
	req.cloneInto(&cl.reqv, &cl.genv, cl.msg1[:0])
	cl.req = &cl.reqv
	c.defaultService(cl.req)
	cl.obs = cl.obsv[:0]
	for _, ob := range cl.o.Observers {
		var co CallObserver
		octx := ctx
		observe(func() { octx, co = ob.StartCall(ctx, cl.req, stream) })
		if octx != nil {
			ctx = octx
		}
		if co != nil {
			cl.obs = append(cl.obs, co)
		}
	}
	cancel := context.CancelFunc(func() {})
	if cl.o.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, cl.o.Timeout)
	}

	r, err := c.route(cl.req, stream)
	if err != nil {
		return cl, ctx, cancel, err
	}
	cl.reg = r
	if err := validateFor(r.ad, cl.req); err != nil {
		return cl, ctx, cancel, err
	}
	if err := validate(cl.req); err != nil {
		return cl, ctx, cancel, err
	}
	if h := cl.o.Hooks; h != nil {
		if err := safely(func() error { return h.PreValidate(ctx, cl.req) }); err != nil {
			return cl, ctx, cancel, finalHookError("PreValidate", err)
		}
		if err := safely(func() error { return h.PreSerialize(ctx, cl.req) }); err != nil {
			return cl, ctx, cancel, finalHookError("PreSerialize", err)
		}
	}
	cl.payload = cl.req.Payload
	if cl.req.Action == ActionGenerate {
		enc, ok := cl.reg.ad.(Encoder)
		if !ok {
			return cl, ctx, cancel, errcodes.Errorf(errcodes.InvalidParam, "cloudreq: %s adapter cannot encode generate requests", adapterKey(cl.req.Provider, cl.req.Service))
		}
		var p Payload
		if err := safely(func() (err error) { p, err = enc.Encode(cl.req, stream); return err }); err != nil {
			return cl, ctx, cancel, normalizeWith(err, errcodes.InvalidParam, cl.req.Provider)
		}
		cl.payload = p
	}
	cl.retry = retrier{o: &cl.o.Retry, replayable: cl.payload.Body != nil || cl.payload.Reader == nil}
	if dl, ok := ctx.Deadline(); ok {
		cl.retry.deadline = dl
	}
	return cl, ctx, cancel, nil
}

// errClientClosed is the error of a call on a closed client: a new one
// for each call, which the caller may change.
func errClientClosed() *errcodes.Error {
	e := errcodes.New(errcodes.InvalidParam, "cloudreq: the client is closed")
	e.Retryable = false
	return e
}

// route finds the adapter for req, or explains what is supported.
func (c *Client) route(req *CloudRequest, stream bool) (*registered, *errcodes.Error) {
	unsupported := func(what string) *errcodes.Error {
		sup := c.Supported()
		list := "none (no adapters registered)"
		if len(sup) > 0 {
			list = strings.Join(sup, "; ")
		}
		return errcodes.Errorf(errcodes.InvalidParam, "cloudreq: unsupported %s; supported: %s", what, list)
	}
	r := c.find(req.Provider, req.Service)
	if r == nil && req.Service == "" {
		if svcs := c.services(req.Provider); len(svcs) > 1 {
			return nil, errcodes.Errorf(errcodes.InvalidParam, "cloudreq: provider %q has adapters for services %s: set Service", req.Provider, strings.Join(svcs, ", "))
		}
	}
	if r == nil {
		return nil, unsupported(fmt.Sprintf("provider/service %q/%q", req.Provider, req.Service))
	}
	if !slices.Contains(r.desc.Actions, req.Action) {
		return nil, unsupported(fmt.Sprintf("action %q for %s/%s", req.Action, req.Provider, req.Service))
	}
	if stream && !r.streams {
		return nil, unsupported(fmt.Sprintf("streaming for %s/%s", req.Provider, req.Service))
	}
	return r, nil
}

// defaultService fills an empty req.Service with the service of the
// adapter registered for req.Provider, when exactly one is.
func (c *Client) defaultService(req *CloudRequest) {
	if req.Service != "" {
		return
	}
	var found *registered
	for _, r := range c.adapters {
		if r.id.provider == req.Provider {
			if found != nil {
				return // two: route names them
			}
			found = r
		}
	}
	if found != nil {
		req.Service = found.id.service
	}
}

// services returns the services of the adapters registered for provider,
// in registration order.
func (c *Client) services(provider string) []string {
	var out []string
	for _, r := range c.adapters {
		if r.id.provider == provider {
			out = append(out, r.id.service)
		}
	}
	return out
}

// find returns the adapter registered for provider and service, or nil.
func (c *Client) find(provider, service string) *registered {
	for _, r := range c.adapters {
		if r.id.provider == provider && r.id.service == service {
			return r
		}
	}
	return nil
}

// validate holds the checks every request must pass whatever the hooks.
func validate(r *CloudRequest) *errcodes.Error {
	bad := func(format string, args ...any) *errcodes.Error {
		return errcodes.Errorf(errcodes.InvalidParam, "cloudreq: "+format, args...)
	}
	if r.Target.Endpoint == "" && r.Target.Model == "" {
		return bad("Target.Endpoint or Target.Model is required")
	}
	switch r.Action {
	case ActionInvoke:
		if len(r.Payload.Body) == 0 && r.Payload.Reader == nil {
			return bad("action invoke needs Payload.Body")
		}
	case ActionGenerate:
		g := r.Generate
		if g == nil || len(g.Messages) == 0 {
			return bad("action generate needs Generate.Messages")
		}
		if g.MaxTokens < 0 {
			return bad("Generate.MaxTokens is negative (%d)", g.MaxTokens)
		}
		if g.Temperature != nil && (*g.Temperature < 0 || *g.Temperature > 2) {
			return bad("Generate.Temperature %g is outside [0, 2]", *g.Temperature)
		}
		if g.TopP != nil && (*g.TopP <= 0 || *g.TopP > 1) {
			return bad("Generate.TopP %g is outside (0, 1]", *g.TopP)
		}
		if err := CheckGenerate(g); err != nil {
			return bad("%v", err)
		}
	}
	return nil
}

// safely runs f, turning a panic into an ERR_INTERNAL error so that no panic
// from a hook or adapter crosses the API. A typed nil error from f (a nil
// *T in the error interface) is no error (see package nilerr).
func safely(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errcodes.Errorf(errcodes.Internal, "cloudreq: panic in hook or adapter: %v", r)
			err.(*errcodes.Error).Retryable = false
		}
	}()
	if err = f(); err != nil && nilerr.Is(err) {
		err = nil
	}
	return err
}

// observe runs one of an Observer's methods and drops a panic from it: an
// observer sees a call, it does not decide its outcome.
func observe(f func()) {
	defer func() { _ = recover() }()
	f()
}

func finalHookError(phase string, err error) *errcodes.Error {
	e := normalizeWith(err, errcodes.InvalidParam, "")
	if e.Message == "" || e.Retryable {
		e = amend(e)
		if e.Message == "" {
			e.Message = phase + " hook refused the request"
		}
		e.Retryable = false
	}
	return e
}

// normalizeWith returns err as an *errcodes.Error: the one in its chain, or
// a new one with the code errcodes.Of gives err (a bare Code, a context
// error), or code when that is ERR_UNKNOWN.
func normalizeWith(err error, code errcodes.Code, provider string) *errcodes.Error {
	var e *errcodes.Error
	if !errors.As(err, &e) || e == nil {
		c := errcodes.Of(err)
		if c == errcodes.Unknown {
			c = code
		}
		e = errcodes.Wrap(err, c, err.Error())
	}
	return withProvider(e, provider)
}

// withProvider returns e with Provider set to provider when it has none.
func withProvider(e *errcodes.Error, provider string) *errcodes.Error {
	if e.Provider == "" && provider != "" {
		e = amend(e)
		e.Provider = provider
	}
	return e
}

// amend returns a copy of e to change, that wraps e. Hooks and adapters
// may return one *errcodes.Error from many calls (a package variable, a
// test fixture): writing to it would race between calls and leak one
// call's details into another. errors.Is(err, e) still holds for the copy.
func amend(e *errcodes.Error) *errcodes.Error {
	c := *e
	c.Err = e
	return &c
}

// withTrace returns ctx timing the attempt's HTTP requests into tr, and
// recording the credentials they send into sent unless the adapter names
// its credentials itself.
func (cl *call) withTrace(ctx context.Context, tr *latency.AttemptTrace, sent *sentSecrets) context.Context {
	cl.attemptSent = sent
	if cl.reg.creds == nil {
		tr.SetHeaderObserver(sent)
	}
	return tr.Context(ctx)
}

// scrub redacts from an attempt's error the credentials it sent (see
// call.credentials).
func (cl *call) scrub(sent *sentSecrets, e *errcodes.Error) *errcodes.Error {
	if e == nil {
		return nil
	}
	return scrubError(e, cl.credentials(sent))
}

// errAttemptTimeout marks an attempt's own deadline, as opposed to the call's.
var errAttemptTimeout = errors.New("attempt timeout")

// attemptInvoke makes attempt n of a non-streaming call.
func (cl *call) attemptInvoke(ctx context.Context, n int) (*CloudResponse, *errcodes.Error) {
	actx, cancel := ctx, context.CancelFunc(func() {})
	if cl.o.AttemptTimeout > 0 {
		actx, cancel = context.WithTimeoutCause(ctx, cl.o.AttemptTimeout, errAttemptTimeout)
	}
	defer cancel()
	tr := cl.newTrace(n)
	actx = cl.withTrace(actx, tr, &cl.sent)
	callv := cl.newCall(n, tr)
	var resp *CloudResponse
	err := safely(func() (err error) { resp, err = cl.reg.ad.Invoke(actx, callv); return err })
	if err == nil && resp == nil {
		err = errcodes.New(errcodes.Internal, "cloudreq: adapter returned neither response nor error")
	}
	e := cl.scrub(&cl.sent, cl.normalize(ctx, actx, err))
	e = cl.postDeserialize(ctx, resp, e)
	cl.endAttempt(tr, resp, e)
	if e != nil {
		return nil, e
	}
	return resp, nil
}

// normalize maps an attempt's error: the call's own context first (final),
// then the attempt deadline (retryable), then the adapter's *errcodes.Error
// or a transport error.
func (cl *call) normalize(ctx, actx context.Context, err error) *errcodes.Error {
	if err == nil {
		return nil
	}
	if e := callEnded(ctx, err); e != nil {
		e.Provider = cl.req.Provider
		return e
	}
	if actx.Err() != nil {
		switch cause := context.Cause(actx); cause {
		case errAttemptTimeout, errFirstChunkTimeout:
			msg := "attempt timed out"
			if cause == errFirstChunkTimeout {
				msg = cause.Error()
			}
			e := errcodes.Wrap(err, errcodes.Timeout, msg)
			e.Retryable = true
			e.Provider = cl.req.Provider
			return e
		}
	}
	return withProvider(errcodes.FromTransport(err), cl.req.Provider)
}

// callEnded returns the final error of a call whose context ended, and
// nil while it runs. A deadline that passed counts even before the
// context's timer fired: a transport or server that saw it first may have
// reported it already (grpc-go turns the server's RST_STREAM into
// DEADLINE_EXCEEDED), and it is the call's deadline all the same.
func callEnded(ctx context.Context, err error) *errcodes.Error {
	if e := errcodes.FromContext(ctx); e != nil {
		return e
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		e := errcodes.Wrap(err, errcodes.Timeout, "deadline exceeded")
		e.Retryable = false
		return e
	}
	return nil
}

func (cl *call) postDeserialize(ctx context.Context, resp *CloudResponse, e *errcodes.Error) *errcodes.Error {
	h := cl.o.Hooks
	if h == nil {
		return e
	}
	var in error
	if e != nil {
		in = e
	}
	var out error
	if err := safely(func() error { out = h.PostDeserialize(ctx, cl.req, resp, in); return nil }); err != nil {
		out = err
	}
	if out == nil || nilerr.Is(out) {
		return e
	}
	return normalizeWith(out, errcodes.Unknown, cl.req.Provider)
}

func (cl *call) endAttempt(tr *latency.AttemptTrace, resp *CloudResponse, e *errcodes.Error) {
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	code := ""
	if e != nil {
		status = e.HTTPStatus
		code = string(e.Code)
		if e.Code == errcodes.ModelNotReady {
			cl.notReady = true
		}
	}
	cl.tl.Attempts = append(cl.tl.Attempts, latency.Attempt{})
	a := &cl.tl.Attempts[len(cl.tl.Attempts)-1]
	tr.FinishInto(a, status, code)
	if len(cl.obs) == 0 {
		return
	}
	info := AttemptInfo{Attempt: *a, Request: cl.req, Err: e, cl: cl, sent: cl.attemptSent}
	if e == nil {
		info.Response = resp
	}
	for _, o := range cl.obs {
		observe(func() { o.EndAttempt(info) })
	}
}

// startAttempt tells the observers that are AttemptStarters that attempt
// n starts.
func (cl *call) startAttempt(n int) {
	for _, o := range cl.obs {
		if s, ok := o.(AttemptStarter); ok {
			observe(func() {
				s.StartAttempt(AttemptInfo{Attempt: latency.Attempt{Number: n, Backoff: cl.wait}, Request: cl.req, cl: cl})
			})
		}
	}
}

// backoff asks the call's retrier whether attempt n's error e is retried,
// waits, and returns nil to go on or the error that ends the call.
func (cl *call) backoff(ctx context.Context, n int, e *errcodes.Error) *errcodes.Error {
	wait, ok := cl.retry.next(e)
	if !ok {
		return e
	}
	cl.errs = append(cl.errs, e)
	if l := cl.o.Logger; l != nil {
		l.DebugContext(ctx, "cloudinfer retry", "provider", cl.req.Provider, "code", string(e.Code),
			"attempt", n, "wait", wait)
	}
	cl.wait = wait
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		cl.retry.abandoned(e)
		ce := errcodes.FromContext(ctx)
		ce.Provider = cl.req.Provider
		return ce
	case <-t.C:
		return nil
	}
}

// succeed completes a successful call.
func (cl *call) succeed(resp *CloudResponse) *CloudResponse {
	cl.retry.succeeded()
	tl := cl.tl
	last := tl.LastAttempt()
	if !tl.Streamed {
		tl.End = last.End
		tl.AddChunk(last.End, resp.Usage.OutputTokens, true)
	} else if tl.End.IsZero() {
		tl.End = cl.now()
	}
	cl.settle(resp, true)
	for _, o := range cl.obs {
		observe(func() { o.EndCall(resp, tl, nil) })
	}
	return resp
}

// settle completes a call's final response: its timeline, the errors of
// the attempts before the one that answered, and, when classify is set
// (the endpoint served the call), the start verdict. Classifying a call
// also makes it evidence for the endpoint's later calls, so a call the
// endpoint did not serve is not classified.
func (cl *call) settle(resp *CloudResponse, classify bool) {
	tl := cl.tl
	resp.Timing = tl
	resp.Errors = append(cl.errs, resp.Errors...)
	if !classify {
		return
	}
	ev := latency.Evidence{Endpoint: cl.c.endpointKey(cl.req), NotReadyThenReady: cl.notReady, Timeline: tl}
	if ss := resp.ServerStart; ss != nil {
		cold := ss.Cold
		ev.ServerCold, ev.ServerSetup = &cold, ss.Setup
	}
	resp.Start = cl.c.classifier.Classify(ev)
}

// fail completes a failed call and returns its error.
func (cl *call) fail(e *errcodes.Error) error {
	if cl.tl.End.IsZero() {
		cl.tl.End = cl.now()
	}
	for _, o := range cl.obs {
		observe(func() { o.EndCall(nil, cl.tl, e) })
	}
	return e
}
