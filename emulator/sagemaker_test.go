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
	// Each accepted request runs (sagemaker_async_test.go): the one whose
	// input object does not exist fails.
	require.Eventually(t, func() bool {
		_, ok := s.S3Object("cloudinfer-emulator", "async-failures/"+ep.Name+"/inf-1-error.out")
		return ok
	}, 5*time.Second, 5*time.Millisecond)
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

// sageMakerPost sends one raw InvokeEndpoint (or stream) request with the
// given extra headers and returns the answer, its body read.
func sageMakerPost(t *testing.T, s *Server, endpoint, op string, h map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL()+"/endpoints/"+endpoint+"/"+op, strings.NewReader(tgiSample))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

func TestSageMakerContainerBackpressure(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 1})
	for _, tc := range []struct {
		fault     Fault
		status    int
		errorCode string
		original  string
	}{
		{FaultModelOverloaded, 429, "CLIENT_ERROR_FROM_MODEL", `{"error":"Model is overloaded","error_type":"overloaded"}`},
		{FaultModelUnavailable, 503, "SERVER_ERROR_FROM_MODEL", `"type":"ServiceUnavailableException"`},
	} {
		t.Run(string(tc.fault), func(t *testing.T) {
			resp, b := sageMakerPost(t, s, "llama-3-8b", "invocations", map[string]string{HeaderInject: string(tc.fault)})
			assert.Equal(t, 424, resp.StatusCode)
			assert.True(t, strings.HasPrefix(resp.Header.Get("X-Amzn-ErrorType"), "ModelError:"), resp.Header.Get("X-Amzn-ErrorType"))
			assert.NotEmpty(t, resp.Header.Get("x-amzn-RequestId"))
			var body struct {
				ErrorCode          string
				LogStreamArn       string
				Message            string
				OriginalMessage    string
				OriginalStatusCode int
			}
			require.NoError(t, json.Unmarshal(b, &body), "%s", b)
			assert.Equal(t, tc.status, body.OriginalStatusCode)
			assert.Equal(t, tc.errorCode, body.ErrorCode)
			assert.Contains(t, body.OriginalMessage, tc.original)
			assert.Contains(t, body.LogStreamArn, "/aws/sagemaker/Endpoints/llama-3-8b")
			assert.Contains(t, body.Message, "("+itoa(int64(tc.status))+") from primary")
		})
	}
	t.Run("sdk", func(t *testing.T) {
		c := sageMakerClient(s, "AKIDEXAMPLE", "secret")
		_, err := c.InvokeEndpoint(context.Background(), &sagemakerruntime.InvokeEndpointInput{
			EndpointName: aws.String("llama-3-8b"), ContentType: aws.String("application/json"), Body: []byte(tgiSample),
		}, inject(FaultModelOverloaded))
		var e *types.ModelError
		require.True(t, errors.As(err, &e), "%T %v", err, err)
		assert.Equal(t, int32(429), aws.ToInt32(e.OriginalStatusCode))
	})
}

func TestSageMakerGatewayOverflow(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 1})
	resp, b := sageMakerPost(t, s, "llama-3-8b", "invocations", map[string]string{HeaderInject: string(FaultGatewayOverflow)})
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Empty(t, resp.Header.Get("X-Amzn-ErrorType"), "a proxy's answer, not the service's")
	assert.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain"), resp.Header.Get("Content-Type"))
	assert.Equal(t, "upstream connect error or disconnect/reset before headers. reset reason: overflow", string(b))
}

func TestSageMakerStreamErrorFirst(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 1})
	c := sageMakerClient(s, "AKIDEXAMPLE", "secret")
	out, err := c.InvokeEndpointWithResponseStream(context.Background(), &sagemakerruntime.InvokeEndpointWithResponseStreamInput{
		EndpointName: aws.String("llama-3-8b"), ContentType: aws.String("application/json"),
		Body: []byte(`{"inputs":"hello","parameters":{"max_new_tokens":40},"stream":true}`),
	}, inject(FaultStreamErrorFirst))
	require.NoError(t, err, "the stream opens (200)")
	st := out.GetStream()
	n := 0
	for range st.Events() {
		n++
	}
	st.Close()
	assert.Zero(t, n, "no part before the exception")
	var mse *types.ModelStreamError
	require.True(t, errors.As(st.Err(), &mse), "%T %v", st.Err(), st.Err())
	assert.Equal(t, "ModelInvocationTimeExceeded", aws.ToString(mse.ErrorCode_))
}

// SageMaker Runtime documents no retry-after header: its throttling
// answers carry none.
func TestSageMakerThrottleHasNoRetryAfter(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 1})
	for _, f := range []Fault{FaultThrottle, FaultQueueFull, FaultModelNotReady} {
		resp, _ := sageMakerPost(t, s, "llama-3-8b", "invocations", map[string]string{HeaderInject: string(f)})
		require.GreaterOrEqual(t, resp.StatusCode, 400, f)
		for _, h := range []string{"Retry-After", "retry-after-ms", "x-ms-retry-after-ms", "x-amz-retry-after"} {
			assert.Empty(t, resp.Header.Get(h), "%s: %s", f, h)
		}
	}
}

