package telemetry

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/cloudreq/cloudreqtest"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/hooks"
)

// TestSentinelSecret sets one unique token as every kind of credential a
// request can carry, makes calls that succeed, fail and are retried, and
// checks that the token appears nowhere: not in logs (JSON and text), span
// names, attributes, events or statuses, metric attributes, nor the
// returned errors' strings. With content captured (logs and spans), a
// server that quotes a credential header back — in its text, its request
// id, its error — does not carry it there either.
func TestSentinelSecret(t *testing.T) {
	var raw [12]byte
	_, _ = rand.Read(raw[:])
	token := "SeNtInEl" + hex.EncodeToString(raw[:])

	// What the adapter answers: an error wrapping a native error that
	// quotes the token (the portable Message does not), a transport error
	// whose URL carries the token, and a success.
	native := fmt.Errorf("provider rejected Authorization: Bearer %s", token)
	authErr := errcodes.Wrap(native, errcodes.Unauthenticated, "authorization failed")
	authErr.HTTPStatus, authErr.ProviderCode = 401, "Unauthorized"
	throttled := errcodes.Wrap(native, errcodes.Throttled, "slow down")
	transport := &url.Error{Op: "Post", URL: "https://h.example/score?sig=" + token, Err: errors.New("connection refused")}
	echoErr := errcodes.New(errcodes.Unauthenticated, "bad credential "+token)
	echoErr.HTTPStatus, echoErr.ProviderCode, echoErr.RequestID = 401, token, token
	outcomes := map[string][]cloudreqtest.Outcome{
		"auth-fails": {{Err: authErr}},
		"retried":    {{Err: throttled}, {Response: &cloudreq.CloudResponse{StatusCode: 200, Text: "ok", RequestID: "r-1"}}},
		"transport":  {{Err: transport}},
		"ok-stream":  {{Chunks: []cloudreq.StreamChunk{{Text: "a"}, {Text: "b"}}}},
		// The server quotes the credential back; content is captured.
		"echo-ok":     {{Response: &cloudreq.CloudResponse{StatusCode: 200, Text: "you sent " + token, RequestID: token}}},
		"echo-error":  {{Err: echoErr}},
		"echo-stream": {{Chunks: []cloudreq.StreamChunk{{Text: token}}}},
	}

	// Every kind of credential a CloudRequest can carry.
	type cred struct {
		name     string
		header   http.Header
		endpoint string
		path     string
	}
	creds := []cred{
		{name: "bearer", header: http.Header{"Authorization": {"Bearer " + token}}},
		{name: "eas-signature", header: http.Header{"Authorization": {"EAS " + token}}},
		{name: "eas-raw-token", header: http.Header{"Authorization": {token}}},
		{name: "x-api-key", header: http.Header{"X-Api-Key": {token}}},
		{name: "api-key", header: http.Header{"Api-Key": {token}}},
		{name: "aws-session", header: http.Header{"X-Amz-Security-Token": {token}}},
		{name: "apim-key", header: http.Header{"Ocp-Apim-Subscription-Key": {token}}},
		{name: "goog-key", header: http.Header{"X-Goog-Api-Key": {token}}},
		{name: "query", endpoint: "https://svc.example.com/api/predict/x?key=" + token + "&sig=" + token},
		{name: "userinfo", endpoint: "https://user:" + token + "@svc.example.com/v1"},
		{name: "path-query", endpoint: "http://127.0.0.1:8000", path: "/v1/chat?sig=" + token},
	}

	var jsonBuf, textBuf bytes.Buffer
	logger := slog.New(fanout{
		slog.NewJSONHandler(&jsonBuf, &slog.HandlerOptions{Level: slog.LevelDebug}),
		slog.NewTextHandler(&textBuf, &slog.HandlerOptions{Level: slog.LevelDebug}),
	})
	var errStrings []string
	var rigs []*rig
	for kind, outs := range outcomes {
		echo := strings.HasPrefix(kind, "echo-")
		for _, c := range creds {
			if echo && c.header == nil {
				// Content is scrubbed of the credentials the request sent
				// in headers or the adapter named; a URL's never leaves
				// the process (endpoints are written as host and path).
				continue
			}
			fake := &cloudreqtest.Adapter{Outcomes: outs}
			r := newRig(t, Options{CaptureContent: echo}, fake, func(o *cloudreq.Options) { o.Hooks = hooks.Default() },
				WithLogging(logger, LogOptions{Level: slog.LevelDebug, CaptureContent: echo}))
			rigs = append(rigs, r)
			req := generateReq()
			req.Header = c.header
			if c.endpoint != "" {
				req.Target.Endpoint = c.endpoint
			}
			req.Target.Path = c.path
			var err error
			if strings.HasSuffix(kind, "-stream") {
				var s *cloudreq.Stream
				if s, err = r.client.Stream(context.Background(), req); err == nil {
					for s.Next() {
					}
					err = s.Err()
				}
			} else {
				_, err = r.client.Invoke(context.Background(), req)
			}
			if err != nil {
				errStrings = append(errStrings, err.Error(), fmt.Sprintf("%v", err))
			}
			require.Equal(t, len(outs), len(fake.Calls()), "%s/%s: every outcome played", kind, c.name)
		}
	}
	require.NotEmpty(t, errStrings, "some calls failed")

	// Logs.
	require.Contains(t, jsonBuf.String(), LogMsgRequest, "requests were logged")
	require.Contains(t, textBuf.String(), LogMsgResponse, "responses were logged")
	require.Contains(t, jsonBuf.String(), "you sent [REDACTED]", "content was captured")
	assert.NotContains(t, jsonBuf.String(), token, "JSON logs")
	assert.NotContains(t, textBuf.String(), token, "text logs")

	// Errors.
	for _, s := range errStrings {
		assert.NotContains(t, s, token, "error string %q", s)
	}

	// Spans and metrics.
	var nSpans, nPoints int
	for _, r := range rigs {
		for _, s := range r.spans.Ended() {
			nSpans++
			assertNoToken(t, token, "span "+s.Name(), spanStrings(s)...)
		}
		for name, m := range r.metrics(t) {
			for _, set := range metricAttrSets(m) {
				nPoints++
				assertNoToken(t, token, "metric "+name, attrStrings(set.ToSlice())...)
			}
		}
	}
	assert.Greater(t, nSpans, len(creds)*len(outcomes), "calls and attempts were traced")
	assert.Greater(t, nPoints, 0, "metrics were recorded")
}

