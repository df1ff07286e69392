package telemetry

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
)

// Messages of the log observer's records.
const (
	LogMsgRequest  = "cloudinfer request"
	LogMsgResponse = "cloudinfer response"
)

// maxLoggedContent bounds a payload or text logged with CaptureContent.
const maxLoggedContent = 4096

// LogOptions configures a LogObserver.
type LogOptions struct {
	// Level is the level of request and successful response records
	// (default Info). A failed attempt is logged one step higher (Info →
	// Warn, Debug → Info).
	Level slog.Level
	// CaptureContent adds payloads, messages, generated text and error
	// messages (the first 4 KiB of each) to the records, with the
	// credentials the attempt sent replaced. Off by default: content
	// often holds personal data, and a server may quote anything in it.
	CaptureContent bool
}

// LogObserver logs calls through log/slog. It is a cloudreq.Observer
// (see WithLogging): it logs each request when its first attempt starts,
// after the PreSerialize hooks (LogMsgRequest), and each attempt's outcome
// when it ends, after the PostDeserialize hooks (LogMsgResponse; for a
// Stream, when the stream ends). A record holds a fixed set of fields:
//
//	both       provider, service, action, endpoint (a name, or a URL's
//	           scheme, host and path), variant, model, path (without query
//	           and fragment), request_id (when it is an id), class
//	request    payload_bytes, header (every name; the values of
//	           allow-listed headers only), messages, max_tokens;
//	           body and input_messages with CaptureContent
//	response   attempt, elapsed (since the call began), duration (the
//	           attempt's); on success status, provider_request_id (when
//	           it is an id), input_tokens, output_tokens, finish_reason,
//	           body_bytes, and text with CaptureContent; on failure code,
//	           retryable, provider_code and provider_request_id (when
//	           they are ids), status, retry_after, and message with
//	           CaptureContent
//
// No other value of a request, a response or an error is written, so
// that a credential in one (a header, a URL's query or user info, a
// server's message) has no way into the logs. It is safe for concurrent
// use.
type LogObserver struct {
	log  *slog.Logger
	opts LogOptions
}

var _ cloudreq.Observer = (*LogObserver)(nil)

// NewLogObserver returns a LogObserver writing to logger (slog.Default()
// if nil).
func NewLogObserver(logger *slog.Logger, opts LogOptions) *LogObserver {
	if logger == nil {
		logger = slog.Default()
	}
	return &LogObserver{log: logger, opts: opts}
}

// WithLogging returns a cloudreq option function that logs every call
// through logger: it adds a LogObserver to Options.Observers (once, for a
// client, or through cloudreq.PerCall for a single call) and sets
// Options.Logger, the client's retry records, to logger. It leaves the
// hooks as they are.
func WithLogging(logger *slog.Logger, opts LogOptions) func(*cloudreq.Options) {
	l := NewLogObserver(logger, opts)
	return func(o *cloudreq.Options) {
		o.Logger = l.log
		if !slices.Contains(o.Observers, cloudreq.Observer(l)) {
			o.Observers = append(o.Observers, l)
		}
	}
}

// StartCall implements cloudreq.Observer. A call whose records the
// logger would drop gets no observer.
func (l *LogObserver) StartCall(ctx context.Context, _ *cloudreq.CloudRequest, _ bool) (context.Context, cloudreq.CallObserver) {
	if !l.log.Enabled(ctx, l.opts.Level) && !l.log.Enabled(ctx, stepUp(l.opts.Level)) {
		return ctx, nil
	}
	return ctx, &logCall{l: l, ctx: ctx, start: time.Now()}
}

// logCall logs one call.
type logCall struct {
	l     *LogObserver
	ctx   context.Context // the call's, for the handler (a span's ids, say)
	start time.Time
}

var _ cloudreq.AttemptStarter = (*logCall)(nil)

// StartAttempt implements cloudreq.AttemptStarter: it logs the request
// before its first attempt.
func (c *logCall) StartAttempt(a cloudreq.AttemptInfo) {
	req := a.Request
	if a.Attempt.Number > 1 || req == nil || !c.l.log.Enabled(c.ctx, c.l.opts.Level) {
		return
	}
	capture := c.l.opts.CaptureContent
	attrs := requestAttrs(req)
	attrs = append(attrs, slog.Int("payload_bytes", len(req.Payload.Body)))
	if len(req.Header) > 0 {
		attrs = append(attrs, slog.Attr{Key: "header", Value: headerValue(req.Header, a.Scrub)})
	}
	if g := req.Generate; g != nil {
		attrs = append(attrs, slog.Int("messages", len(g.Messages)))
		if g.MaxTokens > 0 {
			attrs = append(attrs, slog.Int("max_tokens", g.MaxTokens))
		}
		if capture {
			attrs = append(attrs, slog.String("input_messages", clip(inputMessages(g.Messages, a.Scrub))))
		}
	}
	if capture && len(req.Payload.Body) > 0 {
		attrs = append(attrs, slog.String("body", clip(a.Scrub(string(req.Payload.Body)))))
	}
	c.l.log.LogAttrs(c.ctx, c.l.opts.Level, LogMsgRequest, attrs...)
}