func TestSageMakerTargets(t *testing.T) {
	plain := Endpoint{Name: "plain", Profile: DefaultEndpoints()[0].Profile}
	multi := Endpoint{Name: "mme", Profile: plain.Profile,
		SageMaker: SageMakerEndpoint{Variants: []string{"blue", "green"}, MultiModel: true}}
	ic := Endpoint{Name: "ic", Profile: plain.Profile,
		SageMaker: SageMakerEndpoint{InferenceComponents: []string{"ic-llama"}}}
	s := start(t, Options{TimeScale: 0.001, Seed: 1, Endpoints: []Endpoint{plain, multi, ic}})
	const (
		variant   = "X-Amzn-SageMaker-Target-Variant"
		model     = "X-Amzn-SageMaker-Target-Model"
		component = "X-Amzn-SageMaker-Inference-Component"
	)
	for _, tc := range []struct {
		name, endpoint, op string
		h                  map[string]string
		status             int
		message            string // the error's message, or the invoked variant
	}{
		{"plain endpoint", "plain", "invocations", nil, 200, "AllTraffic"},
		{"plain endpoint, its variant", "plain", "invocations", map[string]string{variant: "AllTraffic"}, 200, "AllTraffic"},
		{"unknown variant", "plain", "invocations", map[string]string{variant: "blue"}, 400, "variant blue"},
		{"unknown variant, stream", "plain", "invocations-response-stream", map[string]string{variant: "blue"}, 400, "variant blue"},
		{"target model on a plain endpoint", "plain", "invocations", map[string]string{model: "m.tar.gz"},
			400, "Endpoint plain is not a multi-model endpoint and does not support target model header."},
		{"inference component on a plain endpoint", "plain", "invocations", map[string]string{component: "ic-llama"},
			400, "Inference Component Name header is not allowed for endpoints to which you dont plan to deploy inference components."},
		{"multi-model endpoint", "mme", "invocations", map[string]string{model: "m.tar.gz"}, 200, "blue"},
		{"multi-model endpoint, a variant", "mme", "invocations", map[string]string{model: "m.tar.gz", variant: "green"}, 200, "green"},
		{"inference component", "ic", "invocations", map[string]string{component: "ic-llama"}, 200, "AllTraffic"},
		{"inference component missing", "ic", "invocations", nil,
			400, "Inference Component Name header is required for endpoints to which you plan to deploy inference components."},
		{"unknown inference component", "ic", "invocations", map[string]string{component: "ic-other"}, 400, "ic-other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			for k, v := range tc.h {
				h[k] = v
			}
			if tc.op == "invocations-response-stream" {
				h["Accept"] = "application/vnd.amazon.eventstream"
			}
			resp, b := sageMakerPost(t, s, tc.endpoint, tc.op, h)
			require.Equal(t, tc.status, resp.StatusCode, "%s", b)
			if tc.status == 200 {
				assert.Equal(t, tc.message, resp.Header.Get("X-Amzn-Invoked-Production-Variant"))
				return
			}
			assert.True(t, strings.HasPrefix(resp.Header.Get("X-Amzn-ErrorType"), "ValidationError:"), resp.Header.Get("X-Amzn-ErrorType"))
			assert.Contains(t, string(b), tc.message)
		})
	}
	t.Run("sdk", func(t *testing.T) {
		c := sageMakerClient(s, "AKIDEXAMPLE", "secret")
		_, err := c.InvokeEndpoint(context.Background(), &sagemakerruntime.InvokeEndpointInput{
			EndpointName: aws.String("plain"), ContentType: aws.String("application/json"), Body: []byte(tgiSample),
			TargetModel: aws.String("m.tar.gz"),
		})
		var e *types.ValidationError
		require.True(t, errors.As(err, &e), "%T %v", err, err)
		assert.Equal(t, "Endpoint plain is not a multi-model endpoint and does not support target model header.", e.ErrorMessage())
	})
}

func TestSageMakerEndpointValidate(t *testing.T) {
	base := Endpoint{Name: "e", Profile: DefaultEndpoints()[0].Profile}
	for _, sm := range []SageMakerEndpoint{
		{Variants: []string{""}},
		{Variants: []string{"a", "a"}},
		{Variants: []string{"a/b"}},
		{InferenceComponents: []string{""}},
		{InferenceComponents: []string{"x", "x"}},
	} {
		e := base
		e.SageMaker = sm
		assert.Error(t, e.Validate(), "%+v", sm)
	}
	e := base
	e.SageMaker = SageMakerEndpoint{Variants: []string{"blue"}, MultiModel: true, InferenceComponents: []string{"ic-1"}}
	assert.NoError(t, e.Validate())
}

func TestSageMakerEndpointConfig(t *testing.T) {
	opts, err := ParseConfig([]byte(`
endpoints:
  - name: mme
    providers: [sagemaker]
    sagemaker:
      variants: [blue, green]
      multi_model: true
  - name: ic
    sagemaker: {inference_components: [ic-1]}
`))
	require.NoError(t, err)
	require.Len(t, opts.Endpoints, 2)
	assert.Equal(t, SageMakerEndpoint{Variants: []string{"blue", "green"}, MultiModel: true}, opts.Endpoints[0].SageMaker)
	assert.Equal(t, SageMakerEndpoint{InferenceComponents: []string{"ic-1"}}, opts.Endpoints[1].SageMaker)

	_, err = ParseConfig([]byte("endpoints:\n  - name: e\n    sagemaker: {variants: [a, a]}\n"))
	assert.ErrorContains(t, err, "listed twice")
	_, err = ParseConfig([]byte("endpoints:\n  - name: e\n    sagemaker: {colour: red}\n"))
	assert.ErrorContains(t, err, "colour")
}
