package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/cloudreq/cloudreqtest"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/hooks"
)

// jsonLines decodes a JSON handler's output, one record a line.
func jsonLines(t *testing.T, b *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		out = append(out, m)
	}
	return out
}

func byMsg(recs []map[string]any, msg string) []map[string]any {
	var out []map[string]any
	for _, r := range recs {
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

func jsonLogger(buf *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// TestLoggingIsAnObserver: WithLogging adds one log observer and sets the
// client's logger; it leaves the hooks alone.
func TestLoggingIsAnObserver(t *testing.T) {
	var buf bytes.Buffer
	with := WithLogging(jsonLogger(&buf), LogOptions{})
	var o cloudreq.Options
	with(&o)
	with(&o)
	assert.Nil(t, o.Hooks, "no hooks installed")
	require.Len(t, o.Observers, 1, "one observer, added once")
	assert.IsType(t, &LogObserver{}, o.Observers[0])
	assert.NotNil(t, o.Logger)

	set := hooks.Default()
	o = cloudreq.Options{CallOptions: cloudreq.CallOptions{Hooks: set}}
	with(&o)
	assert.Same(t, set, o.Hooks, "the configured hooks are kept as they are")
	assert.Equal(t, []string{hooks.NameRequestID}, set.Serialize.Names())
	assert.Empty(t, set.Deserialize.Names())
}

// TestLogRecords: a request record before the first attempt, after the
// PreSerialize hooks; a record per attempt with its outcome; each with
// the fixed field set: the endpoint as host and path, header values only
// for the allow-listed headers, no content unless asked.
func TestLogRecords(t *testing.T) {
	var buf bytes.Buffer
	throttled := errcodes.New(errcodes.Throttled, "queue full for prompt: private words")
	throttled.HTTPStatus, throttled.ProviderCode, throttled.RetryAfter = 450, "450", time.Millisecond
	fake := &cloudreqtest.Adapter{Provider: cloudreq.ProviderAlibaba, Service: cloudreq.ServicePAIEAS,
		Outcomes: []cloudreqtest.Outcome{{Err: throttled}, {Response: &cloudreq.CloudResponse{StatusCode: 200, Data: []byte("ok"), RequestID: "eas-7"}}}}
	c, err := cloudreq.New(cloudreq.Options{
		Adapters: []cloudreq.Adapter{fake},
		CallOptions: cloudreq.CallOptions{
			Hooks: hooks.Default(),
			Retry: cloudreq.RetryOptions{BaseDelay: time.Millisecond, NoBudget: true},
		},
	}, WithLogging(jsonLogger(&buf), LogOptions{}))
	require.NoError(t, err)
	req := &cloudreq.CloudRequest{Provider: cloudreq.ProviderAlibaba, Service: cloudreq.ServicePAIEAS, Action: cloudreq.ActionInvoke,
		Target: cloudreq.Target{Endpoint: "http://me:pw-abcdef@127.0.0.1:9/api/predict/svc?token=abcdef#frag", Path: "/v1/x?sig=abcdef"},
		Header: http.Header{"Authorization": {"EAS c2lnbmF0dXJlLXZhbHVl"}, "X-Trace": {"t-1"}, "X-Request-Id": {"x-1"},
			"Content-Type": {"application/json"}},
		Payload: cloudreq.Payload{Body: []byte(`{"prompt":"private words"}`)}}
	_, err = c.Invoke(context.Background(), req)
	require.NoError(t, err)

	recs := jsonLines(t, &buf)
	var msgs []string
	for _, r := range recs {
		msgs = append(msgs, r["msg"].(string))
	}
	assert.Equal(t, []string{LogMsgRequest, LogMsgResponse, "cloudinfer retry", LogMsgResponse}, msgs)
	r := recs[0]
	assert.Equal(t, "INFO", r["level"])
	assert.Equal(t, "alibaba", r["provider"])
	assert.Equal(t, "pai-eas", r["service"])
	assert.Equal(t, "invoke", r["action"])
	assert.Equal(t, "http://127.0.0.1:9/api/predict/svc", r["endpoint"], "host and path only")
	assert.Equal(t, "/v1/x", r["path"], "no query")
	assert.Regexp(t, `^[0-9a-f]{32}$`, r["request_id"], "logged after the request-id hook")
	assert.Equal(t, map[string]any{"Authorization": cloudreq.Redacted, "X-Trace": cloudreq.Redacted,
		"X-Request-Id": "x-1", "Content-Type": "application/json"}, r["header"])
	assert.EqualValues(t, 26, r["payload_bytes"])
	assert.NotContains(t, r, "body", "no content unless asked")

	resps := byMsg(recs, LogMsgResponse)
	require.Len(t, resps, 2)
	assert.Equal(t, "WARN", resps[0]["level"], "a failed attempt is one level up")
	assert.Equal(t, "ERR_THROTTLED", resps[0]["code"])
	assert.Equal(t, "450", resps[0]["provider_code"])
	assert.EqualValues(t, 450, resps[0]["status"])
	assert.Equal(t, true, resps[0]["retryable"])
	assert.EqualValues(t, time.Millisecond, resps[0]["retry_after"])
	assert.NotContains(t, resps[0], "message", "a message is content")
	assert.EqualValues(t, 1, resps[0]["attempt"])
	assert.Equal(t, "INFO", resps[1]["level"])
	assert.EqualValues(t, 200, resps[1]["status"])
	assert.EqualValues(t, 2, resps[1]["attempt"])
	assert.Equal(t, "eas-7", resps[1]["provider_request_id"])
	assert.EqualValues(t, 2, resps[1]["body_bytes"])
	assert.Contains(t, resps[1], "duration")
	assert.Greater(t, resps[1]["elapsed"].(float64), resps[0]["elapsed"].(float64))
	assert.Equal(t, r["request_id"], resps[1]["request_id"])
	for _, s := range []string{"private words", "c2lnbmF0dXJlLXZhbHVl", "abcdef", "t-1", "frag"} {
		assert.NotContains(t, buf.String(), s)
	}
}

// TestWithLogging: content with CaptureContent; the outcome after the
// PostDeserialize hooks' veto; the client's retry record on the same
// logger.
func TestWithLogging(t *testing.T) {
	var buf bytes.Buffer
	logger := jsonLogger(&buf)
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{
		{Err: errcodes.New(errcodes.Unavailable, "try again")},
		{Response: &cloudreq.CloudResponse{StatusCode: 200, Text: "hello there", FinishReason: "stop",
			Usage: cloudreq.Usage{InputTokens: 3, OutputTokens: 2}}}}}
	veto := hooks.PostDeserializeFunc(func(_ context.Context, _ *cloudreq.CloudRequest, resp *cloudreq.CloudResponse, err error) error {
		if err == nil && resp.Text == "" {
			return errcodes.New(errcodes.ModelError, "empty text")
		}
		return nil
	})
	set := &hooks.Set{}
	require.NoError(t, set.Deserialize.Add("veto-empty", veto))
	c, err := cloudreq.New(cloudreq.Options{
		Adapters: []cloudreq.Adapter{fake},
		CallOptions: cloudreq.CallOptions{
			Hooks: set,
			Retry: cloudreq.RetryOptions{BaseDelay: time.Millisecond, NoBudget: true},
		},
	})
	require.NoError(t, err)
	resp, err := c.Invoke(context.Background(), generateReq(),
		cloudreq.PerCall(WithLogging(logger, LogOptions{Level: slog.LevelDebug, CaptureContent: true})))
	require.NoError(t, err)
	require.Equal(t, "hello there", resp.Text)

	recs := jsonLines(t, &buf)
	reqs := byMsg(recs, LogMsgRequest)
	require.Len(t, reqs, 1)
	assert.Equal(t, "DEBUG", reqs[0]["level"])
	assert.Equal(t, "req-1", reqs[0]["request_id"])
	assert.EqualValues(t, 1, reqs[0]["messages"])
	assert.EqualValues(t, 64, reqs[0]["max_tokens"])
	assert.JSONEq(t, `[{"role":"user","parts":[{"type":"text","content":"the secret prompt"}]}]`, reqs[0]["input_messages"].(string))
	resps := byMsg(recs, LogMsgResponse)
	require.Len(t, resps, 2)
	assert.Equal(t, "INFO", resps[0]["level"], "Debug steps up to Info on failure")
	assert.Equal(t, "ERR_UNAVAILABLE", resps[0]["code"])
	assert.Equal(t, "try again", resps[0]["message"], "the message with CaptureContent")
	assert.Equal(t, "hello there", resps[1]["text"])
	assert.Equal(t, "stop", resps[1]["finish_reason"])
	assert.EqualValues(t, 2, resps[1]["output_tokens"])
	assert.Len(t, byMsg(recs, "cloudinfer retry"), 1, "the client's retry record goes to the same logger")

	// Without content capture, and with a veto from the hooks.
	buf.Reset()
	fake2 := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Response: &cloudreq.CloudResponse{StatusCode: 200}}}}
	c2, err := cloudreq.New(cloudreq.Options{
		Adapters:    []cloudreq.Adapter{fake2},
		CallOptions: cloudreq.CallOptions{Hooks: set, Retry: cloudreq.RetryOptions{MaxAttempts: 1}},
	}, WithLogging(logger, LogOptions{}))
	require.NoError(t, err)
	_, err = c2.Invoke(context.Background(), generateReq())
	require.ErrorIs(t, err, errcodes.ModelError)
	recs = jsonLines(t, &buf)
	resps = byMsg(recs, LogMsgResponse)
	require.Len(t, resps, 1)
	assert.Equal(t, "ERR_MODEL_ERROR", resps[0]["code"], "the log shows the outcome after the veto")
	assert.Equal(t, "WARN", resps[0]["level"])
	assert.NotContains(t, buf.String(), "the secret prompt")
	assert.NotContains(t, buf.String(), "empty text")
}

