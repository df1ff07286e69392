package faults

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// sigV4Server is SageMaker's front end as far as signing goes: it checks
// each request's SigV4 signature against the sentinel credentials and
// refuses one signed more than 5 minutes away from its own clock, which
// runs skew ahead of the client's, with InvalidSignatureException —
// always sending its clock in the Date header, as AWS does.
type sigV4Server struct {
	skew time.Duration
	// badSignature makes every request fail verification (a real
	// signing error, not a clock problem).
	badSignature bool

	mu       sync.Mutex
	attempts []sigV4Attempt
}

type sigV4Attempt struct {
	signedAt time.Time // the request's X-Amz-Date
	verdict  string    // "ok", "expired" or "bad-signature"
}

var authHeader = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$`)

func (s *sigV4Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now().Add(s.skew).UTC()
	w.Header().Set("Date", now.Format(http.TimeFormat))
	body, _ := io.ReadAll(r.Body)
	verdict, signedAt := s.verify(r, body, now)
	s.mu.Lock()
	s.attempts = append(s.attempts, sigV4Attempt{signedAt: signedAt, verdict: verdict})
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch verdict {
	case "ok":
		_, _ = io.WriteString(w, `{"generated_text":"ok"}`)
	case "expired":
		w.Header().Set("X-Amzn-ErrorType", "InvalidSignatureException")
		w.WriteHeader(http.StatusForbidden)
		_, _ = fmt.Fprintf(w, `{"message":"Signature expired: %s is now earlier than %s (%s - 5 min.)"}`,
			signedAt.Format("20060102T150405Z"), now.Add(-5*time.Minute).Format("20060102T150405Z"), now.Format("20060102T150405Z"))
	default:
		w.Header().Set("X-Amzn-ErrorType", "InvalidSignatureException")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"message":"The request signature we calculated does not match the signature you provided."}`)
	}
}

// verify checks r's signature by signing the same request again with the
// sentinel credentials at the time r claims, and r's time against now.
func (s *sigV4Server) verify(r *http.Request, body []byte, now time.Time) (string, time.Time) {
	signedAt, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return "bad-signature", time.Time{}
	}
	m := authHeader.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil || m[1] != awsKeyID || m[3] != "us-east-1" || m[4] != "sagemaker" {
		return "bad-signature", signedAt
	}
	// Sign a copy holding only the signed headers.
	cp, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), nil)
	for _, k := range strings.Split(m[5], ";") {
		if k == "host" {
			continue
		}
		cp.Header[http.CanonicalHeaderKey(k)] = r.Header.Values(k)
	}
	cp.ContentLength = int64(len(body))
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: awsKeyID, SecretAccessKey: awsSecret, SessionToken: awsSessionToken}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, cp, hex.EncodeToString(sum[:]), "sagemaker", "us-east-1", signedAt); err != nil {
		return "bad-signature", signedAt
	}
	if s.badSignature || !strings.HasSuffix(cp.Header.Get("Authorization"), "Signature="+m[6]) {
		return "bad-signature", signedAt
	}
	if d := now.Sub(signedAt); d > 5*time.Minute || d < -5*time.Minute {
		return "expired", signedAt
	}
	return "ok", signedAt
}

func (s *sigV4Server) log() []sigV4Attempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sigV4Attempt(nil), s.attempts...)
}

// TestSigV4ClockSkewCorrected: against a SigV4 server whose clock is 10
// minutes ahead (or behind), the first attempt is refused as expired; the
// SageMaker adapter takes the server's Date into account and retries
// exactly once, signed with the corrected clock, and succeeds. Later calls
// of the same adapter sign with the correction from the start.
func TestSigV4ClockSkewCorrected(t *testing.T) {
	for _, skew := range []time.Duration{10 * time.Minute, -10 * time.Minute} {
		t.Run(skew.String(), func(t *testing.T) {
			srv := &sigV4Server{skew: skew}
			hs := httptest.NewServer(srv)
			t.Cleanup(hs.Close)
			tr := &http.Transport{}
			t.Cleanup(tr.CloseIdleConnections)
			c := newClient(t, newSageMaker(t, hs.URL, &http.Client{Transport: tr}))
			b := sagemakerBackend()

			resp, err := c.Invoke(context.Background(), b.request(false))
			require.NoError(t, err)
			log := srv.log()
			require.Len(t, log, 2, "one retry after correcting")
			assert.Equal(t, "expired", log[0].verdict)
			assert.Equal(t, "ok", log[1].verdict)
			assert.InDelta(t, skew.Seconds(), log[1].signedAt.Sub(log[0].signedAt).Seconds(), 30,
				"the retry is signed on the server's clock")
			require.Len(t, resp.Errors, 1)
			assert.Equal(t, errcodes.Unauthenticated, resp.Errors[0].Code)

			// The correction stays: the next call needs no retry.
			_, err = c.Invoke(context.Background(), b.request(false))
			require.NoError(t, err)
			assert.Len(t, srv.log(), 3)
			// Streams share the client and its correction.
			s, err := c.Stream(context.Background(), b.request(true), func(o *cloudreq.CallOptions) { o.Retry.MaxAttempts = 1 })
			if err == nil {
				_ = s.Close()
			}
			require.Len(t, srv.log(), 4)
			assert.Equal(t, "ok", srv.log()[3].verdict)
		})
	}
}

// TestSigV4SignatureErrorsNotRetried: a signature the server rejects for
// another reason than the clock (the server's clock agrees) is a final
// ERR_UNAUTHENTICATED after one attempt; and when the clock is off but the
// signature is wrong anyway, the skew retry happens once and no more.
func TestSigV4SignatureErrorsNotRetried(t *testing.T) {
	for _, c := range []struct {
		name     string
		skew     time.Duration
		attempts int
	}{
		{"clock-agrees", 0, 1},
		{"clock-off-and-bad-signature", 10 * time.Minute, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := &sigV4Server{skew: c.skew, badSignature: true}
			hs := httptest.NewServer(srv)
			t.Cleanup(hs.Close)
			tr := &http.Transport{}
			t.Cleanup(tr.CloseIdleConnections)
			cl := newClient(t, newSageMaker(t, hs.URL, &http.Client{Transport: tr}), func(o *cloudreq.Options) { o.Retry.MaxAttempts = 5 })
			_, err := cl.Invoke(context.Background(), sagemakerBackend().request(false))
			var e *errcodes.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, errcodes.Unauthenticated, e.Code)
			assert.False(t, e.Retryable)
			assert.Len(t, srv.log(), c.attempts)
		})
	}
}
