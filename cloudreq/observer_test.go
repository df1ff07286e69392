package cloudreq_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/cloudreq/cloudreqtest"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
)

// attemptLog is an observer that keeps what it is told of each attempt,
// and what Scrub makes of probe at each start and end.
type attemptLog struct {
	probe string

	mu     sync.Mutex
	events []string
	starts []cloudreq.AttemptInfo
	ends   []cloudreq.AttemptInfo
	// scrubbed holds Scrub(probe) at each start and end, and, at the end
	// of an attempt that answered, Scrub of its response text.
	scrubbed []string
}

func (l *attemptLog) StartCall(ctx context.Context, _ *cloudreq.CloudRequest, _ bool) (context.Context, cloudreq.CallObserver) {
	return ctx, l
}

func (l *attemptLog) StartAttempt(a cloudreq.AttemptInfo) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, fmt.Sprintf("start %d id=%s", a.Attempt.Number, a.Request.RequestID))
	l.starts = append(l.starts, a)
	l.scrubbed = append(l.scrubbed, a.Scrub(l.probe))
}

func (l *attemptLog) EndAttempt(a cloudreq.AttemptInfo) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, fmt.Sprintf("end %d %s", a.Attempt.Number, errcodes.Of(errOrNil(a.Err))))
	l.ends = append(l.ends, a)
	l.scrubbed = append(l.scrubbed, a.Scrub(l.probe))
	if a.Response != nil {
		l.scrubbed = append(l.scrubbed, a.Scrub(a.Response.Text))
	}
}

func (l *attemptLog) EndCall(*cloudreq.CloudResponse, *latency.Timeline, *errcodes.Error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, "call end")
}

func errOrNil(e *errcodes.Error) error {
	if e == nil {
		return nil
	}
	return e
}

// idHooks sets a request id in PreSerialize, as hooks.RequestID does.
type idHooks struct{}

func (idHooks) PreValidate(context.Context, *cloudreq.CloudRequest) error { return nil }
func (idHooks) PreSerialize(_ context.Context, r *cloudreq.CloudRequest) error {
	r.RequestID = "from-hook"
	return nil
}
func (idHooks) PostDeserialize(context.Context, *cloudreq.CloudRequest, *cloudreq.CloudResponse, error) error {
	return nil
}

// TestObserverSeesEachAttempt: an observer is told when each attempt
// starts (after the PreSerialize hooks) and how it ended: the request it
// sent, its response when it answered, its error when it failed.
func TestObserverSeesEachAttempt(t *testing.T) {
	throttled := errcodes.New(errcodes.Throttled, "slow down")
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Err: throttled},
		{Response: &cloudreq.CloudResponse{StatusCode: 200, Text: "ok", RequestID: "p-2"}}}}
	l := &attemptLog{}
	resp, err := client(t, fake, func(o *cloudreq.Options) {
		o.Observers = append(o.Observers, l)
		o.Hooks = idHooks{}
		o.Retry.NoBudget = true
	}).Invoke(context.Background(), req())
	require.NoError(t, err)

	assert.Equal(t, []string{"start 1 id=from-hook", "end 1 ERR_THROTTLED", "start 2 id=from-hook", "end 2 ", "call end"}, l.events)
	require.Len(t, l.ends, 2)
	assert.Nil(t, l.ends[0].Response, "a failed attempt has no response")
	assert.Equal(t, errcodes.Throttled, l.ends[0].Err.Code)
	assert.Nil(t, l.ends[1].Err)
	assert.Same(t, resp, l.ends[1].Response, "the answering attempt's response is the call's")
	assert.Equal(t, 200, l.ends[1].Attempt.Status)
	assert.Equal(t, resp.Timing.Attempts[1], l.ends[1].Attempt, "the attempt as the timeline has it")
	assert.Same(t, l.starts[0].Request, l.ends[1].Request, "the client's working copy")
	assert.Equal(t, 2, l.starts[1].Attempt.Number)
	assert.Positive(t, l.starts[1].Attempt.Backoff, "a retry's start knows its backoff")

	// A stream attempt ends with the stream, with what it opened with.
	l2 := &attemptLog{}
	sfake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Chunks: []cloudreq.StreamChunk{{Text: "a"}}}}}
	s, err := client(t, sfake, func(o *cloudreq.Options) { o.Observers = append(o.Observers, l2) }).Stream(context.Background(), req())
	require.NoError(t, err)
	for s.Next() {
	}
	require.NoError(t, s.Err())
	require.Len(t, l2.ends, 1)
	assert.NotNil(t, l2.ends[0].Response)
	assert.Nil(t, l2.ends[0].Err)
}

