package faults

import (
	"context"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// call makes one Invoke or Stream call (read to its end) on r.
func (r *rig) call(ctx context.Context, stream bool, opts ...func(*cloudreq.CallOptions)) ([]string, *cloudreq.CloudResponse, error) {
	if stream {
		return r.stream(ctx, opts...)
	}
	resp, err := r.invoke(ctx, opts...)
	return nil, resp, err
}

func modes() []bool { return []bool{false, true} }

func mode(stream bool) string {
	if stream {
		return "stream"
	}
	return "invoke"
}

// TestAttemptTimeout: an attempt whose server sends no response headers
// is cut at AttemptTimeout and retried; the retry's success is the
// call's, with the timed-out attempt in Errors.
func TestAttemptTimeout(t *testing.T) {
	runBackends(t, func(t *testing.T, b backend, unit time.Duration, opts ...func(*rigOption)) {
		r := newRig(t, b, nil, append(opts, withClient(func(o *cloudreq.Options) { o.AttemptTimeout = 2 * unit }))...)
		for _, stream := range modes() {
			r.rec.setAnswers(answer{hold: true}, ok(2))
			start := time.Now()
			_, resp, err := r.call(context.Background(), stream)
			require.NoError(t, err, mode(stream))
			assert.GreaterOrEqual(t, time.Since(start), 2*unit)
			assert.Equal(t, 2, r.rec.count(), mode(stream))
			require.Len(t, resp.Errors, 1)
			assert.Equal(t, errcodes.Timeout, resp.Errors[0].Code)
		}
	})
}

// TestNoResponseHeaders: a server that accepts every request and never
// answers costs MaxAttempts attempts of AttemptTimeout each, then
// ERR_TIMEOUT.
func TestNoResponseHeaders(t *testing.T) {
	runBackends(t, func(t *testing.T, b backend, unit time.Duration, opts ...func(*rigOption)) {
		r := newRig(t, b, nil, append(opts, withClient(func(o *cloudreq.Options) { o.AttemptTimeout = unit }))...)
		for _, stream := range modes() {
			r.rec.setAnswers(answer{hold: true})
			start := time.Now()
			_, _, err := r.call(context.Background(), stream)
			assert.Equal(t, errcodes.Timeout, errcodes.Of(err), "%s: %v", mode(stream), err)
			assert.Equal(t, 3, r.rec.count(), mode(stream))
			assert.GreaterOrEqual(t, time.Since(start), 3*unit)
		}
	})
}

// TestOverallTimeout: Options.Timeout bounds the whole call, retries and
// backoff included; when it passes the call ends with a final ERR_TIMEOUT
// and no attempt follows.
func TestOverallTimeout(t *testing.T) {
	runBackends(t, func(t *testing.T, b backend, unit time.Duration, opts ...func(*rigOption)) {
		r := newRig(t, b, nil, append(opts, withClient(func(o *cloudreq.Options) { o.Timeout = 3 * unit }))...)
		for _, stream := range modes() {
			r.rec.setAnswers(answer{hold: true})
			start := time.Now()
			var err error
			within(t, time.Minute, func() { _, _, err = r.call(context.Background(), stream) })
			elapsed := time.Since(start)
			var e *errcodes.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, errcodes.Timeout, e.Code, mode(stream))
			assert.False(t, e.Retryable, "%s: the call's own deadline is final: %#v", mode(stream), e)
			assert.GreaterOrEqual(t, elapsed, 3*unit)
			if !b.grpc {
				assert.Equal(t, 3*unit, elapsed, "ends at the deadline, on synctest's clock")
			}
			time.Sleep(6 * unit)
			assert.Equal(t, 1, r.rec.count(), mode(stream))
		}
	})
}

// TestStallMidBody: a non-streaming response that stops halfway through
// its body is cut at AttemptTimeout (which bounds an attempt until its
// body is complete) and retried.
func TestStallMidBody(t *testing.T) {
	for _, b := range httpBackends() {
		t.Run(b.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				half := answer{raw: func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					w.Header().Set("Content-Length", "64")
					w.WriteHeader(http.StatusOK)
					_, _ = io.WriteString(w, `{"generated_text":"o`)
					flush(w)
					<-r.Context().Done()
				}}
				r := newRig(t, b, []answer{half, ok(0)}, inMemory(),
					withClient(func(o *cloudreq.Options) { o.AttemptTimeout = 2 * time.Second }))
				start := time.Now()
				resp, err := r.invoke(context.Background())
				require.NoError(t, err)
				assert.Equal(t, 2*time.Second, time.Since(start).Truncate(time.Millisecond*10))
				assert.Equal(t, 2, r.rec.count())
				require.Len(t, resp.Errors, 1)
				assert.Equal(t, errcodes.Timeout, resp.Errors[0].Code)
			})
		})
	}
}

