package faults

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// retryAfterCase is one form of a server-requested delay.
type retryAfterCase struct {
	name string
	// header builds the headers inside the bubble (HTTP dates need its clock).
	header func() http.Header
	// retried says whether the client retries; wait is then the least
	// time it must have waited, and the error's RetryAfter otherwise.
	retried bool
	wait    time.Duration
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

var retryAfterCases = []retryAfterCase{
	{"seconds", func() http.Header { return hdr("Retry-After", "3") }, true, 3 * time.Second},
	{"http-date", func() http.Header {
		return hdr("Retry-After", time.Now().Add(5*time.Second).UTC().Format(http.TimeFormat))
	}, true, 5 * time.Second},
	{"past-http-date", func() http.Header {
		return hdr("Retry-After", time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat))
	}, true, 0},
	{"retry-after-ms", func() http.Header { return hdr("retry-after-ms", "1500") }, true, 1500 * time.Millisecond},
	{"x-ms-retry-after-ms", func() http.Header { return hdr("x-ms-retry-after-ms", "2500") }, true, 2500 * time.Millisecond},
	{"x-amz-retry-after", func() http.Header { return hdr("x-amz-retry-after", "700") }, true, 700 * time.Millisecond},
	{"ms-beats-seconds", func() http.Header { return hdr("Retry-After", "9", "retry-after-ms", "200") }, true, 200 * time.Millisecond},
	{"invalid", func() http.Header { return hdr("Retry-After", "soon") }, true, 0},
	{"negative", func() http.Header { return hdr("Retry-After", "-4") }, true, 0},
	{"huge-seconds", func() http.Header { return hdr("Retry-After", "86400") }, false, 24 * time.Hour},
	{"overflowing-seconds", func() http.Header { return hdr("Retry-After", "99999999999999999999999") }, false, time.Duration(math.MaxInt64)},
	{"overflowing-ms", func() http.Header { return hdr("x-amz-retry-after", "1"+strings.Repeat("0", 40)) }, false, time.Duration(math.MaxInt64)},
	{"far-http-date", func() http.Header {
		return hdr("Retry-After", time.Now().Add(48*time.Hour).UTC().Format(http.TimeFormat))
	}, false, 48 * time.Hour},
}

// TestRetryAfterForms answers a 429 (and a 503) carrying each form of
// Retry-After, then success, on an in-memory network inside a
// testing/synctest bubble, so that the waits are exact: a usable delay
// is waited in full before the second attempt; an invalid one is ignored
// (plain backoff); one beyond MaxRetryAfter — overflowing values included
// — ends the retries at once and stays on the error for the caller.
func TestRetryAfterForms(t *testing.T) {
	for _, b := range httpBackends() {
		for _, status := range []int{429, 503} {
			for _, c := range retryAfterCases {
				t.Run(b.name+"/"+http.StatusText(status)+"/"+c.name, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						r := newRig(t, b, []answer{{status: status, header: c.header()}, ok(0)}, inMemory())
						start := time.Now()
						resp, err := r.invoke(context.Background())
						elapsed := time.Since(start)
						att := r.rec.attempts()
						if !c.retried {
							require.Error(t, err)
							var e *errcodes.Error
							require.True(t, errors.As(err, &e))
							assert.Len(t, att, 1, "a delay past MaxRetryAfter ends the retries")
							assert.Equal(t, c.wait, e.RetryAfter, "the server's delay is kept for the caller")
							assert.Less(t, elapsed, time.Second, "nothing was waited")
							return
						}
						require.NoError(t, err)
						require.NotNil(t, resp)
						require.Len(t, att, 2)
						gap := att[1].at.Sub(att[0].at)
						assert.GreaterOrEqual(t, gap, c.wait, "waited at least the server's delay")
						// Beyond the delay, at most one backoff step (4 ms).
						assert.LessOrEqual(t, gap, c.wait+5*time.Millisecond)
					})
				})
			}
		}
	}
}

// TestRetryAfterNeverPastDeadline: a Retry-After that would end after the
// call's deadline is not waited; the call fails at once with the server's
// error (not a timeout), its RetryAfter kept.
func TestRetryAfterNeverPastDeadline(t *testing.T) {
	for _, b := range httpBackends() {
		t.Run(b.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, b, []answer{{status: 429, header: hdr("Retry-After", "10")}, ok(0)}, inMemory(),
					withClient(func(o *cloudreq.Options) { o.Timeout = 4 * time.Second }))
				start := time.Now()
				_, err := r.invoke(context.Background())
				require.Error(t, err)
				assert.Equal(t, errcodes.Throttled, errcodes.Of(err))
				assert.Equal(t, 1, r.rec.count())
				assert.Less(t, time.Since(start), 4*time.Second, "returned before the deadline")
				var e *errcodes.Error
				require.True(t, errors.As(err, &e))
				assert.Equal(t, 10*time.Second, e.RetryAfter)

				// Within the deadline it is honoured.
				r = newRig(t, b, []answer{{status: 429, header: hdr("Retry-After", "3")}, ok(0)}, inMemory(),
					withClient(func(o *cloudreq.Options) { o.Timeout = 4 * time.Second }))
				_, err = r.invoke(context.Background())
				require.NoError(t, err)
				att := r.rec.attempts()
				require.Len(t, att, 2)
				assert.GreaterOrEqual(t, att[1].at.Sub(att[0].at), 3*time.Second)
			})
		})
	}
}

