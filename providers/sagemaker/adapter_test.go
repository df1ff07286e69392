package sagemaker

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
)

func TestInvokeSendsTargetAndAttributes(t *testing.T) {
	var got *http.Request
	var gotBody []byte
	ad, _ := testAdapter(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Clone(context.Background())
		gotBody, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/x-out")
		w.Header().Set("X-Amzn-Invoked-Production-Variant", "blue")
		w.Header().Set("X-Amzn-SageMaker-New-Session-Id", "sess-new; Expires=2030-01-01T00:00:00Z")
		w.Header().Set("X-Amzn-SageMaker-Custom-Attributes", "trace=abc")
		w.Header().Set("X-Amzn-RequestId", "req-123")
		w.Header().Set("X-Emulator-Cold-Start", "true")
		_, _ = w.Write([]byte(`{"out":1}`))
	}))
	client := testClient(t, ad)
	resp, err := client.Invoke(context.Background(), &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderAWS, Service: cloudreq.ServiceSageMaker, Action: cloudreq.ActionInvoke,
		Target:  cloudreq.Target{Endpoint: "my-ep", Variant: "blue", Model: "model-a.tar.gz"},
		Payload: cloudreq.Payload{Body: []byte(`{"in":1}`), ContentType: "application/x-in", Accept: "application/x-out"},
		Attributes: cloudreq.Attributes{
			CustomAttributes: "trace=abc", InferenceComponent: "ic-1", SessionID: "NEW_SESSION",
			TargetContainerHostname: "container-2",
		},
		RequestID: "client-req-1",
		Header:    http.Header{"X-Emulator-Inject": {"none"}, "Authorization": {"stolen"}},
	})
	require.NoError(t, err)

	require.NotNil(t, got)
	assert.Equal(t, "/endpoints/my-ep/invocations", got.URL.Path)
	assert.Equal(t, `{"in":1}`, string(gotBody))
	for h, want := range map[string]string{
		"Content-Type":                               "application/x-in",
		"Accept":                                     "application/x-out",
		"X-Amzn-Sagemaker-Target-Variant":            "blue",
		"X-Amzn-Sagemaker-Target-Model":              "model-a.tar.gz",
		"X-Amzn-Sagemaker-Inference-Component":       "ic-1",
		"X-Amzn-Sagemaker-Custom-Attributes":         "trace=abc",
		"X-Amzn-Sagemaker-Session-Id":                "NEW_SESSION",
		"X-Amzn-Sagemaker-Inference-Id":              "client-req-1",
		"X-Amzn-Sagemaker-Target-Container-Hostname": "container-2",
		"X-Emulator-Inject":                          "none",
	} {
		assert.Equal(t, want, got.Header.Get(h), h)
	}
	auth := got.Header.Get("Authorization")
	assert.True(t, strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDTESTTESTTEST/"), auth)
	assert.Contains(t, auth, "/us-east-1/sagemaker/aws4_request")

	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, `{"out":1}`, string(resp.Data))
	assert.Equal(t, "application/x-out", resp.ContentType)
	assert.Equal(t, "req-123", resp.RequestID)
	assert.Equal(t, map[string]string{
		HeaderInvokedVariant:   "blue",
		HeaderNewSessionID:     "sess-new; Expires=2030-01-01T00:00:00Z",
		HeaderCustomAttributes: "trace=abc",
	}, resp.Metadata)
	assert.Equal(t, "true", resp.Header.Get("X-Emulator-Cold-Start"), "the response's headers as received")
	assert.Equal(t, "req-123", resp.Header.Get("X-Amzn-RequestId"))
	assert.Nil(t, resp.ServerStart, "the adapter reads no server's start report")
	assert.NotEqual(t, latency.ReasonServerReported, resp.Start.Reason)
	require.Len(t, resp.Timing.Attempts, 1)
	assert.False(t, resp.Timing.Attempts[0].FirstByte.IsZero(), "httptrace must reach the SDK's transport")
}

