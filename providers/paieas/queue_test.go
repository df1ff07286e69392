package paieas

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

func queueEmulator(t *testing.T, token string) *emulator.Server {
	t.Helper()
	eps := emulator.DefaultEndpoints()
	if token != "" {
		for i := range eps {
			eps[i].Credentials.Keys = []string{token}
		}
	}
	srv, err := emulator.New(emulator.Options{TimeScale: 0.01, Seed: 4, Endpoints: eps})
	require.NoError(t, err)
	require.NoError(t, srv.Start("127.0.0.1:0", ""))
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func queueClient(t *testing.T, srv *emulator.Server, token string) *QueueClient {
	t.Helper()
	q, err := NewQueueClient(QueueOptions{Endpoint: srv.URL(), Service: "llama-3-8b", Token: token, AllowInsecureHTTP: true})
	require.NoError(t, err)
	return q
}

const legacyBody = `{"prompt":"Say hello.","max_new_tokens":6}`

// TestQueueConformance: enqueue returns an index and a request id; the
// result is fetched by request id (waiting on the server) and by index,
// carries the request's tags and a 200; delete removes it; a chat body
// runs the OpenAI route; a wrong token is ERR_UNAUTHENTICATED; an unknown
// service ERR_NOT_FOUND; an inference fault is the result's error.
func TestQueueConformance(t *testing.T) {
	srv := queueEmulator(t, "queue-token-123")
	q := queueClient(t, srv, "queue-token-123")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	a, err := q.Attributes(ctx)
	require.NoError(t, err)
	assert.NotEmpty(t, a[AttrUserHeader])

	e1, err := q.Put(ctx, []byte(legacyBody), PutOptions{Tags: map[string]string{"job": "a"}, Priority: 2})
	require.NoError(t, err)
	e2, err := q.Put(ctx, []byte(legacyBody), PutOptions{})
	require.NoError(t, err)
	assert.Equal(t, e1.Index+1, e2.Index)
	assert.NotEmpty(t, e1.RequestID)
	assert.NotEqual(t, e1.RequestID, e2.RequestID)

	f, err := q.Wait(ctx, e1, WaitOptions{Poll: time.Second, Keep: true})
	require.NoError(t, err)
	assert.Equal(t, e1.Index, f.Index)
	assert.Equal(t, "a", f.Tags["job"])
	assert.Equal(t, "2", f.Tags["_priority_"])
	assert.Equal(t, "200", f.Tags[TagStatus])
	assert.Contains(t, string(f.Data), `"response"`)

	byIndex, err := q.Get(ctx, GetOptions{Index: e1.Index, Length: 1})
	require.NoError(t, err)
	require.Len(t, byIndex, 1)
	assert.Equal(t, e1.RequestID, byIndex[0].Tags[TagRequestID])
	require.NoError(t, q.Delete(ctx, e1.Index))
	gone, err := q.Get(ctx, GetOptions{RequestID: e1.RequestID})
	require.NoError(t, err)
	assert.Empty(t, gone, "deleted")

	f2, err := q.Wait(ctx, e2, WaitOptions{Poll: time.Second})
	require.NoError(t, err)
	assert.Equal(t, e2.Index, f2.Index)
	left, err := q.Get(ctx, GetOptions{RequestID: e2.RequestID})
	require.NoError(t, err)
	assert.Empty(t, left, "Wait deletes what it read")

	chat, err := q.Put(ctx, []byte(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":4}`), PutOptions{})
	require.NoError(t, err)
	f3, err := q.Wait(ctx, chat, WaitOptions{Poll: time.Second})
	require.NoError(t, err)
	assert.Contains(t, string(f3.Data), `"chat.completion"`)

	bad, err := q.Put(ctx, []byte(legacyBody), PutOptions{Tags: map[string]string{"_x": "1"}})
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err), "%v", bad)

	wrong := queueClient(t, srv, "not-the-token")
	_, err = wrong.Put(ctx, []byte(legacyBody), PutOptions{})
	var ce *errcodes.Error
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, errcodes.Unauthenticated, ce.Code)
	assert.NotContains(t, ce.Error(), "not-the-token")

	short, stop := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = q.Wait(short, Enqueued{Index: 999, RequestID: "never-enqueued"}, WaitOptions{Poll: 20 * time.Millisecond})
	stop()
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, errcodes.Timeout, ce.Code)
	assert.False(t, ce.Retryable, "a retry would enqueue again")

	missing, err := NewQueueClient(QueueOptions{Endpoint: srv.URL(), Service: "no-such-service", Token: "queue-token-123", AllowInsecureHTTP: true})
	require.NoError(t, err)
	_, err = missing.Put(ctx, []byte(legacyBody), PutOptions{})
	assert.Equal(t, errcodes.NotFound, errcodes.Of(err))
}

