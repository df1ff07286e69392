package errcodes

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Code is one portable error code. The set is closed: every error that crosses
// the cloudinfer API carries exactly one of the constants below. A Code is
// itself an error, so errors.Is(err, errcodes.Throttled) works on any error
// returned by cloudinfer.
type Code string

// The closed set of codes, spelled as they are printed.
const (
	// InvalidParam: the request is malformed or names an unsupported combination.
	InvalidParam Code = "ERR_INVALID_PARAM"
	// Unauthenticated: credentials are missing, expired, wrong or badly signed.
	Unauthenticated Code = "ERR_UNAUTHENTICATED"
	// PermissionDenied: credentials are valid but not allowed to do this.
	PermissionDenied Code = "ERR_PERMISSION_DENIED"
	// NotFound: the endpoint, deployment, model or path does not exist.
	NotFound Code = "ERR_NOT_FOUND"
	// Throttled: rate limited or back-pressured (queue full); retry later.
	Throttled Code = "ERR_THROTTLED"
	// QuotaExceeded: a quota is spent; retrying soon does not help.
	QuotaExceeded Code = "ERR_QUOTA_EXCEEDED"
	// ModelNotReady: the model is loading or scaling from zero (a cold-start signal).
	ModelNotReady Code = "ERR_MODEL_NOT_READY"
	// ModelError: the model container itself failed on this input.
	ModelError Code = "ERR_MODEL_ERROR"
	// Timeout: a deadline passed (client-side or reported by the service).
	Timeout Code = "ERR_TIMEOUT"
	// Canceled: the caller canceled the call.
	Canceled Code = "ERR_CANCELED"
	// Unavailable: the service or a dependency is temporarily unavailable.
	Unavailable Code = "ERR_UNAVAILABLE"
	// Internal: the service reported an internal failure.
	Internal Code = "ERR_INTERNAL"
	// PayloadTooLarge: the request or response exceeds a size limit.
	PayloadTooLarge Code = "ERR_PAYLOAD_TOO_LARGE"
	// StreamInterrupted: a stream broke or ended before it was complete.
	StreamInterrupted Code = "ERR_STREAM_INTERRUPTED"
	// Unknown: nothing better is known.
	Unknown Code = "ERR_UNKNOWN"
)

// All lists every code, in a stable order.
var All = []Code{
	InvalidParam, Unauthenticated, PermissionDenied, NotFound, Throttled,
	QuotaExceeded, ModelNotReady, ModelError, Timeout, Canceled, Unavailable,
	Internal, PayloadTooLarge, StreamInterrupted, Unknown,
}

// Error makes a Code usable as an errors.Is target.
func (c Code) Error() string { return string(c) }

// String returns the code as it is printed, e.g. "ERR_THROTTLED".
func (c Code) String() string { return string(c) }

// Valid reports whether c is one of the closed set.
func (c Code) Valid() bool {
	for _, k := range All {
		if c == k {
			return true
		}
	}
	return false
}

// Retryable reports the default retryability of the code: whether a later
// identical attempt may succeed. Adapters may override it per error (for
// example a 503 that the provider marks as permanent).
func (c Code) Retryable() bool {
	switch c {
	case Throttled, ModelNotReady, Timeout, Unavailable, Internal:
		return true
	}
	return false
}

// MarshalText encodes the code as its printed name.
func (c Code) MarshalText() ([]byte, error) { return []byte(c), nil }

// UnmarshalText decodes a printed code; unknown names are an error.
func (c *Code) UnmarshalText(b []byte) error {
	k := Code(b)
	if !k.Valid() {
		return fmt.Errorf("errcodes: unknown code %q", b)
	}
	*c = k
	return nil
}

// Error is the error every cloudinfer call returns. Fields describe the
// failure in portable terms (Code, Retryable, RetryAfter) and in the
// provider's own (ProviderCode, HTTPStatus, Details). It never holds a
// credential: adapters copy only codes, messages and ids into it.
type Error struct {
	// Code is the portable code. An Error without one is ERR_UNKNOWN (in
	// Of, errors.Is, its text and its JSON).
	Code Code
	// Provider is the CloudRequest provider ("aws", "azure", "gcp", "alibaba", "openai").
	Provider string
	// ProviderCode is the provider's native error code or name
	// (e.g. "ModelNotReadyException", "RESOURCE_EXHAUSTED", "450").
	ProviderCode string
	// HTTPStatus is the HTTP status of the failed response, 0 if none.
	HTTPStatus int
	// Message is a human-readable description.
	Message string
	// RequestID is the provider's request id, when it sent one.
	RequestID string
	// Retryable says whether the retry loop may try again.
	Retryable bool
	// RetryAfter is the delay the provider asked for, 0 if none.
	RetryAfter time.Duration
	// Details holds extra native fields worth keeping (for example
	// SageMaker's OriginalStatusCode or Azure ML's model error reason).
	Details map[string]string
	// Err is the wrapped native error, reachable with errors.As.
	Err error
}

