package cloudreq

import (
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// Retry defaults. They follow the AWS standard retryer: three attempts,
// exponential backoff with full jitter from a 100 ms base, capped at 20 s,
// and a 500-token retry budget.
const (
	DefaultMaxAttempts   = 3
	DefaultBaseDelay     = 100 * time.Millisecond
	DefaultMaxDelay      = 20 * time.Second
	DefaultMaxRetryAfter = 20 * time.Second
	DefaultBudgetTokens  = 500
	// DefaultColdStartWait is how long a call waits out not-ready answers
	// by default: long enough for an endpoint to scale from zero and load
	// a model of tens of gigabytes.
	DefaultColdStartWait = 5 * time.Minute
	// DefaultColdStartMaxDelay caps the backoff between not-ready retries
	// by default; it bounds how late after the model is up the call sees
	// it, when the server does not say when to retry.
	DefaultColdStartMaxDelay = 5 * time.Second
	// RetryCost is what one retry takes from the budget; TimeoutRetryCost
	// is what a retry after a timeout takes. A successful call gives back
	// what its retries took, or one token when it needed none.
	RetryCost        = 5
	TimeoutRetryCost = 10
)

// RetryOptions configures the retry loop.
type RetryOptions struct {
	// MaxAttempts is the most attempts per call, first included (default 3;
	// 1 disables retries). Attempts refused as not ready while ColdStartWait
	// is on are counted apart and take none of them: a call may make
	// MaxAttempts attempts that end otherwise besides its not-ready ones,
	// and with MaxAttempts 1 it still waits a cold start out unless
	// ColdStartWait is negative.
	MaxAttempts int
	// BaseDelay and MaxDelay shape the exponential backoff: before retry n
	// the client waits a uniformly random time in [0, min(MaxDelay,
	// BaseDelay·2^(n-1))] ("full jitter"). Defaults 100 ms and 20 s; a
	// BaseDelay over MaxDelay is taken as MaxDelay.
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// MaxRetryAfter is the longest server-requested delay (Retry-After and
	// its variants) the client will wait. A longer request ends the retries
	// and the error keeps the RetryAfter the server asked for. Default 20 s.
	// Not-ready answers under ColdStartWait are bound by that wait instead.
	MaxRetryAfter time.Duration
	// Budget is the client-wide retry budget. New creates one with
	// DefaultBudgetTokens when nil, and a call whose options leave it nil
	// uses the client's; set NoBudget to retry without one.
	Budget   *RetryBudget
	NoBudget bool
	// ColdStartWait is how long a call keeps retrying answers that say the
	// model is not ready (ERR_MODEL_NOT_READY: an endpoint scaling from
	// zero, a model still loading), counted from the first such answer, so
	// that a cold start is waited out and measured instead of failing the
	// call. These retries follow their own schedule: the server's delay
	// (Retry-After and its variants) when it gives one that ends within
	// ColdStartWait — MaxRetryAfter does not bound it —, else full-jitter
	// backoff from BaseDelay capped at ColdStartMaxDelay; the last one is
	// made when ColdStartWait ends. They take no retry-budget tokens (an
	// endpoint coming up must not drain the budget of the calls waiting
	// for it) and do not count towards MaxAttempts. The call's Timeout and
	// context still bound the wait: a retry that could not be made before
	// the call's deadline ends the call with the not-ready error. Once
	// ColdStartWait is spent, the call ends with ERR_MODEL_NOT_READY.
	// Default 5 min (0 means the default); negative turns it off, and
	// not-ready answers are then retried like any retryable error, within
	// MaxAttempts.
	ColdStartWait time.Duration
	// ColdStartMaxDelay caps the backoff between not-ready retries
	// (default 5 s). When the server gives no retry delay, a cold call
	// sees the model up, and its measured overhead ends, at most this
	// much (and one attempt's time in flight) after the model came up.
	ColdStartMaxDelay time.Duration
}

func (o *RetryOptions) setDefaults() {
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.BaseDelay <= 0 {
		o.BaseDelay = DefaultBaseDelay
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = DefaultMaxDelay
	}
	// backoff/v4 caps the interval as it grows, not the first one.
	o.BaseDelay = min(o.BaseDelay, o.MaxDelay)
	if o.MaxRetryAfter <= 0 {
		o.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if o.ColdStartWait == 0 {
		o.ColdStartWait = DefaultColdStartWait
	}
	if o.ColdStartMaxDelay <= 0 {
		o.ColdStartMaxDelay = DefaultColdStartMaxDelay
	}
}

// waitsColdStart reports whether e is a not-ready answer that the
// cold-start wait, rather than MaxAttempts, governs.
func (o *RetryOptions) waitsColdStart(e *errcodes.Error) bool {
	return e.Code == errcodes.ModelNotReady && o.ColdStartWait > 0
}

// retrier is one call's retry decision: after each failed attempt, whether
// to make another and how long to wait before it. It classifies the error
// (retryable, not ready under the cold-start wait), counts attempts
// against MaxAttempts, runs the backoff schedules, honours the server's
// retry delay and the call's deadline, and takes and gives back the
// budget's tokens. The client's loop makes the attempts and the waits.
type retrier struct {
	o *RetryOptions
	// replayable: the payload can be sent again (it is not a one-shot
	// reader).
	replayable bool
	// deadline is the call's; zero when it has none.
	deadline time.Time
	// attempts is the number of failed attempts next has seen; spent, the
	// budget tokens the call's retries took.
	attempts, spent int
	bo              *fullJitter
	// The cold-start wait (RetryOptions.ColdStartWait): the not-ready
	// attempts it retried or ended, counted apart from MaxAttempts; when
	// the first not-ready answer came; the not-ready retries' backoff.
	coldN     int
	coldSince time.Time
	coldBo    *fullJitter
}

// next is called after each failed attempt with its error: it returns
// how long to wait before the next attempt, or false when the call must
// end with e.
func (r *retrier) next(e *errcodes.Error) (time.Duration, bool) {
	r.attempts++
	o := r.o
	cold := e.Retryable && o.waitsColdStart(e)
	if cold {
		r.coldN++
	}
	if !e.Retryable || (!cold && r.attempts-r.coldN >= o.MaxAttempts) {
		return 0, false
	}
	if !r.replayable {
		return 0, false
	}
	if cold {
		return r.coldDelay(e)
	}
	if r.bo == nil {
		r.bo = o.newBackOff()
	}
	wait := r.bo.NextBackOff()
	if e.RetryAfter > 0 {
		if e.RetryAfter > o.MaxRetryAfter {
			return 0, false
		}
		wait = max(wait, e.RetryAfter)
	}
	if r.pastDeadline(time.Now(), wait) {
		return 0, false
	}
	if b := o.budget(); b != nil {
		cost := retryCost(e)
		if !b.take(cost) {
			return 0, false
		}
		r.spent += cost
	}
	return wait, true
}

// coldDelay returns how long to wait before retrying a not-ready answer
// under the cold-start wait, or false when the wait is over: the server's
// delay when it ends within the wait (never shorter than the backoff),
// else the not-ready backoff, cut so that the last retry is made when the
// wait ends. These retries take no budget tokens.
func (r *retrier) coldDelay(e *errcodes.Error) (time.Duration, bool) {
	o := r.o
	now := time.Now()
	if r.coldSince.IsZero() {
		r.coldSince = now
	}
	left := r.coldSince.Add(o.ColdStartWait).Sub(now)
	if left <= 0 {
		return 0, false
	}
	if r.coldBo == nil {
		r.coldBo = o.newColdBackOff()
	}
	wait := min(r.coldBo.NextBackOff(), left)
	if e.RetryAfter > 0 {
		if e.RetryAfter > left {
			return 0, false // the server expects the model later than the wait allows
		}
		wait = max(wait, e.RetryAfter)
	}
	if r.pastDeadline(now, wait) {
		return 0, false
	}
	return wait, true
}

// pastDeadline reports whether a retry after wait from now would come at
// or after the call's deadline: the client never sleeps past it.
func (r *retrier) pastDeadline(now time.Time, wait time.Duration) bool {
	return !r.deadline.IsZero() && !now.Add(wait).Before(r.deadline)
}

// abandoned gives back the tokens of the retry that next granted after
// e, when the call ends during the wait before it: that retry is never
// sent. Not-ready retries took none.
func (r *retrier) abandoned(e *errcodes.Error) {
	if b := r.o.budget(); b != nil && !r.o.waitsColdStart(e) {
		cost := retryCost(e)
		b.give(cost)
		r.spent -= cost
	}
}

// succeeded gives the budget back what the call's retries took, or one
// token when it needed none.
func (r *retrier) succeeded() {
	if b := r.o.budget(); b != nil {
		b.give(max(r.spent, 1))
	}
}

// budget returns the retry budget in use, nil when there is none.
func (o *RetryOptions) budget() *RetryBudget {
	if o.NoBudget {
		return nil
	}
	return o.Budget
}

// newBackOff returns the backoff policy of one call: backoff/v4's
// exponential schedule (no randomization, no elapsed-time limit) from
// BaseDelay to MaxDelay as the ceiling, with full jitter applied on top.
//
// backoff/v4 is kept for what it does well, the exponential schedule: a
// ceiling that doubles and stops at its cap without overflowing. Its
// jitter is not full jitter (it draws within ±RandomizationFactor of the
// interval, never near zero), so the delay is drawn on top of its
// ceiling; and its Retry loop is not used, as the decision here is the
// error's own (classification, Retry-After, the retry budget, the
// cold-start wait, the call's deadline) and a stream's attempts are
// retried from the client's loop, not from one function.
func (o *RetryOptions) newBackOff() *fullJitter { return newFullJitter(o.BaseDelay, o.MaxDelay) }

// newColdBackOff returns the backoff policy of a call's not-ready retries:
// as newBackOff's, capped at ColdStartMaxDelay.
func (o *RetryOptions) newColdBackOff() *fullJitter {
	return newFullJitter(min(o.BaseDelay, o.ColdStartMaxDelay), o.ColdStartMaxDelay)
}

// newFullJitter returns full-jitter backoff whose ceiling doubles from
// base up to limit.
func newFullJitter(base, limit time.Duration) *fullJitter {
	exp := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(base),
		backoff.WithMaxInterval(limit),
		backoff.WithMultiplier(2),
		backoff.WithRandomizationFactor(0),
		backoff.WithMaxElapsedTime(0),
	)
	return &fullJitter{exp: exp}
}

// fullJitter is a backoff.BackOff that draws each delay uniformly from
// [0, ceiling], the ceiling growing exponentially.
type fullJitter struct{ exp *backoff.ExponentialBackOff }

// NextBackOff returns the next delay.
func (f *fullJitter) NextBackOff() time.Duration {
	ceil := f.exp.NextBackOff()
	if ceil <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(ceil) + 1))
}

