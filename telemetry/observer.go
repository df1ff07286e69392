package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/nilerr"
	"github.com/cloudinfer/cloudinfer/latency"
)

// Options configures an Observer.
type Options struct {
	// TracerProvider makes the spans; nil (a nil pointer too) uses
	// otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// MeterProvider makes the instruments; nil (a nil pointer too) uses
	// otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// CaptureContent records prompts (gen_ai.input.messages), for
	// non-streaming generate calls completions (gen_ai.output.messages),
	// and a failure's message in the span status, on spans, with the
	// credentials the attempts sent replaced. Off by default: content
	// often holds personal data, and a server may quote anything in it.
	CaptureContent bool
	// NoAttemptSpans turns off the child span per attempt; attempts are
	// then only counted on the call's span.
	NoAttemptSpans bool
}

// Observer turns cloudinfer calls into OpenTelemetry GenAI spans and
// metrics. It implements cloudreq.Observer; it is safe for concurrent use
// and never blocks a call.
type Observer struct {
	opts   Options
	tracer trace.Tracer

	duration  genaiconv.ClientOperationDuration
	tokens    genaiconv.ClientTokenUsage
	ttfc      genaiconv.ClientOperationTimeToFirstChunk
	tpoc      genaiconv.ClientOperationTimePerOutputChunk
	coldStart metric.Float64Histogram
	retries   metric.Int64Counter
	throttles metric.Int64Counter
}

var _ cloudreq.Observer = (*Observer)(nil)

// New returns an Observer that records with the providers in opts.
func New(opts Options) (*Observer, error) {
	if nilerr.Value(opts.TracerProvider) {
		opts.TracerProvider = otel.GetTracerProvider()
	}
	if nilerr.Value(opts.MeterProvider) {
		opts.MeterProvider = otel.GetMeterProvider()
	}
	o := &Observer{opts: opts}
	o.tracer = opts.TracerProvider.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL))
	m := opts.MeterProvider.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))

	durBuckets := metric.WithExplicitBucketBoundaries(DurationBuckets...)
	var errs [7]error
	o.duration, errs[0] = genaiconv.NewClientOperationDuration(m, durBuckets)
	o.tokens, errs[1] = genaiconv.NewClientTokenUsage(m, metric.WithExplicitBucketBoundaries(TokenBuckets...))
	o.ttfc, errs[2] = genaiconv.NewClientOperationTimeToFirstChunk(m, durBuckets)
	o.tpoc, errs[3] = genaiconv.NewClientOperationTimePerOutputChunk(m, durBuckets)
	o.coldStart, errs[4] = m.Float64Histogram(MetricColdStartOverhead, metric.WithUnit("s"), durBuckets,
		metric.WithDescription("Cold-start overhead of calls served by a cold model: model ready minus first send."))
	o.retries, errs[5] = m.Int64Counter(MetricRetries, metric.WithUnit("{retry}"),
		metric.WithDescription("Attempts made after a failed attempt of the same call, by the error that was retried."))
	o.throttles, errs[6] = m.Int64Counter(MetricThrottles, metric.WithUnit("{throttle}"),
		metric.WithDescription("Attempts refused with ERR_THROTTLED (rate limit or full queue)."))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, errcodes.Wrap(err, errcodes.InvalidParam, "telemetry: cannot create instruments: "+err.Error())
	}
	return o, nil
}

// WithObserver returns a cloudreq option function that adds obs to the
// client's observers, for cloudreq.New (or, through cloudreq.PerCall, for
// a single call):
//
//	obs, _ := telemetry.New(telemetry.Options{})
//	client, _ := cloudreq.New(opts, telemetry.WithObserver(obs))
//
// An Observer already among them is not added again: each call is traced
// and measured once.
func WithObserver(obs *Observer) func(*cloudreq.Options) {
	return func(o *cloudreq.Options) {
		if obs != nil && !slices.Contains(o.Observers, cloudreq.Observer(obs)) {
			o.Observers = append(o.Observers, obs)
		}
	}
}

