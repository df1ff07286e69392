package emulator

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sageMakerClient(s *Server, akid, secret string, fns ...func(*sagemakerruntime.Options)) *sagemakerruntime.Client {
	return sagemakerruntime.New(sagemakerruntime.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(s.URL()),
		Credentials:  credentials.NewStaticCredentialsProvider(akid, secret, ""),
		Retryer:      aws.NopRetryer{},
	}, fns...)
}

// inject adds the X-Emulator-Inject header to one SDK call.
func inject(fault Fault) func(*sagemakerruntime.Options) {
	return func(o *sagemakerruntime.Options) {
		o.APIOptions = append(o.APIOptions, smithyhttp.AddHeaderValue(HeaderInject, string(fault)))
	}
}

const tgiSample = `{"inputs":"What is the latency of a cloud endpoint?","parameters":{"max_new_tokens":64}}`

func TestSageMakerInvokeEndpoint(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 1})
	c := sageMakerClient(s, "AKIDEXAMPLE", "secret")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	out, err := c.InvokeEndpoint(ctx, &sagemakerruntime.InvokeEndpointInput{
		EndpointName: aws.String("llama-3-8b"), ContentType: aws.String("application/json"), Body: []byte(tgiSample),
	})
	require.NoError(t, err)
	var gen []struct {
		GeneratedText string `json:"generated_text"`
	}
	require.NoError(t, json.Unmarshal(out.Body, &gen))
	require.Len(t, gen, 1)
	assert.NotEmpty(t, gen[0].GeneratedText)
	assert.Equal(t, "AllTraffic", aws.ToString(out.InvokedProductionVariant))

	// LMI: OpenAI chat messages.
	out, err = c.InvokeEndpoint(ctx, &sagemakerruntime.InvokeEndpointInput{
		EndpointName: aws.String("phi-3-mini"), ContentType: aws.String("application/json"),
		Body: []byte(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":3}`),
	})
	require.NoError(t, err)
	var chat struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage usage `json:"usage"`
	}
	require.NoError(t, json.Unmarshal(out.Body, &chat))
	assert.Equal(t, 3, chat.Usage.CompletionTokens)
	assert.Equal(t, "length", chat.Choices[0].FinishReason)
}

func TestSageMakerErrorsTyped(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 1})
	c := sageMakerClient(s, "AKIDEXAMPLE", "secret")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	in := func(name, body string) *sagemakerruntime.InvokeEndpointInput {
		return &sagemakerruntime.InvokeEndpointInput{EndpointName: aws.String(name), ContentType: aws.String("application/json"), Body: []byte(body)}
	}
	tests := []struct {
		name  string
		input *sagemakerruntime.InvokeEndpointInput
		fault Fault
		check func(t *testing.T, err error)
	}{
		{"validation", in("llama-3-8b", tgiSample), FaultInvalid, func(t *testing.T, err error) {
			var e *types.ValidationError
			require.True(t, errors.As(err, &e), "%T %v", err, err)
		}},
		{"not found", in("no-such-endpoint", tgiSample), "", func(t *testing.T, err error) {
			var e *types.ValidationError
			require.True(t, errors.As(err, &e), "%T %v", err, err)
			assert.Contains(t, e.ErrorMessage(), "no-such-endpoint of account")
		}},
		{"model not ready", in("llama-3-8b", tgiSample), FaultModelNotReady, func(t *testing.T, err error) {
			var e *types.ModelNotReadyException
			require.True(t, errors.As(err, &e), "%T %v", err, err)
		}},
		{"model error", in("llama-3-8b", tgiSample), FaultModelError, func(t *testing.T, err error) {
			var e *types.ModelError
			require.True(t, errors.As(err, &e), "%T %v", err, err)
			require.NotNil(t, e.OriginalStatusCode)
			assert.Equal(t, int32(500), *e.OriginalStatusCode)
			assert.NotEmpty(t, aws.ToString(e.LogStreamArn))
		}},
		{"invalid body is a model error 422", in("llama-3-8b", `{"prompt":"x"}`), "", func(t *testing.T, err error) {
			var e *types.ModelError
			require.True(t, errors.As(err, &e), "%T %v", err, err)
			require.NotNil(t, e.OriginalStatusCode)
			assert.Equal(t, int32(422), *e.OriginalStatusCode)
		}},
		{"throttling", in("llama-3-8b", tgiSample), FaultThrottle, func(t *testing.T, err error) {
			var e smithy.APIError
			require.True(t, errors.As(err, &e), "%T %v", err, err)
			assert.Equal(t, "ThrottlingException", e.ErrorCode())
		}},
		{"internal", in("llama-3-8b", tgiSample), FaultInternal, func(t *testing.T, err error) {
			var e *types.InternalFailure
			require.True(t, errors.As(err, &e), "%T %v", err, err)
		}},
		{"unavailable", in("llama-3-8b", tgiSample), FaultUnavailable, func(t *testing.T, err error) {
			var e *types.ServiceUnavailable
			require.True(t, errors.As(err, &e), "%T %v", err, err)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []func(*sagemakerruntime.Options)
			if tt.fault != "" {
				opts = append(opts, inject(tt.fault))
			}
			_, err := c.InvokeEndpoint(ctx, tt.input, opts...)
			require.Error(t, err)
			tt.check(t, err)
		})
	}
}

