package faults

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// statusCase is one row of the retryable-versus-terminal matrix.
type statusCase struct {
	name      string
	a         answer
	code      errcodes.Code
	retryable bool
}

// statusMatrix is the matrix every provider is held to. A provider that
// does not send a status skips its row: 450 is PAI-EAS's queue-full
// answer, 530 SageMaker's InternalDependencyException, 424 a model
// container's failure behind SageMaker or Azure ML, and Vertex's gRPC has
// no 408, 413, 422, 502 or 530.
var statusMatrix = []statusCase{
	{"408", fail(408), errcodes.Timeout, true},
	{"429", fail(429), errcodes.Throttled, true},
	{"450", fail(450), errcodes.Throttled, true},
	{"500", fail(500), errcodes.Internal, true},
	{"502", fail(502), errcodes.Unavailable, true},
	{"503", fail(503), errcodes.Unavailable, true},
	{"504", fail(504), errcodes.Timeout, true},
	{"model-not-ready", answer{status: 503, kind: kindNotReady}, errcodes.ModelNotReady, true},
	{"400", fail(400), errcodes.InvalidParam, false},
	{"401", fail(401), errcodes.Unauthenticated, false},
	{"403", fail(403), errcodes.PermissionDenied, false},
	{"404", fail(404), errcodes.NotFound, false},
	{"413", fail(413), errcodes.PayloadTooLarge, false},
	{"422", fail(422), errcodes.InvalidParam, false},
	{"424", fail(424), errcodes.ModelError, false},
	{"530", fail(530), errcodes.Unavailable, false},
}

// TestStatusMatrix sends each status of the matrix, in each provider's
// wire form, to Invoke and to Stream, and checks the normalized code, the
// retryability and the attempt count: MaxAttempts for a retryable status,
// one for a terminal one.
func TestStatusMatrix(t *testing.T) {
	const maxAttempts = 3
	for _, b := range backends() {
		for _, c := range statusMatrix {
			if !b.can(c.a) {
				continue
			}
			for _, stream := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s/invoke", b.name, c.name)
				if stream {
					name = fmt.Sprintf("%s/%s/stream", b.name, c.name)
				}
				t.Run(name, func(t *testing.T) {
					r := newRig(t, b, []answer{c.a})
					var err error
					if stream {
						_, _, err = r.stream(context.Background())
					} else {
						_, err = r.invoke(context.Background())
					}
					require.Error(t, err)
					var e *errcodes.Error
					require.True(t, errors.As(err, &e), "not an *errcodes.Error: %T %v", err, err)
					assert.Equal(t, b.code(c.name, c.code), e.Code, "code of %v", err)
					assert.Equal(t, c.retryable, e.Retryable, "retryable of %v", err)
					assert.NotEmpty(t, e.Provider)
					want := 1
					if c.retryable {
						want = maxAttempts
					}
					assert.Equal(t, want, r.rec.count(), "attempts")
				})
			}
		}
	}
}