// TestLogContentScrubbed: captured content — the request body, messages,
// the generated text, an error's message — has the credentials the
// attempt sent replaced, wherever they occur in it.
func TestLogContentScrubbed(t *testing.T) {
	const tok, key = "tok0123456789abcdef", "key0123456789abcdef"
	var buf bytes.Buffer
	vetoed := errcodes.New(errcodes.ModelError, "the model said "+key)
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{
		{Response: &cloudreq.CloudResponse{StatusCode: 200, Text: "you sent " + tok + " and " + key}},
		{Response: &cloudreq.CloudResponse{StatusCode: 200, Text: "veto me"}}}}
	veto := &hooks.Set{}
	require.NoError(t, veto.Deserialize.Add("veto", hooks.PostDeserializeFunc(func(_ context.Context, _ *cloudreq.CloudRequest, resp *cloudreq.CloudResponse, _ error) error {
		if resp != nil && resp.Text == "veto me" {
			return vetoed // a hook's error is not scrubbed by the client
		}
		return nil
	})))
	c, err := cloudreq.New(cloudreq.Options{
		Adapters:    []cloudreq.Adapter{fake},
		CallOptions: cloudreq.CallOptions{Hooks: veto, Retry: cloudreq.RetryOptions{MaxAttempts: 1}},
	},
		WithLogging(jsonLogger(&buf), LogOptions{CaptureContent: true}))
	require.NoError(t, err)
	for range 2 {
		req := generateReq()
		req.Action = cloudreq.ActionInvoke
		req.Payload.Body = []byte(`{"echo":"` + tok + `"}`)
		req.Generate.Messages[0].Content = "my key is " + key
		req.Header = http.Header{"Authorization": {"Bearer " + tok}, "X-Api-Key": {key}}
		_, _ = c.Invoke(context.Background(), req)
	}
	recs := jsonLines(t, &buf)
	require.Len(t, recs, 4)
	assert.Equal(t, `{"echo":"[REDACTED]"}`, recs[0]["body"])
	assert.Contains(t, recs[0]["input_messages"], "my key is [REDACTED]")
	assert.Equal(t, "you sent [REDACTED] and [REDACTED]", recs[1]["text"])
	assert.Equal(t, "the model said [REDACTED]", recs[3]["message"])
	assert.NotContains(t, buf.String(), tok)
	assert.NotContains(t, buf.String(), key)
}

