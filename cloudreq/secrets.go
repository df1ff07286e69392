package cloudreq

import (
	"regexp"
	"strings"
	"sync"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// CredentialHeaders are the headers whose values are credentials, in every
// provider's protocol, and cookies: the one list the client's redaction,
// hooks.RedactHeaders and telemetry share. It is read once, when the
// program starts.
var CredentialHeaders = []string{
	"Authorization", "Proxy-Authorization", "X-Amz-Security-Token",
	"Api-Key", "X-Api-Key", "Ocp-Apim-Subscription-Key", "X-Goog-Api-Key",
	"Cookie", "Set-Cookie",
}

// IsCredentialHeader reports whether the header (or gRPC metadata) key is
// one of CredentialHeaders, whatever its case. It does not allocate: it
// runs for every header of every request. Keys are first told apart by
// length, which leaves at most one comparison.
func IsCredentialHeader(key string) bool {
	if len(key) >= len(credentialByLen) {
		return false
	}
	for _, k := range credentialByLen[len(key)] {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

// credentialByLen is CredentialHeaders indexed by length.
var credentialByLen = func() [][]string {
	n := 0
	for _, k := range CredentialHeaders {
		n = max(n, len(k)+1)
	}
	t := make([][]string, n)
	for _, k := range CredentialHeaders {
		t[len(k)] = append(t[len(k)], k)
	}
	return t
}()

// minSecret is the shortest credential part redacted: shorter ones (an
// auth scheme's parameter names) are not secrets and would match ordinary
// words.
const minSecret = 8

// Redacted is what replaces a credential in errors and in what observers
// scrub (AttemptInfo.Scrub).
const Redacted = "[REDACTED]"

// sentSecrets collects the credential headers the transport wrote for an
// attempt (httptrace's WroteHeaderField): adapters set credentials at the
// transport, where the client does not see them otherwise. Safe for
// concurrent use.
type sentSecrets struct {
	mu   sync.Mutex
	vals []string
}

// WroteHeaderField implements latency.HeaderObserver: it keeps the values
// of credential headers.
func (s *sentSecrets) WroteHeaderField(key string, values []string) {
	if !IsCredentialHeader(key) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		s.vals = append(s.vals, secretParts(v)...)
	}
}

// values returns the credentials collected so far.
func (s *sentSecrets) values() []string {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.vals[:len(s.vals):len(s.vals)]
}

// secretParts returns a credential header's value and, for a value with an
// auth scheme ("Bearer tok", "AWS4-HMAC-SHA256 Credential=…, Signature=…",
// "EAS sig"), each parameter value after the scheme.
func secretParts(v string) []string {
	out := []string{v}
	_, params, ok := strings.Cut(v, " ")
	if !ok {
		return out
	}
	for _, f := range strings.FieldsFunc(params, func(r rune) bool { return r == ',' || r == ' ' }) {
		if _, val, ok := strings.Cut(f, "="); ok {
			f = val
		}
		if len(f) >= minSecret {
			out = append(out, f)
		}
	}
	return out
}

// credentials returns what an attempt sent as credentials: those the
// transport wrote (sent, which may be nil), those the adapter names when
// it is a CredentialSource, and those in the request's credential headers.
func (cl *call) credentials(sent *sentSecrets) []string {
	vals := sent.values()
	if cl.reg != nil && cl.reg.creds != nil {
		var named []string
		if safely(func() error { named = cl.reg.creds.Credentials(); return nil }) == nil {
			vals = append(vals, named...)
		}
	}
	if cl.req != nil {
		for k, vs := range cl.req.Header {
			if IsCredentialHeader(k) {
				for _, v := range vs {
					vals = append(vals, secretParts(v)...)
				}
			}
		}
	}
	return vals
}

// Scrub returns s with every credential the attempt sent replaced by
// Redacted, and any quoted bearer token too: the exact values the
// adapter named (CredentialSource), the request's credential headers
// carried and the HTTP transport wrote (at the attempt's start, before
// anything was written, the first two). Observers apply it to what they
// copy from requests and responses (captured content, ids), which a
// server may have filled with a credential quoted back.
func (a *AttemptInfo) Scrub(s string) string {
	if a.cl == nil || len(s) < minSecret {
		return s
	}
	out, _ := scrubText(s, a.cl.credentials(a.sent))
	return out
}

// bearerToken matches a bearer credential quoted in a message. It catches
// what the transport trace cannot see: gRPC adds its per-RPC credentials
// below any hook.
var bearerToken = regexp.MustCompile(`(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}`)

// scrubText returns x with each of vals, and any quoted bearer token,
// replaced by Redacted, and whether it replaced any.
func scrubText(x string, vals []string) (string, bool) {
	found := false
	for _, v := range vals {
		if len(v) >= minSecret && strings.Contains(x, v) {
			x = strings.ReplaceAll(x, v, Redacted)
			found = true
		}
	}
	if bearerToken.MatchString(x) {
		x = bearerToken.ReplaceAllString(x, "${1} "+Redacted)
		found = true
	}
	return x, found
}

// scrubError returns e with each of vals, and any quoted bearer token,
// replaced in its text fields: e itself when none occurs, else an amended
// copy (e may be shared).
func scrubError(e *errcodes.Error, vals []string) *errcodes.Error {
	if e == nil {
		return nil
	}
	found := false
	clean := func(x string) string {
		x, f := scrubText(x, vals)
		found = found || f
		return x
	}
	msg, rid, pc := clean(e.Message), clean(e.RequestID), clean(e.ProviderCode)
	details := make(map[string]string, len(e.Details))
	for k, v := range e.Details {
		details[k] = clean(v)
	}
	if !found {
		return e
	}
	c := amend(e)
	c.Message, c.RequestID, c.ProviderCode = msg, rid, pc
	if e.Details != nil {
		c.Details = details
	}
	return c
}
