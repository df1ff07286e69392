package telemetry

import (
	"context"
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
//     (authorization schemes, header lines, URLs, key=value and "key:
//     value" pairs, JSON members, escaped JSON and Python dict members)
//     hidden; a nil pointer is written "<nil>", and a String, Error or
//     MarshalJSON method that panics is replaced by "<TYPE: unprintable>";
//   - any other composite value (struct, map, slice, pointer) is written
//     as JSON, redacted as a tree rather than as text: the value of a
//     member whose name is a credential's (SensitiveKey) becomes
//     hooks.Redacted, and every string in it is redacted as free text;
//     HTML characters are not escaped and struct fields keep their order;
//   - a composite value that encoding/json cannot encode (a func or
//     channel field, NaN, a map with keys of another kind than string and
//     integer, a cycle) is walked instead, with reflect, as encoding/json
//     would walk it but at most 8 levels deep: exported fields, map
//     entries (sorted) and elements are written as JSON with the same
//     redaction, and a func, channel or value past the depth limit as its
//     type ("<func()>"); such a value is never printed with fmt's %v;
//   - numbers and booleans are left as they are;
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
	if x == nil {
		return slog.AnyValue(nil)
	}
	rv := reflect.ValueOf(x)
	if rv.Kind() == reflect.Pointer && rv.IsNil() {
		return slog.StringValue("<nil>") // as slog prints it, without calling its methods
	}
	switch x := x.(type) {
	case http.Header:
		return headerValue(x)
	case map[string][]string:
		return headerValue(http.Header(x))
	case url.Values:
		return queryValue(x)
	case map[string]string:
		return stringMapValue(x)
	case *url.URL:
		return slog.StringValue(hooks.RedactURL(x.String()))
	case url.URL:
		return slog.StringValue(hooks.RedactURL(x.String()))
	case []byte:
		return slog.StringValue(redactString(string(x)))
	case error:
		return slog.StringValue(safely(x, func() string { return redactError(x) }))
	case fmt.Stringer:
		return slog.StringValue(redactString(safely(x, x.String)))
	}
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
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return slog.StringValue("<" + rv.Type().String() + ">")
	}
	return slog.StringValue(safely(x, func() string { return redactComposite(x) }))
}

// redactError writes an error: an *errcodes.Error in its chain from its
// portable fields, any other from its message, redacted.
func redactError(err error) string {
	var e *errcodes.Error
	if errors.As(err, &e) && e != nil {
		return safeError(e)
	}
	return redactString(err.Error())
}

// safely returns f(), or "<TYPE: unprintable>" (TYPE being x's) if f
// panics: a String, Error or MarshalJSON method of a value being logged
// must not crash the program that logs it.
func safely(x any, f func() string) (s string) {
	defer func() {
		if recover() != nil {
			s = unprintable(x)
		}
	}()
	return f()
}

func unprintable(x any) string { return fmt.Sprintf("<%T: unprintable>", x) }

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
// simple (Go's regexp guarantees linear time), and pairs are found by a
// linear scan (redactPairs).
var (
	// An authorization scheme followed by a credential of eight or more
	// characters. EAS is matched in upper case only and never right after
	// a "-", so that "PAI-EAS service" stays readable; "basic" followed by
	// a plain word ("basic completions") is prose (proseWord).
	reAuthScheme = regexp.MustCompile(`(^|[^\w-])((?i:bearer|basic)|EAS)\s+([A-Za-z0-9+/=:._~-]{8,})`)
	reURL        = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^\s"'<>]+`)
	// A credential header of hooks.SensitiveHeaders written "Name: value"
	// anywhere in a line (an error quoting a request): the value, to the
	// end of the line, whatever its scheme.
	reKnownHeader = func() *regexp.Regexp {
		names := make([]string, len(hooks.SensitiveHeaders))
		for i, h := range hooks.SensitiveHeaders {
			names[i] = regexp.QuoteMeta(h)
		}
		return regexp.MustCompile(`(?i)(^|[^\w-])(` + strings.Join(names, "|") + `)([ \t]*:[ \t]*)[^\r\n]*[^\s]`)
	}()
	// A header line, "Name: value" at the start of a line (a header dump,
	// a YAML or .env-like line): its value, to the end of the line, is
	// hidden when the name is a credential's (SensitiveKey).
	reHeaderLine = regexp.MustCompile(`(?m)^([ \t]*)([A-Za-z][\w.-]*)([ \t]*:[ \t]*)[^\r\n]*[^\s]`)
)

