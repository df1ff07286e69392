package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/hooks"
	"github.com/cloudinfer/cloudinfer/internal/nilerr"
)

// LogHookName is the name the logging hook takes in hook chains.
const LogHookName = "telemetry-log"

// Messages of the logging hook's records.
const (
	LogMsgRequest  = "cloudinfer request"
	LogMsgResponse = "cloudinfer response"
)

// maxLoggedContent bounds a payload or text logged with CaptureContent.
const maxLoggedContent = 4096

// LogOptions configures LogHook.
type LogOptions struct {
	// Level is the level of request and successful response records
	// (default Info). A failed attempt is logged one step higher (Info →
	// Warn, Debug → Info).
	Level slog.Level
	// CaptureContent adds payloads, messages and generated text (the first
	// 4 KiB) to the records. Off by default.
	CaptureContent bool
}

// LogHook logs, through log/slog, a summary of each request before it is
// serialized (hooks.PreSerializer) and of each attempt's outcome
// (hooks.PostDeserializer). Headers are logged with their values redacted
// (hooks.RedactHeaders), endpoint URLs and request paths with
// hooks.RedactURL, and errors from their portable fields only; bodies only
// with CaptureContent. Its logger's handler is wrapped in RedactHandler as
// a second line of defence.
//
// Register it at the end of the PreSerialize and PostDeserialize chains
// (Install does), so that it sees the request id and the final outcome, or
// use WithLogging.
type LogHook struct {
	log  *slog.Logger
	opts LogOptions
	// calls holds each call's start and attempt count, keyed by a weak
	// pointer to the client's working copy of the request (the same
	// pointer in both phases), and dropped when that copy is collected.
	calls sync.Map // weak.Pointer[cloudreq.CloudRequest] → *callLog
}

type callLog struct {
	start    time.Time
	attempts int
}

var (
	_ hooks.PreSerializer    = (*LogHook)(nil)
	_ hooks.PostDeserializer = (*LogHook)(nil)
)

// NewLogHook returns a LogHook writing to logger (slog.Default() if nil).
func NewLogHook(logger *slog.Logger, opts LogOptions) *LogHook {
	if logger == nil {
		logger = slog.Default()
	}
	return &LogHook{log: slog.New(RedactHandler(logger.Handler())), opts: opts}
}

// Install appends h to s's PreSerialize and PostDeserialize chains under
// LogHookName.
func (h *LogHook) Install(s *hooks.Set) error {
	if err := s.Serialize.Add(LogHookName, h); err != nil {
		return err
	}
	if err := s.Deserialize.Add(LogHookName, h); err != nil {
		s.Serialize.Remove(LogHookName)
		return err
	}
	return nil
}

// PreSerialize logs the request: provider, service, action, target,
// request id, header names with redacted values, payload size. It never
// fails.
func (h *LogHook) PreSerialize(ctx context.Context, req *cloudreq.CloudRequest) error {
	if req == nil {
		return nil
	}
	wp := weak.Make(req)
	if _, loaded := h.calls.LoadOrStore(wp, &callLog{start: time.Now()}); !loaded {
		runtime.AddCleanup(req, func(k weak.Pointer[cloudreq.CloudRequest]) { h.calls.Delete(k) }, wp)
	}
	if !h.log.Enabled(ctx, h.opts.Level) {
		return nil
	}
	attrs := h.requestAttrs(req)
	attrs = append(attrs, slog.Int("payload_bytes", len(req.Payload.Body)))
	if len(req.Header) > 0 {
		attrs = append(attrs, slog.Attr{Key: "header", Value: headerValue(req.Header)})
	}
	if g := req.Generate; g != nil {
		attrs = append(attrs, slog.Int("messages", len(g.Messages)))
		if g.MaxTokens > 0 {
			attrs = append(attrs, slog.Int("max_tokens", g.MaxTokens))
		}
		if h.opts.CaptureContent {
			attrs = append(attrs, slog.String("input_messages", clip(inputMessages(g.Messages))))
		}
	}
	if h.opts.CaptureContent && len(req.Payload.Body) > 0 {
		attrs = append(attrs, slog.String("body", clip(string(req.Payload.Body))))
	}
	h.log.LogAttrs(ctx, h.opts.Level, LogMsgRequest, attrs...)
	return nil
}

