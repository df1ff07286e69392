package sagemaker

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

const (
	testAKID   = "AKIDOPENAIROUTE01"
	testSecret = "openai-route-secret-key"
)

// countingCreds gives static credentials, counting Retrieve calls.
type countingCreds struct {
	n       atomic.Int32
	secret  string
	expires time.Time
}

func (c *countingCreds) Retrieve(context.Context) (aws.Credentials, error) {
	c.n.Add(1)
	return aws.Credentials{AccessKeyID: testAKID, SecretAccessKey: c.secret, SessionToken: "session-token-value",
		CanExpire: !c.expires.IsZero(), Expires: c.expires}, nil
}

// openAIEmulator serves endpoints signed for with testAKID/testSecret;
// "ic-endpoint" hosts inference components ic-a and ic-b.
func openAIEmulator(t *testing.T) *emulator.Server {
	t.Helper()
	eps := emulator.DefaultEndpoints()
	ic := eps[0]
	ic.Name = "ic-endpoint"
	ic.SageMaker.InferenceComponents = []string{"ic-a", "ic-b"}
	eps = append(eps, ic)
	for i := range eps {
		eps[i].Credentials.AWSAccessKeyID, eps[i].Credentials.AWSSecretAccessKey = testAKID, testSecret
	}
	srv, err := emulator.New(emulator.Options{TimeScale: 0.01, Seed: 9, Endpoints: eps})
	require.NoError(t, err)
	require.NoError(t, srv.Start("127.0.0.1:0", ""))
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func openAIGenReq(endpoint string) *cloudreq.CloudRequest {
	return &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderAWS, Service: ServiceOpenAI, Action: cloudreq.ActionGenerate,
		Target:   cloudreq.Target{Endpoint: endpoint},
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "Say hello."}}, MaxTokens: 8},
	}
}

// decodeToken returns a token's presigned URL, checking its framing.
func decodeToken(t *testing.T, tok string) *url.URL {
	t.Helper()
	enc, ok := strings.CutPrefix(tok, BearerTokenPrefix)
	require.True(t, ok, "prefix")
	raw, err := base64.StdEncoding.DecodeString(enc)
	require.NoError(t, err)
	s, ok := strings.CutSuffix(string(raw), "&Version=1")
	require.True(t, ok, "the URL ends with &Version=1: %s", raw)
	require.True(t, strings.HasPrefix(s, "sagemaker.amazonaws.com/?"), s)
	u, err := url.Parse("https://" + s)
	require.NoError(t, err)
	return u
}