func TestInvokeInferenceIDAttributeWins(t *testing.T) {
	var id string
	ad, _ := testAdapter(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id = r.Header.Get("X-Amzn-SageMaker-Inference-Id")
		_, _ = w.Write([]byte(`{}`))
	}))
	call := invokeCall("ep", `{}`)
	call.Request.RequestID = "from-hook"
	call.Request.Attributes.InferenceID = "explicit"
	_, err := ad.Invoke(context.Background(), call)
	require.NoError(t, err)
	assert.Equal(t, "explicit", id)
}

func TestInvokeOneShotReader(t *testing.T) {
	var body string
	ad, _ := testAdapter(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		body = string(b)
		assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
		_, _ = w.Write([]byte(`ok`))
	}))
	call := invokeCall("ep", "")
	call.Payload = cloudreq.Payload{Reader: strings.NewReader(`{"big":true}`)}
	resp, err := ad.Invoke(context.Background(), call)
	require.NoError(t, err)
	assert.Equal(t, `{"big":true}`, body)
	assert.Equal(t, "ok", string(resp.Data))
	assert.Nil(t, resp.ServerStart)
}

func TestSDKRetriesAreOff(t *testing.T) {
	var hits atomic.Int32
	ad, _ := testAdapter(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("X-Amzn-ErrorType", "ServiceUnavailable")
		w.WriteHeader(503)
		_, _ = w.Write([]byte(`{"message":"busy"}`))
	}), func(o *Options) {
		// Even a caller's retry settings must not bring the SDK's back.
		o.ClientOptions = append(o.ClientOptions, func(so *sagemakerruntime.Options) { so.RetryMaxAttempts = 5 })
	})
	_, err := ad.Invoke(context.Background(), invokeCall("ep", `{}`))
	require.Error(t, err)
	assert.Equal(t, errcodes.Unavailable, errcodes.Of(err))
	assert.Equal(t, int32(1), hits.Load())

	// Through the client, attempts are cloudreq's: 3 attempts, 3 requests.
	hits.Store(0)
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}}, func(o *cloudreq.Options) {
		o.Retry.MaxAttempts = 3
		o.Retry.BaseDelay = time.Millisecond
		o.Retry.NoBudget = true
	})
	require.NoError(t, err)
	_, err = c.Invoke(context.Background(), invokeCall("ep", `{}`).Request)
	require.Error(t, err)
	assert.Equal(t, int32(3), hits.Load())
}

func TestGenerateInvokeDialects(t *testing.T) {
	cases := []struct {
		name       string
		dialect    Dialect
		wantBody   string
		response   string
		wantText   string
		wantFinish string
		wantUsage  cloudreq.Usage
	}{
		{
			name: "messages", dialect: DialectMessages,
			wantBody:   `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":8}`,
			response:   `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`,
			wantText:   "Hello there",
			wantFinish: "stop",
			wantUsage:  cloudreq.Usage{InputTokens: 3, OutputTokens: 2, Source: "server"},
		},
		{
			name: "tgi list", dialect: DialectTGI,
			wantBody: `{"inputs":"Hi","parameters":{"max_new_tokens":8,"details":true},"stream":false}`,
			response: `[{"generated_text":"Hello tgi"}]`,
			wantText: "Hello tgi",
		},
		{
			name: "tgi details", dialect: DialectTGI,
			wantBody:   `{"inputs":"Hi","parameters":{"max_new_tokens":8,"details":true},"stream":false}`,
			response:   `{"generated_text":"Hello","details":{"finish_reason":"length","generated_tokens":8,"seed":null}}`,
			wantText:   "Hello",
			wantFinish: "length",
			wantUsage:  cloudreq.Usage{OutputTokens: 8, Source: "server"},
		},
		{
			name: "tgi list with eos", dialect: DialectTGI,
			wantBody:   `{"inputs":"Hi","parameters":{"max_new_tokens":8,"details":true},"stream":false}`,
			response:   `[{"generated_text":"Bye","details":{"finish_reason":"eos_token","generated_tokens":2}}]`,
			wantText:   "Bye",
			wantFinish: "stop",
			wantUsage:  cloudreq.Usage{OutputTokens: 2, Source: "server"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ad, _ := testAdapter(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				assert.JSONEq(t, tc.wantBody, string(b))
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(tc.response))
			}), func(o *Options) { o.Dialect = tc.dialect })
			resp, err := testClient(t, ad).Invoke(context.Background(), &cloudreq.CloudRequest{
				Provider: cloudreq.ProviderAWS, Service: cloudreq.ServiceSageMaker, Action: cloudreq.ActionGenerate,
				Target:   cloudreq.Target{Endpoint: "llm"},
				Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "Hi"}}, MaxTokens: 8},
			})
			require.NoError(t, err)
			assert.Equal(t, tc.wantText, resp.Text)
			assert.Equal(t, tc.wantFinish, resp.FinishReason)
			assert.Equal(t, tc.wantUsage, resp.Usage)
			assert.Equal(t, tc.response, string(resp.Data))
		})
	}
}

