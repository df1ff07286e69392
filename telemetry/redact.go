package telemetry

import (
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

// What leaves the process is a fixed set of fields, each safe by what it
// is, rather than arbitrary values searched for secrets: codes, counts,
// sizes, timings, names the program chose, ids that look like ids, URLs as
// host and path, header values of the headers below only, and content
// only when it is asked for (CaptureContent), with the credentials the
// attempt sent replaced (cloudreq.AttemptInfo.Scrub).

// loggedHeaders are the request headers whose values the log records
// show; any other header is shown by its name, its value replaced by
// cloudreq.Redacted. None of them is a credential header
// (cloudreq.CredentialHeaders), which never shows its value.
var loggedHeaders = []string{
	"Accept", "Content-Type", "Content-Length", "Content-Encoding", "User-Agent",
	"X-Request-Id", "X-Client-Request-Id", "X-Ms-Client-Request-Id", "X-Ms-Request-Id", "Apim-Request-Id",
	"X-Amzn-Requestid", "X-Amzn-Trace-Id", "X-Amz-Request-Id", "Traceparent",
	"Retry-After", "Retry-After-Ms", "X-Ms-Retry-After-Ms", "Api-Version",
	"X-Amzn-Sagemaker-Target-Model", "X-Amzn-Sagemaker-Target-Variant", "X-Amzn-Sagemaker-Inference-Component",
	"Azureml-Model-Deployment",
}

// isLoggedHeader reports whether the value of header k may be logged.
func isLoggedHeader(k string) bool {
	if cloudreq.IsCredentialHeader(k) {
		return false
	}
	for _, h := range loggedHeaders {
		if strings.EqualFold(h, k) {
			return true
		}
	}
	return false
}

// headerValue logs a header as a group of its names in order, each with
// its values joined and scrubbed when it is a logged header, and
// cloudreq.Redacted otherwise.
func headerValue(h http.Header, scrub func(string) string) slog.Value {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	as := make([]slog.Attr, 0, len(keys))
	for _, k := range keys {
		v := cloudreq.Redacted
		if isLoggedHeader(k) {
			v = scrub(strings.Join(h[k], ", "))
		}
		as = append(as, slog.String(k, v))
	}
	return slog.GroupValue(as...)
}

// maxID is the longest id or code written.
const maxID = 128

// idValue returns s and true when it is an id or a code: one run of
// ASCII letters, digits and . _ : / -, at most maxID bytes. Request ids
// and provider codes come from servers; one that holds anything else
// (spaces, '=', quotes) is free text, and is not written.
func idValue(s string) (string, bool) {
	if s == "" || len(s) > maxID {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '_', c == ':', c == '/', c == '-':
		default:
			return "", false
		}
	}
	return s, true
}

// unparsable stands for a request path that does not parse as a URL
// reference.
const unparsable = "[unparsable path]"

// pathValue returns a request path as it is logged: without its query,
// fragment and user info (where credentials ride: "?sig=…", "?code=…").
func pathValue(p string) string {
	if p == "" {
		return ""
	}
	u, err := url.Parse(p)
	if err != nil || u.Opaque != "" {
		return unparsable
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}).String()
}