// TestMintBearerToken: the token is the Python SDK's: a presigned
// CallWithBearerToken URL for service sagemaker in the region, with the
// session token, its lifetime capped at 12 hours and at the credentials'.
func TestMintBearerToken(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 5, 21, 10, 0, 0, 0, time.UTC)
	creds := aws.Credentials{AccessKeyID: testAKID, SecretAccessKey: testSecret, SessionToken: "sess"}
	tok, err := MintBearerToken(ctx, creds, "eu-west-1", 0, now)
	require.NoError(t, err)
	assert.Equal(t, now.Add(12*time.Hour), tok.Expires)
	q := decodeToken(t, tok.Value).Query()
	assert.Equal(t, "CallWithBearerToken", q.Get("Action"))
	assert.Equal(t, "AWS4-HMAC-SHA256", q.Get("X-Amz-Algorithm"))
	assert.Equal(t, testAKID+"/20260521/eu-west-1/sagemaker/aws4_request", q.Get("X-Amz-Credential"))
	assert.Equal(t, "20260521T100000Z", q.Get("X-Amz-Date"))
	assert.Equal(t, "43200", q.Get("X-Amz-Expires"))
	assert.Equal(t, "host", q.Get("X-Amz-SignedHeaders"))
	assert.Equal(t, "sess", q.Get("X-Amz-Security-Token"))
	assert.Len(t, q.Get("X-Amz-Signature"), 64)
	assert.NotContains(t, tok.Value, testSecret)

	again, err := MintBearerToken(ctx, creds, "eu-west-1", 0, now)
	require.NoError(t, err)
	assert.Equal(t, tok.Value, again.Value, "deterministic for one time")
	other, err := MintBearerToken(ctx, aws.Credentials{AccessKeyID: testAKID, SecretAccessKey: "another"}, "eu-west-1", 0, now)
	require.NoError(t, err)
	assert.NotEqual(t, decodeToken(t, tok.Value).Query().Get("X-Amz-Signature"), decodeToken(t, other.Value).Query().Get("X-Amz-Signature"))

	creds.CanExpire, creds.Expires = true, now.Add(30*time.Minute)
	short, err := MintBearerToken(ctx, creds, "eu-west-1", 2*time.Hour, now)
	require.NoError(t, err)
	assert.Equal(t, "1800", decodeToken(t, short.Value).Query().Get("X-Amz-Expires"), "capped at the credentials' expiry")
	long, err := MintBearerToken(ctx, aws.Credentials{AccessKeyID: "a", SecretAccessKey: "b"}, "us-east-1", 48*time.Hour, now)
	require.NoError(t, err)
	assert.Equal(t, "43200", decodeToken(t, long.Value).Query().Get("X-Amz-Expires"))

	creds.Expires = now.Add(-time.Minute)
	_, err = MintBearerToken(ctx, creds, "eu-west-1", 0, now)
	assert.ErrorContains(t, err, "expired")
	_, err = MintBearerToken(ctx, aws.Credentials{}, "eu-west-1", 0, now)
	assert.Error(t, err)
	_, err = MintBearerToken(ctx, aws.Credentials{AccessKeyID: "a", SecretAccessKey: "b"}, "nowhere", 0, now)
	assert.Error(t, err)
}

// TestPresignedTokensRefresh: a token is reused until a fifth of its life
// is left, then replaced; Invalidate replaces it at once.
func TestPresignedTokensRefresh(t *testing.T) {
	creds := &countingCreds{secret: testSecret}
	p, err := NewPresignedTokens(creds, "us-east-1", time.Hour)
	require.NoError(t, err)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p.now = func() time.Time { return now }
	ctx := context.Background()
	first, err := p.BearerToken(ctx)
	require.NoError(t, err)
	assert.Equal(t, now.Add(time.Hour), first.Expires)
	now = now.Add(47 * time.Minute)
	same, err := p.BearerToken(ctx)
	require.NoError(t, err)
	assert.Equal(t, first.Value, same.Value, "47 of 60 minutes: kept")
	now = now.Add(2 * time.Minute)
	next, err := p.BearerToken(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, first.Value, next.Value, "49 of 60 minutes: renewed before expiry")
	assert.Equal(t, now.Add(time.Hour), next.Expires)
	p.Invalidate()
	after, err := p.BearerToken(ctx)
	require.NoError(t, err)
	assert.Equal(t, now.Add(time.Hour), after.Expires)
	assert.Equal(t, []string{after.Value}, p.credentials())

	_, err = NewPresignedTokens(nil, "us-east-1", 0)
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
	_, err = NewPresignedTokens(creds, "", 0)
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
}