// New returns an *Error with the code's default retryability.
func New(code Code, msg string) *Error {
	return &Error{Code: code, Message: msg, Retryable: code.Retryable()}
}

// Errorf is New with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return New(code, fmt.Sprintf(format, args...))
}

// Wrap returns an *Error with the given code that wraps err.
func Wrap(err error, code Code, msg string) *Error {
	e := New(code, msg)
	e.Err = err
	return e
}

// Error formats the error as "ERR_CODE: provider ProviderCode (HTTP n):
// message [request id r]". The wrapped native error's text is never
// printed — it may echo credentials or URLs — only the Message adapters
// wrote for it; reach the native error with errors.As.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.code()))
	head := e.Provider != "" || e.ProviderCode != "" || e.HTTPStatus != 0
	if head || e.Message != "" {
		b.WriteString(":")
	}
	if e.Provider != "" {
		b.WriteString(" ")
		b.WriteString(e.Provider)
	}
	if e.ProviderCode != "" {
		b.WriteString(" ")
		b.WriteString(e.ProviderCode)
	}
	if e.HTTPStatus != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.HTTPStatus)
	}
	if e.Message != "" {
		if head {
			b.WriteString(":")
		}
		b.WriteString(" ")
		b.WriteString(e.Message)
	}
	if e.RequestID != "" {
		b.WriteString(" [request id ")
		b.WriteString(e.RequestID)
		b.WriteString("]")
	}
	return b.String()
}

// code returns e's Code, ERR_UNKNOWN when it has none.
func (e *Error) code() Code {
	if e.Code == "" {
		return Unknown
	}
	return e.Code
}

// Unwrap returns the native error.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is e's Code, so errors.Is(err, errcodes.NotFound) works.
func (e *Error) Is(target error) bool {
	c, ok := target.(Code)
	return ok && c == e.code()
}

// ErrorType returns the code for OpenTelemetry's error.type attribute.
func (e *Error) ErrorType() string { return string(e.code()) }

type errorJSON struct {
	Code         Code              `json:"code"`
	Provider     string            `json:"provider,omitempty"`
	ProviderCode string            `json:"provider_code,omitempty"`
	HTTPStatus   int               `json:"http_status,omitempty"`
	Message      string            `json:"message,omitempty"`
	RequestID    string            `json:"request_id,omitempty"`
	Retryable    bool              `json:"retryable"`
	RetryAfterMS float64           `json:"retry_after_ms,omitempty"`
	Details      map[string]string `json:"details,omitempty"`
}

// MarshalJSON encodes the portable fields (the wrapped native error is not
// encoded); retry_after_ms keeps fractions of a millisecond. An Error with
// no Code is encoded as ERR_UNKNOWN, the code Of gives it.
func (e *Error) MarshalJSON() ([]byte, error) {
	return json.Marshal(errorJSON{
		Code: e.code(), Provider: e.Provider, ProviderCode: e.ProviderCode,
		HTTPStatus: e.HTTPStatus, Message: e.Message, RequestID: e.RequestID,
		Retryable: e.Retryable, RetryAfterMS: float64(e.RetryAfter) / float64(time.Millisecond), Details: e.Details,
	})
}

// UnmarshalJSON decodes what MarshalJSON wrote.
func (e *Error) UnmarshalJSON(b []byte) error {
	var j errorJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	ra := time.Duration(math.MaxInt64) // the longest Duration: a saturated Retry-After
	if ns := math.Round(j.RetryAfterMS * float64(time.Millisecond)); ns < math.MaxInt64 {
		ra = time.Duration(ns)
	}
	*e = Error{
		Code: j.Code, Provider: j.Provider, ProviderCode: j.ProviderCode,
		HTTPStatus: j.HTTPStatus, Message: j.Message, RequestID: j.RequestID,
		Retryable: j.Retryable, RetryAfter: ra, Details: j.Details,
	}
	return nil
}

// Of returns the code of any error: the Code of an *Error (ERR_UNKNOWN when
// it has none) or a Code in its chain, ERR_CANCELED for context.Canceled,
// ERR_TIMEOUT for context.DeadlineExceeded, "" for nil and ERR_UNKNOWN
// otherwise.
func Of(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		if e == nil {
			return Unknown // a nil *Error in a non-nil error
		}
		return e.code()
	}
	var c Code
	if errors.As(err, &c) {
		return c
	}
	switch {
	case errors.Is(err, context.Canceled):
		return Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return Timeout
	}
	return Unknown
}

// From returns err as an *Error: err itself when it is one, else a new
// *Error with code Of(err) wrapping err. It returns nil for nil. (To fill a
// target of your own, errors.As works as usual.)
func From(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		if e == nil {
			return nilInChain()
		}
		return e
	}
	return Wrap(err, Of(err), transportMessage(err))
}