// Reset restarts the schedule.
func (f *fullJitter) Reset() { f.exp.Reset() }

var _ backoff.BackOff = (*fullJitter)(nil)

// RetryBudget is a client-wide token bucket that bounds retries, so that a
// failure storm does not multiply the load on a struggling endpoint: each
// retry takes tokens, each success gives some back, and when the bucket is
// empty calls fail fast after their first attempt. A call canceled during
// the backoff before a retry gives that retry's tokens back, as it is never
// sent. Safe for concurrent use.
type RetryBudget struct {
	tokens atomic.Int64
	max    int64
}

// NewRetryBudget returns a full budget of n tokens.
func NewRetryBudget(n int) *RetryBudget {
	b := &RetryBudget{max: int64(n)}
	b.tokens.Store(int64(n))
	return b
}

// Tokens returns the tokens left.
func (b *RetryBudget) Tokens() int { return int(b.tokens.Load()) }

// take removes cost tokens and reports whether there were enough.
func (b *RetryBudget) take(cost int) bool {
	for {
		n := b.tokens.Load()
		if n < int64(cost) {
			return false
		}
		if b.tokens.CompareAndSwap(n, n-int64(cost)) {
			return true
		}
	}
}

// give returns n tokens, up to the capacity. A full budget, the usual
// state, is left untouched: no write on the success path.
func (b *RetryBudget) give(n int) {
	for {
		t := b.tokens.Load()
		if t >= b.max {
			return
		}
		if b.tokens.CompareAndSwap(t, min(b.max, t+int64(n))) {
			return
		}
	}
}

