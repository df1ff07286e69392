package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/hooks"
)

// RedactHandler wraps h so that every record reaching it is redacted
// first: its message, and its attributes as RedactAttr does. It is the
// second line of defence behind code that never logs credentials in the
// first place.
func RedactHandler(h slog.Handler) slog.Handler {
	if rh, ok := h.(*redactHandler); ok {
		return rh
	}
	return &redactHandler{h: h}
}

type redactHandler struct{ h slog.Handler }

func (r *redactHandler) Enabled(ctx context.Context, l slog.Level) bool { return r.h.Enabled(ctx, l) }

func (r *redactHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, redactString(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(RedactAttr(nil, a))
		return true
	})
	return r.h.Handle(ctx, out)
}

func (r *redactHandler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = RedactAttr(nil, a)
	}
	return &redactHandler{h: r.h.WithAttrs(red)}
}

func (r *redactHandler) WithGroup(name string) slog.Handler {
	return &redactHandler{h: r.h.WithGroup(name)}
}

// sensitiveKeys are attribute keys (lower case, "-" read as "_") whose
// values are always hidden: every credential header and query parameter
// cloudinfer knows, and common names of secrets.
var sensitiveKeys = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range hooks.SensitiveHeaders {
		m[normKey(k)] = true
	}
	for _, k := range []string{
		"key", "sig", "signature", "token", "access_token", "refresh_token", "id_token", "session_token",
		"password", "passwd", "secret", "client_secret", "credential", "credentials", "private_key",
		"x_amz_signature", "x_amz_credential", "aws_secret_access_key", "secret_access_key",
	} {
		m[k] = true
	}
	return m
}()

// sensitiveSuffixes hide keys such as "openai_api_key" or "eas_token".
var sensitiveSuffixes = []string{"_token", "_secret", "_password", "_api_key", "_apikey", "_signature", "_credential", "_credentials", "authorization"}

func normKey(k string) string { return strings.ReplaceAll(strings.ToLower(k), "-", "_") }

// SensitiveKey reports whether a log attribute or span attribute named k
// holds a credential by its name alone.
func SensitiveKey(k string) bool {
	n := normKey(k)
	if sensitiveKeys[n] {
		return true
	}
	for _, s := range sensitiveSuffixes {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	return false
}

// RedactAttr returns a with credentials hidden, for use as
// slog.HandlerOptions.ReplaceAttr or on its own:
//   - the value of a sensitive key (SensitiveKey) becomes hooks.Redacted;
//   - an http.Header is redacted with hooks.RedactHeaders, a URL with
//     hooks.RedactURL;
//   - an *errcodes.Error is written from its portable fields, never from
//     the native error it wraps; other errors and strings have credentials
//     in free text (authorization schemes, URLs, key=value pairs) hidden;
//   - groups are redacted member by member.
func RedactAttr(_ []string, a slog.Attr) slog.Attr {
	if SensitiveKey(a.Key) {
		return slog.String(a.Key, hooks.Redacted)
	}
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, redactString(v.String()))
	case slog.KindGroup:
		as := v.Group()
		red := make([]slog.Attr, len(as))
		for i, m := range as {
			red[i] = RedactAttr(nil, m)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(red...)}
	case slog.KindAny:
		return slog.Attr{Key: a.Key, Value: redactAny(v.Any())}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func redactAny(x any) slog.Value {
	switch x := x.(type) {
	case http.Header:
		return headerValue(x)
	case *url.URL:
		if x == nil {
			return slog.StringValue("")
		}
		return slog.StringValue(hooks.RedactURL(x.String()))
	case url.URL:
		return slog.StringValue(hooks.RedactURL(x.String()))
	case []byte:
		return slog.StringValue(redactString(string(x)))
	case error:
		var e *errcodes.Error
		if errors.As(x, &e) {
			return slog.StringValue(safeError(e))
		}
		return slog.StringValue(redactString(x.Error()))
	}
	return slog.AnyValue(x)
}

// headerValue logs a header as a group of its names, each with its values
// joined, credentials hidden.
func headerValue(h http.Header) slog.Value {
	red := hooks.RedactHeaders(h)
	keys := make([]string, 0, len(red))
	for k := range red {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	as := make([]slog.Attr, 0, len(keys))
	for _, k := range keys {
		v := strings.Join(red[k], ", ")
		if SensitiveKey(k) {
			v = hooks.Redacted
		}
		as = append(as, slog.String(k, redactString(v)))
	}
	return slog.GroupValue(as...)
}

// safeError formats an *errcodes.Error as its Error method does — from
// its portable fields, never from the native error it wraps — with any
// credential in those fields hidden.
func safeError(e *errcodes.Error) string { return redactString(e.Error()) }

// Patterns of credentials in free text. They are a safety net for values
// that were not meant to hold secrets; the regular expressions are kept
// simple and linear (Go's regexp guarantees linear time).
var (
	// An authorization scheme followed by a credential of eight or more
	// characters. EAS is matched in upper case only and never right after
	// a "-", so that "PAI-EAS service" stays readable.
	reAuthScheme = regexp.MustCompile(`(^|[^\w-])((?i:bearer|basic)|EAS)\s+[A-Za-z0-9+/=:._~-]{8,}`)
	reURL        = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^\s"'<>]+`)
	reKeyValue   = regexp.MustCompile(`(?i)\b(api[-_]?key|key|token|access_token|sig|signature|credential|x-amz-signature|x-amz-credential|x-amz-security-token|password|secret)=([^&\s"',;]+)`)
)

// redactString hides credentials that free text may carry: the value after
// an authorization scheme ("Bearer …", "EAS …"), credential query
// parameters and user info of URLs, and key=value pairs with a credential's
// name.
func redactString(s string) string {
	if !strings.ContainsAny(s, "=: \t\n\r\f\v") {
		return s // no scheme, URL or key=value can hide in it
	}
	s = reAuthScheme.ReplaceAllString(s, "$1$2 "+hooks.Redacted)
	s = reURL.ReplaceAllStringFunc(s, func(u string) string {
		trimmed := strings.TrimRight(u, ".,:;)]")
		return hooks.RedactURL(trimmed) + u[len(trimmed):]
	})
	return reKeyValue.ReplaceAllStringFunc(s, func(kv string) string {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(v, hooks.Redacted) || strings.HasPrefix(v, redactedQuery) {
			return kv // a URL's parameter, already redacted
		}
		return k + "=" + hooks.Redacted
	})
}

// redactedQuery is hooks.Redacted as a URL query encodes it.
var redactedQuery = url.QueryEscape(hooks.Redacted)
