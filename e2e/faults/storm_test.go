package faults

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// setAnswers replaces a running backend's answers.
func (r *recorder) setAnswers(a ...answer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers = a
	r.seen = r.seen[:0]
}

// TestStormDrainsBudget: during a 5xx storm one client's retries are
// bounded by its retry budget. The first calls retry until the budget is
// spent (DefaultBudgetTokens/RetryCost retries in all); every later call
// fails fast after one attempt, so the load the client adds tends to one
// request per call instead of MaxAttempts. When the endpoint heals,
// successes refill the budget.
func TestStormDrainsBudget(t *testing.T) {
	const calls = 150
	maxRetries := cloudreq.DefaultBudgetTokens / cloudreq.RetryCost // 100
	retryingCalls := maxRetries / 2                                 // 2 retries each
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			budget := cloudreq.NewRetryBudget(cloudreq.DefaultBudgetTokens)
			r := newRig(t, b, []answer{fail(500)}, withClient(func(o *cloudreq.Options) { o.Retry.Budget = budget }))
			perCall := make([]int, calls)
			prev := 0
			for i := range calls {
				_, err := r.invoke(context.Background())
				require.Error(t, err)
				require.Equal(t, errcodes.Internal, errcodes.Of(err))
				n := r.rec.count()
				perCall[i], prev = n-prev, n
			}
			for i, n := range perCall {
				want := 1
				if i < retryingCalls {
					want = 3
				}
				require.Equal(t, want, n, "attempts of call %d", i+1)
			}
			assert.Equal(t, calls+maxRetries, r.rec.count(), "attempts in all")
			assert.Less(t, budget.Tokens(), cloudreq.RetryCost, "the budget is spent")

			// The endpoint heals: every success gives a token back.
			r.rec.setAnswers(ok(0))
			for range 2 * cloudreq.RetryCost {
				_, err := r.invoke(context.Background())
				require.NoError(t, err)
			}
			assert.GreaterOrEqual(t, budget.Tokens(), 2*cloudreq.RetryCost, "successes refill the budget")
		})
	}
}

// TestStormConcurrentNoAmplification: 64 callers hammer a failing endpoint
// at once, by Invoke and Stream, through one client; the retries they make
// together never exceed what the shared budget allows.
func TestStormConcurrentNoAmplification(t *testing.T) {
	const callers, each = 64, 4
	maxRetries := cloudreq.DefaultBudgetTokens / cloudreq.RetryCost
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			r := newRig(t, b, []answer{fail(503)})
			var wg sync.WaitGroup
			for i := range callers {
				wg.Go(func() {
					for range each {
						var err error
						if i%2 == 0 {
							_, err = r.invoke(context.Background())
						} else {
							_, _, err = r.stream(context.Background())
						}
						assert.Equal(t, b.code("503", errcodes.Unavailable), errcodes.Of(err))
					}
				})
			}
			wg.Wait()
			calls := callers * each
			retries := r.rec.count() - calls
			assert.LessOrEqual(t, retries, maxRetries, "retries beyond the budget")
			t.Logf("%d calls, %d attempts (%.2f per call; %d without a budget)", calls, r.rec.count(),
				float64(r.rec.count())/float64(calls), 3*calls)
		})
	}
}

// TestTimeoutStormCostsMore: retries after timeouts take TimeoutRetryCost,
// so a storm of hung requests drains the budget twice as fast.
func TestTimeoutStormCostsMore(t *testing.T) {
	const calls = 60
	maxRetries := cloudreq.DefaultBudgetTokens / cloudreq.TimeoutRetryCost // 50
	for _, b := range httpBackends() {
		t.Run(b.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, b, []answer{{hold: true}}, inMemory(),
					withClient(func(o *cloudreq.Options) { o.AttemptTimeout = time.Second }))
				for range calls {
					_, err := r.invoke(context.Background())
					require.Equal(t, errcodes.Timeout, errcodes.Of(err))
				}
				assert.Equal(t, calls+maxRetries, r.rec.count())
			})
		})
	}
}
