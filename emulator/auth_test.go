package emulator

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVerifySigV4 signs requests as a client would and checks what the
// emulator accepts: the body must be the one signed, the signing name
// sagemaker's, the key and secret the endpoint's.
func TestVerifySigV4(t *testing.T) {
	const akid, secret = "AKIDGOOD", "good-secret"
	// The same length, so that a signed Content-Length does not tell them apart.
	signed, other := []byte(`{"inputs":"hi"}`), []byte(`{"inputs":"ho"}`)
	hashOf := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	sign := func(t *testing.T, body []byte, payloadHash, service string, header bool) *http.Request {
		r, err := http.NewRequestWithContext(context.Background(), http.MethodPost,
			"http://127.0.0.1:1/endpoints/ep/invocations", bytes.NewReader(body))
		require.NoError(t, err)
		if header {
			r.Header.Set("X-Amz-Content-Sha256", payloadHash)
		}
		creds := aws.Credentials{AccessKeyID: akid, SecretAccessKey: secret}
		require.NoError(t, v4.NewSigner().SignHTTP(context.Background(), creds, r, payloadHash, service, "us-east-1", time.Now()))
		return r
	}
	tests := []struct {
		name string
		req  *http.Request
		body []byte
		want bool
	}{
		{"signed body", sign(t, signed, hashOf(signed), "sagemaker", false), signed, true},
		{"signed body, hash header", sign(t, signed, hashOf(signed), "sagemaker", true), signed, true},
		{"unsigned payload", sign(t, signed, "UNSIGNED-PAYLOAD", "sagemaker", true), signed, true},
		{"body changed after signing", sign(t, signed, hashOf(signed), "sagemaker", false), other, false},
		{"body changed, signed hash in header", sign(t, signed, hashOf(signed), "sagemaker", true), other, false},
		{"another service's signing name", sign(t, signed, hashOf(signed), "s3", false), signed, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, verifySigV4(tt.req, tt.body, akid, secret))
		})
	}
	assert.False(t, verifySigV4(sign(t, signed, hashOf(signed), "sagemaker", false), signed, akid, "other-secret"), "wrong secret")

	// A hash header added after signing is not signed, but must still
	// match the body.
	r := sign(t, signed, hashOf(signed), "sagemaker", false)
	r.Header.Set("X-Amz-Content-Sha256", hashOf(signed))
	assert.True(t, verifySigV4(r, signed, akid, secret), "unsigned hash header of the body")
	assert.False(t, verifySigV4(r, other, akid, secret), "unsigned hash header of another body")
}