// StartCall implements cloudreq.Observer: it starts the call's CLIENT span
// and returns a context carrying it.
func (o *Observer) StartCall(ctx context.Context, req *cloudreq.CloudRequest, stream bool) (context.Context, cloudreq.CallObserver) {
	c := &call{
		o:        o,
		req:      req,
		stream:   stream,
		op:       requestOperation(req),
		provider: ProviderName(req.Provider, req.Service),
		model:    req.Target.Model,
		endpoint: req.Target.Endpoint,
		variant:  req.Target.Variant,
		srv:      serverOf(req.Target.Endpoint),
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameKey.String(c.op),
		semconv.GenAIProviderNameKey.String(c.provider),
		semconv.GenAIRequestStreamKey.Bool(stream),
		attribute.String(attrService, req.Service),
		attribute.String(attrAction, req.Action),
	}
	attrs = append(attrs, c.serverAttrs()...)
	if c.model != "" {
		attrs = append(attrs, semconv.GenAIRequestModelKey.String(c.model))
	}
	if v := req.Target.Variant; v != "" {
		attrs = append(attrs, attribute.String(attrVariant, v))
	}
	if req.Class != "" {
		attrs = append(attrs, attribute.String(attrClass, req.Class))
	}
	ctx, c.span = o.tracer.Start(ctx, SpanName(c.op, c.model),
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	c.ctx = ctx
	return ctx, c
}

// AttemptSpanName is the name of the INTERNAL child span of each attempt.
const AttemptSpanName = "cloudinfer.attempt"

// call is one observed call. Its methods run one at a time (the client
// serializes a call's attempts and end).
type call struct {
	o        *Observer
	ctx      context.Context // carries the call's span, for attempt spans
	span     trace.Span
	req      *cloudreq.CloudRequest // the client's working copy
	stream   bool
	op       string
	provider string
	model    string
	endpoint string // the Target.Endpoint srv was derived from
	variant  string
	srv      server
	prevType string // error.type of the previous attempt
	base     []attribute.KeyValue
	// last is the latest attempt, whose Scrub hides the credentials it
	// sent in what the call's end records; respID is the scrubbed request
	// id of the latest attempt that answered.
	last   cloudreq.AttemptInfo
	respID string
	// retargeted: the target was read again after the PreSerialize hooks
	// (see retarget).
	retargeted bool
}

func (c *call) serverAttrs() []attribute.KeyValue {
	var out []attribute.KeyValue
	if c.srv.address != "" {
		out = append(out, semconv.ServerAddressKey.String(c.srv.address))
		if c.srv.port > 0 {
			out = append(out, semconv.ServerPortKey.Int(c.srv.port))
		}
	}
	if c.srv.endpoint != "" {
		out = append(out, attribute.String(attrEndpoint, c.srv.endpoint))
	}
	return out
}

// baseSet returns the metric attributes of the call plus extra. The
// attributes every metric carries (gen_ai.operation.name,
// gen_ai.provider.name, gen_ai.request.model, server.address, server.port,
// cloudinfer.endpoint) are built once per call.
func (c *call) baseSet(extra ...attribute.KeyValue) attribute.Set {
	if c.base == nil {
		c.base = append(c.serverAttrs(),
			semconv.GenAIOperationNameKey.String(c.op),
			semconv.GenAIProviderNameKey.String(c.provider))
		if c.model != "" {
			c.base = append(c.base, semconv.GenAIRequestModelKey.String(c.model))
		}
	}
	if len(extra) == 0 {
		return attribute.NewSet(c.base...)
	}
	return attribute.NewSet(append(slices.Clip(c.base), extra...)...)
}

// retarget derives the call's target attributes again from the request
// the attempts sent, and sets the generate request's attributes from it.
// StartCall runs before the PreSerialize hooks, which may rewrite the
// client's working copy of the request (set a default model or generation
// defaults, add a message, route to another endpoint or variant); the
// attempts send the rewritten request. It runs once, at the end of the
// first attempt, or at the end of the call when no attempt was made,
// before anything is recorded, so that the span's name and attributes and
// every metric of the call carry the final values.
func (c *call) retarget() {
	if c.retargeted {
		return
	}
	c.retargeted = true
	t := c.req.Target
	var attrs []attribute.KeyValue
	if t.Endpoint != c.endpoint {
		old := c.srv
		c.endpoint, c.srv = t.Endpoint, serverOf(t.Endpoint)
		attrs = append(attrs, c.serverAttrs()...)
		// A span cannot drop an attribute: one the new endpoint has no
		// value for is emptied rather than left stale.
		if old.address != "" && c.srv.address == "" {
			attrs = append(attrs, semconv.ServerAddressKey.String(""))
		}
		if old.port > 0 && c.srv.port == 0 {
			attrs = append(attrs, semconv.ServerPortKey.Int(0))
		}
		if old.endpoint != "" && c.srv.endpoint == "" {
			attrs = append(attrs, attribute.String(attrEndpoint, ""))
		}
	}
	if op := requestOperation(c.req); t.Model != c.model || op != c.op {
		if op != c.op {
			c.op = op
			attrs = append(attrs, semconv.GenAIOperationNameKey.String(c.op))
		}
		if t.Model != c.model {
			c.model = t.Model
			attrs = append(attrs, semconv.GenAIRequestModelKey.String(c.model))
		}
		c.span.SetName(SpanName(c.op, c.model))
	}
	if t.Variant != c.variant {
		c.variant = t.Variant
		attrs = append(attrs, attribute.String(attrVariant, c.variant))
	}
	if len(attrs) > 0 {
		c.base = nil
		c.span.SetAttributes(attrs...)
	}
	if g := c.req.Generate; g != nil {
		c.span.SetAttributes(generateAttrs(g, c.o.opts.CaptureContent, c.last.Scrub)...)
	}
}

// generateAttrs returns the gen_ai.request.* attributes of a generate
// request, and its stop sequences and input messages, scrubbed, when
// content is captured.
func generateAttrs(g *cloudreq.GenerateInput, capture bool, scrub func(string) string) []attribute.KeyValue {
	var attrs []attribute.KeyValue
	if g.MaxTokens > 0 {
		attrs = append(attrs, semconv.GenAIRequestMaxTokensKey.Int(g.MaxTokens))
	}
	if g.Temperature != nil {
		attrs = append(attrs, semconv.GenAIRequestTemperatureKey.Float64(*g.Temperature))
	}
	if g.TopP != nil {
		attrs = append(attrs, semconv.GenAIRequestTopPKey.Float64(*g.TopP))
	}
	if capture {
		if len(g.Stop) > 0 {
			stop := make([]string, len(g.Stop))
			for i, s := range g.Stop {
				stop[i] = scrub(s)
			}
			attrs = append(attrs, semconv.GenAIRequestStopSequencesKey.StringSlice(stop))
		}
		attrs = append(attrs, semconv.GenAIInputMessagesKey.String(inputMessages(g.Messages, scrub)))
	}
	return attrs
}

// EndAttempt implements cloudreq.CallObserver.
func (c *call) EndAttempt(info cloudreq.AttemptInfo) {
	a, err := info.Attempt, info.Err
	c.last = info
	if r := info.Response; r != nil {
		c.respID = info.Scrub(r.RequestID)
	}
	c.retarget()
	ctx := c.ctx
	if a.Number > 1 {
		c.o.retries.Add(ctx, 1, metric.WithAttributeSet(c.baseSet(semconv.ErrorTypeKey.String(c.prevType))))
	}
	// Only a failed attempt is retried; _OTHER stands for anything else.
	c.prevType = string(genaiconv.ErrorTypeOther)
	if err != nil {
		c.prevType = errorType(err)
	}
	if err != nil && err.Code == errcodes.Throttled {
		c.o.throttles.Add(ctx, 1, metric.WithAttributeSet(c.baseSet()))
	}
	if c.o.opts.NoAttemptSpans || a.Send.IsZero() {
		return
	}
	attrs := []attribute.KeyValue{
		attribute.Int(attrAttemptNumber, a.Number),
		attribute.Float64(attrAttemptBackoff, a.Backoff.Seconds()),
		attribute.Bool(attrConnReused, a.ConnReused),
	}
	if a.Status != 0 {
		attrs = append(attrs, semconv.HTTPResponseStatusCodeKey.Int(a.Status))
	}
	attrs = append(attrs, phaseAttrs(a)...)
	end := a.End
	if end.IsZero() {
		end = time.Now()
	}
	_, s := c.o.tracer.Start(ctx, AttemptSpanName,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithTimestamp(a.Send), trace.WithAttributes(attrs...))
	defer s.End(trace.WithTimestamp(end))
	for _, ev := range phaseEvents(a) {
		s.AddEvent(ev.name, trace.WithTimestamp(ev.at))
	}
	if err != nil {
		et := errorType(err)
		s.SetAttributes(semconv.ErrorTypeKey.String(et))
		if pc, ok := idValue(err.ProviderCode); ok {
			s.SetAttributes(attribute.String(attrProviderCode, pc))
		}
		s.SetStatus(codes.Error, et)
	}
}

// EndCall implements cloudreq.CallObserver: it finishes the span and
// records the call's metrics.
func (c *call) EndCall(resp *cloudreq.CloudResponse, tl *latency.Timeline, err *errcodes.Error) {
	ctx := c.ctx
	span := c.span
	end := time.Now()
	if tl != nil && !tl.End.IsZero() {
		end = tl.End
	}
	// Ended whatever happens below: the client drops a panic from an
	// observer, and a span never ended is never exported.
	defer span.End(trace.WithTimestamp(end))
	c.retarget()
	var attempts int
	if tl != nil {
		attempts = len(tl.Attempts)
	}
	span.SetAttributes(attribute.Int(attrAttempts, attempts))
	if id, ok := idValue(c.req.RequestID); ok {
		span.SetAttributes(attribute.String(attrRequestID, id))
	}

	var extra []attribute.KeyValue // metric attributes beyond the base
	if err != nil {
		et := errorType(err)
		extra = append(extra, semconv.ErrorTypeKey.String(et))
		span.SetAttributes(semconv.ErrorTypeKey.String(et), attribute.Bool(attrRetryable, err.Retryable))
		if pc, ok := idValue(err.ProviderCode); ok {
			span.SetAttributes(attribute.String(attrProviderCode, pc))
		}
		if err.HTTPStatus != 0 {
			span.SetAttributes(semconv.HTTPResponseStatusCodeKey.Int(err.HTTPStatus))
		}
		desc := err.ErrorType()
		if _, ok := idValue(desc); !ok {
			desc = errorType(err)
		}
		if c.o.opts.CaptureContent && err.Message != "" {
			desc += ": " + c.last.Scrub(err.Message)
		}
		span.SetStatus(codes.Error, desc)
	}
	if resp != nil {
		c.endResponse(span, resp)
		if k := resp.Start.Kind; k != "" {
			extra = append(extra, attribute.String(attrStartKind, string(k)))
		}
	}

	set := c.baseSet(extra...)
	if tl != nil && !tl.Start.IsZero() {
		e2e := end.Sub(tl.Start).Seconds()
		span.SetAttributes(attribute.Float64(attrE2E, e2e))
		c.o.duration.RecordSet(ctx, e2e, set)
	}
	if resp != nil {
		c.recordSuccess(ctx, span, resp, tl, set)
	}
}

// endResponse sets the span attributes of a successful call.
func (c *call) endResponse(span trace.Span, resp *cloudreq.CloudResponse) {
	if resp.StatusCode != 0 {
		span.SetAttributes(semconv.HTTPResponseStatusCodeKey.Int(resp.StatusCode))
	}
	if resp.FinishReason != "" {
		span.SetAttributes(semconv.GenAIResponseFinishReasonsKey.StringSlice([]string{resp.FinishReason}))
	}
	if id, ok := idValue(c.respID); ok {
		span.SetAttributes(attribute.String(attrResponseReqID, id))
	}
	u := resp.Usage
	if u.InputTokens > 0 {
		span.SetAttributes(semconv.GenAIUsageInputTokensKey.Int(u.InputTokens))
	}
	if outputTokensKnown(u) {
		span.SetAttributes(semconv.GenAIUsageOutputTokensKey.Int(u.OutputTokens))
		if src := usageSource(u); src != "" {
			span.SetAttributes(attribute.String(attrUsageSource, src))
		}
	}
	st := resp.Start
	if st.Kind != "" {
		span.SetAttributes(
			attribute.String(attrStartKind, string(st.Kind)),
			attribute.String(attrStartReason, string(st.Reason)),
			attribute.Bool(attrConnectionCold, st.ConnectionCold))
	}
	if st.Overhead > 0 {
		span.SetAttributes(attribute.Float64(attrColdOverhead, st.Overhead.Seconds()))
	}
	if c.o.opts.CaptureContent && !c.stream && resp.Text != "" {
		span.SetAttributes(semconv.GenAIOutputMessagesKey.String(outputMessages(c.last.Scrub(resp.Text), resp.FinishReason)))
	}
}

// recordSuccess records the metrics only a successful call has. The
// per-request numbers come from latency.Measure, the one implementation of
// package latency's formulas.
func (c *call) recordSuccess(ctx context.Context, span trace.Span, resp *cloudreq.CloudResponse, tl *latency.Timeline, set attribute.Set) {
	u := resp.Usage
	if u.InputTokens > 0 {
		c.o.tokens.RecordSet(ctx, int64(u.InputTokens), c.baseSet(semconv.GenAITokenTypeKey.String(string(genaiconv.TokenTypeInput))))
	}
	if outputTokensKnown(u) {
		out := semconv.GenAITokenTypeKey.String(string(genaiconv.TokenTypeOutput))
		if src := usageSource(u); src != "" {
			c.o.tokens.RecordSet(ctx, int64(u.OutputTokens), c.baseSet(out, attribute.String(attrUsageSource, src)))
		} else {
			c.o.tokens.RecordSet(ctx, int64(u.OutputTokens), c.baseSet(out))
		}
	}
	if tl == nil {
		return
	}
	m := latency.Measure(tl, latency.Outcome{
		Endpoint: c.req.EndpointKey(), Class: c.req.Class, Start: resp.Start,
		OutputTokens: u.OutputTokens, TokenSource: latency.TokenSource(u.Source),
	})
	if m.Has.Has(latency.ColdStart) {
		c.o.coldStart.Record(ctx, m.ColdStart.Seconds(), metric.WithAttributeSet(
			c.baseSet(attribute.String(attrStartReason, string(resp.Start.Reason)))))
	}
	if m.Has.Has(latency.Queue) {
		span.SetAttributes(attribute.Float64(attrQueue, m.Phases.Queue.Seconds()))
	}
	if !c.stream {
		return
	}
	if m.Has.Has(latency.TTFT) {
		span.SetAttributes(attribute.Float64(attrTTFT, m.TTFT.Seconds()), attribute.String(attrClock, string(m.Clock)))
	}
	if m.Has.Has(latency.TPOT) {
		span.SetAttributes(attribute.Float64(attrTPOT, m.TPOT.Seconds()))
	}
	if m.Has.Has(latency.TTFT) {
		// The conventions measure from when the client issued the request:
		// the final attempt's send, whatever the SLA clock.
		span.SetAttributes(semconv.GenAIResponseTimeToFirstChunkKey.Float64(m.TTFTFromSend.Seconds()))
		c.o.ttfc.RecordSet(ctx, m.TTFTFromSend.Seconds(), set)
	}
	for _, gap := range m.ITL {
		c.o.tpoc.RecordSet(ctx, gap.Seconds(), set)
	}
}

// Values of cloudreq.Usage.Source.
const (
	usageFromServer = "server"
	usageCounted    = "counted"
)

// usageSource returns where u's output-token count came from, "server" or
// "counted", or "" when the adapter did not say (or said something else:
// the value is a metric attribute, so it is kept to the two known ones).
func usageSource(u cloudreq.Usage) string {
	switch u.Source {
	case usageFromServer, usageCounted:
		return u.Source
	}
	return ""
}

// outputTokensKnown reports whether u's output-token count is a known
// value: reported by the server (zero included), or counted from the
// chunks of a stream that carried token counts. A "counted" zero means
// nothing was counted (an invoke stream's opaque chunks), not that nothing
// was generated, so it is unknown; so is a zero whose source is not said.
func outputTokensKnown(u cloudreq.Usage) bool {
	if u.Source == usageFromServer {
		return true
	}
	return u.OutputTokens > 0
}

// errorType returns the error.type of a failure: its errcodes code
// (ERR_UNKNOWN when it has none, as errcodes writes it), or _OTHER for a
// code outside errcodes' closed set, so that the metric label it becomes
// stays bounded whatever code a hook or adapter made up.
func errorType(e *errcodes.Error) string {
	if c := errcodes.Code(e.ErrorType()); c.Valid() {
		return string(c)
	}
	return string(genaiconv.ErrorTypeOther)
}

type phaseEvent struct {
	name string
	at   time.Time
}

// phaseEvents lists an attempt's phase timestamps, in order, as span events.
func phaseEvents(a latency.Attempt) []phaseEvent {
	all := []phaseEvent{
		{"dns.start", a.DNSStart}, {"dns.done", a.DNSDone},
		{"connect.start", a.ConnectStart}, {"connect.done", a.ConnectDone},
		{"tls.start", a.TLSStart}, {"tls.done", a.TLSDone},
		{"got_conn", a.GotConn}, {"request.written", a.WroteRequest},
		{"first_byte", a.FirstByte},
	}
	out := all[:0]
	for _, e := range all {
		if !e.at.IsZero() {
			out = append(out, e)
		}
	}
	return out
}

// phaseAttrs gives the durations (seconds) of an attempt's phases that
// happened.
func phaseAttrs(a latency.Attempt) []attribute.KeyValue {
	var out []attribute.KeyValue
	add := func(key string, from, to time.Time) {
		if !from.IsZero() && !to.IsZero() && !to.Before(from) {
			out = append(out, attribute.Float64(key, to.Sub(from).Seconds()))
		}
	}
	add(attrPhaseDNS, a.DNSStart, a.DNSDone)
	add(attrPhaseConnect, a.ConnectStart, a.ConnectDone)
	add(attrPhaseTLS, a.TLSStart, a.TLSDone)
	add(attrPhaseServerWait, a.WroteRequest, a.FirstByte)
	add(attrPhaseTimeToFirst, a.Send, a.FirstByte)
	return out
}

// Message shapes of gen_ai.input.messages and gen_ai.output.messages.
type msgPart struct {
	Type    string `json:"type"`
	Content string `json:"content"`
}

type chatMessage struct {
	Role         string    `json:"role"`
	Parts        []msgPart `json:"parts"`
	FinishReason string    `json:"finish_reason,omitempty"`
}

// inputMessages encodes a request's messages, each content scrubbed
// before it is encoded (which may escape a credential's characters).
func inputMessages(ms []cloudreq.Message, scrub func(string) string) string {
	out := make([]chatMessage, len(ms))
	for i, m := range ms {
		out[i] = chatMessage{Role: m.Role, Parts: []msgPart{{Type: "text", Content: scrub(m.Content)}}}
	}
	b, _ := json.Marshal(out)
	return string(b)
}

func outputMessages(text, finish string) string {
	b, _ := json.Marshal([]chatMessage{{Role: "assistant", Parts: []msgPart{{Type: "text", Content: text}}, FinishReason: finish}})
	return string(b)
}
