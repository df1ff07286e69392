package faults

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
)

// coldScale runs the cold-wait cases at a tenth of real time.
const coldScale = 0.1

// coldRejecting starts an emulator whose phi-3-mini endpoint starts scaled
// to zero and answers every request with its provider's not-ready signal
// (cold_mode: reject) for coldMs emulated milliseconds from the first
// one, and returns it with a client of every adapter, on fastRetries: the
// calls turn the cold-start wait back on.
func coldRejecting(t *testing.T, coldMs float64) (*emulator.Server, *cloudreq.Client) {
	t.Helper()
	phi, ok := emulator.BuiltinProfile("phi-3-mini")
	require.True(t, ok)
	phi.ColdStartMs = emulator.Dist{Mean: coldMs}
	srv, err := emulator.New(emulator.Options{TimeScale: coldScale, Seed: 5, Endpoints: []emulator.Endpoint{
		{Name: "phi-3-mini", Profile: phi, StartCold: true, ColdMode: emulator.ColdReject},
	}})
	require.NoError(t, err)
	require.NoError(t, srv.Start("127.0.0.1:0", "127.0.0.1:0"))
	t.Cleanup(func() { _ = srv.Close() })
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return srv, emulatorClient(t, srv, &http.Client{Transport: tr})
}

// coldCall makes one call of provider p, Invoke or Stream (drained), with
// the per-call options, and returns its response or error.
func coldCall(c *cloudreq.Client, p int, stream bool, opts ...func(*cloudreq.CallOptions)) (*cloudreq.CloudResponse, error) {
	req := emulatorRequest(p, "")
	if !stream {
		return c.Invoke(context.Background(), req, opts...)
	}
	s, err := c.Stream(context.Background(), req, opts...)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	for s.Next() {
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return s.Response(), nil
}

// serverDelay says what retry delay a provider's not-ready answer gives
// against the emulator: "exact" (Azure ML's retry-after-ms, Vertex's
// RetryInfo), "seconds" (OpenAI's Retry-After, rounded up) or "none"
// (SageMaker, PAI-EAS: the client polls with its capped backoff).
func serverDelay(p string) string {
	switch p {
	case "azureml", "vertex":
		return "exact"
	case "openai":
		return "seconds"
	}
	return "none"
}

// TestColdStartWaitedOutEndToEnd: an endpoint that rejects requests while
// it scales from zero (cold_mode: reject) for far longer than the
// client's MaxAttempts × backoff covers (3 attempts, ≤ 4 ms backoff, here
// 400 ms of not-ready answers) is waited out by every adapter, Invoke and
// Stream — polled where the provider gives no retry delay, at the delay
// it gives otherwise: the call succeeds, is classified cold with reason
// not-ready-then-ready, its model-ready time is the send that found the
// model up, and its cold-start overhead is the not-ready period, late by
// less than the last poll, whose wait the provider's retry delay bounds.
func TestColdStartWaitedOutEndToEnd(t *testing.T) {
	const coldMs = 4000 // 400 ms real
	period := time.Duration(coldMs * coldScale * float64(time.Millisecond))
	const maxDelay = 20 * time.Millisecond
	for p, name := range emulatorProviders {
		for _, stream := range modes() {
			t.Run(name+"/"+mode(stream), func(t *testing.T) {
				t.Parallel()
				srv, c := coldRejecting(t, coldMs)
				resp, err := coldCall(c, p, stream, func(o *cloudreq.CallOptions) {
					o.Retry.ColdStartWait, o.Retry.ColdStartMaxDelay = cloudreq.DefaultColdStartWait, maxDelay
				})
				require.NoError(t, err, "the cold start is waited out")

				tl := resp.Timing
				n := len(tl.Attempts)
				if serverDelay(name) == "none" {
					// The client polled on its own.
					require.Greater(t, n, 3, "more attempts than MaxAttempts allows")
				} else {
					require.GreaterOrEqual(t, n, 2, "refused, then served")
				}
				for i, a := range tl.Attempts[:n-1] {
					assert.Equal(t, string(errcodes.ModelNotReady), a.Code, "attempt %d", i+1)
				}
				assert.Empty(t, tl.Attempts[n-1].Code)
				assert.Len(t, resp.Errors, n-1)

				assert.Equal(t, latency.Cold, resp.Start.Kind)
				assert.Equal(t, latency.ReasonNotReadyThenReady, resp.Start.Reason)
				assert.Equal(t, tl.Attempts[n-1].Send, tl.ModelReady, "the SLA clock starts at the send that found the model up")
				overhead := resp.Start.Overhead
				assert.Equal(t, tl.ModelReady.Sub(tl.Attempts[0].Send), overhead)

				waitRecords(srv, n)
				rejected := 0
				for _, r := range srv.Records() {
					if r.Fault == emulator.FaultModelNotReady {
						rejected++
					}
				}
				// The model came up period after the first attempt reached
				// the emulator: between that attempt's send and its answer,
				// plus period. The served attempt reached the model after
				// that, so the overhead, with the served attempt's own
				// time added back, covers the period...
				first, prev, final := tl.Attempts[0], tl.Attempts[n-2], tl.Attempts[n-1]
				assert.GreaterOrEqual(t, overhead+final.End.Sub(final.Send), period,
					"overhead %v for a %v not-ready period", overhead, period)
				// ...and exceeds it by less than the last poll (the last
				// refusal reached the emulator before the model was up),
				// whose wait the provider's retry delay bounds.
				assert.Less(t, overhead-period, final.Send.Sub(prev.Send)+first.End.Sub(first.Send))
				most := maxDelay
				switch serverDelay(name) {
				case "seconds":
					most = time.Second // the period left, rounded up to whole seconds
				case "exact":
					most = first.End.Add(period).Sub(prev.Send) + time.Millisecond // the period left, ms rounding
				}
				assert.LessOrEqual(t, final.Backoff, most, "the last poll's wait")
				assert.Equal(t, n-1, rejected, "the emulator refused every attempt but the last")
			})
		}
	}
}

// TestColdStartWaitExceededEndToEnd: when the not-ready period outlasts
// ColdStartWait the call ends with ERR_MODEL_NOT_READY (retryable, the
// server's delay kept when it gave one), within the wait: at once where
// the server's own delay already ends past it (Azure ML, OpenAI, Vertex),
// after the wait's backoff where it gives none (SageMaker, PAI-EAS).
func TestColdStartWaitExceededEndToEnd(t *testing.T) {
	const coldMs = 20000 // 2 s real
	const wait = 150 * time.Millisecond
	for p, name := range emulatorProviders {
		for _, stream := range modes() {
			t.Run(fmt.Sprintf("%s/%s", name, mode(stream)), func(t *testing.T) {
				t.Parallel()
				srv, c := coldRejecting(t, coldMs)
				start := time.Now()
				_, err := coldCall(c, p, stream, func(o *cloudreq.CallOptions) {
					o.Retry.ColdStartWait, o.Retry.ColdStartMaxDelay = wait, 20*time.Millisecond
				})
				took := time.Since(start)
				require.Error(t, err)
				e := errcodes.From(err)
				assert.Equal(t, errcodes.ModelNotReady, e.Code, "%v", err)
				assert.True(t, e.Retryable)
				attempts := waitRecords(srv, 1)
				for _, r := range srv.Records() {
					assert.Equal(t, emulator.FaultModelNotReady, r.Fault, "every attempt came before the model was up")
				}
				if serverDelay(name) != "none" {
					assert.Positive(t, e.RetryAfter, "the server's delay stays on the error")
					assert.Equal(t, 1, attempts, "a server delay past the wait ends it at once")
				} else {
					assert.Zero(t, e.RetryAfter)
					assert.Greater(t, attempts, 3, "retried until the wait ended")
					assert.GreaterOrEqual(t, took, wait)
				}
			})
		}
	}
}