// redactString hides credentials that free text may carry:
//   - the value after an authorization scheme ("Bearer …", "EAS …",
//     "Basic" and a base64 credential);
//   - the value of a header line "Name: value" whose name is a credential
//     header or a credential's name (SensitiveKey), to the end of the line;
//   - credential query parameters and user info of URLs (hooks.RedactURL);
//   - the value of a pair whose name is a credential's: key=value,
//     "key = value", "key: value", JSON members ("key": "value", an array
//     of strings, an object), JSON escaped in a string (\"key\": \"value\"),
//     Python dict members ('key': 'value'), and a "code" query parameter
//     (an OAuth authorization code).
func redactString(s string) string {
	if !strings.ContainsAny(s, "=: \t\n\r\f\v") {
		return s // no scheme, header, URL, JSON member or key=value can hide in it
	}
	s = replaceSubmatches(reAuthScheme, s, func(s string, m []int) string {
		if strings.EqualFold(s[m[4]:m[5]], "basic") && proseWord(s[m[6]:m[7]]) {
			return s[m[0]:m[1]]
		}
		return s[m[0]:m[6]] + hooks.Redacted
	})
	if strings.IndexByte(s, ':') >= 0 {
		s = reKnownHeader.ReplaceAllString(s, "$1$2$3"+hooks.Redacted)
		s = replaceSubmatches(reHeaderLine, s, func(s string, m []int) string {
			if !SensitiveKey(s[m[4]:m[5]]) || strings.HasPrefix(s[m[7]:], hooks.Redacted) {
				return s[m[0]:m[1]]
			}
			return s[m[0]:m[7]] + hooks.Redacted
		})
		s = reURL.ReplaceAllStringFunc(s, func(u string) string {
			trimmed := strings.TrimRight(u, ".,:;)]")
			return hooks.RedactURL(trimmed) + u[len(trimmed):]
		})
	}
	return redactPairs(s)
}

// proseWord reports whether w, after "basic", is a word of prose rather
// than a credential: letters and hyphens only, upper case only first,
// maybe followed by punctuation. A base64 credential of eight characters
// or more has digits, '+', '/', '=' or upper-case letters within.
func proseWord(w string) bool {
	w = strings.TrimRight(w, ".,:;")
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case 'a' <= c && c <= 'z', c == '-' && i > 0:
		case 'A' <= c && c <= 'Z' && i == 0:
		default:
			return false
		}
	}
	return w != ""
}