func TestSageMakerResponseStream(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 3})
	c := sageMakerClient(s, "AKIDEXAMPLE", "secret")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	read := func(t *testing.T, fault Fault) (parts [][]byte, err error) {
		var opts []func(*sagemakerruntime.Options)
		if fault != "" {
			opts = append(opts, inject(fault))
		}
		out, err := c.InvokeEndpointWithResponseStream(ctx, &sagemakerruntime.InvokeEndpointWithResponseStreamInput{
			EndpointName: aws.String("qwen2-7b"), ContentType: aws.String("application/json"),
			Body: []byte(`{"inputs":"hello","parameters":{"max_new_tokens":40},"stream":true}`),
		}, opts...)
		require.NoError(t, err)
		st := out.GetStream()
		defer st.Close()
		for ev := range st.Events() {
			p, ok := ev.(*types.ResponseStreamMemberPayloadPart)
			require.True(t, ok, "%T", ev)
			parts = append(parts, p.Value.Bytes)
		}
		return parts, st.Err()
	}

	parts, err := read(t, "")
	require.NoError(t, err)
	require.Len(t, parts, 40)
	var last tgiEvent
	require.NoError(t, json.Unmarshal(parts[len(parts)-1][len("data:"):], &last))
	require.NotNil(t, last.GeneratedText)

	parts, err = read(t, FaultStreamError)
	require.Error(t, err)
	var mse *types.ModelStreamError
	require.True(t, errors.As(err, &mse), "%T %v", err, err)
	assert.Equal(t, "StreamBroken", aws.ToString(mse.ErrorCode_))
	assert.Len(t, parts, 20)

	recs := waitRecords(t, s, 2)
	assert.Equal(t, FaultStreamError, recs[1].Fault)
	assert.Equal(t, 20, recs[1].TokensSent)

	out, err := c.InvokeEndpointWithResponseStream(ctx, &sagemakerruntime.InvokeEndpointWithResponseStreamInput{
		EndpointName: aws.String("qwen2-7b"), ContentType: aws.String("application/json"),
		Body: []byte(`{"inputs":"hello","parameters":{"max_new_tokens":40},"stream":true}`),
	}, inject(FaultStreamError), func(o *sagemakerruntime.Options) {
		o.APIOptions = append(o.APIOptions, smithyhttp.AddHeaderValue(HeaderStreamError, "InternalStreamFailure"))
	})
	require.NoError(t, err)
	st := out.GetStream()
	n := 0
	for range st.Events() {
		n++
	}
	st.Close()
	var isf *types.InternalStreamFailure
	require.True(t, errors.As(st.Err(), &isf), "%T %v", st.Err(), st.Err())
	assert.Equal(t, 20, n, "the parts before the failure arrive")
}

