package httpadapter

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// Default size limits.
const (
	// DefaultMaxResponse bounds a non-streaming response body: 64 MiB.
	DefaultMaxResponse = 64 << 20
	// DefaultMaxErrorBody bounds what is read of an error body: 64 KiB.
	// The rest is never read, so a huge error page costs no memory.
	DefaultMaxErrorBody = 64 << 10
	// MaxErrorMessage is the longest error message taken from a plain-text
	// or HTML body, in bytes.
	MaxErrorMessage = 512
)

// ReadLimited reads r to its end or to limit bytes, whichever comes first,
// and reports whether more bytes followed (the body was cut). It reads at
// most limit+1 bytes; a limit of math.MaxInt64 reads to the end.
func ReadLimited(r io.Reader, limit int64) (b []byte, cut bool, err error) {
	return ReadLimitedSize(r, limit, -1)
}

// maxSizeHint bounds the buffer ReadLimitedSize makes from a declared
// size before any of the body has come: a server that declares more than
// it sends costs at most this much up front.
const maxSizeHint = 1 << 20

// ReadLimitedSize is ReadLimited of a body whose size is known (a
// response's ContentLength; -1: unknown): its buffer is that size, and
// one byte more to find the end, where that is within the limit (and
// maxSizeHint), rather than io.ReadAll's 512 bytes grown as it reads.
// The loop is io.ReadAll's with the limit in it, so that a read takes no
// io.LimitReader either.
func ReadLimitedSize(r io.Reader, limit, size int64) (b []byte, cut bool, err error) {
	if limit <= 0 {
		limit = DefaultMaxResponse
	}
	most := limit + 1 // read one byte past the limit to tell a cut
	if limit == math.MaxInt64 {
		most = limit // no room for the extra byte: nothing is cut
	}
	n := int64(512)
	if size >= 0 && size < limit {
		n = min(size+1, maxSizeHint)
	}
	b = make([]byte, 0, min(n, most))
	for int64(len(b)) < most {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // let append pick the growth
		}
		room := b[len(b):cap(b)]
		if left := most - int64(len(b)); int64(len(room)) > left {
			room = room[:left]
		}
		var k int
		k, err = r.Read(room)
		b = b[:len(b)+k]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			break
		}
	}
	if limit != math.MaxInt64 && int64(len(b)) > limit {
		return b[:limit], true, err
	}
	return b, false, err
}

// ErrorText turns a non-JSON error body into a one-line message: the
// title of an HTML page, or the text itself with whitespace collapsed, cut
// to MaxErrorMessage bytes. It returns "" for an empty body.
func ErrorText(body []byte, contentType string) string {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return ""
	}
	ct := strings.ToLower(contentType)
	lower := lowerASCII(body[:min(len(body), 512)])
	if strings.Contains(ct, "html") || bytes.HasPrefix(lower, []byte("<!doctype html")) || bytes.HasPrefix(lower, []byte("<html")) {
		if t := htmlTitle(body); t != "" {
			return clip(t)
		}
		return "HTML error page (" + strconv.Itoa(len(body)) + " bytes)"
	}
	if !utf8.Valid(body) {
		return "binary error body (" + strconv.Itoa(len(body)) + " bytes)"
	}
	return clip(strings.Join(strings.Fields(string(runePrefix(body, 4*MaxErrorMessage))), " "))
}

// runePrefix returns at most n bytes of b, cut at a rune boundary.
func runePrefix(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return b[:n]
}

// htmlTitle returns the text of the first <title> or <h1> element.
func htmlTitle(body []byte) string {
	lower := lowerASCII(body)
	for _, tag := range []string{"title", "h1"} {
		i := bytes.Index(lower, []byte("<"+tag+">"))
		if i < 0 {
			continue
		}
		start := i + len(tag) + 2
		j := bytes.Index(lower[start:], []byte("</"+tag+">"))
		if j < 0 {
			continue
		}
		if t := strings.Join(strings.Fields(strings.ToValidUTF8(string(body[start:start+j]), "\uFFFD")), " "); t != "" {
			return t
		}
	}
	return ""
}

// lowerASCII lower-cases ASCII letters only, so that offsets into the
// result are offsets into b: bytes.ToLower turns invalid UTF-8 into
// U+FFFD, which moves them.
func lowerASCII(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

func clip(s string) string {
	if len(s) <= MaxErrorMessage {
		return s
	}
	i := MaxErrorMessage
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// Metadata returns the response headers worth keeping: those named in
// keep, keyed by canonical name. It returns nil when there are none.
func Metadata(h http.Header, keep ...string) map[string]string {
	var m map[string]string
	put := func(k, v string) {
		if m == nil {
			m = map[string]string{}
		}
		m[k] = v
	}
	for _, k := range keep {
		if v := h.Get(k); v != "" {
			put(http.CanonicalHeaderKey(k), v)
		}
	}
	return m
}

// FirstHeader returns the first non-empty value among the named headers.
func FirstHeader(h http.Header, names ...string) string {
	for _, n := range names {
		if v := h.Get(n); v != "" {
			return v
		}
	}
	return ""
}

// IsEventStream reports whether a Content-Type is text/event-stream.
func IsEventStream(contentType string) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(contentType)), "text/event-stream")
}

// IsJSON reports whether a Content-Type is JSON (application/json or a
// +json type).
func IsJSON(contentType string) bool {
	ct := strings.ToLower(contentType)
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = strings.TrimSpace(ct)
	return ct == "application/json" || strings.HasSuffix(ct, "+json")
}

// NewError returns the *errcodes.Error for a failed HTTP response: code's
// default retryability, the server's Retry-After (when present) and the
// native error wrapped.
func NewError(code errcodes.Code, provider string, resp *http.Response, providerCode, msg, requestID string, native error) *errcodes.Error {
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	if msg == "" {
		msg = "HTTP " + strconv.Itoa(resp.StatusCode)
	}
	e := errcodes.Wrap(native, code, msg)
	e.Provider = provider
	e.ProviderCode = providerCode
	e.HTTPStatus = resp.StatusCode
	e.RequestID = requestID
	if d, ok := cloudreq.RetryAfter(resp.Header, time.Now()); ok {
		e.RetryAfter = d
	}
	return e
}

// TransportError classifies an error from sending a request or reading a
// response (errcodes.FromTransport) and names the provider.
func TransportError(provider string, err error) *errcodes.Error {
	e := errcodes.FromTransport(err)
	if e.Provider == "" {
		e.Provider = provider
	}
	return e
}

// IsAbsoluteURL reports whether s is an http or https URL rather than a
// name.
func IsAbsoluteURL(s string) bool {
	ls := strings.ToLower(s)
	return strings.HasPrefix(ls, "http://") || strings.HasPrefix(ls, "https://")
}

// JoinPath appends path (which may carry a query) to base, dropping a
// duplicated "/v1" when base already ends with it.
func JoinPath(base, path string) string {
	base = strings.TrimRight(base, "/")
	if path != "" && path[0] != '/' && path[0] != '?' {
		path = "/" + path
	}
	if strings.HasSuffix(base, "/v1") && strings.HasPrefix(path, "/v1/") {
		path = path[len("/v1"):]
	}
	return base + path
}

// URLForMessage keeps the scheme, host and path of a URL, for error
// messages: user info and the query, which may carry credentials, are
// dropped.
func URLForMessage(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Scheme + "://" + u.Host + u.Path
}
