package sagemaker

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// asyncAdapter returns an AsyncAdapter on the emulator, its S3 store the
// S3 SDK's client at the emulator's /s3 root.
func asyncAdapter(t testing.TB, srv *emulator.Server, aopts AsyncOptions) *AsyncAdapter {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	if aopts.S3Endpoint == "" && aopts.Store == nil {
		aopts.S3Endpoint = srv.URL() + "/s3"
	}
	if aopts.Wait.PollInterval == 0 {
		aopts.Wait = WaitOptions{PollInterval: 2 * time.Millisecond, MaxPollInterval: 20 * time.Millisecond}
	}
	ad, err := NewAsync(context.Background(), Options{
		Region:            "us-east-1",
		Credentials:       credentials.NewStaticCredentialsProvider("AKIDEMULATOR", "emulator-secret", ""),
		BaseEndpoint:      srv.URL(),
		HTTPClient:        &http.Client{Transport: tr},
		AllowInsecureHTTP: true,
	}, aopts)
	require.NoError(t, err)
	return ad
}

func asyncRequest(action string) *cloudreq.CloudRequest {
	r := &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderAWS, Service: ServiceAsync, Action: action,
		Target: cloudreq.Target{Endpoint: "llama-3-8b"},
		Header: http.Header{},
	}
	if action == cloudreq.ActionGenerate {
		r.Generate = &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "Say hello."}}, MaxTokens: 16}
	} else {
		r.Payload = cloudreq.Payload{Body: []byte(`{"inputs":"Say hello.","parameters":{"max_new_tokens":16}}`)}
	}
	return r
}

// TestAsyncConformance runs asynchronous inference against the emulator
// through cloudreq: generate in both dialects and a raw invoke come back
// with their text, usage and locations; a faulted run is ERR_MODEL_ERROR
// with its failure location; an unknown endpoint is refused at submission;
// the targets InvokeEndpointAsync has not are refused before sending; a
// body over the inline limit goes through S3.
func TestAsyncConformance(t *testing.T) {
	srv := startEmulator(t)
	ad := asyncAdapter(t, srv, AsyncOptions{InputPrefix: "s3://my-inputs/async"})
	c := testClient(t, nil, func(o *cloudreq.Options) { o.Adapters = []cloudreq.Adapter{ad} })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for _, d := range []Dialect{DialectMessages, DialectTGI} {
		req := asyncRequest(cloudreq.ActionGenerate)
		req.Attributes.Dialect = string(d)
		resp, err := c.Invoke(ctx, req)
		require.NoError(t, err, d)
		assert.NotEmpty(t, resp.Text, d)
		assert.NotEmpty(t, resp.FinishReason, d)
		assert.Positive(t, resp.Usage.OutputTokens, d)
		assert.NotEmpty(t, resp.RequestID, d)
		id := resp.Metadata[HeaderInferenceID]
		require.NotEmpty(t, id)
		assert.Equal(t, "s3://cloudinfer-emulator/async-output/llama-3-8b/"+id+".out", resp.Metadata[HeaderOutputLocation], d)
		assert.Equal(t, "s3://cloudinfer-emulator/async-failures/llama-3-8b/"+id+"-error.out", resp.Metadata[HeaderFailureLocation], d)
		body, ok := srv.S3Object("cloudinfer-emulator", "async-output/llama-3-8b/"+id+".out")
		require.True(t, ok)
		assert.Equal(t, string(body), string(resp.Data), "the answer is the output object")
	}

	resp, err := c.Invoke(ctx, asyncRequest(cloudreq.ActionInvoke))
	require.NoError(t, err)
	assert.Contains(t, string(resp.Data), "generated_text")
	assert.NotEmpty(t, resp.Text, "a TGI answer's text is read for invoke too")

	req := asyncRequest(cloudreq.ActionGenerate)
	req.Header.Set(emulator.HeaderInject, string(emulator.FaultModelError))
	_, err = c.Invoke(ctx, req)
	var e *errcodes.Error
	require.True(t, errors.As(err, &e), "%v", err)
	assert.Equal(t, errcodes.ModelError, e.Code)
	assert.False(t, e.Retryable)
	assert.Equal(t, "AsyncInferenceFailure", e.ProviderCode)
	assert.Contains(t, e.Details["failure_location"], "s3://cloudinfer-emulator/async-failures/llama-3-8b/")
	assert.Contains(t, e.Message, "Internal server error in the model container")

	req = asyncRequest(cloudreq.ActionGenerate)
	req.Target.Endpoint = "no-such-endpoint"
	_, err = c.Invoke(ctx, req)
	require.True(t, errors.As(err, &e), "%v", err)
	assert.Equal(t, errcodes.NotFound, e.Code)

	for _, mut := range []func(*cloudreq.CloudRequest){
		func(r *cloudreq.CloudRequest) { r.Target.Variant = "AllTraffic" },
		func(r *cloudreq.CloudRequest) { r.Target.Model = "m.tar.gz" },
		func(r *cloudreq.CloudRequest) { r.Attributes.SessionID = "s" },
	} {
		req := asyncRequest(cloudreq.ActionGenerate)
		mut(req)
		_, err = c.Invoke(ctx, req)
		require.True(t, errors.As(err, &e), "%v", err)
		assert.Equal(t, errcodes.InvalidParam, e.Code)
		assert.Contains(t, e.Message, "InvokeEndpointAsync has no")
	}
	_, err = c.Stream(ctx, asyncRequest(cloudreq.ActionGenerate))
	assert.Error(t, err, "asynchronous inference has no stream")

	big := asyncRequest(cloudreq.ActionInvoke)
	big.Payload.Body = []byte(`{"inputs":"` + strings.Repeat("a ", MaxAsyncInlineBody/2) + `","parameters":{"max_new_tokens":4}}`)
	big.Attributes.InferenceID = "big-1"
	resp, err = c.Invoke(ctx, big)
	require.NoError(t, err)
	assert.Contains(t, string(resp.Data), "generated_text")
	in, ok := srv.S3Object("my-inputs", "async/big-1.in")
	require.True(t, ok, "the large body was uploaded to the input prefix")
	assert.Equal(t, big.Payload.Body, in)

	noPrefix := asyncAdapter(t, srv, AsyncOptions{})
	c2 := testClient(t, nil, func(o *cloudreq.Options) { o.Adapters = []cloudreq.Adapter{noPrefix} })
	_, err = c2.Invoke(ctx, big)
	require.True(t, errors.As(err, &e), "%v", err)
	assert.Equal(t, errcodes.PayloadTooLarge, e.Code)
}

