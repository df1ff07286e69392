package cloudreq

import (
	"regexp"
	"strings"
	"sync"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// CredentialHeaders are the request headers whose values are credentials,
// in every provider's protocol: the one list the client's and the hooks'
// redaction share.
var CredentialHeaders = []string{
	"Authorization", "Proxy-Authorization", "X-Amz-Security-Token",
	"Api-Key", "X-Api-Key", "Ocp-Apim-Subscription-Key", "X-Goog-Api-Key",
}

// isCredentialHeader reports whether the header key carries a credential
// (without allocating: it runs for every header of every request). Keys
// are first told apart by length, which leaves at most one comparison.
func isCredentialHeader(key string) bool {
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

// redacted replaces a credential in an error.
const redacted = "[REDACTED]"

// sentSecrets collects the credentials one attempt sent, so that a server
// quoting them back in an error — a message, a request id, an in-stream
// error event — cannot carry them into the error, and so into logs. They
// come from the adapter when it is a CredentialSource, else from the
// credential headers as the transport wrote them (httptrace's
// WroteHeaderField): adapters set credentials at the transport, where the
// client does not see them otherwise. Safe for concurrent use.
type sentSecrets struct {
	mu   sync.Mutex
	vals []string
}

// WroteHeaderField implements latency.HeaderObserver: it keeps the values
// of credential headers.
func (s *sentSecrets) WroteHeaderField(key string, values []string) {
	if !isCredentialHeader(key) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		s.vals = append(s.vals, secretParts(v)...)
	}
}

// add keeps credentials an adapter named (CredentialSource).
func (s *sentSecrets) add(values []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vals = append(s.vals, values...)
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

// bearerToken matches a bearer credential quoted in a message. It catches
// what the transport trace cannot see: gRPC adds its per-RPC credentials
// below any hook.
var bearerToken = regexp.MustCompile(`(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}`)

// scrub returns e with every collected credential, and any quoted bearer
// token, replaced in its text fields: e itself when none occurs, else an
// amended copy (e may be shared).
func (s *sentSecrets) scrub(e *errcodes.Error) *errcodes.Error {
	if s == nil || e == nil {
		return e
	}
	s.mu.Lock()
	vals := s.vals
	s.mu.Unlock()
	found := false
	clean := func(x string) string {
		for _, v := range vals {
			if len(v) >= minSecret && strings.Contains(x, v) {
				x = strings.ReplaceAll(x, v, redacted)
				found = true
			}
		}
		if bearerToken.MatchString(x) {
			x = bearerToken.ReplaceAllString(x, "${1} "+redacted)
			found = true
		}
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
