package cloudreq_test

import (
	"context"
	"testing"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
)

// encodingNop is an adapter that encodes every generate request to one
// body and answers at once.
type encodingNop struct{ nopAdapter }

func (encodingNop) Describe() cloudreq.Description {
	return cloudreq.Description{Provider: "openai", Service: "openai-compatible", Actions: []string{"generate"}}
}

var fixedBody = []byte(`{}`)

func (encodingNop) Encode(*cloudreq.CloudRequest, bool) (cloudreq.Payload, error) {
	return cloudreq.Payload{Body: fixedBody}, nil
}

// countingObserver counts the calls it saw end.
type countingObserver struct{ ended int }

func (o *countingObserver) StartCall(ctx context.Context, _ *cloudreq.CloudRequest, _ bool) (context.Context, cloudreq.CallObserver) {
	return ctx, o
}
func (*countingObserver) EndAttempt(cloudreq.AttemptInfo) {}
func (o *countingObserver) EndCall(*cloudreq.CloudResponse, *latency.Timeline, *errcodes.Error) {
	o.ended++
}

// TestPerCallOptionsAllocations: a generate call of one message with a
// per-call observer, as a benchmark's measured call is, allocates the
// call, its timeline and the adapter's response alone: the call's options,
// observers, working request and its messages live in the call.
func TestPerCallOptionsAllocations(t *testing.T) {
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{encodingNop{}},
		CallOptions: cloudreq.CallOptions{Retry: cloudreq.RetryOptions{MaxAttempts: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	obs := &countingObserver{}
	opt := func(o *cloudreq.CallOptions) { o.Observers = append(o.Observers, obs) }
	req := &cloudreq.CloudRequest{Provider: "openai", Action: "generate", Target: cloudreq.Target{Model: "m"},
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "hello"}}}}
	ctx := context.Background()
	n := testing.AllocsPerRun(200, func() {
		if _, err := c.Invoke(ctx, req, opt); err != nil {
			t.Fatal(err)
		}
	})
	if obs.ended != 201 {
		t.Fatalf("the per-call observer saw %d calls end, want 201", obs.ended)
	}
	if len(req.Generate.Messages) != 1 || req.Generate.Messages[0].Content != "hello" || req.Service != "" {
		t.Fatalf("the caller's request changed: %+v", req)
	}
	if n > 3 && !raceEnabled {
		t.Fatalf("%v allocations per call, want at most 3 (the call, its timeline, the response)", n)
	}
}