// TestLogIDsOnlyWhenIDs: a request id or provider code that is not an id
// (free text a server put there) is left out of the records.
func TestLogIDsOnlyWhenIDs(t *testing.T) {
	const secret = "SECRET123"
	var buf bytes.Buffer
	denied := errcodes.New(errcodes.Unauthenticated, "denied")
	denied.ProviderCode, denied.RequestID = "Denied token="+secret, "r-0 sig="+secret
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Err: denied},
		{Response: &cloudreq.CloudResponse{StatusCode: 200, RequestID: "r-1 sig=" + secret}}}}
	c, err := cloudreq.New(cloudreq.Options{
		Adapters:    []cloudreq.Adapter{fake},
		CallOptions: cloudreq.CallOptions{Retry: cloudreq.RetryOptions{MaxAttempts: 1}},
	},
		WithLogging(jsonLogger(&buf), LogOptions{}))
	require.NoError(t, err)
	req := generateReq()
	req.RequestID = "mine api_key=" + secret
	_, err = c.Invoke(context.Background(), req)
	require.Error(t, err)
	_, err = c.Invoke(context.Background(), req)
	require.NoError(t, err)
	recs := jsonLines(t, &buf)
	require.Len(t, recs, 4)
	for _, r := range recs {
		for _, k := range []string{"request_id", "provider_request_id", "provider_code"} {
			assert.NotContains(t, r, k)
		}
	}
	assert.Equal(t, "ERR_UNAUTHENTICATED", recs[1]["code"])
	assert.NotContains(t, buf.String(), secret)
}