// TestStreamStallMidBody: a stream that stalls after two chunks ends at
// StreamIdleTimeout with ERR_TIMEOUT; the two chunks stay read, and the
// stream is not retried (its first chunk reached the caller).
func TestStreamStallMidBody(t *testing.T) {
	runBackends(t, func(t *testing.T, b backend, unit time.Duration, opts ...func(*rigOption)) {
		r := newRig(t, b, []answer{{chunks: 2, end: endStall}},
			append(opts, withClient(func(o *cloudreq.Options) { o.StreamIdleTimeout = 2 * unit }))...)
		start := time.Now()
		var texts []string
		var resp *cloudreq.CloudResponse
		var err error
		within(t, time.Minute, func() { texts, resp, err = r.stream(context.Background()) })
		var e *errcodes.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, errcodes.Timeout, e.Code)
		assert.False(t, e.Retryable)
		assert.Equal(t, []string{"tok0 ", "tok1 "}, texts)
		assert.Equal(t, 2, resp.Usage.OutputTokens)
		assert.GreaterOrEqual(t, time.Since(start), 2*unit)
		time.Sleep(6 * unit)
		assert.Equal(t, 1, r.rec.count(), "not retried after a chunk was delivered")
	})
}

// TestFirstChunkTimeout: a stream whose first chunk does not come within
// FirstChunkTimeout (TTFT) is abandoned and, since nothing reached the
// caller, retried. For gRPC it holds whether the server sends its headers
// at once or only with the first message.
func TestFirstChunkTimeout(t *testing.T) {
	runBackends(t, func(t *testing.T, b backend, unit time.Duration, opts ...func(*rigOption)) {
		firstChunkTimeout(t, b, unit, false, opts...)
		if b.grpc {
			firstChunkTimeout(t, b, unit, true, opts...)
		}
	})
}

func firstChunkTimeout(t *testing.T, b backend, unit time.Duration, lazy bool, opts ...func(*rigOption)) {
	{
		r := newRig(t, b, []answer{{chunks: 2, gap: 10 * unit, lazyHead: lazy}, ok(2)},
			append(opts, withClient(func(o *cloudreq.Options) { o.FirstChunkTimeout = 2 * unit }))...)
		start := time.Now()
		texts, resp, err := r.stream(context.Background())
		require.NoError(t, err)
		assert.Equal(t, []string{"tok0 ", "tok1 "}, texts)
		assert.GreaterOrEqual(t, time.Since(start), 2*unit)
		assert.Less(t, time.Since(start), 10*unit, "the slow first attempt was not waited out")
		assert.Equal(t, 2, r.rec.count())
		require.Len(t, resp.Errors, 1)
		assert.Equal(t, errcodes.Timeout, resp.Errors[0].Code)

		// Without retries, the TTFT timeout is the call's error.
		r.rec.setAnswers(answer{chunks: 2, gap: 10 * unit, lazyHead: lazy})
		_, _, err = r.stream(context.Background(), func(o *cloudreq.CallOptions) { o.Retry.MaxAttempts = 1 })
		assert.Equal(t, errcodes.Timeout, errcodes.Of(err))
	}
}

// TestSlowProgressingStreamNotCut: a stream that takes longer than
// every timeout in total, but whose chunks each come within
// StreamIdleTimeout, completes: AttemptTimeout ends at the headers,
// FirstChunkTimeout at the first chunk, and the idle timer restarts on
// every chunk.
func TestSlowProgressingStreamNotCut(t *testing.T) {
	runBackends(t, func(t *testing.T, b backend, unit time.Duration, opts ...func(*rigOption)) {
		// Each gap (0.4 units) leaves 2.6 units to every timeout (3 units),
		// room for a first attempt that also sets up its connection on a
		// loaded machine; the whole stream (4.8 units) outlasts them all.
		const n = 12
		r := newRig(t, b, []answer{{chunks: n, gap: unit * 4 / 10}},
			append(opts, withClient(func(o *cloudreq.Options) {
				o.AttemptTimeout = 3 * unit
				o.FirstChunkTimeout = 3 * unit
				o.StreamIdleTimeout = 3 * unit
			}))...)
		start := time.Now()
		texts, resp, err := r.stream(context.Background())
		require.NoError(t, err)
		assert.Len(t, texts, n)
		assert.Equal(t, "stop", resp.FinishReason)
		assert.GreaterOrEqual(t, time.Since(start), n*unit*4/10, "longer than every timeout")
		assert.Greater(t, n*unit*4/10, 3*unit)
		assert.Equal(t, 1, r.rec.count())
	})
}