// TestRetryAfterCapIsConsistent: MaxRetryAfter is the one cap for every
// form: just under it is waited, just over it ends the retries.
func TestRetryAfterCapIsConsistent(t *testing.T) {
	for _, b := range httpBackends() {
		for _, form := range []struct {
			name  string
			under http.Header
			over  http.Header
		}{
			{"seconds", hdr("Retry-After", "5"), hdr("Retry-After", "6")},
			{"retry-after-ms", hdr("retry-after-ms", "5000"), hdr("retry-after-ms", "5001")},
			{"x-ms-retry-after-ms", hdr("x-ms-retry-after-ms", "5000"), hdr("x-ms-retry-after-ms", "5001")},
			{"x-amz-retry-after", hdr("x-amz-retry-after", "5000"), hdr("x-amz-retry-after", "5001")},
		} {
			t.Run(b.name+"/"+form.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					cap5 := withClient(func(o *cloudreq.Options) { o.Retry.MaxRetryAfter = 5 * time.Second })
					r := newRig(t, b, []answer{{status: 503, header: form.under}, ok(0)}, inMemory(), cap5)
					_, err := r.invoke(context.Background())
					require.NoError(t, err)
					assert.Equal(t, 2, r.rec.count())

					r = newRig(t, b, []answer{{status: 503, header: form.over}, ok(0)}, inMemory(), cap5)
					_, err = r.invoke(context.Background())
					require.Error(t, err)
					assert.Equal(t, 1, r.rec.count())
				})
			})
		}
	}
}

// TestRetryInfoVertex is the gRPC form of Retry-After: a RetryInfo detail
// on RESOURCE_EXHAUSTED is waited before the retry when within
// MaxRetryAfter, and ends the retries (kept on the error) beyond it or
// past the call's deadline.
func TestRetryInfoVertex(t *testing.T) {
	b := vertexBackend()
	t.Run("honoured", func(t *testing.T) {
		r := newRig(t, b, []answer{{status: 429, retryInfo: 300 * time.Millisecond}, ok(0)})
		_, err := r.invoke(context.Background())
		require.NoError(t, err)
		att := r.rec.attempts()
		require.Len(t, att, 2)
		assert.GreaterOrEqual(t, att[1].at.Sub(att[0].at), 300*time.Millisecond)
	})
	t.Run("beyond-cap", func(t *testing.T) {
		r := newRig(t, b, []answer{{status: 429, retryInfo: time.Hour}, ok(0)})
		_, err := r.invoke(context.Background())
		var e *errcodes.Error
		require.True(t, errors.As(err, &e))
		assert.Equal(t, time.Hour, e.RetryAfter)
		assert.Equal(t, 1, r.rec.count())
	})
	t.Run("past-deadline", func(t *testing.T) {
		r := newRig(t, b, []answer{{status: 429, retryInfo: 10 * time.Second}, ok(0)},
			withClient(func(o *cloudreq.Options) { o.Timeout = 2 * time.Second }))
		start := time.Now()
		_, err := r.invoke(context.Background())
		assert.Equal(t, errcodes.Throttled, errcodes.Of(err))
		assert.Equal(t, 1, r.rec.count())
		assert.Less(t, time.Since(start), 10*time.Second, "the delay was not waited")
	})
}

// TestEmulatorRetryDelayPerProvider: against the emulator, a throttled
// call is retried as it would be in production, each adapter reading the
// retry delay its provider sends. An endpoint whose token bucket refills
// every 500 ms (real) throttles the call after a first one: Azure ML's
// retry-after-ms and Vertex's RetryInfo are waited exactly, so the first
// retry gets the next token; OpenAI's Retry-After is whole seconds, so
// the client waits a full second; SageMaker and PAI-EAS send no delay, so
// the client backs off on its own (here at most 4 ms) and its three
// attempts are all throttled.
func TestEmulatorRetryDelayPerProvider(t *testing.T) {
	const scale = 0.05
	for p, name := range emulatorProviders {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			phi, ok := emulator.BuiltinProfile("phi-3-mini")
			require.True(t, ok)
			phi.Throttle = &emulator.TokenBucket{RatePerSec: 0.1, Burst: 1} // a token every 10 s emulated, 500 ms real
			srv, err := emulator.New(emulator.Options{TimeScale: scale, Seed: 9, Endpoints: []emulator.Endpoint{{Name: "phi-3-mini", Profile: phi}}})
			require.NoError(t, err)
			require.NoError(t, srv.Start("127.0.0.1:0", "127.0.0.1:0"))
			t.Cleanup(func() { _ = srv.Close() })
			tr := &http.Transport{}
			t.Cleanup(tr.CloseIdleConnections)
			c := emulatorClient(t, srv, &http.Client{Transport: tr})

			_, err = c.Invoke(context.Background(), emulatorRequest(p, ""))
			require.NoError(t, err, "the bucket's one token")
			resp, err := c.Invoke(context.Background(), emulatorRequest(p, ""))
			switch name {
			case "sagemaker", "paieas":
				assert.Equal(t, errcodes.Throttled, errcodes.Of(err), "no delay to wait: the fast backoff is throttled throughout")
				var e *errcodes.Error
				require.ErrorAs(t, err, &e)
				assert.Zero(t, e.RetryAfter, "the provider sent no delay")
				assert.Equal(t, 1+3, waitRecords(srv, 4))
			default:
				require.NoError(t, err, "the delay was waited: the first retry got the next token")
				require.Len(t, resp.Timing.Attempts, 2)
				assert.Equal(t, string(errcodes.Throttled), resp.Timing.Attempts[0].Code)
				wait := resp.Timing.Attempts[1].Backoff
				if name == "openai" {
					assert.Equal(t, time.Second, wait, "Retry-After in whole seconds")
				} else {
					assert.LessOrEqual(t, wait, 500*time.Millisecond+time.Millisecond, "the time to the next token, to the millisecond")
				}
			}
		})
	}
}