// RetryAfter reads a server-requested retry delay from response headers, in
// order of precision: retry-after-ms, x-ms-retry-after-ms, x-amz-retry-after
// (all milliseconds, digits with an optional fraction), then Retry-After
// (whole seconds or an HTTP date). Invalid and negative values are ignored.
// A value too large to represent is a request to wait practically forever:
// it is returned as the longest Duration, so that it ends the retries like
// any delay beyond RetryOptions.MaxRetryAfter, rather than being ignored and
// retried at once. It returns 0, false when no header is usable.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	for _, k := range []string{"Retry-After-Ms", "X-Ms-Retry-After-Ms", "X-Amz-Retry-After"} {
		if d, ok := parseMillis(strings.TrimSpace(h.Get(k))); ok {
			return d, true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil || secs > int64(maxRetryAfter/time.Second) {
			return maxRetryAfter, true // only a range error is possible here
		}
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now) // saturates at the longest Duration
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
}

// maxRetryAfter is what RetryAfter returns for a delay too large to
// represent.
const maxRetryAfter = time.Duration(math.MaxInt64)

// parseMillis parses a millisecond delay: digits, optionally followed by a
// fraction ("250", "1.5").
func parseMillis(v string) (time.Duration, bool) {
	whole, frac, hasFrac := strings.Cut(v, ".")
	if !isDigits(whole) || (hasFrac && !isDigits(frac)) {
		return 0, false
	}
	ms, err := strconv.ParseFloat(v, 64)
	if err != nil || ms >= float64(maxRetryAfter/time.Millisecond) {
		return maxRetryAfter, true // only a range error is possible here
	}
	return time.Duration(ms * float64(time.Millisecond)), true
}

// isDigits reports whether s is a non-empty run of ASCII digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// retryCost is what retrying after err takes from the budget.
func retryCost(e *errcodes.Error) int {
	if e.Code == errcodes.Timeout {
		return TimeoutRetryCost
	}
	return RetryCost
}
