package emulator

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"time"
)

// DefaultAMLTokenTTL is how long an AML token the emulator issues is
// accepted when Options.AMLTokenTTL is zero.
const DefaultAMLTokenTTL = time.Hour

// amlTokens are the AML tokens the emulator issued: token → endpoint and
// expiry.
type amlTokens struct {
	mu     sync.Mutex
	issued map[string]amlToken
}

type amlToken struct {
	endpoint string
	expires  time.Time
}

// maxAMLTokens bounds the kept tokens; expired ones are dropped first.
const maxAMLTokens = 10000

func (t *amlTokens) issue(endpoint string, ttl time.Duration) (string, time.Time) {
	var b [24]byte
	_, _ = rand.Read(b[:])
	tok := "emu-aml-" + hex.EncodeToString(b[:])
	exp := time.Now().Add(ttl)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.issued == nil {
		t.issued = make(map[string]amlToken)
	}
	if len(t.issued) >= maxAMLTokens {
		now := time.Now()
		for k, v := range t.issued {
			if now.After(v.expires) || len(t.issued) >= maxAMLTokens {
				delete(t.issued, k)
			}
		}
	}
	t.issued[tok] = amlToken{endpoint: endpoint, expires: exp}
	return tok, exp
}

// valid reports whether tok was issued for endpoint and has not expired.
func (t *amlTokens) valid(endpoint, tok string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.issued[tok]
	return ok && v.endpoint == endpoint && time.Now().Before(v.expires)
}

// isAMLTokenPath reports whether p is ARM's token call of an online
// endpoint: /subscriptions/…/onlineEndpoints/{name}/token.
func isAMLTokenPath(p string) bool {
	return strings.HasPrefix(p, "/subscriptions/") && strings.HasSuffix(p, "/token") &&
		strings.Contains(strings.ToLower(p), "/onlineendpoints/")
}

// serveAMLToken answers Azure Resource Manager's
// POST /subscriptions/{s}/resourceGroups/{g}/providers/Microsoft.MachineLearningServices/workspaces/{w}/onlineEndpoints/{name}/token:
// a new AML token of the endpoint, accepted by its Azure ML routes as one
// of its keys until it expires (Options.AMLTokenTTL). The caller must send
// a bearer token (any: the emulator has no Entra); the endpoint must be
// served on Azure ML.
func (s *Server) serveAMLToken(w http.ResponseWriter, r *http.Request) {
	armError := func(status int, code, msg string) {
		writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
	}
	if r.Method != http.MethodPost {
		armError(http.StatusMethodNotAllowed, "MethodNotAllowed", "The token call is a POST.")
		return
	}
	if _, ok := bearer(r.Header.Get("Authorization")); !ok {
		armError(http.StatusUnauthorized, "AuthenticationFailed", "Authentication failed. The 'Authorization' header is missing.")
		return
	}
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	name := ""
	for i := 0; i+2 < len(segs); i++ {
		if strings.EqualFold(segs[i], "onlineEndpoints") {
			name = segs[i+1]
		}
	}
	if name == "" || s.lookup(name, AzureML) == nil {
		armError(http.StatusNotFound, "ResourceNotFound", "The online endpoint '"+name+"' was not found.")
		return
	}
	ttl := s.opts.AMLTokenTTL
	if ttl <= 0 {
		ttl = DefaultAMLTokenTTL
	}
	tok, exp := s.aml.issue(name, ttl)
	writeJSON(w, http.StatusOK, map[string]any{
		"accessToken":         tok,
		"tokenType":           "Bearer",
		"expiryTimeUtc":       exp.Unix(),
		"refreshAfterTimeUtc": time.Now().Add(ttl / 2).Unix(),
	})
}
