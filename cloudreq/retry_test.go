package cloudreq_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/cloudreq/cloudreqtest"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

func req() *cloudreq.CloudRequest {
	return &cloudreq.CloudRequest{Provider: "openai", Service: "openai-compatible", Action: "invoke",
		Target: cloudreq.Target{Model: "m"}, Payload: cloudreq.Payload{Body: []byte(`{"prompt":"hi"}`)}}
}

func client(t *testing.T, fake *cloudreqtest.Adapter, fns ...func(*cloudreq.Options)) *cloudreq.Client {
	t.Helper()
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{fake}}, fns...)
	require.NoError(t, err)
	return c
}

func failing(e *errcodes.Error) *cloudreqtest.Adapter {
	return &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Err: e}}}
}

func TestAttemptsPerCode(t *testing.T) {
	for _, code := range errcodes.All {
		t.Run(string(code), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := failing(errcodes.New(code, "boom"))
				start := time.Now()
				_, err := client(t, fake).Invoke(context.Background(), req())
				require.Error(t, err)
				assert.Equal(t, code, errcodes.Of(err))
				assertAttempts(t, code, len(fake.Calls()), time.Since(start))
			})
		})
	}
}

// TestBareCodeFromAdapter: an adapter error that carries a bare
// errcodes.Code (errcodes.Throttled, or one wrapped with %w) keeps its
// code and that code's retryability.
func TestBareCodeFromAdapter(t *testing.T) {
	for _, code := range errcodes.All {
		t.Run(string(code), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Err: fmt.Errorf("adapter: %w", code)}}}
				start := time.Now()
				_, err := client(t, fake).Invoke(context.Background(), req())
				require.Error(t, err)
				assert.Equal(t, code, errcodes.Of(err))
				assertAttempts(t, code, len(fake.Calls()), time.Since(start))
			})
		})
	}
}

// assertAttempts checks the attempts a call that always failed with code
// made under the default retry options, and how long it took: one for a
// final code, MaxAttempts for a retryable one, and, for ERR_MODEL_NOT_READY,
// as many as the cold-start wait allowed, over exactly that wait.
func assertAttempts(t *testing.T, code errcodes.Code, attempts int, took time.Duration) {
	t.Helper()
	switch {
	case code == errcodes.ModelNotReady:
		assert.Greater(t, attempts, cloudreq.DefaultMaxAttempts)
		assert.Equal(t, cloudreq.DefaultColdStartWait, took)
	case code.Retryable():
		assert.Equal(t, cloudreq.DefaultMaxAttempts, attempts)
	default:
		assert.Equal(t, 1, attempts)
	}
}

func TestAdapterRetryableOverride(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := errcodes.New(errcodes.Unavailable, "permanent")
		e.Retryable = false
		fake := failing(e)
		_, err := client(t, fake).Invoke(context.Background(), req())
		assert.Equal(t, errcodes.Unavailable, errcodes.Of(err))
		assert.Len(t, fake.Calls(), 1)
	})
}

func TestRetryThenSuccessAndBodyReplay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{
			{Err: errcodes.New(errcodes.Throttled, "1")},
			{Err: errcodes.New(errcodes.Unavailable, "2")},
			{Response: &cloudreq.CloudResponse{StatusCode: 200, Data: []byte("ok")}},
		}}
		r := req()
		resp, err := client(t, fake).Invoke(context.Background(), r)
		require.NoError(t, err)
		assert.Equal(t, "ok", string(resp.Data))
		calls := fake.Calls()
		require.Len(t, calls, 3)
		for i, c := range calls {
			assert.Equal(t, i+1, c.Attempt)
			assert.True(t, bytes.Equal(r.Payload.Body, c.Body), "attempt %d body replayed byte-identical", i+1)
		}
		require.Len(t, resp.Errors, 2)
		assert.Equal(t, errcodes.Throttled, resp.Errors[0].Code)
		require.Len(t, resp.Timing.Attempts, 3)
		assert.Equal(t, string(errcodes.Throttled), resp.Timing.Attempts[0].Code)
		assert.Empty(t, resp.Timing.Attempts[2].Code)
	})
}

func TestOneShotBodyIsNeverRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := failing(errcodes.New(errcodes.Unavailable, "down"))
		r := req()
		r.Payload = cloudreq.Payload{Reader: strings.NewReader("stream me")}
		_, err := client(t, fake).Invoke(context.Background(), r)
		assert.Equal(t, errcodes.Unavailable, errcodes.Of(err))
		require.Len(t, fake.Calls(), 1)
		assert.Equal(t, "stream me", string(fake.Calls()[0].Body))
	})
}

func TestRetryAfterHonoured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := errcodes.New(errcodes.Throttled, "wait")
		e.RetryAfter = 3 * time.Second
		fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Err: e}, {}}}
		start := time.Now()
		_, err := client(t, fake).Invoke(context.Background(), req())
		require.NoError(t, err)
		assert.GreaterOrEqual(t, time.Since(start), 3*time.Second)
		assert.Less(t, time.Since(start), 4*time.Second)
	})
}

func TestRetryAfterBeyondCapEndsRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := errcodes.New(errcodes.Throttled, "wait an hour")
		e.RetryAfter = time.Hour
		fake := failing(e)
		start := time.Now()
		_, err := client(t, fake).Invoke(context.Background(), req())
		var ce *errcodes.Error
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, time.Hour, ce.RetryAfter, "the server's wish is kept for the caller")
		assert.Len(t, fake.Calls(), 1)
		assert.Zero(t, time.Since(start))
	})
}

func TestNeverSleepsPastDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := errcodes.New(errcodes.Throttled, "wait")
		e.RetryAfter = 5 * time.Second
		fake := failing(e)
		start := time.Now()
		_, err := client(t, fake, func(o *cloudreq.Options) { o.Timeout = 4 * time.Second }).Invoke(context.Background(), req())
		assert.Equal(t, errcodes.Throttled, errcodes.Of(err), "the real error, not a timeout")
		assert.Len(t, fake.Calls(), 1)
		assert.Less(t, time.Since(start), time.Second)
	})
}

func TestCancelDuringBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := errcodes.New(errcodes.Throttled, "wait")
		e.RetryAfter = 10 * time.Second
		fake := failing(e)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		start := time.Now()
		_, err := client(t, fake).Invoke(ctx, req())
		assert.Equal(t, errcodes.Canceled, errcodes.Of(err))
		assert.True(t, errors.Is(err, context.Canceled))
		assert.Equal(t, time.Second, time.Since(start), "returns the moment it is canceled")
		assert.Len(t, fake.Calls(), 1, "no further attempt")
	})
}

func TestAttemptTimeoutIsRetriedCallTimeoutIsNot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Block: true}, {}}}
		_, err := client(t, fake, func(o *cloudreq.Options) { o.AttemptTimeout = time.Second }).Invoke(context.Background(), req())
		require.NoError(t, err)
		assert.Len(t, fake.Calls(), 2)

		fake = &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Block: true}}}
		_, err = client(t, fake, func(o *cloudreq.Options) { o.Timeout = time.Second }).Invoke(context.Background(), req())
		assert.Equal(t, errcodes.Timeout, errcodes.Of(err))
		assert.Len(t, fake.Calls(), 1)
	})
}

func TestBudgetDrainedFailsFast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		budget := cloudreq.NewRetryBudget(3 * cloudreq.RetryCost)
		fake := failing(errcodes.New(errcodes.Unavailable, "storm"))
		c := client(t, fake, func(o *cloudreq.Options) { o.Retry.Budget = budget })
		attempts := func() int { return len(fake.Calls()) }

		_, _ = c.Invoke(context.Background(), req()) // 3 attempts, 2 retries
		assert.Equal(t, 3, attempts())
		_, _ = c.Invoke(context.Background(), req()) // 1 retry left in the budget
		assert.Equal(t, 5, attempts())
		assert.Equal(t, 0, budget.Tokens())
		for range 10 {
			_, err := c.Invoke(context.Background(), req())
			assert.Equal(t, errcodes.Unavailable, errcodes.Of(err))
		}
		assert.Equal(t, 15, attempts(), "one attempt per call once the budget is empty: no amplification")
	})
}

func TestBudgetRefilledBySuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		budget := cloudreq.NewRetryBudget(4 * cloudreq.RetryCost)
		// call makes one call, on a fresh fake, with the shared budget, and
		// returns how many attempts it made.
		call := func(outcomes ...cloudreqtest.Outcome) (int, error) {
			fake := &cloudreqtest.Adapter{Outcomes: outcomes}
			_, err := client(t, fake, func(o *cloudreq.Options) { o.Retry.Budget = budget }).Invoke(context.Background(), req())
			return len(fake.Calls()), err
		}
		storm := cloudreqtest.Outcome{Err: errcodes.New(errcodes.Unavailable, "storm")}

		n, err := call(storm)
		require.Error(t, err)
		assert.Equal(t, 3, n)
		assert.Equal(t, 2*cloudreq.RetryCost, budget.Tokens(), "a failed call keeps what its retries took")

		n, err = call()
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		assert.Equal(t, 2*cloudreq.RetryCost+1, budget.Tokens(), "a success without retries gives one token back")

		n, err = call(storm, cloudreqtest.Outcome{})
		require.NoError(t, err)
		assert.Equal(t, 2, n)
		assert.Equal(t, 2*cloudreq.RetryCost+1, budget.Tokens(), "a success gives back what its retries took")

		for range 4 * cloudreq.RetryCost {
			_, err = call()
			require.NoError(t, err)
		}
		assert.Equal(t, 4*cloudreq.RetryCost, budget.Tokens(), "never above capacity")
	})
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		h    map[string]string
		want time.Duration
		ok   bool
	}{
		{"seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second, true},
		{"http date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second, true},
		{"past date", map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0, true},
		{"retry-after-ms", map[string]string{"retry-after-ms": "250"}, 250 * time.Millisecond, true},
		{"x-ms-retry-after-ms", map[string]string{"x-ms-retry-after-ms": "1500"}, 1500 * time.Millisecond, true},
		{"x-amz-retry-after", map[string]string{"x-amz-retry-after": "40"}, 40 * time.Millisecond, true},
		{"ms beats seconds", map[string]string{"Retry-After": "9", "retry-after-ms": "100"}, 100 * time.Millisecond, true},
		{"invalid", map[string]string{"Retry-After": "soon"}, 0, false},
		{"negative", map[string]string{"Retry-After": "-3"}, 0, false},
		{"invalid ms falls back", map[string]string{"retry-after-ms": "x", "Retry-After": "2"}, 2 * time.Second, true},
		{"huge", map[string]string{"Retry-After": "99999999999999999999"}, time.Duration(math.MaxInt64), true},
		{"huge but representable", map[string]string{"Retry-After": "9999999999"}, time.Duration(math.MaxInt64), true},
		{"huge ms", map[string]string{"x-amz-retry-after": "1" + strings.Repeat("0", 300)}, time.Duration(math.MaxInt64), true},
		{"fractional ms", map[string]string{"retry-after-ms": "1.5"}, 1500 * time.Microsecond, true},
		{"exponent ms is invalid", map[string]string{"retry-after-ms": "1e3"}, 0, false},
		{"infinite ms is invalid", map[string]string{"retry-after-ms": "Inf"}, 0, false},
		{"fractional seconds are invalid", map[string]string{"Retry-After": "1.5"}, 0, false},
		{"none", nil, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.h {
				h.Set(k, v)
			}
			got, ok := cloudreq.RetryAfter(h, now)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestBackoffIsBoundedFullJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := failing(errcodes.New(errcodes.Unavailable, "x"))
		c := client(t, fake, func(o *cloudreq.Options) {
			o.Retry.MaxAttempts = 6
			o.Retry.BaseDelay = time.Second
			o.Retry.MaxDelay = 4 * time.Second
		})
		start := time.Now()
		_, _ = c.Invoke(context.Background(), req())
		// Ceilings 1+2+4+4+4 s: the total wait is at most their sum.
		assert.LessOrEqual(t, time.Since(start), 15*time.Second)
		resp := fake.Calls()
		assert.Len(t, resp, 6)
	})
}

// TestBaseDelayCappedByMaxDelay: a base delay over the cap waits no more
// than the cap, the first retry included.
func TestBaseDelayCappedByMaxDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := failing(errcodes.New(errcodes.Unavailable, "x"))
		c := client(t, fake, func(o *cloudreq.Options) {
			o.Retry.MaxAttempts = 4
			o.Retry.BaseDelay = 10 * time.Second
			o.Retry.MaxDelay = 100 * time.Millisecond
			o.Retry.NoBudget = true
		})
		start := time.Now()
		_, _ = c.Invoke(context.Background(), req())
		assert.Len(t, fake.Calls(), 4)
		assert.LessOrEqual(t, time.Since(start), 300*time.Millisecond, "three waits of at most 100 ms")
	})
}

// TestPerCallOptionsKeepTheBudget: per-call options that replace the retry
// options wholesale still draw on the client's budget.
func TestPerCallOptionsKeepTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := failing(errcodes.New(errcodes.Unavailable, "storm"))
		c := client(t, fake, func(o *cloudreq.Options) { o.Retry.Budget = cloudreq.NewRetryBudget(0) })
		_, err := c.Invoke(context.Background(), req(), func(o *cloudreq.CallOptions) {
			o.Retry = cloudreq.RetryOptions{MaxAttempts: 3}
		})
		assert.ErrorIs(t, err, errcodes.Unavailable)
		assert.Len(t, fake.Calls(), 1, "the empty client budget allows no retry")
	})
}

// TestBudgetRefundedWhenBackoffCanceled: the tokens a retry takes are
// given back when the call is canceled during the backoff before it, as
// that retry is never sent; a call whose retry was sent keeps them spent.
func TestBudgetRefundedWhenBackoffCanceled(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "Invoke", true: "Stream"}[stream], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				budget := cloudreq.NewRetryBudget(10 * cloudreq.RetryCost)
				e := errcodes.New(errcodes.Throttled, "wait")
				e.RetryAfter = 10 * time.Second
				fake := failing(e)
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(time.Second, cancel)
				c := client(t, fake, func(o *cloudreq.Options) { o.Retry.Budget = budget })
				var err error
				if stream {
					_, err = c.Stream(ctx, req())
				} else {
					_, err = c.Invoke(ctx, req())
				}
				assert.Equal(t, errcodes.Canceled, errcodes.Of(err))
				assert.Len(t, fake.Calls(), 1)
				assert.Equal(t, 10*cloudreq.RetryCost, budget.Tokens(), "no retry was sent")
			})
		})
	}
}