// nilInChain is the error From and FromTransport return for an error whose
// chain holds a nil *Error: its message cannot be read (Error would
// dereference nil), so it is described instead.
func nilInChain() *Error {
	e := New(Unknown, "errcodes: a nil *errcodes.Error inside a non-nil error")
	e.Retryable = false
	return e
}

// FromContext converts a context error to an *Error (ERR_CANCELED or
// ERR_TIMEOUT), and returns nil when ctx is not done.
func FromContext(ctx context.Context) *Error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	cause := context.Cause(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		e := Wrap(cause, Timeout, "deadline exceeded")
		e.Retryable = false
		return e
	}
	return Wrap(cause, Canceled, "canceled by caller")
}

// ForHTTPStatus gives the code a bare HTTP status implies when the provider
// sent nothing more specific. Adapters consult their structured fields first
// and fall back to this.
func ForHTTPStatus(status int) Code {
	switch {
	case status >= 200 && status < 300:
		return ""
	case status == http.StatusBadRequest, status == http.StatusUnprocessableEntity,
		status == http.StatusMethodNotAllowed, status == http.StatusConflict:
		return InvalidParam
	case status == http.StatusUnauthorized:
		return Unauthenticated
	case status == http.StatusForbidden:
		return PermissionDenied
	case status == http.StatusNotFound:
		return NotFound
	case status == http.StatusRequestTimeout, status == http.StatusGatewayTimeout:
		return Timeout
	case status == http.StatusRequestEntityTooLarge:
		return PayloadTooLarge
	case status == http.StatusFailedDependency:
		return ModelError
	case status == http.StatusTooManyRequests:
		return Throttled
	case status == 499:
		return Canceled
	case status == http.StatusInternalServerError:
		return Internal
	case status == http.StatusNotImplemented:
		return InvalidParam
	case status == http.StatusBadGateway, status == http.StatusServiceUnavailable:
		return Unavailable
	case status >= 500:
		return Unavailable
	case status >= 400:
		return InvalidParam
	}
	return Unknown
}

// FromTransport classifies an error that came from below the provider's
// protocol: a context error, a network failure or a TLS verification
// failure. An *Error is returned as it is, and an error carrying a bare
// Code (errcodes.Throttled, or one wrapped with %w) gets that code and
// its retryability. Connection failures (refused,
// reset, unexpected EOF, network timeouts) are retryable; certificate
// errors and refused TLS handshakes are not. The message never includes
// URL query strings, which may carry credentials.
func FromTransport(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		if e == nil {
			return nilInChain()
		}
		return e
	}
	msg := transportMessage(err)
	var c Code
	if errors.As(err, &c) {
		return Wrap(err, c, msg)
	}
	switch {
	case errors.Is(err, context.Canceled):
		return Wrap(err, Canceled, "canceled by caller")
	case errors.Is(err, context.DeadlineExceeded):
		return Wrap(err, Timeout, "deadline exceeded")
	case isCertError(err):
		e = Wrap(err, Unauthenticated, "TLS certificate verification failed: "+msg)
		e.Retryable = false
		return e
	case isTLSRefusal(err):
		e = Wrap(err, Unavailable, "TLS handshake refused: "+msg)
		e.Retryable = false
		return e
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return Wrap(err, Timeout, msg)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.As(err, new(*net.OpError)) {
		e = Wrap(err, Unavailable, msg)
		e.Retryable = true
		return e
	}
	return Wrap(err, Unknown, msg)
}

// isTLSRefusal reports a TLS alert from either end — crypto/tls reports
// them as a *net.OpError with Op "remote error" or "local error" — or a
// peer that does not speak TLS: the two ends cannot agree on a secure
// connection (protocol version, cipher suites, a rejected certificate),
// and the same handshake again will not either.
func isTLSRefusal(err error) bool {
	var oe *net.OpError
	if errors.As(err, &oe) && (oe.Op == "remote error" || oe.Op == "local error") {
		return true
	}
	return errors.As(err, new(tls.RecordHeaderError)) || errors.As(err, new(tls.AlertError))
}

func isCertError(err error) bool {
	return errors.As(err, new(*tls.CertificateVerificationError)) ||
		errors.As(err, new(x509.UnknownAuthorityError)) ||
		errors.As(err, new(x509.HostnameError)) ||
		errors.As(err, new(x509.CertificateInvalidError))
}

// transportMessage describes err without the URL's query or user info.
func transportMessage(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		where := "[unparsable URL]" // it may still hold user info or a query
		if u, perr := url.Parse(ue.URL); perr == nil {
			where = u.Scheme + "://" + u.Host + u.Path
		}
		return ue.Op + " " + where + ": " + ue.Err.Error()
	}
	return err.Error()
}