// PostDeserialize logs an attempt's outcome: status, request ids, usage and
// the time since the request was logged; for a failure, the code, the
// provider's code, retryability and the message. It never changes the
// outcome.
func (h *LogHook) PostDeserialize(ctx context.Context, req *cloudreq.CloudRequest, resp *cloudreq.CloudResponse, err error) error {
	if req == nil {
		return nil
	}
	if nilerr.Is(err) {
		err = nil // a typed nil error (a nil *T) is no error, as for the client
	}
	attempt, elapsed := 0, time.Duration(-1)
	if v, ok := h.calls.Load(weak.Make(req)); ok {
		cl := v.(*callLog)
		cl.attempts++ // PostDeserialize runs once per attempt, in order
		attempt, elapsed = cl.attempts, time.Since(cl.start)
	}
	level := h.opts.Level
	if err != nil {
		level = stepUp(level)
	}
	if !h.log.Enabled(ctx, level) {
		return nil
	}
	attrs := h.requestAttrs(req)
	if attempt > 0 {
		attrs = append(attrs, slog.Int("attempt", attempt), slog.Duration("elapsed", elapsed))
	}
	if err != nil {
		attrs = append(attrs, errorAttrs(err)...)
	} else if resp != nil {
		attrs = append(attrs, slog.Int("status", resp.StatusCode))
		if resp.RequestID != "" {
			attrs = append(attrs, slog.String("provider_request_id", resp.RequestID))
		}
		if u := resp.Usage; u.InputTokens > 0 || u.OutputTokens > 0 {
			attrs = append(attrs, slog.Int("input_tokens", u.InputTokens), slog.Int("output_tokens", u.OutputTokens))
		}
		if resp.FinishReason != "" {
			attrs = append(attrs, slog.String("finish_reason", resp.FinishReason))
		}
		if resp.Data != nil {
			attrs = append(attrs, slog.Int("body_bytes", len(resp.Data)))
		}
		if h.opts.CaptureContent && resp.Text != "" {
			attrs = append(attrs, slog.String("text", clip(resp.Text)))
		}
	}
	h.log.LogAttrs(ctx, level, LogMsgResponse, attrs...)
	return nil
}

func (h *LogHook) requestAttrs(req *cloudreq.CloudRequest) []slog.Attr {
	attrs := []slog.Attr{
		slog.String("provider", req.Provider),
		slog.String("service", req.Service),
		slog.String("action", req.Action),
		slog.String("endpoint", logEndpoint(req.Target.Endpoint)),
	}
	opt := func(k, v string) {
		if v != "" {
			attrs = append(attrs, slog.String(k, v))
		}
	}
	opt("variant", req.Target.Variant)
	opt("model", req.Target.Model)
	opt("path", logPath(req.Target.Path))
	opt("request_id", req.RequestID)
	opt("class", req.Class)
	return attrs
}

func errorAttrs(err error) []slog.Attr {
	var e *errcodes.Error
	if !errors.As(err, &e) || e == nil {
		return []slog.Attr{slog.String("code", string(errcodes.Of(err)))}
	}
	attrs := []slog.Attr{slog.String("code", e.ErrorType()), slog.Bool("retryable", e.Retryable)}
	if e.ProviderCode != "" {
		attrs = append(attrs, slog.String("provider_code", e.ProviderCode))
	}
	if e.HTTPStatus != 0 {
		attrs = append(attrs, slog.Int("status", e.HTTPStatus))
	}
	if e.RetryAfter > 0 {
		attrs = append(attrs, slog.Duration("retry_after", e.RetryAfter))
	}
	if e.RequestID != "" {
		attrs = append(attrs, slog.String("provider_request_id", e.RequestID))
	}
	if e.Message != "" {
		attrs = append(attrs, slog.String("message", e.Message))
	}
	return attrs
}

// logEndpoint returns an endpoint name as it is, and an endpoint URL
// through hooks.RedactURL.
func logEndpoint(ep string) string {
	if strings.Contains(ep, "://") {
		return hooks.RedactURL(ep)
	}
	return ep
}

// logPath returns a request path through hooks.RedactURL, which takes a
// relative reference too: its query may carry credentials ("?sig=…",
// "?code=…"). A path that does not parse as a URL reference (a bad
// percent-escape, a control character) is redacted as free text instead,
// rather than replaced whole. An empty path stays empty.
func logPath(p string) string {
	if p == "" {
		return ""
	}
	if _, err := url.Parse(p); err != nil {
		return redactString(p)
	}
	return hooks.RedactURL(p)
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

// WithLogging returns a cloudreq option function that logs every call
// through logger: it sets Options.Logger (the client's retry records) to
// logger behind RedactHandler, and wraps Options.Hooks so that a LogHook
// runs after the configured PreSerialize and PostDeserialize hooks. It
// does not modify the hooks it wraps, so it is safe per call too.
func WithLogging(logger *slog.Logger, opts LogOptions) func(*cloudreq.Options) {
	h := NewLogHook(logger, opts)
	return func(o *cloudreq.Options) {
		o.Logger = h.log
		o.Hooks = &loggedHooks{inner: o.Hooks, log: h}
	}
}

// loggedHooks runs the configured hooks, then the log hook.
type loggedHooks struct {
	inner cloudreq.Hooks // may be nil
	log   *LogHook
}

func (l *loggedHooks) PreValidate(ctx context.Context, req *cloudreq.CloudRequest) error {
	if l.inner == nil {
		return nil
	}
	return l.inner.PreValidate(ctx, req)
}

func (l *loggedHooks) PreSerialize(ctx context.Context, req *cloudreq.CloudRequest) error {
	if l.inner != nil {
		if err := l.inner.PreSerialize(ctx, req); err != nil && !nilerr.Is(err) {
			return err
		}
	}
	return l.log.PreSerialize(ctx, req)
}

func (l *loggedHooks) PostDeserialize(ctx context.Context, req *cloudreq.CloudRequest, resp *cloudreq.CloudResponse, err error) error {
	var veto error
	if l.inner != nil {
		veto = l.inner.PostDeserialize(ctx, req, resp, err)
	}
	if nilerr.Is(veto) {
		veto = nil // a typed nil error is no veto (see cloudreq.Hooks)
	}
	outcome := err
	if veto != nil {
		outcome = veto
	}
	_ = l.log.PostDeserialize(ctx, req, resp, outcome)
	return veto
}
