package sagemaker

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Bearer tokens of SageMaker AI's OpenAI-compatible route.
const (
	// BearerTokenPrefix starts every SageMaker AI bearer token.
	BearerTokenPrefix = "sagemaker-api-key-"
	// MaxBearerTokenLifetime is the longest a bearer token is valid: 12
	// hours, AWS's limit (and the default lifetime).
	MaxBearerTokenLifetime = 12 * time.Hour
	// bearerTokenHost, bearerTokenService and bearerTokenAction are what
	// the token presigns: POST https://sagemaker.amazonaws.com/?Action=CallWithBearerToken,
	// signing name sagemaker, in the endpoint's region.
	bearerTokenHost    = "sagemaker.amazonaws.com"
	bearerTokenService = "sagemaker"
	bearerTokenAction  = "CallWithBearerToken"
	// bearerTokenVersion is appended to the presigned URL before encoding.
	bearerTokenVersion = "&Version=1"
	// unsignedPayload is the payload hash of a presigned request.
	unsignedPayload = "UNSIGNED-PAYLOAD"
)

// BearerToken is a bearer token and the time it stops being valid.
type BearerToken struct {
	// Value is the token, sent as "Authorization: Bearer <Value>". It is a
	// secret: it grants the signer's sagemaker:InvokeEndpoint until Expires.
	Value string
	// Expires is when the token stops being accepted (zero: unknown).
	Expires time.Time
}

// BearerTokenSource gives the bearer tokens of the OpenAI-compatible route.
// Implementations must be safe for concurrent use and should cache: it is
// asked once per request attempt.
type BearerTokenSource interface {
	BearerToken(ctx context.Context) (BearerToken, error)
}