func TestSageMakerSigV4(t *testing.T) {
	ep := DefaultEndpoints()[0]
	ep.Credentials = Credentials{AWSAccessKeyID: "AKIDGOOD", AWSSecretAccessKey: "good-secret"}
	s := start(t, Options{TimeScale: 0.001, Seed: 1, Endpoints: []Endpoint{ep}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	in := &sagemakerruntime.InvokeEndpointInput{EndpointName: aws.String(ep.Name), ContentType: aws.String("application/json"), Body: []byte(tgiSample)}

	_, err := sageMakerClient(s, "AKIDGOOD", "good-secret").InvokeEndpoint(ctx, in)
	require.NoError(t, err)

	for _, creds := range [][2]string{{"AKIDGOOD", "wrong-secret"}, {"AKIDOTHER", "good-secret"}} {
		_, err = sageMakerClient(s, creds[0], creds[1]).InvokeEndpoint(ctx, in)
		var e smithy.APIError
		require.True(t, errors.As(err, &e), "%T %v", err, err)
		assert.Equal(t, "InvalidSignatureException", e.ErrorCode())
		var re *smithyhttp.ResponseError
		require.True(t, errors.As(err, &re))
		assert.Equal(t, 403, re.HTTPStatusCode())
	}
}

// TestSageMakerAsync drives InvokeEndpointAsync through the SDK: exactly
// one of an inline body and an input location, then 202 with the
// inference id and the output and failure locations.
func TestSageMakerAsync(t *testing.T) {
	ep := DefaultEndpoints()[0]
	s := start(t, Options{TimeScale: 0.001, Seed: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := sageMakerClient(s, "AKID", "secret")

	out, err := c.InvokeEndpointAsync(ctx, &sagemakerruntime.InvokeEndpointAsyncInput{EndpointName: aws.String(ep.Name),
		InputLocation: aws.String("s3://bucket/in.json"), InferenceId: aws.String("inf-1")})
	require.NoError(t, err)
	assert.Equal(t, "inf-1", aws.ToString(out.InferenceId))
	assert.Equal(t, "s3://cloudinfer-emulator/async-output/"+ep.Name+"/inf-1.out", aws.ToString(out.OutputLocation))
	assert.Equal(t, "s3://cloudinfer-emulator/async-failures/"+ep.Name+"/inf-1-error.out", aws.ToString(out.FailureLocation))

	out, err = c.InvokeEndpointAsync(ctx, &sagemakerruntime.InvokeEndpointAsyncInput{EndpointName: aws.String(ep.Name),
		Body: []byte(tgiSample), ContentType: aws.String("application/json")})
	require.NoError(t, err)
	assert.NotEmpty(t, aws.ToString(out.InferenceId), "an id is generated when none is given")

	for name, in := range map[string]*sagemakerruntime.InvokeEndpointAsyncInput{
		"neither body nor location": {EndpointName: aws.String(ep.Name)},
		"both":                      {EndpointName: aws.String(ep.Name), Body: []byte(tgiSample), InputLocation: aws.String("s3://b/k")},
		"unknown endpoint":          {EndpointName: aws.String("no-such-endpoint"), InputLocation: aws.String("s3://b/k")},
	} {
		_, err := c.InvokeEndpointAsync(ctx, in)
		var e smithy.APIError
		require.True(t, errors.As(err, &e), "%s: %T %v", name, err, err)
		assert.Equal(t, "ValidationError", e.ErrorCode(), name)
	}
	assert.Empty(t, s.Records(), "async requests are not run")
}

// TestSageMakerAsyncAnswerDelay: InvokeEndpointAsync's 202, like every
// SageMaker answer, comes no sooner than minAnswerDelay after the body was
// read (see minAnswerDelay).
func TestSageMakerAsyncAnswerDelay(t *testing.T) {
	s, err := New(Options{TimeScale: 0.001, Seed: 1})
	require.NoError(t, err)
	body := &readAt{r: strings.NewReader(tgiSample)}
	req := httptest.NewRequest(http.MethodPost, "/endpoints/llama-3-8b/async-invocations", body)
	w := &headerAt{ResponseRecorder: httptest.NewRecorder()}
	s.ServeHTTP(w, req)
	require.Equal(t, http.StatusAccepted, w.Code)
	require.False(t, body.eof.IsZero())
	assert.GreaterOrEqual(t, w.at.Sub(body.eof), minAnswerDelay)
}

// readAt is a request body that notes when it was read to its end.
type readAt struct {
	r   io.Reader
	eof time.Time
}

func (b *readAt) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF && b.eof.IsZero() {
		b.eof = time.Now()
	}
	return n, err
}

// headerAt notes when the response header was written.
type headerAt struct {
	*httptest.ResponseRecorder
	at time.Time
}

func (w *headerAt) WriteHeader(code int) {
	if w.at.IsZero() {
		w.at = time.Now()
	}
	w.ResponseRecorder.WriteHeader(code)
}

// TestSageMakerStatefulSession opens a session with NEW_SESSION, which
// InvokeEndpoint answers with its id and expiry and the response stream
// refuses.
func TestSageMakerStatefulSession(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 1})
	c := sageMakerClient(s, "AKIDEXAMPLE", "secret")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	out, err := c.InvokeEndpoint(ctx, &sagemakerruntime.InvokeEndpointInput{
		EndpointName: aws.String("llama-3-8b"), ContentType: aws.String("application/json"),
		Body: []byte(tgiSample), SessionId: aws.String("NEW_SESSION"),
	})
	require.NoError(t, err)
	id, exp, ok := strings.Cut(aws.ToString(out.NewSessionId), "; Expires=")
	require.True(t, ok, "NewSessionId %q", aws.ToString(out.NewSessionId))
	assert.NotEmpty(t, id)
	at, err := time.Parse(time.RFC3339, exp)
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now().Add(20*time.Minute), at, time.Minute)

	// The session is used as it was given; it opens nothing new.
	out, err = c.InvokeEndpoint(ctx, &sagemakerruntime.InvokeEndpointInput{
		EndpointName: aws.String("llama-3-8b"), ContentType: aws.String("application/json"),
		Body: []byte(tgiSample), SessionId: aws.String(id),
	})
	require.NoError(t, err)
	assert.Nil(t, out.NewSessionId)

	_, err = c.InvokeEndpointWithResponseStream(ctx, &sagemakerruntime.InvokeEndpointWithResponseStreamInput{
		EndpointName: aws.String("llama-3-8b"), ContentType: aws.String("application/json"),
		Body: []byte(tgiSample), SessionId: aws.String("NEW_SESSION"),
	})
	var ve *types.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Contains(t, ve.ErrorMessage(), "stateful session")
}

// TestSageMakerFailedCallOpensNoSession: NEW_SESSION on an InvokeEndpoint
// that fails (throttled, or a model error once the answer was due) gets no
// new session id.
func TestSageMakerFailedCallOpensNoSession(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 1})
	for _, f := range []Fault{FaultThrottle, FaultStreamError} {
		c := sageMakerClient(s, "AKIDEXAMPLE", "secret", inject(f))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := c.InvokeEndpoint(ctx, &sagemakerruntime.InvokeEndpointInput{
			EndpointName: aws.String("llama-3-8b"), ContentType: aws.String("application/json"),
			Body: []byte(tgiSample), SessionId: aws.String("NEW_SESSION"),
		})
		cancel()
		var re *awshttp.ResponseError
		require.ErrorAs(t, err, &re, "fault %s", f)
		assert.GreaterOrEqual(t, re.HTTPStatusCode(), 400, "fault %s", f)
		assert.Empty(t, re.Response.Header.Get(headerNewSessionID), "fault %s", f)
	}
}