// TestLoggedHeadersAreNotCredentials: no allow-listed header is a
// credential header, and a credential header never shows its value even
// if it were listed.
func TestLoggedHeadersAreNotCredentials(t *testing.T) {
	for _, h := range loggedHeaders {
		assert.False(t, cloudreq.IsCredentialHeader(h), h)
		assert.True(t, isLoggedHeader(strings.ToLower(h)), h)
	}
	for _, h := range cloudreq.CredentialHeaders {
		assert.False(t, isLoggedHeader(h), h)
	}
}

// TestLogPath: a request path is logged without its query and fragment;
// one that does not parse as a URL reference is not logged as it is.
func TestLogPath(t *testing.T) {
	const secret = "SECRET123"
	for _, tc := range []struct{ path, want string }{
		{"/v1/x", "/v1/x"},
		{"/oauth/cb?code=" + secret + "&state=s1", "/oauth/cb"},
		{"v1/predict?token=" + secret + "#f", "v1/predict"},
		{"//me:" + secret + "@host/x", "//host/x"},
		{"/v1/x%zz?token=" + secret, unparsable},
		{"me:" + secret + "@host/x", unparsable},
		{"", ""},
	} {
		assert.Equal(t, tc.want, pathValue(tc.path), masked(tc.path, secret))
	}
}

// TestIDValue: ids and codes are emitted only when they are single
// tokens of id characters.
func TestIDValue(t *testing.T) {
	for _, ok := range []string{"r-1", "5f0c8e2a-1b2c-4d5e-8f90-0a1b2c3d4e5f", "ThrottlingException", "RESOURCE_EXHAUSTED",
		"Service.Unavailable", "req_abc123", "arn:aws:sagemaker/x", "429"} {
		v, emitted := idValue(ok)
		assert.True(t, emitted, ok)
		assert.Equal(t, ok, v)
	}
	for _, bad := range []string{"", "r-1 sig=x", "token=abc", "Bearer abc", "[REDACTED]", "a\nb", strings.Repeat("a", 129), "é"} {
		_, emitted := idValue(bad)
		assert.False(t, emitted, bad)
	}
}

// nilErrHooks returns a typed nil error (a nil *errcodes.Error in the
// error interface) from every phase: no error, as cloudreq reads it.
type nilErrHooks struct{}

