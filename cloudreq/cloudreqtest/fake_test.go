package cloudreqtest_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/cloudreq/cloudreqtest"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

func call() *cloudreq.Call {
	return &cloudreq.Call{
		Request: &cloudreq.CloudRequest{Provider: "openai", Service: "openai-compatible", Action: "invoke"},
		Payload: cloudreq.Payload{Body: []byte("hi")}, Attempt: 1,
	}
}

// TestEndedContextFailsTheAttempt: like a transport, the fake fails an
// attempt whose context already ended, even with no delay to wait.
func TestEndedContextFailsTheAttempt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fake := &cloudreqtest.Adapter{}
	_, err := fake.Invoke(ctx, call())
	assert.ErrorIs(t, err, context.Canceled)
	_, err = fake.Stream(ctx, call())
	assert.ErrorIs(t, err, context.Canceled)

	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{fake}})
	require.NoError(t, err)
	_, err = c.Invoke(ctx, &cloudreq.CloudRequest{Provider: "openai", Service: "openai-compatible", Action: "invoke",
		Target: cloudreq.Target{Model: "m"}, Payload: cloudreq.Payload{Body: []byte("hi")}})
	assert.Equal(t, errcodes.Canceled, errcodes.Of(err))
}

// TestStreamEndsWithItsContext: a stream stops yielding chunks once its
// context ended, as an HTTP response body does.
func TestStreamEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Chunks: []cloudreq.StreamChunk{{Text: "a"}, {Text: "b"}}}}}
	cs, err := fake.Stream(ctx, call())
	require.NoError(t, err)
	ch, err := cs.Next()
	require.NoError(t, err)
	assert.Equal(t, "a", ch.Text)
	cancel()
	_, err = cs.Next()
	assert.ErrorIs(t, err, context.Canceled)
}

// TestCloseUnblocksNext: Close makes a blocked Next return, as the
// ChunkStream contract requires, whatever the stream's context.
func TestCloseUnblocksNext(t *testing.T) {
	for name, o := range map[string]cloudreqtest.Outcome{
		"Block":      {Block: true},
		"ChunkDelay": {Chunks: []cloudreq.StreamChunk{{Text: "a"}}, ChunkDelay: 1 << 62},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{o}}
				cs, err := fake.Stream(context.Background(), call())
				require.NoError(t, err)
				done := make(chan error)
				go func() {
					_, err := cs.Next()
					done <- err
				}()
				synctest.Wait()
				require.NoError(t, cs.Close())
				assert.Error(t, <-done)
				assert.NoError(t, cs.Close(), "Close twice is fine")
			})
		})
	}
}

// TestResponsesAreNotShared: each attempt gets its own response, as from a
// real adapter, so that a hook enriching one (Metadata, Errors) changes
// neither the Outcome nor another attempt's response.
func TestResponsesAreNotShared(t *testing.T) {
	out := &cloudreq.CloudResponse{StatusCode: 200, Data: []byte("body"), Metadata: map[string]string{"k": "v"},
		Errors: []*errcodes.Error{errcodes.New(errcodes.Internal, "in-band")}}
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Response: out}}}
	r1, err := fake.Invoke(context.Background(), call())
	require.NoError(t, err)
	r1.Metadata["k"] = "changed"
	r1.Errors[0] = nil
	r1.Data[0] = 'X'
	r2, err := fake.Invoke(context.Background(), call())
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"k": "v"}, r2.Metadata)
	assert.NotNil(t, r2.Errors[0])
	assert.Equal(t, "body", string(r2.Data))
	assert.Equal(t, "v", out.Metadata["k"])

	cs, err := fake.Stream(context.Background(), call())
	require.NoError(t, err)
	cs.Response().Metadata["k"] = "changed"
	assert.Equal(t, "v", out.Metadata["k"])
}