// assertNoToken fails when one of ss holds token; the failure message
// shows where, with the token masked.
func assertNoToken(t *testing.T, token, where string, ss ...string) {
	t.Helper()
	for _, s := range ss {
		if strings.Contains(s, token) {
			t.Errorf("%s holds the sentinel: %q", where, masked(s, token))
		}
	}
}

// masked returns s with every occurrence of secret replaced by a marker, so
// that a failure message can show s without leaking the secret itself.
func masked(s, secret string) string { return strings.ReplaceAll(s, secret, "<LEAKED-SECRET>") }

func attrStrings(kvs []attribute.KeyValue) []string {
	out := make([]string, 0, 2*len(kvs))
	for _, kv := range kvs {
		out = append(out, string(kv.Key), kv.Value.String())
	}
	return out
}

func spanStrings(s sdktrace.ReadOnlySpan) []string {
	out := []string{s.Name(), s.Status().Description}
	out = append(out, attrStrings(s.Attributes())...)
	for _, ev := range s.Events() {
		out = append(out, ev.Name)
		out = append(out, attrStrings(ev.Attributes)...)
	}
	for _, l := range s.Links() {
		out = append(out, attrStrings(l.Attributes)...)
	}
	return out
}

func metricAttrSets(m metricdata.Metrics) []attribute.Set {
	var out []attribute.Set
	switch d := m.Data.(type) {
	case metricdata.Histogram[float64]:
		for _, dp := range d.DataPoints {
			out = append(out, dp.Attributes)
		}
	case metricdata.Histogram[int64]:
		for _, dp := range d.DataPoints {
			out = append(out, dp.Attributes)
		}
	case metricdata.Sum[int64]:
		for _, dp := range d.DataPoints {
			out = append(out, dp.Attributes)
		}
	}
	return out
}

// fanout sends each record to several handlers.
type fanout []slog.Handler

func (f fanout) Enabled(ctx context.Context, l slog.Level) bool {
	for _, h := range f {
		if h.Enabled(ctx, l) {
			return true
		}
	}
	return false
}

func (f fanout) Handle(ctx context.Context, r slog.Record) error {
	var errs []error
	for _, h := range f {
		if h.Enabled(ctx, r.Level) {
			errs = append(errs, h.Handle(ctx, r.Clone()))
		}
	}
	return errors.Join(errs...)
}

func (f fanout) WithAttrs(as []slog.Attr) slog.Handler {
	out := make(fanout, len(f))
	for i, h := range f {
		out[i] = h.WithAttrs(as)
	}
	return out
}

func (f fanout) WithGroup(name string) slog.Handler {
	out := make(fanout, len(f))
	for i, h := range f {
		out[i] = h.WithGroup(name)
	}
	return out
}