func (nilErrHooks) PreValidate(context.Context, *cloudreq.CloudRequest) error {
	return (*errcodes.Error)(nil)
}

func (nilErrHooks) PreSerialize(context.Context, *cloudreq.CloudRequest) error {
	return (*errcodes.Error)(nil)
}

func (nilErrHooks) PostDeserialize(context.Context, *cloudreq.CloudRequest, *cloudreq.CloudResponse, error) error {
	return (*errcodes.Error)(nil)
}

// TestWithLoggingTypedNilHookErrors: a typed nil error from the hooks is
// no error, for the log as for the client.
func TestWithLoggingTypedNilHookErrors(t *testing.T) {
	var buf bytes.Buffer
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Response: &cloudreq.CloudResponse{StatusCode: 200}}}}
	c, err := cloudreq.New(cloudreq.Options{
		Adapters:    []cloudreq.Adapter{fake},
		CallOptions: cloudreq.CallOptions{Hooks: nilErrHooks{}, Retry: cloudreq.RetryOptions{MaxAttempts: 1}},
	}, WithLogging(slog.New(slog.NewJSONHandler(&buf, nil)), LogOptions{}))
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Invoke(context.Background(), generateReq())
	require.NoError(t, err)

	recs := jsonLines(t, &buf)
	require.Len(t, byMsg(recs, LogMsgRequest), 1, "the request is logged")
	resps := byMsg(recs, LogMsgResponse)
	require.Len(t, resps, 1)
	assert.Equal(t, "INFO", resps[0]["level"], "a success")
	assert.NotContains(t, resps[0], "code")
	assert.EqualValues(t, 200, resps[0]["status"])
}

// TestLogErrorWithoutCode: an error without a code is logged as
// ERR_UNKNOWN, as errcodes writes it everywhere else.
func TestLogErrorWithoutCode(t *testing.T) {
	var buf bytes.Buffer
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Err: &errcodes.Error{Message: "no code"}}}}
	c, err := cloudreq.New(cloudreq.Options{
		Adapters:    []cloudreq.Adapter{fake},
		CallOptions: cloudreq.CallOptions{Retry: cloudreq.RetryOptions{MaxAttempts: 1}},
	},
		WithLogging(slog.New(slog.NewJSONHandler(&buf, nil)), LogOptions{}))
	require.NoError(t, err)
	_, err = c.Invoke(context.Background(), generateReq())
	require.Error(t, err)
	resps := byMsg(jsonLines(t, &buf), LogMsgResponse)
	require.Len(t, resps, 1)
	assert.Equal(t, "ERR_UNKNOWN", resps[0]["code"])
}

// TestLogDisabledLevel: a logger that would drop every record costs the
// call no observer.
func TestLogDisabledLevel(t *testing.T) {
	var buf bytes.Buffer
	l := NewLogObserver(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelError + 1})), LogOptions{})
	_, co := l.StartCall(context.Background(), generateReq(), false)
	assert.Nil(t, co)
	_, co = NewLogObserver(jsonLogger(&buf), LogOptions{}).StartCall(context.Background(), generateReq(), false)
	assert.NotNil(t, co)
}

// TestLogStream: a stream attempt is logged when it ends, with what it
// opened with, or with the error that broke it.
func TestLogStream(t *testing.T) {
	var buf bytes.Buffer
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Chunks: []cloudreq.StreamChunk{{Text: "a"}},
		StreamErr: errcodes.New(errcodes.StreamInterrupted, "broke")}}}
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{fake}}, WithLogging(jsonLogger(&buf), LogOptions{}))
	require.NoError(t, err)
	s, err := c.Stream(context.Background(), generateReq())
	require.NoError(t, err)
	for s.Next() {
	}
	require.Error(t, s.Err())
	recs := jsonLines(t, &buf)
	require.Len(t, recs, 2)
	assert.Equal(t, LogMsgRequest, recs[0]["msg"])
	assert.Equal(t, "ERR_STREAM_INTERRUPTED", recs[1]["code"])
}
