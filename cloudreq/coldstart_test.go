package cloudreq_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/cloudreq/cloudreqtest"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
)

// notReady returns n not-ready outcomes, each asking for retryAfter (0:
// no delay given), followed by the rest.
func notReady(n int, retryAfter time.Duration, rest ...cloudreqtest.Outcome) []cloudreqtest.Outcome {
	out := make([]cloudreqtest.Outcome, 0, n+len(rest))
	for range n {
		e := errcodes.New(errcodes.ModelNotReady, "scaling from zero")
		e.RetryAfter = retryAfter
		out = append(out, cloudreqtest.Outcome{Err: e})
	}
	return append(out, rest...)
}

var served = cloudreqtest.Outcome{Response: &cloudreq.CloudResponse{StatusCode: 200, Data: []byte("ok")}}

// TestColdStartWaitedOut: with the default options, an endpoint that
// answers "not ready" far longer than MaxAttempts × backoff would cover
// is waited out: the call succeeds, is cold (not-ready-then-ready), its
// model-ready time is the send that found the model up and its overhead
// the time from the first send to it. The gaps between not-ready retries
// never exceed ColdStartMaxDelay.
func TestColdStartWaitedOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &cloudreqtest.Adapter{Outcomes: notReady(30, 0, served)}
		resp, err := client(t, fake).Invoke(context.Background(), req())
		require.NoError(t, err)
		assert.Equal(t, "ok", string(resp.Data))
		require.Len(t, fake.Calls(), 31)
		assert.Len(t, resp.Errors, 30)
		tl := resp.Timing
		require.Len(t, tl.Attempts, 31)
		for i := 1; i < len(tl.Attempts); i++ {
			gap := tl.Attempts[i].Send.Sub(tl.Attempts[i-1].Send)
			assert.LessOrEqual(t, gap, cloudreq.DefaultColdStartMaxDelay, "attempt %d", i+1)
		}
		last := tl.Attempts[30].Send
		assert.Equal(t, latency.Cold, resp.Start.Kind)
		assert.Equal(t, latency.ReasonNotReadyThenReady, resp.Start.Reason)
		assert.Equal(t, last, tl.ModelReady)
		assert.Equal(t, last.Sub(tl.Attempts[0].Send), resp.Start.Overhead)
		assert.Greater(t, resp.Start.Overhead, time.Duration(cloudreq.DefaultMaxAttempts)*cloudreq.DefaultMaxDelay/10,
			"longer than the plain retries would have waited")
	})
}

// TestColdStartWaitEnds: an endpoint that stays not ready is retried until
// ColdStartWait after its first not-ready answer, the last retry made
// when it ends, and the call then fails with ERR_MODEL_NOT_READY.
func TestColdStartWaitEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &cloudreqtest.Adapter{Outcomes: notReady(1, 0)}
		c := client(t, fake, func(o *cloudreq.Options) { o.Retry.ColdStartWait = time.Minute })
		start := time.Now()
		_, err := c.Invoke(context.Background(), req())
		assert.Equal(t, errcodes.ModelNotReady, errcodes.Of(err))
		calls := fake.Calls()
		assert.Greater(t, len(calls), cloudreq.DefaultMaxAttempts)
		assert.Equal(t, time.Minute, time.Since(start), "retried until the wait ended, not past it")
	})
}

// TestColdStartHonoursServerDelay: a not-ready answer's Retry-After is
// waited, beyond MaxRetryAfter too, when it ends within ColdStartWait;
// one that ends later ends the call at once, the delay kept on the error.
func TestColdStartHonoursServerDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &cloudreqtest.Adapter{Outcomes: notReady(2, 40*time.Second, served)}
		start := time.Now()
		resp, err := client(t, fake).Invoke(context.Background(), req())
		require.NoError(t, err)
		assert.Len(t, fake.Calls(), 3)
		elapsed := time.Since(start)
		assert.GreaterOrEqual(t, elapsed, 80*time.Second)
		assert.LessOrEqual(t, elapsed, 80*time.Second+2*cloudreq.DefaultBaseDelay, "at most the first backoff steps beyond the delays")
		assert.Equal(t, resp.Timing.Attempts[2].Send, resp.Timing.ModelReady)

		fake = &cloudreqtest.Adapter{Outcomes: notReady(1, 10*time.Minute, served)}
		start = time.Now()
		_, err = client(t, fake).Invoke(context.Background(), req())
		var e *errcodes.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, errcodes.ModelNotReady, e.Code)
		assert.Equal(t, 10*time.Minute, e.RetryAfter)
		assert.Len(t, fake.Calls(), 1)
		assert.Zero(t, time.Since(start))
	})
}

// TestColdStartCountedApart: not-ready attempts take none of MaxAttempts:
// the call ends at its third attempt that failed otherwise, whatever the
// not-ready ones between.
func TestColdStartCountedApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		unavailable := cloudreqtest.Outcome{Err: errcodes.New(errcodes.Unavailable, "reset")}
		outcomes := append([]cloudreqtest.Outcome{unavailable}, notReady(4, 0, unavailable)...)
		outcomes = append(outcomes, notReady(2, 0, unavailable, served)...)
		fake := &cloudreqtest.Adapter{Outcomes: outcomes}
		_, err := client(t, fake).Invoke(context.Background(), req())
		assert.Equal(t, errcodes.Unavailable, errcodes.Of(err))
		assert.Len(t, fake.Calls(), 9, "3 unavailable + 6 not ready")

		fake = &cloudreqtest.Adapter{Outcomes: notReady(6, 0, unavailable, unavailable, served)}
		resp, err := client(t, fake).Invoke(context.Background(), req())
		require.NoError(t, err)
		assert.Len(t, fake.Calls(), 9)
		assert.Equal(t, latency.Cold, resp.Start.Kind)
	})
}

