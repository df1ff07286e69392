package faults

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// TestRetriesExhausted: against a server that always fails with a
// retryable status, a call makes exactly MaxAttempts attempts, sends the
// same bytes on each, returns the last attempt's normalized error, and
// closes every request and response body exactly once (no connection is
// leaked by a failed attempt).
func TestRetriesExhausted(t *testing.T) {
	for _, b := range backends() {
		for _, stream := range []bool{false, true} {
			name := b.name + "/invoke"
			if stream {
				name = b.name + "/stream"
			}
			t.Run(name, func(t *testing.T) {
				ct := &countingTransport{}
				r := newRig(t, b, []answer{fail(503)},
					withTransport(func(rt http.RoundTripper) http.RoundTripper { ct.next = rt; return ct }),
					withClient(func(o *cloudreq.Options) { o.Retry.MaxAttempts = 4 }))
				var err error
				if stream {
					_, _, err = r.stream(context.Background())
				} else {
					var resp *cloudreq.CloudResponse
					resp, err = r.invoke(context.Background())
					assert.Nil(t, resp)
				}
				require.Error(t, err)
				assert.Equal(t, b.code("503", errcodes.Unavailable), errcodes.Of(err))
				att := r.rec.attempts()
				require.Len(t, att, 4, "attempts = MaxAttempts")
				require.NotEmpty(t, att[0].body)
				for i, a := range att[1:] {
					assert.True(t, bytes.Equal(att[0].body, a.body), "attempt %d sent different bytes", i+2)
				}
				if b.grpc {
					return
				}
				assert.Equal(t, []int{1, 1, 1, 1}, ct.responses.closes(), "each response body closed once")
				for i, n := range ct.requests.closes() {
					assert.Equal(t, 1, n, "request body %d closed once", i)
				}
			})
		}
	}
}

// TestOneShotBodyNeverRetried: a Payload.Reader cannot be replayed, so a
// retryable failure ends the call after its one attempt.
func TestOneShotBodyNeverRetried(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			r := newRig(t, b, []answer{fail(503), ok(0)})
			req := b.request(false)
			body := req.Payload.Body
			req.Payload.Body = nil
			req.Payload.Reader = strings.NewReader(string(body))
			_, err := r.client.Invoke(context.Background(), req)
			require.Error(t, err)
			assert.Equal(t, b.code("503", errcodes.Unavailable), errcodes.Of(err))
			att := r.rec.attempts()
			require.Len(t, att, 1, "a one-shot body makes one attempt")
			assert.NotEmpty(t, att[0].body, "the one attempt sent the reader's bytes")
		})
	}
}