// redactPairs hides the values of pairs whose name is a credential's. It
// looks at every ':' and '=' once: the name before it (a run of letters,
// digits, '_', '.' and '-', or a quoted name: "name", 'name', \"name\"),
// and, when the name is a credential's, the value after it: a quoted
// string, a bracketed array or object, or a run of characters up to a
// separator. A value is replaced by hooks.Redacted, quoted as the name is.
// Names are never consumed with a value that is kept, so that a pair in a
// value that is not hidden is still seen.
func redactPairs(s string) string {
	var b strings.Builder
	last := 0 // s[:last] is written to b, or to be dropped
	for i := 0; i < len(s); {
		j := strings.IndexAny(s[i:], ":=")
		if j < 0 {
			break
		}
		sep := i + j
		i = sep + 1
		name, quote, pre, ok := pairName(s, sep)
		if !ok {
			continue
		}
		if quote == "" && strings.EqualFold(name, "code") {
			if s[sep] != '=' || (pre != '?' && pre != '&') {
				continue
			}
		} else if !SensitiveKey(name) {
			continue
		}
		p := sep + 1
		if s[sep] == '=' && p < len(s) && s[p] == '>' {
			p++ // name => value
		}
		spaced := p < len(s) && (s[p] == ' ' || s[p] == '\t')
		for p < len(s) && (s[p] == ' ' || s[p] == '\t') {
			p++
		}
		end := valueEnd(s, p)
		if v := s[p:end]; v == "" || strings.HasPrefix(v, hooks.Redacted) || strings.HasPrefix(v, redactedQuery) ||
			v == "null" || v == "true" || v == "false" || spaced && isPairName(s, end) {
			continue
		}
		if b.Cap() == 0 {
			b.Grow(len(s))
		}
		b.WriteString(s[last:p])
		b.WriteString(quote + hooks.Redacted + quote)
		last, i = end, end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// isPairName reports whether the value s[:end] that follows spaces after a
// separator is rather the name of the next pair, its separator included
// ("key= api_key: …": the value of key is empty, api_key's follows).
func isPairName(s string, end int) bool {
	c := s[end-1]
	return c == ':' || c == '='
}

// pairName finds the name of a pair whose separator is s[sep]: its text,
// its quote ("", `"`, "'" or `\"`), the byte before an unquoted name (0 at
// the start), and whether there is one. The name may lie in a value just
// hidden ("key= "api_key": …"): it is only read.
func pairName(s string, sep int) (name, quote string, pre byte, ok bool) {
	e := sep
	for e > 0 && (s[e-1] == ' ' || s[e-1] == '\t') {
		e--
	}
	if e == 0 {
		return "", "", 0, false
	}
	switch c := s[e-1]; {
	case c == '"' || c == '\'':
		end, q := e-1, s[e-1:e]
		if c == '"' && end > 0 && s[end-1] == '\\' {
			end, q = end-1, `\"`
		}
		k := end - 1
		for k >= 0 && end-k <= 129 && !strings.ContainsRune("\"'\\\r\n:=", rune(s[k])) {
			k--
		}
		if k < 0 || s[k] != c || k+1 == end {
			return "", "", 0, false
		}
		if q == `\"` && (k == 0 || s[k-1] != '\\') {
			return "", "", 0, false
		}
		return s[k+1 : end], q, 0, true
	case isNameByte(c):
		b := e - 1
		for b > 0 && isNameByte(s[b-1]) {
			b--
		}
		if b > 0 && s[b-1] == '\\' && e-b > 1 && (s[b] == 'n' || s[b] == 'r' || s[b] == 't') {
			b++ // an escaped newline or tab before the name: \napi_key=…
		}
		if b > 0 {
			pre = s[b-1]
		}
		return s[b:e], "", pre, true
	}
	return "", "", 0, false
}

func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
}

// valueEnd returns where the value that begins at s[p] ends: after its
// closing quote (", ' or \"), after its closing bracket, or at the first
// separator (space, '&', a quote, ',', ';', a closing bracket, '<', '>').
// An unterminated quoted value ends at the end of the line, an
// unterminated bracket at the end of s. An authorization scheme
// ("Bearer", "Token") takes the word after it along.
func valueEnd(s string, p int) int {
	if p >= len(s) {
		return p
	}
	switch c := s[p]; {
	case c == '\\' && p+1 < len(s) && s[p+1] == '"':
		return escapedEnd(s, p+2)
	case c == '"' || c == '\'':
		return quotedEnd(s, p+1, c)
	case c == '[' || c == '{':
		return bracketEnd(s, p)
	}
	end := bareEnd(s, p)
	switch strings.ToLower(s[p:end]) {
	case "bearer", "basic", "token", "digest", "eas", "sharedaccesssignature":
		if q := end; q+1 < len(s) && s[q] == ' ' {
			if strings.HasPrefix(s[q+1:], hooks.Redacted) {
				// Hidden already, by the scheme pattern: its brackets are
				// not separators.
				end = q + 1 + len(hooks.Redacted)
			} else if e := bareEnd(s, q+1); e > q+1 && s[e-1] != ':' && s[e-1] != '=' {
				end = e
			}
		}
	}
	return end
}

func bareEnd(s string, p int) int {
	for p < len(s) && !strings.ContainsRune(" \t\r\n\v\f&\"',;})]<>", rune(s[p])) {
		p++
	}
	return p
}

// quotedEnd returns the index after the quote q that closes a string whose
// text begins at s[i], or the end of the line if none does.
func quotedEnd(s string, i int, q byte) int {
	for i < len(s) {
		switch s[i] {
		case '\\':
			i += 2
			continue
		case q:
			return i + 1
		case '\n':
			return i
		}
		i++
	}
	return len(s)
}

// escapedEnd returns the index after the \" that closes an escaped string
// whose text begins at s[i], or the end of the line if none does.
func escapedEnd(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case '\\':
			if i+1 < len(s) && s[i+1] == '"' {
				return i + 2
			}
			i += 2
			continue
		case '\n':
			return i
		}
		i++
	}
	return len(s)
}

// bracketEnd returns the index after the bracket that closes the one at
// s[p], skipping quoted strings, or len(s).
func bracketEnd(s string, p int) int {
	depth := 0
	for i := p; i < len(s); {
		switch c := s[i]; c {
		case '[', '{':
			depth++
		case ']', '}':
			if depth--; depth == 0 {
				return i + 1
			}
		case '"', '\'':
			i = quotedEnd(s, i+1, c)
			continue
		case '\\':
			if i+1 < len(s) && s[i+1] == '"' {
				i = escapedEnd(s, i+2)
				continue
			}
		}
		i++
	}
	return len(s)
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
