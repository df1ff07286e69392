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
)

// emulatorProviders names emulatorRequest's providers, in its order.
var emulatorProviders = []string{"sagemaker", "openai", "paieas", "azureml", "vertex"}

// faultCase is what every provider must make of one emulator fault.
type faultCase struct {
	code      errcodes.Code // "" when any code will do (the fault has no portable meaning)
	retryable bool
	// per-provider codes where the provider's wire has no such error and
	// the emulator answers with its nearest one.
	override map[string]errcodes.Code
}

// emulatorMatrix holds, for each emulator fault, the outcome of a
// non-streaming call and of a stream.
var emulatorMatrix = map[emulator.Fault][2]faultCase{
	emulator.FaultThrottle: {{code: errcodes.Throttled, retryable: true}, {code: errcodes.Throttled, retryable: true}},
	emulator.FaultQuota: {
		{code: errcodes.QuotaExceeded, override: map[string]errcodes.Code{"sagemaker": errcodes.Throttled, "paieas": errcodes.Throttled}},
		{code: errcodes.QuotaExceeded, override: map[string]errcodes.Code{"sagemaker": errcodes.Throttled, "paieas": errcodes.Throttled}}},
	emulator.FaultModelNotReady: {{code: errcodes.ModelNotReady, retryable: true}, {code: errcodes.ModelNotReady, retryable: true}},
	emulator.FaultModelError: {
		{code: errcodes.ModelError, override: map[string]errcodes.Code{"openai": errcodes.Internal, "paieas": errcodes.Internal}},
		{code: errcodes.ModelError, override: map[string]errcodes.Code{"openai": errcodes.Internal, "paieas": errcodes.Internal}}},
	emulator.FaultInvalid:         {{code: errcodes.InvalidParam}, {code: errcodes.InvalidParam}},
	emulator.FaultNotFound:        {{code: errcodes.NotFound}, {code: errcodes.NotFound}},
	emulator.FaultUnauthenticated: {{code: errcodes.Unauthenticated}, {code: errcodes.Unauthenticated}},
	emulator.FaultForbidden: {
		{code: errcodes.PermissionDenied, override: map[string]errcodes.Code{"paieas": errcodes.Unauthenticated}},
		{code: errcodes.PermissionDenied, override: map[string]errcodes.Code{"paieas": errcodes.Unauthenticated}}},
	emulator.FaultInternal:        {{code: errcodes.Internal, retryable: true}, {code: errcodes.Internal, retryable: true}},
	emulator.FaultUnavailable:     {{code: errcodes.Unavailable, retryable: true}, {code: errcodes.Unavailable, retryable: true}},
	emulator.FaultTimeout:         {{code: errcodes.Timeout, retryable: true}, {code: errcodes.Timeout, retryable: true}},
	emulator.FaultPayloadTooLarge: {{code: errcodes.PayloadTooLarge}, {code: errcodes.PayloadTooLarge}},
	emulator.FaultQueueFull:       {{code: errcodes.Throttled, retryable: true}, {code: errcodes.Throttled, retryable: true}},
	// The model container's own back-pressure, wrapped (SageMaker, Azure)
	// or relayed, and a fronting proxy's 503: the same code everywhere.
	emulator.FaultModelOverloaded:    {{code: errcodes.Throttled, retryable: true}, {code: errcodes.Throttled, retryable: true}},
	emulator.FaultModelUnavailable:   {{code: errcodes.Unavailable, retryable: true}, {code: errcodes.Unavailable, retryable: true}},
	emulator.FaultGatewayOverflow:    {{code: errcodes.Unavailable, retryable: true}, {code: errcodes.Unavailable, retryable: true}},
	emulator.FaultResetBeforeHeaders: {{code: errcodes.Unavailable, retryable: true}, {code: errcodes.Unavailable, retryable: true}},
	emulator.FaultHTML502:            {{code: errcodes.Unavailable, retryable: true}, {code: errcodes.Unavailable, retryable: true}},
	// Mid-stream faults: a non-streaming call sees a body that breaks off
	// (retryable); a stream sees its first chunks, then the break, and
	// is never retried nor reported a success.
	emulator.FaultCloseMidStream: {{code: errcodes.Unavailable, retryable: true}, {code: errcodes.StreamInterrupted}},
	emulator.FaultStallMidStream: {{code: errcodes.Unavailable, retryable: true}, {code: errcodes.StreamInterrupted}},
	emulator.FaultMalformedBody:  {{code: errcodes.ModelError}, {code: errcodes.StreamInterrupted}},
	emulator.FaultStreamError: {
		{code: errcodes.ModelError, override: map[string]errcodes.Code{"openai": errcodes.Internal, "paieas": errcodes.Internal}},
		{code: errcodes.StreamInterrupted}},
	// An in-band error before any content is the whole answer: a rate
	// limit, except SageMaker, whose in-stream errors name no rate limit
	// (the emulator sends ModelStreamError ModelInvocationTimeExceeded).
	emulator.FaultStreamErrorFirst: {
		{code: errcodes.Throttled, retryable: true},
		{code: errcodes.Throttled, retryable: true, override: map[string]errcodes.Code{"sagemaker": errcodes.Timeout}}},
}