// TestOpenAIConformance: generate, a stream and a raw invoke through the
// emulator's OpenAI-compatible route, the emulator checking each minted
// token's signature; an inference component in the path; a missing
// endpoint or component is ERR_NOT_FOUND; a token signed with another
// secret, and an expired static token, ERR_UNAUTHENTICATED; a token is
// minted once for several calls.
func TestOpenAIConformance(t *testing.T) {
	srv := openAIEmulator(t)
	creds := &countingCreds{secret: testSecret}
	ad, err := NewOpenAI(context.Background(), OpenAIOptions{Region: "us-east-1", BaseURL: srv.URL(), Credentials: creds, AllowInsecureHTTP: true})
	require.NoError(t, err)
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}}, func(o *cloudreq.Options) { o.Retry.MaxAttempts = 1 })
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	resp, err := c.Invoke(ctx, openAIGenReq("llama-3-8b"))
	require.NoError(t, err)
	assert.NotEmpty(t, resp.Text)
	assert.Equal(t, 8, resp.Usage.OutputTokens)

	s, err := c.Stream(ctx, openAIGenReq("llama-3-8b"))
	require.NoError(t, err)
	var text strings.Builder
	for s.Next() {
		text.WriteString(s.Chunk().Text)
	}
	require.NoError(t, s.Err())
	_ = s.Close()
	assert.NotEmpty(t, text.String())
	assert.Equal(t, 8, s.Response().Usage.OutputTokens)

	raw := &cloudreq.CloudRequest{Provider: cloudreq.ProviderAWS, Service: ServiceOpenAI, Action: cloudreq.ActionInvoke,
		Target:  cloudreq.Target{Endpoint: "llama-3-8b"},
		Payload: cloudreq.Payload{Body: []byte(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":4}`)}}
	resp, err = c.Invoke(ctx, raw)
	require.NoError(t, err)
	assert.Contains(t, string(resp.Data), `"choices"`)

	icReq := openAIGenReq("ic-endpoint")
	icReq.Attributes.InferenceComponent = "ic-b"
	resp, err = c.Invoke(ctx, icReq)
	require.NoError(t, err)
	assert.NotEmpty(t, resp.Text)
	assert.Equal(t, int32(1), creds.n.Load(), "one token for every call")

	var e *errcodes.Error
	_, err = c.Invoke(ctx, openAIGenReq("no-such-endpoint"))
	require.True(t, errors.As(err, &e), "%v", err)
	assert.Equal(t, errcodes.NotFound, e.Code)
	assert.Equal(t, cloudreq.ProviderAWS, e.Provider)
	assert.Equal(t, 400, e.HTTPStatus)
	icReq.Attributes.InferenceComponent = "ic-z"
	_, err = c.Invoke(ctx, icReq)
	assert.Equal(t, errcodes.NotFound, errcodes.Of(err))
	_, err = c.Invoke(ctx, openAIGenReq("ic-endpoint"))
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err), "a component endpoint needs a component")

	wrongTokens, err := NewPresignedTokens(&countingCreds{secret: "not-the-secret"}, "us-east-1", 0)
	require.NoError(t, err)
	src := &invalidations{PresignedTokens: wrongTokens}
	wrong, err := NewOpenAI(ctx, OpenAIOptions{BaseURL: srv.URL(), TokenSource: src, AllowInsecureHTTP: true})
	require.NoError(t, err)
	wc, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{wrong}}, func(o *cloudreq.Options) { o.Retry.MaxAttempts = 1 })
	require.NoError(t, err)
	t.Cleanup(func() { _ = wc.Close() })
	_, err = wc.Invoke(ctx, openAIGenReq("llama-3-8b"))
	require.True(t, errors.As(err, &e), "%v", err)
	assert.Equal(t, errcodes.Unauthenticated, e.Code)
	assert.False(t, e.Retryable)
	for _, v := range wrong.Credentials() {
		assert.NotContains(t, err.Error(), v, "the token is never quoted")
	}
	assert.Equal(t, int32(1), src.n.Load(), "a refused token is dropped, to be minted again")

	expired, err := NewOpenAI(ctx, OpenAIOptions{BaseURL: srv.URL(), AllowInsecureHTTP: true,
		TokenSource: StaticBearerToken{Value: BearerTokenPrefix + "x", Expires: time.Now().Add(-time.Second)}})
	require.NoError(t, err)
	_, err = expired.Invoke(ctx, &cloudreq.Call{Request: openAIGenReq("llama-3-8b"), Payload: mustEncodeOpenAI(t, expired), Attempt: 1})
	require.True(t, errors.As(err, &e), "%v", err)
	assert.Equal(t, errcodes.Unauthenticated, e.Code)
	assert.Contains(t, e.Message, "expired")
	assert.Equal(t, 0, e.HTTPStatus, "refused before sending")
}