// fakeStore is an in-memory ObjectStore whose objects appear after a
// number of reads, and whose reads can fail.
type fakeStore struct {
	mu      sync.Mutex
	objs    map[string][]byte
	after   map[string]int // reads of a location before its object appears
	reads   map[string]int
	failure error
}

func (f *fakeStore) Get(_ context.Context, uri string) (*Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failure != nil {
		return nil, f.failure
	}
	f.reads[uri]++
	b, ok := f.objs[uri]
	if !ok || f.reads[uri] <= f.after[uri] {
		return nil, ErrNoObject
	}
	return &Object{Body: b, ContentType: "application/json"}, nil
}

func (f *fakeStore) Put(_ context.Context, uri string, body []byte, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objs[uri] = body
	return nil
}

func newFakeStore() *fakeStore {
	return &fakeStore{objs: map[string][]byte{}, after: map[string]int{}, reads: map[string]int{}}
}

func TestWaitAsync(t *testing.T) {
	inv := &AsyncInvocation{InferenceID: "id-1", OutputLocation: "s3://b/out/id-1.out", FailureLocation: "s3://b/fail/id-1-error.out", RequestID: "req-1"}
	fast := WaitOptions{PollInterval: time.Millisecond, MaxPollInterval: 2 * time.Millisecond}
	ctx := context.Background()

	st := newFakeStore()
	st.objs[inv.OutputLocation] = []byte(`{"ok":true}`)
	st.after[inv.OutputLocation] = 3
	res, err := WaitAsync(ctx, st, inv, fast)
	require.NoError(t, err)
	assert.Equal(t, `{"ok":true}`, string(res.Body))
	assert.Equal(t, 4, res.Polls)
	assert.Equal(t, 3, st.reads[inv.FailureLocation], "the failure location is read after each miss")

	st = newFakeStore()
	st.objs[inv.FailureLocation] = []byte("ModelError: the container crashed")
	st.after[inv.FailureLocation] = 1
	_, err = WaitAsync(ctx, st, inv, fast)
	var e *errcodes.Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, errcodes.ModelError, e.Code)
	assert.Equal(t, "req-1", e.RequestID)
	assert.Equal(t, inv.FailureLocation, e.Details["failure_location"])
	assert.Contains(t, e.Message, "the container crashed")

	tctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err = WaitAsync(tctx, newFakeStore(), inv, fast)
	require.True(t, errors.As(err, &e))
	assert.Equal(t, errcodes.Timeout, e.Code)
	assert.Contains(t, e.Message, "id-1")

	st = newFakeStore()
	st.failure = errcodes.New(errcodes.PermissionDenied, "S3 AccessDenied")
	_, err = WaitAsync(ctx, st, inv, fast)
	require.True(t, errors.As(err, &e))
	assert.Equal(t, errcodes.PermissionDenied, e.Code)

	_, err = WaitAsync(ctx, st, &AsyncInvocation{}, fast)
	require.True(t, errors.As(err, &e))
	assert.Equal(t, errcodes.InvalidParam, e.Code)
}