// waitRecords waits until the emulator recorded at least want requests
// (it records a request when its handler returns, which may be after the
// client saw the answer), then a little longer, and returns the count.
func waitRecords(srv *emulator.Server, want int) int {
	for range 400 {
		if len(srv.Records()) >= want {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	return len(srv.Records())
}

// TestEmulatorFaultMatrix drives every emulator fault mode through every
// provider's adapter, for Invoke and for Stream, and checks the portable
// code, the retryability and the attempts the emulator saw: MaxAttempts
// (3) for a retryable fault before the first chunk, one otherwise. No
// fault ever ends as a success.
func TestEmulatorFaultMatrix(t *testing.T) {
	srv, err := emulator.New(emulator.Options{TimeScale: 0.001, Seed: 11})
	require.NoError(t, err)
	require.NoError(t, srv.Start("127.0.0.1:0", "127.0.0.1:0"))
	t.Cleanup(func() { _ = srv.Close() })
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c := emulatorClient(t, srv, &http.Client{Transport: tr})
	noBudget := func(o *cloudreq.CallOptions) { o.Retry.NoBudget = true }
	for _, f := range emulator.Faults() {
		want, ok := emulatorMatrix[f]
		require.True(t, ok, "no expectation for fault %q", f)
		for p, name := range emulatorProviders {
			for i, stream := range modes() {
				t.Run(fmt.Sprintf("%s/%s/%s", f, name, mode(stream)), func(t *testing.T) {
					srv.ResetRecords()
					req := emulatorRequest(p, string(f))
					var err error
					chunks := 0
					if stream {
						var s *cloudreq.Stream
						s, err = c.Stream(context.Background(), req, noBudget)
						if err == nil {
							for s.Next() {
								chunks++
							}
							err = s.Err()
							_ = s.Close()
						}
					} else {
						_, err = c.Invoke(context.Background(), req, noBudget)
					}
					require.Error(t, err, "a fault never ends as a success")
					e := errcodes.From(err)
					assert.NotEmpty(t, e.Provider)
					fc := want[i]
					if fc.code == "" {
						return
					}
					code, retryable := fc.code, fc.retryable
					if o, ok := fc.override[name]; ok {
						code, retryable = o, o.Retryable()
					}
					assert.Equal(t, code, e.Code, "%v", err)
					attempts := 1
					if retryable && chunks == 0 {
						attempts = 3
						assert.True(t, e.Retryable, "%v", err)
					}
					assert.Equal(t, attempts, waitRecords(srv, attempts), "attempts")
				})
			}
		}
	}
}
