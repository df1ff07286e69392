package emulator

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/providers/sagemaker"
)

func TestSageMakerOpenAIPath(t *testing.T) {
	for p, want := range map[string][2]string{
		"/endpoints/e/openai/v1/chat/completions":                         {"e", ""},
		"/endpoints/e/inference-components/ic/openai/v1/chat/completions": {"e", "ic"},
		"/endpoints/e/invocations":                                        {"", ""},
		"/endpoints//openai/v1/chat/completions":                          {"", ""},
		"/endpoints/e/inference-components//openai/v1/chat/completions":   {"", ""},
		"/endpoints/e/x/ic/openai/v1/chat/completions":                    {"", ""},
		"/v1/chat/completions":                                            {"", ""},
	} {
		name, ic, ok := sageMakerOpenAIPath(p)
		assert.Equal(t, want[0] != "", ok, p)
		assert.Equal(t, want, [2]string{name, ic}, p)
	}
}

// TestVerifySageMakerBearer: the emulator accepts the tokens the SDK
// mints with the endpoint's keys, and refuses another secret, another
// access key, an expired token, one signed for another service, and broken
// framing.
func TestVerifySageMakerBearer(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	creds := aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret", SessionToken: "sess"}
	tok, err := sagemaker.MintBearerToken(ctx, creds, "eu-central-1", time.Hour, now)
	require.NoError(t, err)
	assert.True(t, verifySageMakerBearer(tok.Value, "AKIDTEST", "secret", now))
	assert.True(t, verifySageMakerBearer(tok.Value, "AKIDTEST", "secret", now.Add(59*time.Minute)))
	assert.False(t, verifySageMakerBearer(tok.Value, "AKIDTEST", "secret", now.Add(61*time.Minute)), "expired")
	assert.False(t, verifySageMakerBearer(tok.Value, "AKIDTEST", "other", now), "another secret")
	assert.False(t, verifySageMakerBearer(tok.Value, "AKIDOTHER", "secret", now), "another key")

	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(tok.Value, sageMakerBearerPrefix))
	require.NoError(t, err)
	reencode := func(s string) string { return sageMakerBearerPrefix + base64.StdEncoding.EncodeToString([]byte(s)) }
	assert.False(t, verifySageMakerBearer(reencode(strings.TrimSuffix(string(raw), "&Version=1")), "AKIDTEST", "secret", now), "no version")
	assert.False(t, verifySageMakerBearer(reencode(strings.Replace(string(raw), "%2Fsagemaker%2F", "%2Fbedrock%2F", 1)), "AKIDTEST", "secret", now), "another service")
	assert.False(t, verifySageMakerBearer(reencode(strings.Replace(string(raw), "X-Amz-Expires=3600", "X-Amz-Expires=7200", 1)), "AKIDTEST", "secret", now.Add(90*time.Minute)), "a lifetime changed after signing")
	assert.False(t, verifySageMakerBearer(strings.TrimPrefix(tok.Value, sageMakerBearerPrefix), "AKIDTEST", "secret", now), "no prefix")
	assert.False(t, verifySageMakerBearer(sageMakerBearerPrefix+"!!", "AKIDTEST", "secret", now))
}

// TestSageMakerOpenAIRoute: the route answers chat completions for an
// endpoint with keys only with a valid bearer token, and SigV4 is not
// taken there; the front end's refusals are in the OpenAI envelope.
func TestSageMakerOpenAIRoute(t *testing.T) {
	eps := DefaultEndpoints()
	for i := range eps {
		eps[i].Credentials.AWSAccessKeyID, eps[i].Credentials.AWSSecretAccessKey = "AKIDTEST", "secret"
	}
	s := start(t, Options{TimeScale: 0.001, Seed: 1, Endpoints: eps})
	tok, err := sagemaker.MintBearerToken(context.Background(), aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret"}, "us-east-1", time.Hour, time.Now())
	require.NoError(t, err)
	post := func(path, auth string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, s.URL()+path, strings.NewReader(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":3}`))
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return resp.StatusCode, b.String()
	}
	code, body := post("/endpoints/llama-3-8b/openai/v1/chat/completions", "Bearer "+tok.Value)
	assert.Equal(t, 200, code, body)
	assert.Contains(t, body, `"chat.completion"`)
	code, body = post("/endpoints/llama-3-8b/openai/v1/chat/completions", "")
	assert.Equal(t, 403, code)
	assert.Contains(t, body, `"type":"UnrecognizedClientException"`)
	code, body = post("/endpoints/nope/openai/v1/chat/completions", "Bearer "+tok.Value)
	assert.Equal(t, 400, code)
	assert.Contains(t, body, "Endpoint nope of account 123456789012 not found.")
	code, body = post("/endpoints/llama-3-8b/inference-components/ic/openai/v1/chat/completions", "Bearer "+tok.Value)
	assert.Equal(t, 400, code)
	assert.Contains(t, body, "Inference Component ic of account")
}