// credAdapter is a fake that names its credential (CredentialSource).
type credAdapter struct {
	cloudreqtest.Adapter
	key string
}

func (a *credAdapter) Credentials() []string { return []string{a.key} }

// TestAttemptInfoScrub: Scrub replaces the credentials an attempt sent —
// those the adapter names, those in the request's credential headers —
// wherever they occur in a text, at the attempt's start and end.
func TestAttemptInfoScrub(t *testing.T) {
	const key, tok = "adapter-key-0123456789", "header-token-0123456789"
	probe := "echo " + key + " and " + tok
	fake := &credAdapter{key: key, Adapter: cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{
		{Response: &cloudreq.CloudResponse{StatusCode: 200, Text: probe}}}}}
	l := &attemptLog{probe: probe}
	c, err := cloudreq.New(cloudreq.Options{
		Adapters:    []cloudreq.Adapter{fake},
		CallOptions: cloudreq.CallOptions{Observers: []cloudreq.Observer{l}},
	})
	require.NoError(t, err)
	r := req()
	r.Header = http.Header{"Authorization": {"Bearer " + tok}}
	_, err = c.Invoke(context.Background(), r)
	require.NoError(t, err)
	require.Len(t, l.scrubbed, 3, "start, end, and the response text")
	for _, s := range l.scrubbed {
		assert.Equal(t, "echo [REDACTED] and [REDACTED]", s)
	}
	var zero cloudreq.AttemptInfo
	assert.Equal(t, probe, zero.Scrub(probe), "a zero AttemptInfo knows no credential")
}

// tokenAdapter sends a credential header over HTTP, as adapters that sign
// at the transport do, and answers with the server's body as the text.
type tokenAdapter struct {
	cloudreqtest.Adapter
	url, header, value string
}

func (a *tokenAdapter) Invoke(ctx context.Context, _ *cloudreq.Call) (*cloudreq.CloudResponse, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url, http.NoBody)
	if err != nil {
		return nil, err
	}
	hr.Header.Set(a.header, a.value)
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 512)
	for {
		n, rerr := resp.Body.Read(buf)
		b.Write(buf[:n])
		if rerr != nil {
			break
		}
	}
	return &cloudreq.CloudResponse{StatusCode: resp.StatusCode, Text: b.String()}, nil
}

// TestAttemptInfoScrubTransport: for an adapter that does not name its
// credentials, Scrub replaces those the HTTP transport wrote.
func TestAttemptInfoScrubTransport(t *testing.T) {
	const tok = "session-token-0123456789"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "you sent %s", r.Header.Get("X-Amz-Security-Token"))
	}))
	defer srv.Close()
	defer http.DefaultClient.CloseIdleConnections()
	l := &attemptLog{}
	c, err := cloudreq.New(cloudreq.Options{
		Adapters:    []cloudreq.Adapter{&tokenAdapter{url: srv.URL, header: "X-Amz-Security-Token", value: tok}},
		CallOptions: cloudreq.CallOptions{Observers: []cloudreq.Observer{l}},
	})
	require.NoError(t, err)
	resp, err := c.Invoke(context.Background(), req())
	require.NoError(t, err)
	require.Contains(t, resp.Text, tok, "the caller's response is the server's")
	require.Len(t, l.scrubbed, 3)
	assert.Equal(t, "you sent [REDACTED]", l.scrubbed[2])
}

// TestCredentialHeadersOneList: IsCredentialHeader knows every entry of
// CredentialHeaders whatever its case, cookies included, and nothing else.
func TestCredentialHeadersOneList(t *testing.T) {
	for _, h := range cloudreq.CredentialHeaders {
		assert.True(t, cloudreq.IsCredentialHeader(h), h)
		assert.True(t, cloudreq.IsCredentialHeader(strings.ToLower(h)), h)
	}
	for _, h := range []string{"Cookie", "Set-Cookie", "x-goog-api-key", "ocp-apim-subscription-key"} {
		assert.True(t, cloudreq.IsCredentialHeader(h), h)
	}
	for _, h := range []string{"Content-Type", "X-Request-Id", "", "Authorizatio", "X-Api-Keys"} {
		assert.False(t, cloudreq.IsCredentialHeader(h), h)
	}
}