// TestColdStartTakesNoBudget: not-ready retries draw nothing from the
// retry budget: an empty budget still waits a cold start out, while it
// allows no retry of other errors.
func TestColdStartTakesNoBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		budget := cloudreq.NewRetryBudget(0)
		fake := &cloudreqtest.Adapter{Outcomes: notReady(8, 0, served)}
		c := client(t, fake, func(o *cloudreq.Options) { o.Retry.Budget = budget })
		_, err := c.Invoke(context.Background(), req())
		require.NoError(t, err)
		assert.Len(t, fake.Calls(), 9)
		assert.Equal(t, 0, budget.Tokens())

		fake = failing(errcodes.New(errcodes.Unavailable, "storm"))
		_, err = client(t, fake, func(o *cloudreq.Options) { o.Retry.Budget = budget }).Invoke(context.Background(), req())
		assert.Equal(t, errcodes.Unavailable, errcodes.Of(err))
		assert.Len(t, fake.Calls(), 1)
	})
}

// TestColdStartWaitOff: a negative ColdStartWait retries not-ready
// answers like any retryable error, within MaxAttempts.
func TestColdStartWaitOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &cloudreqtest.Adapter{Outcomes: notReady(10, 0, served)}
		_, err := client(t, fake, func(o *cloudreq.Options) { o.Retry.ColdStartWait = -1 }).Invoke(context.Background(), req())
		assert.Equal(t, errcodes.ModelNotReady, errcodes.Of(err))
		assert.Len(t, fake.Calls(), cloudreq.DefaultMaxAttempts)
	})
}

// TestColdStartBoundedByDeadline: the call's Timeout bounds the wait: the
// call ends with the not-ready error, not a timeout, before its deadline.
func TestColdStartBoundedByDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &cloudreqtest.Adapter{Outcomes: notReady(1, 0)}
		start := time.Now()
		_, err := client(t, fake, func(o *cloudreq.Options) { o.Timeout = 20 * time.Second }).Invoke(context.Background(), req())
		assert.Equal(t, errcodes.ModelNotReady, errcodes.Of(err))
		assert.Less(t, time.Since(start), 20*time.Second)
		assert.Greater(t, len(fake.Calls()), cloudreq.DefaultMaxAttempts)

		// A not-ready delay that ends past the deadline is not waited.
		fake = &cloudreqtest.Adapter{Outcomes: notReady(1, 30*time.Second, served)}
		start = time.Now()
		_, err = client(t, fake, func(o *cloudreq.Options) { o.Timeout = 20 * time.Second }).Invoke(context.Background(), req())
		assert.Equal(t, errcodes.ModelNotReady, errcodes.Of(err))
		assert.Len(t, fake.Calls(), 1)
		assert.Zero(t, time.Since(start))
	})
}

// TestColdStartCanceled: canceling the call during a not-ready backoff
// returns at once with ERR_CANCELED.
func TestColdStartCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &cloudreqtest.Adapter{Outcomes: notReady(1, 0)}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(30*time.Second, cancel)
		start := time.Now()
		_, err := client(t, fake).Invoke(ctx, req())
		assert.Equal(t, errcodes.Canceled, errcodes.Of(err))
		assert.Equal(t, 30*time.Second, time.Since(start))

		// Canceled during a not-ready backoff, a call gives back no token:
		// that retry took none, and the retry it made before was sent.
		budget := cloudreq.NewRetryBudget(10 * cloudreq.RetryCost)
		fake = &cloudreqtest.Adapter{Outcomes: append([]cloudreqtest.Outcome{{Err: errcodes.New(errcodes.Unavailable, "reset")}}, notReady(1, 0)...)}
		ctx, cancel = context.WithCancel(context.Background())
		time.AfterFunc(30*time.Second, cancel)
		_, err = client(t, fake, func(o *cloudreq.Options) { o.Retry.Budget = budget }).Invoke(ctx, req())
		assert.Equal(t, errcodes.Canceled, errcodes.Of(err))
		assert.Equal(t, 9*cloudreq.RetryCost, budget.Tokens())
	})
}

// TestColdStartStream: a Stream whose opens are refused as not ready
// waits the cold start out too, and is classified cold.
func TestColdStartStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &cloudreqtest.Adapter{Outcomes: notReady(12, 0, cloudreqtest.Outcome{Chunks: chunks("he", "llo")})}
		s, err := client(t, fake).Stream(context.Background(), req())
		require.NoError(t, err)
		assert.Equal(t, []string{"he", "llo"}, drain(s))
		require.NoError(t, s.Err())
		resp := s.Response()
		assert.Len(t, resp.Timing.Attempts, 13)
		assert.Equal(t, latency.Cold, resp.Start.Kind)
		assert.Equal(t, latency.ReasonNotReadyThenReady, resp.Start.Reason)
		assert.Equal(t, resp.Timing.Attempts[12].Send, resp.Timing.ModelReady)
	})
}