// invalidations counts the Invalidate calls of its PresignedTokens.
type invalidations struct {
	*PresignedTokens
	n atomic.Int32
}

func (i *invalidations) Invalidate() { i.n.Add(1); i.PresignedTokens.Invalidate() }

func mustEncodeOpenAI(t *testing.T, a *OpenAIAdapter) cloudreq.Payload {
	t.Helper()
	p, err := a.Encode(openAIGenReq("llama-3-8b"), false)
	require.NoError(t, err)
	return p
}

// TestOpenAIErrorTable: the emulator's front-end and container faults
// become their codes.
func TestOpenAIErrorTable(t *testing.T) {
	cases := []struct {
		fault emulator.Fault
		code  errcodes.Code
		retry bool
	}{
		{emulator.FaultThrottle, errcodes.Throttled, true},
		{emulator.FaultModelNotReady, errcodes.ModelNotReady, true},
		{emulator.FaultForbidden, errcodes.PermissionDenied, false},
		{emulator.FaultModelError, errcodes.ModelError, false},
		{emulator.FaultUnavailable, errcodes.Unavailable, true},
		{emulator.FaultInvalid, errcodes.InvalidParam, false},
		{emulator.FaultUnauthenticated, errcodes.Unauthenticated, false},
	}
	srv := startEmulator(t)
	ad, err := NewOpenAI(context.Background(), OpenAIOptions{BaseURL: srv.URL(), Anonymous: true})
	require.NoError(t, err)
	for _, tc := range cases {
		t.Run(string(tc.fault), func(t *testing.T) {
			req := openAIGenReq("llama-3-8b")
			req.Header = http.Header{emulator.HeaderInject: {string(tc.fault)}}
			_, err := ad.Invoke(context.Background(), &cloudreq.Call{Request: req, Payload: mustEncodeOpenAI(t, ad), Attempt: 1})
			var e *errcodes.Error
			require.True(t, errors.As(err, &e), "%v", err)
			assert.Equal(t, tc.code, e.Code, e.Message)
			assert.Equal(t, tc.retry, e.Retryable)
			assert.Equal(t, cloudreq.ProviderAWS, e.Provider)
		})
	}
}