func TestInvokeAsyncInput(t *testing.T) {
	srv := startEmulator(t)
	ad := asyncAdapter(t, srv, AsyncOptions{}).Sync()
	ctx := context.Background()
	for name, tc := range map[string]struct {
		in   *AsyncInput
		code errcodes.Code
	}{
		"nil":           {nil, errcodes.InvalidParam},
		"no endpoint":   {&AsyncInput{Body: []byte("{}")}, errcodes.InvalidParam},
		"neither":       {&AsyncInput{Endpoint: "e"}, errcodes.InvalidParam},
		"both":          {&AsyncInput{Endpoint: "e", Body: []byte("{}"), InputLocation: "s3://b/k"}, errcodes.InvalidParam},
		"not s3":        {&AsyncInput{Endpoint: "e", InputLocation: "https://b/k"}, errcodes.InvalidParam},
		"too large":     {&AsyncInput{Endpoint: "e", Body: make([]byte, MaxAsyncInlineBody+1)}, errcodes.PayloadTooLarge},
		"negative time": {&AsyncInput{Endpoint: "e", Body: []byte("{}"), RequestTTL: -time.Second}, errcodes.InvalidParam},
	} {
		_, err := ad.InvokeAsync(ctx, tc.in)
		assert.Equal(t, tc.code, errcodes.Of(err), name)
	}
	srv.PutS3Object("in", "req.json", []byte(`{"inputs":"hi","parameters":{"max_new_tokens":4}}`), "application/json")
	inv, err := ad.InvokeAsync(ctx, &AsyncInput{Endpoint: "llama-3-8b", InputLocation: "s3://in/req.json", InferenceID: "loc-1",
		ContentType: "application/json", InvocationTimeout: 1500 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, "loc-1", inv.InferenceID)
	assert.Equal(t, http.StatusAccepted, inv.StatusCode)
	st, err := ad.s3Store(srv.URL() + "/s3")
	require.NoError(t, err)
	res, err := WaitAsync(ctx, st, inv, WaitOptions{PollInterval: 2 * time.Millisecond})
	require.NoError(t, err)
	assert.Contains(t, string(res.Body), "generated_text")
}

func TestSeconds(t *testing.T) {
	assert.Nil(t, seconds(0))
	assert.Equal(t, int32(2), *seconds(1500 * time.Millisecond))
	assert.Equal(t, int32(60), *seconds(time.Minute))
}

// TestS3StoreErrors: S3's error answers map to the closed set; a missing
// key is ErrNoObject.
func TestS3StoreErrors(t *testing.T) {
	answers := map[string]struct {
		status int
		code   string
	}{
		"/b/missing": {404, "NoSuchKey"},
		"/nob/k":     {404, "NoSuchBucket"},
		"/b/denied":  {403, "AccessDenied"},
		"/b/badkey":  {403, "InvalidAccessKeyId"},
		"/b/slow":    {503, "SlowDown"},
		"/b/oops":    {500, "InternalError"},
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := answers[r.URL.Path]
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(a.status)
		_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>` + a.code + `</Code><Message>m</Message><RequestId>r1</RequestId></Error>`))
	})
	ad, srv := testAdapter(t, h)
	st, err := ad.s3Store(srv.URL)
	require.NoError(t, err)
	ctx := context.Background()
	for path, want := range map[string]errcodes.Code{
		"s3://nob/k": errcodes.NotFound, "s3://b/denied": errcodes.PermissionDenied,
		"s3://b/badkey": errcodes.Unauthenticated, "s3://b/slow": errcodes.Throttled, "s3://b/oops": errcodes.Internal,
	} {
		_, err := st.Get(ctx, path)
		assert.Equal(t, want, errcodes.Of(err), path)
		assert.False(t, errors.Is(err, ErrNoObject), path)
	}
	_, err = st.Get(ctx, "s3://b/missing")
	assert.True(t, errors.Is(err, ErrNoObject), "%v", err)
	_, err = st.Get(ctx, "b/k")
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))

	plain, err := New(ctx, Options{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("a", "b", "")})
	require.NoError(t, err)
	_, err = plain.s3Store("http://127.0.0.1:1/s3")
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err), "plain http needs AllowInsecureHTTP")
}

func TestParseS3URI(t *testing.T) {
	b, k, err := ParseS3URI("s3://bucket/a/b.json")
	require.NoError(t, err)
	assert.Equal(t, "bucket", b)
	assert.Equal(t, "a/b.json", k)
	for _, bad := range []string{"", "s3://bucket", "s3://bucket/", "https://bucket/k", "s3:///k"} {
		_, _, err := ParseS3URI(bad)
		assert.Error(t, err, bad)
	}
}
