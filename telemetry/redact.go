package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"reflect"
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

// Credential names. A key is compared in its normalized form (normKey:
// lower case, without '_', '-' and '.'), so that "api_key", "API-Key",
// "apiKey", "apikey" and "x.api_key" are one name.
var (
	// sensitiveKeys are names that are credentials as they stand: every
	// credential header and query parameter cloudinfer knows, and common
	// names of secrets.
	sensitiveKeys = func() map[string]bool {
		m := map[string]bool{}
		for _, k := range hooks.SensitiveHeaders {
			m[normKey(k)] = true
		}
		for _, k := range []string{"key", "sig", "auth", "bearer", "jwt", "pwd", "passwd", "basicauth", "proxyauth"} {
			m[k] = true
		}
		return m
	}()
	// sensitiveWords make a name a credential wherever they appear in it
	// ("client_secret", "secretAccessKey", "x-goog-api-key",
	// "db_password"), unless what follows them says the value only names
	// or describes the secret (harmlessTails: "secret_name", "apiKeyId").
	sensitiveWords = []string{"secret", "password", "passwd", "passphrase", "apikey", "credential", "signature",
		"authorization", "privatekey", "cookie"}
	harmlessTails = map[string]bool{
		"name": true, "names": true, "type": true, "id": true, "ids": true, "source": true, "file": true,
		"path": true, "process": true, "provider": true, "version": true, "ref": true, "arn": true,
		"expiry": true, "expiration": true, "expiresat": true, "ttl": true, "length": true, "len": true,
		"count": true, "method": true, "algorithm": true,
	}
	// sensitiveSuffixes make a name that ends with them a credential
	// ("storageAccountKey", "Ocp-Apim-Subscription-Key").
	sensitiveSuffixes = []string{"accesskey", "accountkey", "subscriptionkey", "signingkey", "masterkey",
		"sharedkey", "encryptionkey", "hmackey"}
	// tokenCounts are the words that, before "token", make a name a count
	// or a position of generated tokens rather than a credential:
	// "max_token", "time_to_first_token", "itl-token", "eos_token".
	tokenCounts = []string{"max", "min", "input", "output", "prompt", "completion", "total", "num", "first",
		"last", "next", "per", "itl", "eos", "bos", "pad", "unk", "sep", "cls", "mask", "special", "stop",
		"cached", "generated", "reasoning", "avg", "mean"}
)

// normKey is the form credential names are compared in: lower case,
// without the separators '_', '-' and '.'.
func normKey(k string) string {
	k = strings.ToLower(k)
	if !strings.ContainsAny(k, "_-.") {
		return k
	}
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r == '.' {
			return -1
		}
		return r
	}, k)
}

// SensitiveKey reports whether a log attribute or span attribute named k
// holds a credential by its name alone. Names are compared in lower case
// without '_', '-' and '.', so camelCase and run-together spellings
// ("apiKey", "accessToken", "clientSecret", "secretAccessKey") count as
// their snake_case ones. A name ending in "token" is a credential
// ("access_token", "authToken", "X-Amz-Security-Token") unless it counts
// or places tokens ("max_token", "time_to_first_token"); names of token
// counts ("tokens", "output_tokens", "token_count", "max_tokens") are not.
func SensitiveKey(k string) bool {
	n := normKey(k)
	if n == "" {
		return false
	}
	if sensitiveKeys[n] {
		return true
	}
	for _, w := range sensitiveWords {
		if i := strings.LastIndex(n, w); i >= 0 && !harmlessTails[n[i+len(w):]] {
			return true
		}
	}
	for _, s := range sensitiveSuffixes {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	head, ok := strings.CutSuffix(n, "token")
	if !ok {
		head, ok = strings.CutSuffix(n, "tokenvalue")
	}
	if !ok {
		return false
	}
	for _, c := range tokenCounts {
		if strings.HasSuffix(head, c) {
			return false
		}
	}
	return true
}

// RedactAttr returns a with credentials hidden, for use as
// slog.HandlerOptions.ReplaceAttr or on its own:
//   - the value of a sensitive key (SensitiveKey) becomes hooks.Redacted;
//   - an http.Header, or any map[string][]string, is redacted as headers
//     with hooks.RedactHeaders; a map[string]string or url.Values is
//     logged as a group whose credential-named members are hidden; a URL
//     goes through hooks.RedactURL;
//   - an *errcodes.Error is written from its portable fields, never from
//     the native error it wraps; other errors, strings, values of named
//     string types and fmt.Stringers have credentials in free text
//     (authorization schemes, header lines, URLs, key=value pairs, JSON
//     members) hidden;
//   - any other composite value (struct, map, slice, pointer) is written
//     as text, JSON where it can be, and redacted as text; numbers and
//     booleans are left as they are;
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
	case nil:
		return slog.AnyValue(nil)
	case http.Header:
		return headerValue(x)
	case map[string][]string:
		return headerValue(http.Header(x))
	case url.Values:
		return queryValue(x)
	case map[string]string:
		return stringMapValue(x)
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
	case fmt.Stringer:
		return slog.StringValue(redactString(x.String()))
	}
	rv := reflect.ValueOf(x)
	switch rv.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return slog.AnyValue(x) // a number of a named type cannot hold a credential
	case reflect.String:
		return slog.StringValue(redactString(rv.String()))
	case reflect.Slice:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return slog.StringValue(redactString(string(rv.Bytes())))
		}
	}
	// Any other value (a struct, a map, a slice, a pointer to one) is
	// written as text and redacted as text: as JSON where it can be, so
	// that its field names are seen ("api_key": "…"), else as fmt prints it.
	if b, err := json.Marshal(x); err == nil {
		return slog.StringValue(redactString(string(b)))
	}
	return slog.StringValue(redactString(fmt.Sprintf("%+v", x)))
}

