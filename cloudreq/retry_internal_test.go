package cloudreq

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// newRetrier returns the retrier of a call with options o (defaults
// filled in) and a replayable payload.
func newRetrier(o RetryOptions) *retrier {
	o.setDefaults()
	return &retrier{o: &o, replayable: true}
}

// retryable returns a retryable error of code with the server's delay.
func retryable(code errcodes.Code, after time.Duration) *errcodes.Error {
	e := errcodes.New(code, "x")
	e.Retryable, e.RetryAfter = true, after
	return e
}

// TestRetrierAttempts: next allows MaxAttempts attempts in all, each wait
// within its full-jitter ceiling, and ends at once on an error that is
// not retryable or a payload that cannot be sent again.
func TestRetrierAttempts(t *testing.T) {
	r := newRetrier(RetryOptions{MaxAttempts: 4, BaseDelay: 100 * time.Millisecond, NoBudget: true})
	for i, ceil := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		wait, ok := r.next(retryable(errcodes.Unavailable, 0))
		require.True(t, ok, "retry %d", i+1)
		assert.GreaterOrEqual(t, wait, time.Duration(0))
		assert.LessOrEqual(t, wait, ceil, "retry %d", i+1)
	}
	_, ok := r.next(retryable(errcodes.Unavailable, 0))
	assert.False(t, ok, "the fourth attempt was the last")

	final := errcodes.New(errcodes.InvalidParam, "bad")
	final.Retryable = false
	_, ok = newRetrier(RetryOptions{NoBudget: true}).next(final)
	assert.False(t, ok, "not retryable")

	r = newRetrier(RetryOptions{NoBudget: true})
	r.replayable = false
	_, ok = r.next(retryable(errcodes.Unavailable, 0))
	assert.False(t, ok, "a one-shot payload is not sent twice")
}

// TestRetrierServerDelay: a server delay up to MaxRetryAfter is waited (at
// least), a longer one ends the retries, and so does a wait that would
// end at or past the call's deadline.
func TestRetrierServerDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRetrier(RetryOptions{MaxAttempts: 5, MaxRetryAfter: 10 * time.Second, NoBudget: true})
		wait, ok := r.next(retryable(errcodes.Throttled, 3*time.Second))
		require.True(t, ok)
		assert.Equal(t, 3*time.Second, wait, "the server's delay exceeds the first backoff ceiling")
		_, ok = r.next(retryable(errcodes.Throttled, 11*time.Second))
		assert.False(t, ok, "beyond MaxRetryAfter")

		r = newRetrier(RetryOptions{MaxAttempts: 5, NoBudget: true})
		r.deadline = time.Now().Add(2 * time.Second)
		_, ok = r.next(retryable(errcodes.Throttled, time.Second))
		assert.True(t, ok, "ends before the deadline")
		_, ok = r.next(retryable(errcodes.Throttled, 2*time.Second))
		assert.False(t, ok, "would end at the deadline")
	})
}

// TestRetrierBudget: each retry takes its cost from the budget (a
// timeout's more), a retry the budget cannot pay is not made, an
// abandoned retry gives its tokens back and a success what the call took.
func TestRetrierBudget(t *testing.T) {
	b := NewRetryBudget(RetryCost + TimeoutRetryCost)
	r := newRetrier(RetryOptions{MaxAttempts: 10, BaseDelay: time.Nanosecond, Budget: b})
	_, ok := r.next(retryable(errcodes.Unavailable, 0))
	require.True(t, ok)
	_, ok = r.next(retryable(errcodes.Timeout, 0))
	require.True(t, ok)
	assert.Zero(t, b.Tokens())
	_, ok = r.next(retryable(errcodes.Unavailable, 0))
	assert.False(t, ok, "the budget is empty")

	r.abandoned(retryable(errcodes.Timeout, 0))
	assert.Equal(t, TimeoutRetryCost, b.Tokens(), "the abandoned retry's tokens")
	r.succeeded()
	assert.Equal(t, RetryCost+TimeoutRetryCost, b.Tokens(), "what the call took, up to the capacity")

	b = NewRetryBudget(0)
	r = newRetrier(RetryOptions{MaxAttempts: 10, Budget: b, NoBudget: true})
	_, ok = r.next(retryable(errcodes.Unavailable, 0))
	assert.True(t, ok, "NoBudget: the budget is not drawn on")
}

// TestRetrierColdStartWait: not-ready answers are retried for
// ColdStartWait from the first one, apart from MaxAttempts and the
// budget, at the server's delay when it fits the wait; once the wait is
// spent, or the server asks for longer, the retries end. With the wait
// off they count as any retryable error.
func TestRetrierColdStartWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewRetryBudget(0)
		r := newRetrier(RetryOptions{MaxAttempts: 1, ColdStartWait: time.Minute, ColdStartMaxDelay: 5 * time.Second, Budget: b})
		var waited time.Duration
		for {
			wait, ok := r.next(retryable(errcodes.ModelNotReady, 0))
			if !ok {
				break
			}
			assert.LessOrEqual(t, wait, 5*time.Second, "ColdStartMaxDelay caps the backoff")
			time.Sleep(wait)
			waited += wait
		}
		assert.Equal(t, time.Minute, waited, "the last retry is made when the wait ends")
		assert.Equal(t, r.attempts, r.coldN, "all counted apart from MaxAttempts")

		r = newRetrier(RetryOptions{MaxAttempts: 1, ColdStartWait: time.Minute, Budget: b})
		wait, ok := r.next(retryable(errcodes.ModelNotReady, 20*time.Second))
		require.True(t, ok)
		assert.Equal(t, 20*time.Second, wait, "the server's delay, beyond ColdStartMaxDelay")
		time.Sleep(wait)
		_, ok = r.next(retryable(errcodes.ModelNotReady, 50*time.Second))
		assert.False(t, ok, "the server expects the model after the wait ends")

		r = newRetrier(RetryOptions{MaxAttempts: 2, ColdStartWait: time.Minute, NoBudget: true})
		_, ok = r.next(retryable(errcodes.ModelNotReady, 0))
		require.True(t, ok)
		_, ok = r.next(retryable(errcodes.Unavailable, 0))
		require.True(t, ok, "the not-ready attempt took none of MaxAttempts")
		_, ok = r.next(retryable(errcodes.Unavailable, 0))
		assert.False(t, ok)

		r = newRetrier(RetryOptions{MaxAttempts: 2, ColdStartWait: -1, NoBudget: true})
		_, ok = r.next(retryable(errcodes.ModelNotReady, 0))
		require.True(t, ok)
		_, ok = r.next(retryable(errcodes.ModelNotReady, 0))
		assert.False(t, ok, "with the wait off, within MaxAttempts")
	})
}