// TestQueueFaultResult: a fault of the inference is the result's error,
// mapped as the service's own answer.
func TestQueueFaultResult(t *testing.T) {
	srv := queueEmulator(t, "")
	q := queueClient(t, srv, "")
	q.client = &http.Client{Transport: headerTransport{emulator.HeaderInject: string(emulator.FaultThrottle)}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e, err := q.Put(ctx, []byte(legacyBody), PutOptions{})
	require.NoError(t, err)
	f, err := q.Wait(ctx, e, WaitOptions{Poll: time.Second})
	assert.Equal(t, "429", f.Tags[TagStatus])
	assert.Equal(t, errcodes.Throttled, errcodes.Of(err), "%v", err)
}

// headerTransport adds headers to every request.
type headerTransport map[string]string

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestQueueWatch: a websocket watch delivers results as they are
// written, within its window until committed; a committed one is not
// delivered again; with auto-commit, each at once.
func TestQueueWatch(t *testing.T) {
	srv := queueEmulator(t, "watch-token-123")
	q := queueClient(t, srv, "watch-token-123")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var put []Enqueued
	for range 3 {
		e, err := q.Put(ctx, []byte(legacyBody), PutOptions{})
		require.NoError(t, err)
		put = append(put, e)
	}
	w, err := q.Watch(ctx, WatchOptions{Index: put[0].Index, Window: 1})
	require.NoError(t, err)
	first, err := w.Next(ctx)
	require.NoError(t, err)
	short, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = w.Next(short)
	stop()
	assert.Error(t, err, "window 1: nothing more until a commit")
	require.NoError(t, w.Close())

	require.NoError(t, q.Commit(ctx, first.Index))

	w, err = q.Watch(ctx, WatchOptions{Index: put[0].Index, Window: 1, AutoCommit: true})
	require.NoError(t, err)
	defer w.Close()
	ids := map[uint64]string{}
	for _, e := range put {
		ids[e.Index] = e.RequestID
	}
	delete(ids, first.Index)
	for range 2 {
		f, err := w.Next(ctx)
		require.NoError(t, err)
		want, ok := ids[f.Index]
		require.True(t, ok, "index %d: not one of those left uncommitted", f.Index)
		assert.Equal(t, want, f.Tags[TagRequestID])
		assert.True(t, strings.Contains(string(f.Data), "response"))
		delete(ids, f.Index)
	}
	assert.Empty(t, ids)
}

func TestNewQueueClientOptions(t *testing.T) {
	_, err := NewQueueClient(QueueOptions{Endpoint: "http://127.0.0.1:1"})
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
	_, err = NewQueueClient(QueueOptions{Endpoint: "127.0.0.1", Service: "s"})
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
	_, err = NewQueueClient(QueueOptions{Endpoint: "http://eas.example.com", Service: "s", Token: "secret-token"})
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err), "a token over plain http needs AllowInsecureHTTP")
}

// TestIntegrationPAIEASQueue enqueues to a real asynchronous EAS service
// and waits for its result. It needs CLOUDINFER_IT_PAIEAS=1,
// CLOUDINFER_IT_PAIEAS_ENDPOINT (the endpoint root), EAS_TOKEN and
// CLOUDINFER_IT_PAIEAS_QUEUE_SERVICE (the asynchronous service);
// CLOUDINFER_IT_PAIEAS_QUEUE_BODY is the body (default a legacy LLM one).
func TestIntegrationPAIEASQueue(t *testing.T) {
	svc := os.Getenv("CLOUDINFER_IT_PAIEAS_QUEUE_SERVICE")
	if os.Getenv("CLOUDINFER_IT_PAIEAS") != "1" || svc == "" {
		t.Skip("real PAI-EAS test: set CLOUDINFER_IT_PAIEAS=1, CLOUDINFER_IT_PAIEAS_ENDPOINT, EAS_TOKEN and CLOUDINFER_IT_PAIEAS_QUEUE_SERVICE to run it")
	}
	q, err := NewQueueClient(QueueOptions{Endpoint: os.Getenv("CLOUDINFER_IT_PAIEAS_ENDPOINT"), Service: svc, Token: os.Getenv("EAS_TOKEN")})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	body := legacyBody
	if b := os.Getenv("CLOUDINFER_IT_PAIEAS_QUEUE_BODY"); b != "" {
		body = b
	}
	e, err := q.Put(ctx, []byte(body), PutOptions{})
	require.NoError(t, err)
	f, err := q.Wait(ctx, e, WaitOptions{})
	require.NoError(t, err)
	assert.NotEmpty(t, f.Data)
	_ = cloudreq.ProviderAlibaba
}

// TestQueueAdapter: cloudreq's generate and invoke through the queue,
// answered as the synchronous service would be, in both dialects.
func TestQueueAdapter(t *testing.T) {
	srv := queueEmulator(t, "adapter-token-123")
	for _, d := range []Dialect{DialectOpenAI, DialectLegacy} {
		ad, err := NewQueueAdapter(Options{Endpoint: srv.URL(), Token: "adapter-token-123", Dialect: d, AllowInsecureHTTP: true}, WaitOptions{Poll: time.Second})
		require.NoError(t, err)
		c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}})
		require.NoError(t, err)
		resp, err := c.Invoke(context.Background(), &cloudreq.CloudRequest{
			Provider: cloudreq.ProviderAlibaba, Service: ServiceQueue, Action: cloudreq.ActionGenerate,
			Target:   cloudreq.Target{Endpoint: "llama-3-8b"},
			Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "Say hello."}}, MaxTokens: 5},
		})
		require.NoError(t, err, d)
		assert.NotEmpty(t, resp.Text, d)
		assert.NotEmpty(t, resp.Metadata[HeaderQueueIndex])
		assert.Equal(t, resp.RequestID, resp.Metadata[HeaderQueueRequestID])
		if d == DialectOpenAI {
			assert.Equal(t, 5, resp.Usage.OutputTokens)
		}
		_, err = c.Invoke(context.Background(), &cloudreq.CloudRequest{
			Provider: cloudreq.ProviderAlibaba, Service: ServiceQueue, Action: cloudreq.ActionGenerate,
			Target:   cloudreq.Target{Endpoint: "a/b"},
			Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "x"}}},
		})
		assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
		require.NoError(t, c.Close())
	}
}
