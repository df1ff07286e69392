package faults

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// TestResetBeforeFirstByteRetried: a connection reset before any response
// byte (over real loopback TCP, linger 0) is a retryable failure for
// Invoke and for Stream; the retry's success is the call's.
func TestResetBeforeFirstByteRetried(t *testing.T) {
	for _, b := range backends() {
		for _, stream := range modes() {
			t.Run(b.name+"/"+mode(stream), func(t *testing.T) {
				r := newRig(t, b, []answer{{reset: true}, ok(3)})
				texts, resp, err := r.call(context.Background(), stream)
				require.NoError(t, err)
				if stream {
					assert.Equal(t, []string{"tok0 ", "tok1 ", "tok2 "}, texts)
				}
				assert.Equal(t, 2, r.rec.count())
				require.Len(t, resp.Errors, 1)
				assert.Equal(t, errcodes.Unavailable, resp.Errors[0].Code, "%v", resp.Errors[0])
			})
		}
	}
}

// TestResetAfterStreamStarted: once chunks reached the caller, a reset is
// never retried behind the caller's back: the stream ends with
// ERR_STREAM_INTERRUPTED, the chunks already read stay read and counted,
// and the server sees no second attempt.
func TestResetAfterStreamStarted(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			got := make(chan struct{})
			r := newRig(t, b, []answer{{chunks: 2, end: endReset, cutWhen: got}, ok(3)})
			texts, resp, err := r.streamEach(context.Background(), func(texts []string) {
				if len(texts) == 2 {
					close(got)
				}
			})
			var e *errcodes.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, errcodes.StreamInterrupted, e.Code, "%v", err)
			assert.False(t, e.Retryable)
			assert.Equal(t, []string{"tok0 ", "tok1 "}, texts)
			require.NotNil(t, resp)
			assert.Equal(t, 2, resp.Usage.OutputTokens)
			assert.Empty(t, resp.FinishReason)
			time.Sleep(100 * time.Millisecond)
			assert.Equal(t, 1, r.rec.count(), "never silently retried")
		})
	}
}

// TestCutMidBodyRetried: a non-streaming response whose connection breaks
// halfway through its body (a server or proxy crash) is a retryable
// transport failure — retried, and the retry's success is the call's.
func TestCutMidBodyRetried(t *testing.T) {
	cut := answer{raw: func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "64")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `{"generated_text":"o`)
		flush(w)
		time.Sleep(5 * time.Millisecond)
		abortConn(w, true)
	}}
	for _, b := range httpBackends() {
		t.Run(b.name, func(t *testing.T) {
			r := newRig(t, b, []answer{cut, ok(0)})
			resp, err := r.invoke(context.Background())
			require.NoError(t, err)
			assert.Equal(t, 2, r.rec.count())
			require.Len(t, resp.Errors, 1)
			assert.Equal(t, errcodes.Unavailable, resp.Errors[0].Code, "%v", resp.Errors[0])
		})
	}
}