// MintBearerToken makes a SageMaker AI bearer token from AWS credentials,
// as the SageMaker Python SDK's token generator does: a SigV4 presigned
// POST https://sagemaker.amazonaws.com/?Action=CallWithBearerToken (signing
// name "sagemaker", the region given, X-Amz-Expires the lifetime),
// without its "https://", followed by "&Version=1", base64-encoded and
// prefixed with BearerTokenPrefix. No request is made: the token is the
// signature. lifetime is capped at MaxBearerTokenLifetime (0: that
// maximum) and at the credentials' own expiry, which the token cannot
// outlive. The caller needs sagemaker:CallWithBearerToken and
// sagemaker:InvokeEndpoint for the token to be accepted.
func MintBearerToken(ctx context.Context, creds aws.Credentials, region string, lifetime time.Duration, now time.Time) (BearerToken, error) {
	if creds.AccessKeyID == "" || creds.SecretAccessKey == "" {
		return BearerToken{}, errors.New("the AWS credentials have no access key")
	}
	if !validRegion(region) {
		return BearerToken{}, errors.New("a bearer token needs an AWS region, got " + strconv.Quote(region))
	}
	if lifetime <= 0 || lifetime > MaxBearerTokenLifetime {
		lifetime = MaxBearerTokenLifetime
	}
	if creds.CanExpire {
		left := creds.Expires.Sub(now).Truncate(time.Second)
		if left < time.Second {
			return BearerToken{}, errors.New("the AWS credentials have expired")
		}
		lifetime = min(lifetime, left)
	}
	secs := int64(lifetime / time.Second)
	if secs < 1 {
		secs = 1
	}
	q := url.Values{"Action": {bearerTokenAction}, "X-Amz-Expires": {strconv.FormatInt(secs, 10)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+bearerTokenHost+"/?"+q.Encode(), nil)
	if err != nil {
		return BearerToken{}, err
	}
	signed, _, err := v4.NewSigner().PresignHTTP(ctx, creds, req, unsignedPayload, bearerTokenService, region, now.UTC())
	if err != nil {
		return BearerToken{}, err
	}
	raw := strings.TrimPrefix(signed, "https://") + bearerTokenVersion
	return BearerToken{
		Value:   BearerTokenPrefix + base64.StdEncoding.EncodeToString([]byte(raw)),
		Expires: now.Add(time.Duration(secs) * time.Second),
	}, nil
}

// PresignedTokens is a BearerTokenSource that mints tokens with
// MintBearerToken from an AWS credentials provider, keeps the current one,
// and mints the next before it expires: once less than a fifth of its
// lifetime (at most 15 minutes, at least 10 seconds) is left, or at once
// after Invalidate. Concurrent callers wait for one mint. Tokens are never
// logged; an error names no credential.
type PresignedTokens struct {
	creds    aws.CredentialsProvider
	region   string
	lifetime time.Duration
	now      func() time.Time

	mu     sync.Mutex
	cur    BearerToken
	issued time.Time
}

// NewPresignedTokens returns a PresignedTokens minting tokens of the given
// lifetime (0 or more than MaxBearerTokenLifetime: the maximum) for region
// from creds, which it wraps in an aws.CredentialsCache unless it is one.
func NewPresignedTokens(creds aws.CredentialsProvider, region string, lifetime time.Duration) (*PresignedTokens, error) {
	if creds == nil {
		return nil, invalidf("sagemaker: bearer tokens need an AWS credentials provider")
	}
	if !validRegion(region) {
		return nil, invalidf("sagemaker: bearer tokens need an AWS region, got %q", region)
	}
	if lifetime <= 0 || lifetime > MaxBearerTokenLifetime {
		lifetime = MaxBearerTokenLifetime
	}
	return &PresignedTokens{creds: cached(creds), region: region, lifetime: lifetime, now: time.Now}, nil
}

// refreshAhead is how long before expiry a token of life d is replaced.
func refreshAhead(d time.Duration) time.Duration {
	return min(max(d/5, 10*time.Second), 15*time.Minute)
}

// BearerToken implements BearerTokenSource.
func (p *PresignedTokens) BearerToken(ctx context.Context) (BearerToken, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if p.cur.Value != "" && now.Before(p.cur.Expires.Add(-refreshAhead(p.cur.Expires.Sub(p.issued)))) {
		return p.cur, nil
	}
	creds, err := p.creds.Retrieve(ctx)
	if err != nil {
		var ce *credentialsError
		if !errors.As(err, &ce) {
			err = &credentialsError{err: err}
		}
		return BearerToken{}, err
	}
	tok, err := MintBearerToken(ctx, creds, p.region, p.lifetime, now)
	if err != nil {
		return BearerToken{}, &tokenMintError{err: err}
	}
	p.cur, p.issued = tok, now
	return tok, nil
}

// Invalidate drops the current token, so that the next call mints one
// (after the route refused it: credentials rotated, a permission changed).
func (p *PresignedTokens) Invalidate() {
	p.mu.Lock()
	p.cur = BearerToken{}
	p.mu.Unlock()
}

// Credentials returns the current token, for redaction.
func (p *PresignedTokens) credentials() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur.Value == "" {
		return nil
	}
	return []string{p.cur.Value}
}

// StaticBearerToken is a BearerTokenSource of one token minted elsewhere
// (the Python SDK's generate_token, a secrets store). It is sent until
// Expires, then refused before any request with ERR_UNAUTHENTICATED.
type StaticBearerToken BearerToken

// BearerToken implements BearerTokenSource.
func (s StaticBearerToken) BearerToken(context.Context) (BearerToken, error) {
	if s.Value == "" {
		return BearerToken{}, &tokenMintError{err: errors.New("the static bearer token is empty")}
	}
	if !s.Expires.IsZero() && !time.Now().Before(s.Expires) {
		return BearerToken{}, &tokenMintError{err: errors.New("the static bearer token expired at " + s.Expires.UTC().Format(time.RFC3339))}
	}
	return BearerToken(s), nil
}

// tokenMintError is a failure to make a bearer token.
type tokenMintError struct{ err error }

func (e *tokenMintError) Error() string { return "making a SageMaker bearer token: " + e.err.Error() }
func (e *tokenMintError) Unwrap() error { return e.err }

// validRegion reports whether r looks like an AWS region ("us-east-1",
// "cn-north-1", "us-gov-west-1", "eusc-de-east-1").
func validRegion(r string) bool {
	parts := strings.Split(r, "-")
	if len(parts) < 3 {
		return false
	}
	for i, p := range parts {
		if p == "" {
			return false
		}
		for _, c := range p {
			digit := c >= '0' && c <= '9'
			if (i == len(parts)-1 && !digit) || (i < len(parts)-1 && (c < 'a' || c > 'z')) {
				return false
			}
		}
	}
	return true
}