// EndAttempt implements cloudreq.CallObserver: it logs the attempt's
// outcome.
func (c *logCall) EndAttempt(a cloudreq.AttemptInfo) {
	level := c.l.opts.Level
	if a.Err != nil {
		level = stepUp(level)
	}
	if a.Request == nil || !c.l.log.Enabled(c.ctx, level) {
		return
	}
	capture := c.l.opts.CaptureContent
	at := a.Attempt
	end := at.End
	if end.IsZero() {
		end = time.Now()
	}
	attrs := requestAttrs(a.Request)
	attrs = append(attrs, slog.Int("attempt", at.Number), slog.Duration("elapsed", end.Sub(c.start)))
	if !at.Send.IsZero() && !at.End.IsZero() {
		attrs = append(attrs, slog.Duration("duration", at.End.Sub(at.Send)))
	}
	optID := func(k, v string) {
		if id, ok := idValue(v); ok {
			attrs = append(attrs, slog.String(k, id))
		}
	}
	if e := a.Err; e != nil {
		attrs = append(attrs, slog.String("code", e.ErrorType()), slog.Bool("retryable", e.Retryable))
		optID("provider_code", e.ProviderCode)
		if e.HTTPStatus != 0 {
			attrs = append(attrs, slog.Int("status", e.HTTPStatus))
		}
		if e.RetryAfter > 0 {
			attrs = append(attrs, slog.Duration("retry_after", e.RetryAfter))
		}
		optID("provider_request_id", e.RequestID)
		if capture && e.Message != "" {
			attrs = append(attrs, slog.String("message", clip(a.Scrub(e.Message))))
		}
	} else if r := a.Response; r != nil {
		attrs = append(attrs, slog.Int("status", r.StatusCode))
		optID("provider_request_id", a.Scrub(r.RequestID))
		if u := r.Usage; u.InputTokens > 0 || u.OutputTokens > 0 {
			attrs = append(attrs, slog.Int("input_tokens", u.InputTokens), slog.Int("output_tokens", u.OutputTokens))
		}
		if r.FinishReason != "" {
			attrs = append(attrs, slog.String("finish_reason", r.FinishReason))
		}
		if r.Data != nil {
			attrs = append(attrs, slog.Int("body_bytes", len(r.Data)))
		}
		if capture && r.Text != "" {
			attrs = append(attrs, slog.String("text", clip(a.Scrub(r.Text))))
		}
	}
	c.l.log.LogAttrs(c.ctx, level, LogMsgResponse, attrs...)
}

// EndCall implements cloudreq.CallObserver; the attempts' records say
// everything.
func (*logCall) EndCall(*cloudreq.CloudResponse, *latency.Timeline, *errcodes.Error) {}

// requestAttrs are the fields of a request that every record carries.
func requestAttrs(req *cloudreq.CloudRequest) []slog.Attr {
	attrs := make([]slog.Attr, 0, 20)
	attrs = append(attrs,
		slog.String("provider", req.Provider),
		slog.String("service", req.Service),
		slog.String("action", req.Action),
		slog.String("endpoint", serverOf(req.Target.Endpoint).endpoint),
	)
	opt := func(k, v string) {
		if v != "" {
			attrs = append(attrs, slog.String(k, v))
		}
	}
	opt("variant", req.Target.Variant)
	opt("model", req.Target.Model)
	opt("path", pathValue(req.Target.Path))
	if id, ok := idValue(req.RequestID); ok {
		attrs = append(attrs, slog.String("request_id", id))
	}
	opt("class", req.Class)
	return attrs
}

func stepUp(l slog.Level) slog.Level {
	switch {
	case l < slog.LevelInfo:
		return slog.LevelInfo
	case l < slog.LevelWarn:
		return slog.LevelWarn
	}
	return slog.LevelError
}

func clip(s string) string {
	if len(s) <= maxLoggedContent {
		return s
	}
	return strings.ToValidUTF8(s[:maxLoggedContent], "") + "…"
}