// stringMapValue logs a map of strings as a group of its keys in order,
// with the value of a credential's name (SensitiveKey, which knows every
// credential header) hidden and credentials in the others' text hidden.
func stringMapValue(m map[string]string) slog.Value {
	keys := slices.Sorted(maps.Keys(m))
	as := make([]slog.Attr, 0, len(keys))
	for _, k := range keys {
		v := hooks.Redacted
		if !SensitiveKey(k) {
			v = redactString(m[k])
		}
		as = append(as, slog.String(k, v))
	}
	return slog.GroupValue(as...)
}

// queryValue logs URL query parameters as a group, hiding those that carry
// credentials as hooks.RedactURL does (an OAuth "code" included) and those
// with a credential's name.
func queryValue(q url.Values) slog.Value {
	red, err := url.ParseQuery(strings.TrimPrefix(hooks.RedactURL("?"+q.Encode()), "?"))
	if err != nil {
		red = url.Values{}
	}
	keys := slices.Sorted(maps.Keys(q))
	as := make([]slog.Attr, 0, len(keys))
	for _, k := range keys {
		v := hooks.Redacted
		if vs, ok := red[k]; ok && !SensitiveKey(k) && !slices.Contains(vs, hooks.Redacted) {
			v = redactString(strings.Join(vs, ", "))
		}
		as = append(as, slog.String(k, v))
	}
	return slog.GroupValue(as...)
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
	// A credential header written as "Name: value" (a header dump, an
	// error quoting a request): the value, to the end of the line or a
	// quote, whatever its scheme.
	reHeaderLine = func() *regexp.Regexp {
		names := make([]string, len(hooks.SensitiveHeaders))
		for i, h := range hooks.SensitiveHeaders {
			names[i] = regexp.QuoteMeta(h)
		}
		return regexp.MustCompile(`(?i)(^|[^\w-])(` + strings.Join(names, "|") + `)([ \t]*:[ \t]*)[^\r\n"']*[^\s"']`)
	}()
	// A JSON member whose value is a string: "name": "value". Its value is
	// hidden when the name is a credential's.
	reJSONString = regexp.MustCompile(`"([^"\\]{1,128})"(\s*:\s*)"(?:[^"\\]|\\.)*"`)
	// A key=value pair (a query, a form, a log line): its value is hidden
	// when the key is a credential's, or "code" in a URL query (an OAuth
	// authorization code). The value is quoted or runs to a separator.
	reKeyValue = regexp.MustCompile(`(^|[^\w.-])([\w.-]+)=("[^"]*"|'[^']*'|[^&\s"',;]+)`)
)

// redactString hides credentials that free text may carry: the value after
// an authorization scheme ("Bearer …", "EAS …"), the value of a credential
// header written "Name: value", credential query parameters and user info
// of URLs, JSON string members and key=value pairs with a credential's name
// (SensitiveKey: "api_key", "clientSecret", "aws_secret_access_key", …),
// and a "code" query parameter.
func redactString(s string) string {
	if !strings.ContainsAny(s, "=: \t\n\r\f\v") {
		return s // no scheme, header, URL, JSON member or key=value can hide in it
	}
	s = reAuthScheme.ReplaceAllString(s, "$1$2 "+hooks.Redacted)
	if strings.IndexByte(s, ':') >= 0 {
		s = reHeaderLine.ReplaceAllString(s, "$1$2$3"+hooks.Redacted)
		s = reURL.ReplaceAllStringFunc(s, func(u string) string {
			trimmed := strings.TrimRight(u, ".,:;)]")
			return hooks.RedactURL(trimmed) + u[len(trimmed):]
		})
		if strings.IndexByte(s, '"') >= 0 {
			s = replaceSubmatches(reJSONString, s, func(s string, m []int) string {
				if !SensitiveKey(s[m[2]:m[3]]) {
					return s[m[0]:m[1]]
				}
				return s[m[0]:m[5]] + `"` + hooks.Redacted + `"`
			})
		}
	}
	if strings.IndexByte(s, '=') < 0 {
		return s
	}
	return replaceSubmatches(reKeyValue, s, func(s string, m []int) string {
		pre, key, val := s[m[2]:m[3]], s[m[4]:m[5]], s[m[6]:m[7]]
		if strings.HasPrefix(val, hooks.Redacted) || strings.HasPrefix(val, redactedQuery) ||
			!(SensitiveKey(key) || strings.EqualFold(key, "code") && (pre == "?" || pre == "&")) {
			return s[m[0]:m[1]]
		}
		return pre + key + "=" + hooks.Redacted
	})
}

// replaceSubmatches returns s with each match of re replaced by what f
// returns for it; f gets s and the match's submatch indices.
func replaceSubmatches(re *regexp.Regexp, s string, f func(s string, m []int) string) string {
	ms := re.FindAllStringSubmatchIndex(s, -1)
	if ms == nil {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, m := range ms {
		b.WriteString(s[last:m[0]])
		b.WriteString(f(s, m))
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// redactedQuery is hooks.Redacted as a URL query encodes it.
var redactedQuery = url.QueryEscape(hooks.Redacted)
