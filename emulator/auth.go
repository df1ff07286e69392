package emulator

import (
	"context"
	"crypto/hmac"
	"crypto/md5" //nolint:gosec // the PAI-EAS signature is defined over an MD5 of the body
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// authorized checks the request's credentials against the endpoint's. An
// endpoint without configured credentials accepts any (or none).
func (s *Server) authorized(ep *endpoint, prov Provider, r *http.Request, body []byte) bool {
	cr := ep.Credentials
	switch prov {
	case SageMaker:
		if cr.AWSAccessKeyID == "" {
			return true
		}
		if isSageMakerOpenAIPath(r.URL.Path) {
			// The OpenAI-compatible route takes a bearer token, not SigV4.
			tok, ok := bearer(r.Header.Get("Authorization"))
			return ok && verifySageMakerBearer(tok, cr.AWSAccessKeyID, cr.AWSSecretAccessKey, time.Now())
		}
		return verifySigV4(r, body, cr.AWSAccessKeyID, cr.AWSSecretAccessKey)
	case PAIEAS:
		if len(cr.Keys) == 0 {
			return true
		}
		return verifyEAS(r, body, cr.Keys)
	default:
		if len(cr.Keys) == 0 {
			return true
		}
		tok, ok := bearer(r.Header.Get("Authorization"))
		if !ok && prov == AzureML {
			// Azure OpenAI-style clients send the key in api-key.
			tok, ok = r.Header.Get("api-key"), r.Header.Get("api-key") != ""
		}
		return ok && (keyIn(tok, cr.Keys) || (prov == AzureML && s.aml.valid(ep.Name, tok)))
	}
}

// bearer extracts the token of "Bearer <token>".
func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// keyIn compares tok with each key in constant time.
func keyIn(tok string, keys []string) bool {
	found := 0
	for _, k := range keys {
		found |= subtle.ConstantTimeCompare([]byte(tok), []byte(k))
	}
	return found == 1
}

// verifyEAS accepts `Authorization: <token>`, `Authorization: Bearer
// <token>`, or the EAS SDK's signature
// `Authorization: EAS base64(HMAC-SHA1(token, "POST\n<Content-MD5>\n<Content-Type>\n<Date>\n<path>"))`
// where Content-MD5 is the hex MD5 of the body, Content-Type is the
// request's (application/octet-stream when absent), and path is the URL path.
func verifyEAS(r *http.Request, body []byte, keys []string) bool {
	h := strings.TrimSpace(r.Header.Get("Authorization"))
	if h == "" {
		return false
	}
	if tok, ok := bearer(h); ok {
		return keyIn(tok, keys)
	}
	sig, isSig := strings.CutPrefix(h, "EAS ")
	if !isSig {
		return keyIn(h, keys)
	}
	sum := md5.Sum(body) //nolint:gosec // protocol-defined
	bodyMD5 := hex.EncodeToString(sum[:])
	if m := r.Header.Get("Content-MD5"); m != "" && !strings.EqualFold(m, bodyMD5) {
		return false
	}
	want, err := base64.StdEncoding.DecodeString(strings.TrimSpace(sig))
	if err != nil {
		return false
	}
	cts := []string{r.Header.Get("Content-Type")}
	if cts[0] != "application/octet-stream" {
		cts = append(cts, "application/octet-stream")
	}
	for _, k := range keys {
		for _, ct := range cts {
			msg := r.Method + "\n" + bodyMD5 + "\n" + ct + "\n" + r.Header.Get("Date") + "\n" + r.URL.Path
			m := hmac.New(sha1.New, []byte(k))
			m.Write([]byte(msg))
			if hmac.Equal(m.Sum(nil), want) {
				return true
			}
		}
	}
	return false
}

// easSignature returns the Authorization value the PAI-EAS SDK sends for a
// POST of body with the given Content-Type and Date to path.
func easSignature(token, contentType, date, path string, body []byte) string {
	sum := md5.Sum(body) //nolint:gosec // protocol-defined
	msg := "POST\n" + hex.EncodeToString(sum[:]) + "\n" + contentType + "\n" + date + "\n" + path
	m := hmac.New(sha1.New, []byte(token))
	m.Write([]byte(msg))
	return "EAS " + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// sigV4 holds the parts of an AWS4-HMAC-SHA256 Authorization header.
type sigV4 struct {
	akid, date, region, service string
	signed                      []string
	signature                   string
}

// parseSigV4 parses "AWS4-HMAC-SHA256 Credential=AKID/date/region/service/aws4_request, SignedHeaders=a;b, Signature=hex".
func parseSigV4(h string) (sigV4, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(h), "AWS4-HMAC-SHA256 ")
	if !ok {
		return sigV4{}, false
	}
	var v sigV4
	for part := range strings.SplitSeq(rest, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return sigV4{}, false
		}
		switch k {
		case "Credential":
			f := strings.Split(val, "/")
			if len(f) != 5 || f[4] != "aws4_request" {
				return sigV4{}, false
			}
			v.akid, v.date, v.region, v.service = f[0], f[1], f[2], f[3]
		case "SignedHeaders":
			v.signed = strings.Split(val, ";")
		case "Signature":
			v.signature = val
		}
	}
	return v, v.akid != "" && v.signature != "" && len(v.signed) > 0
}

// sigV4Service is the signing name of the SageMaker runtime.
const sigV4Service = "sagemaker"

// verifySigV4 recomputes the request's SigV4 signature with the SDK's own
// signer over the headers the client signed, and compares.
func verifySigV4(r *http.Request, body []byte, akid, secret string) bool {
	v, ok := parseSigV4(r.Header.Get("Authorization"))
	if !ok || v.service != sigV4Service || subtle.ConstantTimeCompare([]byte(v.akid), []byte(akid)) != 1 {
		return false
	}
	t, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil || t.Format("20060102") != v.date {
		return false
	}
	if d := time.Since(t); d > 15*time.Minute || d < -15*time.Minute {
		return false
	}
	clone, err := http.NewRequestWithContext(context.Background(), r.Method, r.URL.String(), nil)
	if err != nil {
		return false
	}
	clone.URL.RawPath = r.URL.RawPath
	clone.Host = r.Host
	clone.ContentLength = 0
	for _, name := range v.signed {
		switch name {
		case "host":
		case "content-length":
			clone.ContentLength = int64(len(body))
		default:
			if vals := r.Header.Values(name); len(vals) > 0 {
				clone.Header[http.CanonicalHeaderKey(name)] = slices.Clone(vals)
			}
		}
	}
	// The payload hash is the body's own: a client's X-Amz-Content-Sha256
	// must match it (or be UNSIGNED-PAYLOAD), so that a body changed after
	// signing is refused as SageMaker refuses it.
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	switch ph := r.Header.Get("X-Amz-Content-Sha256"); ph {
	case "", hash:
	case "UNSIGNED-PAYLOAD":
		hash = ph
	default:
		return false
	}
	creds := aws.Credentials{AccessKeyID: akid, SecretAccessKey: secret, SessionToken: r.Header.Get("X-Amz-Security-Token")}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, clone, hash, v.service, v.region, t); err != nil {
		return false
	}
	got, ok := parseSigV4(clone.Header.Get("Authorization"))
	return ok && hmac.Equal([]byte(got.signature), []byte(v.signature))
}