func TestGenerateMalformedBody(t *testing.T) {
	ad, _ := testAdapter(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amzn-RequestId", "rid")
		_, _ = w.Write([]byte(`<html>oops</html>`))
	}))
	call, err := genCall("llm", false, ad, "")
	require.NoError(t, err)
	_, err = ad.Invoke(context.Background(), call)
	var e *errcodes.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, errcodes.ModelError, e.Code)
	assert.Equal(t, "rid", e.RequestID)
	assert.False(t, e.Retryable)
}

func TestGenerateInbandErrorBody(t *testing.T) {
	ad, _ := testAdapter(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"error":"Input validation error: max_new_tokens too large","error_type":"validation"}`))
	}))
	call, err := genCall("llm", false, ad, DialectTGI)
	require.NoError(t, err)
	_, err = ad.Invoke(context.Background(), call)
	var ie *inbandError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "validation", ie.Code)
	assert.Equal(t, errcodes.ModelError, errcodes.Of(err))
	var e *errcodes.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "validation", e.ProviderCode, "the model's own error type is the native code")
}

func TestEncode(t *testing.T) {
	temp0, temp7, top1, top9 := 0.0, 0.7, 1.0, 0.9
	msgs := []cloudreq.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}}
	cases := []struct {
		name    string
		dialect Dialect
		stream  bool
		gen     cloudreq.GenerateInput
		want    string
		accept  string
	}{
		{
			name: "messages stream", dialect: DialectMessages, stream: true,
			gen:    cloudreq.GenerateInput{Messages: msgs, MaxTokens: 16, Temperature: &temp7, TopP: &top9, Stop: []string{"\n\n"}},
			want:   `{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}],"max_tokens":16,"temperature":0.7,"top_p":0.9,"stop":["\n\n"],"stream":true,"stream_options":{"include_usage":true}}`,
			accept: "text/event-stream",
		},
		{
			name: "messages defaults", dialect: "", stream: false,
			gen:    cloudreq.GenerateInput{Messages: msgs[1:]},
			want:   `{"messages":[{"role":"user","content":"Hi"}]}`,
			accept: "application/json",
		},
		{
			name: "tgi stream", dialect: DialectTGI, stream: true,
			gen:    cloudreq.GenerateInput{Messages: msgs, MaxTokens: 16, Temperature: &temp7, TopP: &top9, Stop: []string{"</s>"}},
			want:   `{"inputs":"system: Be brief.\nuser: Hi\nassistant:","parameters":{"max_new_tokens":16,"temperature":0.7,"top_p":0.9,"stop":["</s>"],"details":true},"stream":true}`,
			accept: "application/json",
		},
		{
			name: "tgi greedy and full top_p", dialect: DialectTGI,
			gen:    cloudreq.GenerateInput{Messages: msgs[1:], Temperature: &temp0, TopP: &top1},
			want:   `{"inputs":"Hi","parameters":{"do_sample":false,"details":true},"stream":false}`,
			accept: "application/json",
		},
	}
	ad, _ := testAdapter(t, http.NotFoundHandler())
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.gen
			req := &cloudreq.CloudRequest{Target: cloudreq.Target{Endpoint: "e"}, Generate: &g,
				Attributes: cloudreq.Attributes{Dialect: string(tc.dialect)}}
			p, err := ad.Encode(req, tc.stream)
			require.NoError(t, err)
			assert.JSONEq(t, tc.want, string(p.Body))
			assert.Equal(t, "application/json", p.ContentType)
			assert.Equal(t, tc.accept, p.Accept)
		})
	}
}

// TestEncodeOmitStreamUsage: with OmitStreamUsage a messages stream asks
// for no usage chunk.
func TestEncodeOmitStreamUsage(t *testing.T) {
	ad, _ := testAdapter(t, http.NotFoundHandler(), func(o *Options) { o.OmitStreamUsage = true })
	req := &cloudreq.CloudRequest{Target: cloudreq.Target{Endpoint: "e"},
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "Hi"}}}}
	p, err := ad.Encode(req, true)
	require.NoError(t, err)
	assert.JSONEq(t, `{"messages":[{"role":"user","content":"Hi"}],"stream":true}`, string(p.Body))
}

func TestDialectSelection(t *testing.T) {
	ad, _ := testAdapter(t, http.NotFoundHandler(), func(o *Options) {
		o.Dialect = DialectTGI
		o.EndpointDialects = map[string]Dialect{"chat-ep": DialectMessages}
	})
	enc := func(ep string, dialect string) string {
		req := &cloudreq.CloudRequest{Target: cloudreq.Target{Endpoint: ep}, Attributes: cloudreq.Attributes{Dialect: dialect},
			Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "x"}}}}
		p, err := ad.Encode(req, false)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(p.Body, &m))
		if _, ok := m["inputs"]; ok {
			return "tgi"
		}
		return "messages"
	}
	assert.Equal(t, "tgi", enc("other", ""))
	assert.Equal(t, "messages", enc("chat-ep", ""))
	assert.Equal(t, "tgi", enc("chat-ep", string(DialectTGI)))
	assert.Equal(t, "messages", enc("other", string(DialectMessages)))
	// Extra is not read: a key named "dialect" there changes nothing.
	req := &cloudreq.CloudRequest{Target: cloudreq.Target{Endpoint: "other"}, Attributes: cloudreq.Attributes{Extra: map[string]string{"dialect": "messages"}},
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "x"}}}}
	p, err := ad.Encode(req, false)
	require.NoError(t, err)
	assert.Contains(t, string(p.Body), `"inputs"`)

	_, err = ad.Encode(&cloudreq.CloudRequest{Attributes: cloudreq.Attributes{Dialect: "klingon"},
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Content: "x"}}}}, false)
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
	assert.ErrorContains(t, err, `Attributes.Dialect "klingon"`)
	_, err = ad.Encode(&cloudreq.CloudRequest{}, false)
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
}

func TestNewValidation(t *testing.T) {
	creds := credentials.NewStaticCredentialsProvider("AKIDTESTTESTTEST", "secret", "")
	base := Options{Region: "us-east-1", Credentials: creds}
	cases := []struct {
		name string
		fn   func(*Options)
		ok   bool
	}{
		{"plain http refused", func(o *Options) { o.BaseEndpoint = "http://127.0.0.1:1" }, false},
		{"plain http allowed for the emulator", func(o *Options) { o.BaseEndpoint = "http://127.0.0.1:1"; o.AllowInsecureHTTP = true }, true},
		{"https", func(o *Options) { o.BaseEndpoint = "https://runtime.example" }, true},
		{"relative endpoint", func(o *Options) { o.BaseEndpoint = "localhost" }, false},
		{"http from aws.Config", func(o *Options) {
			o.Config = &aws.Config{Region: "us-east-1", Credentials: creds, BaseEndpoint: aws.String("http://127.0.0.1:1")}
		}, false},
		{"bad dialect", func(o *Options) { o.Dialect = "chatml" }, false},
		{"bad endpoint dialect", func(o *Options) { o.EndpointDialects = map[string]Dialect{"e": "x"} }, false},
		{"defaults", func(*Options) {}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ad, err := New(context.Background(), base, tc.fn)
			if tc.ok {
				require.NoError(t, err)
				assert.Equal(t, "us-east-1", ad.Client().Options().Region)
				assert.Equal(t, cloudreq.Description{Provider: "aws", Service: "sagemaker", Actions: []string{"invoke", "generate"}}, ad.Describe())
				return
			}
			require.Error(t, err)
			assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
			assert.NotContains(t, err.Error(), "secret")
		})
	}
}

func TestDefaultPrompt(t *testing.T) {
	assert.Equal(t, "Hi", DefaultPrompt([]cloudreq.Message{{Role: "user", Content: "Hi"}}))
	assert.Equal(t, "Hi", DefaultPrompt([]cloudreq.Message{{Content: "Hi"}}))
	assert.Equal(t, "system: S\nassistant:", DefaultPrompt([]cloudreq.Message{{Role: "system", Content: "S"}}))
	assert.Equal(t, "user: a\nassistant: b\nuser: c\nassistant:",
		DefaultPrompt([]cloudreq.Message{{Role: "user", Content: "a"}, {Role: "assistant", Content: "b"}, {Content: "c"}}))
}

func TestTransportError(t *testing.T) {
	ad, srv := testAdapter(t, http.NotFoundHandler())
	srv.Close() // nothing listens any more
	_, err := ad.Invoke(context.Background(), invokeCall("ep", `{}`))
	var e *errcodes.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, errcodes.Unavailable, e.Code)
	assert.True(t, e.Retryable)
	assert.Equal(t, "aws", e.Provider)
}

func TestInvokeCanceled(t *testing.T) {
	release := make(chan struct{})
	ad, _ := testAdapter(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err := ad.Invoke(ctx, invokeCall("ep", `{}`))
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.Canceled) || errcodes.Of(err) == errcodes.Canceled, "%v", err)
}

// closingBody returns io.EOF once closed, as smithy-go's request body does.
type closingBody struct {
	r      io.Reader
	closed bool
}

func (b *closingBody) Read(p []byte) (int, error) {
	if b.closed {
		return 0, io.EOF
	}
	return b.r.Read(p)
}

func (b *closingBody) Close() error { b.closed = true; return nil }

type keepRequest struct{ got *http.Request }

func (k *keepRequest) Do(r *http.Request) (*http.Response, error) {
	k.got = r
	return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
}

func TestOwnBodySurvivesTheSDKClosingItsBody(t *testing.T) {
	next := &keepRequest{}
	orig := &closingBody{r: strings.NewReader(`{"prompt":"hello"}`)}
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/x", orig)
	require.NoError(t, err)
	req.ContentLength = -1
	_, err = ownBody{next: next}.Do(req)
	require.NoError(t, err)
	_ = orig.Close() // what smithy-go does when Do returns
	// The transport may read the body after that; it must still be whole.
	b, err := io.ReadAll(next.got.Body)
	require.NoError(t, err)
	assert.Equal(t, `{"prompt":"hello"}`, string(b))
	assert.Equal(t, int64(len(b)), next.got.ContentLength)
	again, err := next.got.GetBody()
	require.NoError(t, err)
	b, _ = io.ReadAll(again)
	assert.Equal(t, `{"prompt":"hello"}`, string(b))
}

// TestInferenceIDFromRequestIDOnlyWhenValid: SageMaker takes an inference
// id of 1 to 64 printable characters, the first not a space, and refuses
// the whole call with a ValidationError otherwise. A RequestID is sent as
// the inference id only when it is one; an explicit
// Attributes.InferenceID is the caller's and is sent as it is.
func TestInferenceIDFromRequestIDOnlyWhenValid(t *testing.T) {
	var mu sync.Mutex
	var ids [][]string
	ad, _ := testAdapter(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ids = append(ids, r.Header.Values("X-Amzn-SageMaker-Inference-Id"))
		mu.Unlock()
		if strings.Contains(r.URL.Path, "response-stream") {
			writeStreamHead(w, nil)
			_, _ = w.Write(encodeFrames(t, part("x")))
			return
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	long := strings.Repeat("r", 65)
	tests := []struct {
		requestID, attribute string
		want                 []string
	}{
		{"0123456789abcdef0123456789abcdef", "", []string{"0123456789abcdef0123456789abcdef"}},
		{strings.Repeat("r", 64), "", []string{strings.Repeat("r", 64)}},
		{"bench/run-7 req:42", "", []string{"bench/run-7 req:42"}},
		{long, "", nil},
		{" leading-space", "", nil},
		{"tab\tinside", "", nil},
		{"caf\u00e9-\u4e2d", "", nil},
		{long, "explicit", []string{"explicit"}},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			call := invokeCall("ep", `{}`)
			call.Request.RequestID = tt.requestID
			call.Request.Attributes.InferenceID = tt.attribute
			if stream {
				cs, err := ad.Stream(context.Background(), call)
				require.NoError(t, err, tt.requestID)
				_, err = drain(cs)
				require.ErrorIs(t, err, io.EOF)
				require.NoError(t, cs.Close())
			} else {
				_, err := ad.Invoke(context.Background(), call)
				require.NoError(t, err, tt.requestID)
			}
			mu.Lock()
			got := ids[len(ids)-1]
			mu.Unlock()
			assert.Equal(t, tt.want, got, "RequestID %q, stream %v", tt.requestID, stream)
		}
	}
}

// A raw invoke's Text is filled when the body is recognisably a generation
// of the container's dialects; any other body is the caller's, untouched
// and no error.
func TestInvokeFillsTextOfAGeneration(t *testing.T) {
	cases := []struct {
		name, body, text, finish string
		usage                    cloudreq.Usage
	}{
		{name: "tgi list", body: `[{"generated_text":"Hello tgi"}]`, text: "Hello tgi"},
		{name: "tgi object with details", body: `{"generated_text":"Hi","details":{"finish_reason":"eos_token","generated_tokens":2}}`,
			text: "Hi", finish: "stop", usage: cloudreq.Usage{OutputTokens: 2, Source: "server"}},
		{name: "chat completion", body: `{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hello"},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`,
			text: "Hello", finish: "length", usage: cloudreq.Usage{InputTokens: 3, OutputTokens: 1, Source: "server"}},
		{name: "completion", body: `{"object":"text_completion","choices":[{"index":0,"text":"Hey","finish_reason":"stop"}]}`,
			text: "Hey", finish: "stop"},
		{name: "another model's answer", body: `{"predictions":[0.1,0.9]}`},
		{name: "an error object", body: `{"error":"bad input","error_type":"validation"}`},
		{name: "csv", body: "0.1,0.9\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ad, _ := testAdapter(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				_, _ = w.Write([]byte(tc.body))
			}))
			resp, err := ad.Invoke(context.Background(), invokeCall("ep", `{"inputs":"Hi"}`))
			require.NoError(t, err)
			assert.Equal(t, tc.body, string(resp.Data))
			assert.Equal(t, tc.text, resp.Text)
			assert.Equal(t, tc.finish, resp.FinishReason)
			assert.Equal(t, tc.usage, resp.Usage)
		})
	}
}