// TestOpenAIGoAgainstEmulator: the openai-go SDK, unchanged but for its
// base URL and API key (a minted token), calls the emulator's route, whole
// and streamed; a wrong token is refused with 403.
func TestOpenAIGoAgainstEmulator(t *testing.T) {
	srv := openAIEmulator(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tok, err := MintBearerToken(ctx, aws.Credentials{AccessKeyID: testAKID, SecretAccessKey: testSecret}, "us-east-1", time.Hour, time.Now())
	require.NoError(t, err)
	client := oai.NewClient(option.WithBaseURL(srv.URL()+"/endpoints/llama-3-8b/openai/v1"), option.WithAPIKey(tok.Value), option.WithMaxRetries(0))
	params := oai.ChatCompletionNewParams{
		Messages:  []oai.ChatCompletionMessageParamUnion{oai.UserMessage("Say hello.")},
		MaxTokens: oai.Int(6),
	}
	out, err := client.Chat.Completions.New(ctx, params)
	require.NoError(t, err)
	require.Len(t, out.Choices, 1)
	assert.NotEmpty(t, out.Choices[0].Message.Content)
	assert.Equal(t, int64(6), out.Usage.CompletionTokens)

	params.StreamOptions = oai.ChatCompletionStreamOptionsParam{IncludeUsage: oai.Bool(true)}
	st := client.Chat.Completions.NewStreaming(ctx, params)
	var acc oai.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	require.NoError(t, st.Err())
	assert.NotEmpty(t, acc.Choices[0].Message.Content)
	assert.Equal(t, int64(6), acc.Usage.CompletionTokens)

	bad, err := MintBearerToken(ctx, aws.Credentials{AccessKeyID: testAKID, SecretAccessKey: "wrong"}, "us-east-1", time.Hour, time.Now())
	require.NoError(t, err)
	badClient := oai.NewClient(option.WithBaseURL(srv.URL()+"/endpoints/llama-3-8b/openai/v1"), option.WithAPIKey(bad.Value), option.WithMaxRetries(0))
	_, err = badClient.Chat.Completions.New(ctx, params)
	var apiErr *oai.Error
	require.True(t, errors.As(err, &apiErr), "%v", err)
	assert.Equal(t, 403, apiErr.StatusCode)
}

func TestNewOpenAIOptions(t *testing.T) {
	ctx := context.Background()
	static := credentials.NewStaticCredentialsProvider("a", "b", "")
	_, err := NewOpenAI(ctx, OpenAIOptions{Credentials: static, Region: "moon"})
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
	_, err = NewOpenAI(ctx, OpenAIOptions{BaseURL: "http://127.0.0.1:1", Region: "us-east-1", Credentials: static})
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err), "a token over plain http needs AllowInsecureHTTP")
	a, err := NewOpenAI(ctx, OpenAIOptions{Region: "cn-north-1", Credentials: static})
	require.NoError(t, err)
	assert.Equal(t, ServiceOpenAI, a.Describe().Service)
	assert.Equal(t, "https://runtime.sagemaker.cn-north-1.amazonaws.com.cn", RuntimeURL("cn-north-1"))
	assert.Error(t, a.Validate(&cloudreq.CloudRequest{}))
	assert.Error(t, a.Validate(&cloudreq.CloudRequest{Target: cloudreq.Target{Endpoint: "a/b"}}))
	assert.Error(t, a.Validate(&cloudreq.CloudRequest{Target: cloudreq.Target{Endpoint: "ok"}, Attributes: cloudreq.Attributes{InferenceComponent: "-x"}}))
	assert.NoError(t, a.Validate(&cloudreq.CloudRequest{Target: cloudreq.Target{Endpoint: "my-endpoint-1"}}))
	r := routed(&cloudreq.CloudRequest{Target: cloudreq.Target{Endpoint: "ep", Model: "m"}, Attributes: cloudreq.Attributes{InferenceComponent: "ic"}})
	assert.Equal(t, "/endpoints/ep/inference-components/ic/openai/v1/chat/completions", r.Target.Path)
	assert.Equal(t, "m", r.Target.Model)
}

// TestIntegrationAWSOpenAI calls a real endpoint's OpenAI-compatible route
// with a bearer token minted from the default AWS configuration (which needs
// sagemaker:CallWithBearerToken and sagemaker:InvokeEndpoint). It needs
// CLOUDINFER_IT_AWS=1 and CLOUDINFER_IT_AWS_OPENAI_ENDPOINT (an endpoint
// whose container serves /v1/chat/completions); CLOUDINFER_IT_AWS_OPENAI_COMPONENT
// names an inference component.
func TestIntegrationAWSOpenAI(t *testing.T) {
	endpoint := os.Getenv("CLOUDINFER_IT_AWS_OPENAI_ENDPOINT")
	if os.Getenv("CLOUDINFER_IT_AWS") != "1" || endpoint == "" {
		t.Skip("real-AWS test: set CLOUDINFER_IT_AWS=1 and CLOUDINFER_IT_AWS_OPENAI_ENDPOINT to run it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ad, err := NewOpenAI(ctx, OpenAIOptions{})
	require.NoError(t, err)
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}})
	require.NoError(t, err)
	defer c.Close()
	req := openAIGenReq(endpoint)
	req.Attributes.InferenceComponent = os.Getenv("CLOUDINFER_IT_AWS_OPENAI_COMPONENT")
	resp, err := c.Invoke(ctx, req)
	require.NoError(t, err)
	assert.NotEmpty(t, resp.Text)
	s, err := c.Stream(ctx, req)
	require.NoError(t, err)
	defer s.Close()
	for s.Next() {
	}
	require.NoError(t, s.Err())
}
