package cloudreq_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/cloudreq/cloudreqtest"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/hooks"
	"github.com/cloudinfer/cloudinfer/latency"
)

func TestUnsupportedCombinationListsSupported(t *testing.T) {
	sm := &cloudreqtest.Adapter{Provider: "aws", Service: "sagemaker"}
	eas := &cloudreqtest.Adapter{Provider: "alibaba", Service: "pai-eas", Actions: []string{"invoke"}}
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{sm, eas}})
	require.NoError(t, err)

	tests := []struct{ provider, service, action, want string }{
		{"gcp", "vertex", "invoke", `unsupported provider/service "gcp"/"vertex"`},
		{"alibaba", "pai-eas", "generate", `unsupported action "generate" for alibaba/pai-eas`},
		{"aws", "sagemaker", "train", `unsupported action "train"`},
	}
	for _, tt := range tests {
		r := req()
		r.Provider, r.Service, r.Action = tt.provider, tt.service, tt.action
		_, err := c.Invoke(context.Background(), r)
		require.Error(t, err)
		assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
		assert.Contains(t, err.Error(), tt.want)
		assert.Contains(t, err.Error(), "alibaba/pai-eas: invoke (stream); aws/sagemaker: invoke, generate (stream)")
	}
	assert.Empty(t, sm.Calls())
}

type noStream struct{ inner cloudreqtest.Adapter }

func (n *noStream) Describe() cloudreq.Description {
	return cloudreq.Description{Provider: "x", Service: "y", Actions: []string{"invoke"}}
}

func (n *noStream) Invoke(ctx context.Context, call *cloudreq.Call) (*cloudreq.CloudResponse, error) {
	return n.inner.Invoke(ctx, call)
}

func TestStreamNeedsStreamer(t *testing.T) {
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{&noStream{}}})
	require.NoError(t, err)
	r := req()
	r.Provider, r.Service = "x", "y"
	_, err = c.Stream(context.Background(), r)
	assert.ErrorContains(t, err, "unsupported streaming for x/y")
}

func TestNewRejectsDuplicateAdapters(t *testing.T) {
	_, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{&cloudreqtest.Adapter{}, &cloudreqtest.Adapter{}}})
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
	_, err = cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{nil}})
	assert.Error(t, err)
}

func TestValidation(t *testing.T) {
	fake := &cloudreqtest.Adapter{}
	c := client(t, fake)
	neg, big := -0.5, 3.0
	tests := []struct {
		name string
		mod  func(*cloudreq.CloudRequest)
		want string
	}{
		{"nil target", func(r *cloudreq.CloudRequest) { r.Target = cloudreq.Target{} }, "Target.Endpoint or Target.Model"},
		{"empty body", func(r *cloudreq.CloudRequest) { r.Payload.Body = nil }, "needs Payload.Body"},
		{"no messages", func(r *cloudreq.CloudRequest) { r.Action = "generate" }, "needs Generate.Messages"},
		{"temperature", func(r *cloudreq.CloudRequest) {
			r.Action = "generate"
			r.Generate = &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "x"}}, Temperature: &big}
		}, "Temperature 3"},
		{"top p", func(r *cloudreq.CloudRequest) {
			r.Action = "generate"
			r.Generate = &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "x"}}, TopP: &neg}
		}, "TopP -0.5"},
		{"max tokens", func(r *cloudreq.CloudRequest) {
			r.Action = "generate"
			r.Generate = &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "x"}}, MaxTokens: -1}
		}, "MaxTokens is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := req()
			tt.mod(r)
			_, err := c.Invoke(context.Background(), r)
			assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
			assert.ErrorContains(t, err, tt.want)
		})
	}
	_, err := c.Invoke(context.Background(), nil)
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
	assert.Empty(t, fake.Calls())
}

func TestGenerateIsEncodedOnce(t *testing.T) {
	fake := &cloudreqtest.Adapter{}
	c := client(t, fake)
	r := req()
	r.Action = "generate"
	r.Generate = &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "hello"}}}
	resp, err := c.Invoke(context.Background(), r)
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(resp.Data))
}

type nativeErr struct{ Status int }

func (n *nativeErr) Error() string { return fmt.Sprintf("native status %d", n.Status) }

func TestNativeErrorReachableThroughClient(t *testing.T) {
	fake := failing(errcodes.Wrap(&nativeErr{Status: 424}, errcodes.ModelError, "model failed"))
	_, err := client(t, fake).Invoke(context.Background(), req())
	var n *nativeErr
	require.ErrorAs(t, err, &n)
	assert.Equal(t, 424, n.Status)
	assert.ErrorIs(t, err, errcodes.ModelError)
	var ce *errcodes.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "openai", ce.Provider, "the client fills the provider")
}

func TestUnclassifiedAdapterErrorsAreNormalized(t *testing.T) {
	fake := failing(nil)
	fake.Outcomes[0].Err = io.ErrUnexpectedEOF
	_, err := client(t, fake, func(o *cloudreq.Options) { o.Retry.MaxAttempts = 1 }).Invoke(context.Background(), req())
	var ce *errcodes.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, errcodes.Unavailable, ce.Code)
	assert.True(t, ce.Retryable)
}

type panicky struct{ cloudreqtest.Adapter }

func (p *panicky) Invoke(context.Context, *cloudreq.Call) (*cloudreq.CloudResponse, error) {
	panic("adapter bug")
}

func TestPanicDoesNotCrossTheAPI(t *testing.T) {
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{&panicky{}}})
	require.NoError(t, err)
	_, err = c.Invoke(context.Background(), req())
	assert.Equal(t, errcodes.Internal, errcodes.Of(err))
	assert.ErrorContains(t, err, "adapter bug")
}

type spy struct {
	mu       sync.Mutex
	attempts []latency.Attempt
	ends     []*errcodes.Error
	resp     []*cloudreq.CloudResponse
}

func (s *spy) StartCall(ctx context.Context, _ *cloudreq.CloudRequest, _ bool) (context.Context, cloudreq.CallObserver) {
	return ctx, s
}
func (s *spy) EndAttempt(a cloudreq.AttemptInfo) {
	s.mu.Lock()
	s.attempts = append(s.attempts, a.Attempt)
	s.mu.Unlock()
}
func (s *spy) EndCall(resp *cloudreq.CloudResponse, _ *latency.Timeline, err *errcodes.Error) {
	s.mu.Lock()
	s.ends = append(s.ends, err)
	s.resp = append(s.resp, resp)
	s.mu.Unlock()
}

func TestObserversSeeAttemptsAndEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sp := &spy{}
		fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Err: errcodes.New(errcodes.Throttled, "x")}, {}}}
		_, err := client(t, fake, func(o *cloudreq.Options) { o.Observers = append(o.Observers, sp) }).Invoke(context.Background(), req())
		require.NoError(t, err)
		assert.Len(t, sp.attempts, 2)
		require.Len(t, sp.ends, 1)
		assert.Nil(t, sp.ends[0])
		assert.NotNil(t, sp.resp[0])
	})
}

func TestTimelineAndStartClassification(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{
			{Err: errcodes.New(errcodes.ModelNotReady, "loading")},
			{Response: &cloudreq.CloudResponse{StatusCode: 200}, Delay: 50 * time.Millisecond},
		}}
		c := client(t, fake)
		r := req()
		r.IntendedSend = time.Now().Add(-time.Second)
		resp, err := c.Invoke(context.Background(), r)
		require.NoError(t, err)
		tl := resp.Timing
		assert.Equal(t, r.IntendedSend, tl.IntendedSend)
		require.Len(t, tl.Attempts, 2)
		assert.Equal(t, latency.Cold, resp.Start.Kind)
		assert.Equal(t, latency.ReasonNotReadyThenReady, resp.Start.Reason)
		assert.Equal(t, tl.Attempts[1].Send, tl.ModelReady)
		assert.Equal(t, tl.Attempts[1].Backoff, resp.Start.Overhead)
		assert.Equal(t, 50*time.Millisecond, tl.End.Sub(tl.Attempts[1].Send))
		require.Len(t, tl.Chunks, 1)

		// Server-reported start wins; a later plain call is warm.
		fake.Outcomes = []cloudreqtest.Outcome{{Response: &cloudreq.CloudResponse{ServerStart: &cloudreq.ServerStart{Cold: true, Setup: 2 * time.Second}}}}
		resp, err = c.Invoke(context.Background(), req())
		require.NoError(t, err)
		assert.Equal(t, latency.Cold, resp.Start.Kind)
		assert.Equal(t, latency.ReasonServerReported, resp.Start.Reason)
		assert.Equal(t, 2*time.Second, resp.Start.Overhead)
	})
}

func TestScaleToZeroWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := client(t, &cloudreqtest.Adapter{}, func(o *cloudreq.Options) { o.ScaleToZeroWindow = time.Minute })
		kinds := func() latency.Start {
			resp, err := c.Invoke(context.Background(), req())
			require.NoError(t, err)
			return resp.Start
		}
		assert.Equal(t, latency.ReasonFirstRequest, kinds().Reason)
		assert.Equal(t, latency.Warm, kinds().Kind)
		time.Sleep(2 * time.Minute)
		s := kinds()
		assert.Equal(t, latency.Cold, s.Kind)
		assert.Equal(t, latency.ReasonIdleGap, s.Reason)
	})
}

func TestCallerContextCanceledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Block: true}}}
	_, err := client(t, fake).Invoke(ctx, req())
	assert.Equal(t, errcodes.Canceled, errcodes.Of(err))
	assert.True(t, errors.Is(err, context.Canceled))
}

// TestTimingKeepsNoRequest checks that a response's Timeline, which
// callers keep (a benchmark may keep thousands), keeps neither the call's
// request nor its payload reachable.
func TestTimingKeepsNoRequest(t *testing.T) {
	c, err := cloudreq.New(cloudreq.Options{
		Adapters:    []cloudreq.Adapter{nopAdapter{}},
		CallOptions: cloudreq.CallOptions{Hooks: hooks.Default()},
	})
	require.NoError(t, err)
	var kept weak.Pointer[[1 << 16]byte]
	resp := func() *cloudreq.CloudResponse { // the request and body live in this frame only
		body := new([1 << 16]byte)
		copy(body[:], `{"prompt":"hello"}`)
		kept = weak.Make(body)
		r := &cloudreq.CloudRequest{Provider: "openai", Service: "openai-compatible", Action: "invoke",
			Target: cloudreq.Target{Model: "m"}, Payload: cloudreq.Payload{Body: body[:18]}}
		resp, err := c.Invoke(context.Background(), r)
		require.NoError(t, err)
		return resp
	}()
	for i := 0; i < 5 && kept.Value() != nil; i++ {
		runtime.GC()
	}
	assert.True(t, kept.Value() == nil, "the response's timeline keeps the request's payload")
	require.Len(t, resp.Timing.Attempts, 1)
	runtime.KeepAlive(resp.Timing)
}

// TestIntendedSendDefaultsToFirstSend: without a schedule, the intended send
// time is the first attempt's send time (MEASUREMENT.md: equal to the send
// time in a closed loop), so that hooks and other client work before the
// send are no schedule lag.
func TestIntendedSendDefaultsToFirstSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := hooks.PreSerializeFunc(func(context.Context, *cloudreq.CloudRequest) error {
			time.Sleep(5 * time.Millisecond)
			return nil
		})
		set := hooks.Default()
		require.NoError(t, set.Serialize.Add("slow", slow))
		fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{
			{Err: errcodes.New(errcodes.Unavailable, "blip")},
			{Response: &cloudreq.CloudResponse{StatusCode: 200}},
		}}
		c, err := cloudreq.New(cloudreq.Options{
			Adapters:    []cloudreq.Adapter{fake},
			CallOptions: cloudreq.CallOptions{Hooks: set},
		})
		require.NoError(t, err)
		resp, err := c.Invoke(context.Background(), req())
		require.NoError(t, err)
		tl := resp.Timing
		require.Len(t, tl.Attempts, 2)
		assert.Equal(t, tl.Attempts[0].Send, tl.IntendedSend)
		assert.Equal(t, 5*time.Millisecond, tl.IntendedSend.Sub(tl.Start), "the hook ran before the send")
		s := latency.Measure(tl, latency.Outcome{})
		assert.Zero(t, s.ScheduleLag)
		assert.Equal(t, tl.Chunks[0].At.Sub(tl.Attempts[0].Send), s.E2EIntended, "retries count from the first send")

		// A scheduled request keeps its intended time.
		r := req()
		r.IntendedSend = time.Now().Add(-time.Second)
		fake.Outcomes = []cloudreqtest.Outcome{{Response: &cloudreq.CloudResponse{StatusCode: 200}}}
		resp, err = c.Invoke(context.Background(), r)
		require.NoError(t, err)
		assert.Equal(t, r.IntendedSend, resp.Timing.IntendedSend)
	})
}

// TestNewCopiesOptionSlices: the client keeps its own copy of the options'
// slices, so that the caller reusing its Options cannot change (or race
// with) the client's adapters and observers.
func TestNewCopiesOptionSlices(t *testing.T) {
	mine, other := &spy{}, &spy{}
	opts := cloudreq.Options{
		Adapters:    []cloudreq.Adapter{&cloudreqtest.Adapter{}},
		CallOptions: cloudreq.CallOptions{Observers: []cloudreq.Observer{mine}},
	}
	c, err := cloudreq.New(opts)
	require.NoError(t, err)
	opts.Observers[0] = other
	opts.Adapters[0] = nil
	_, err = c.Invoke(context.Background(), req())
	require.NoError(t, err)
	assert.Len(t, mine.attempts, 1)
	assert.Empty(t, other.attempts)
	var seen []cloudreq.Observer
	_, err = c.Invoke(context.Background(), req(), func(o *cloudreq.CallOptions) {
		seen = append(seen, o.Observers...)
		o.Observers[0] = other
	})
	require.NoError(t, err)
	require.Len(t, seen, 1)
	assert.Same(t, mine, seen[0], "per-call options see the client's observers")
	assert.Len(t, other.attempts, 1, "the call's copy of them")
	_, err = c.Invoke(context.Background(), req())
	require.NoError(t, err)
	assert.Len(t, mine.attempts, 2, "and the client keeps its own")
	assert.Len(t, other.attempts, 1)
}

// TestPerCallOptionsAreCallOptions: a call changes its own copy of the
// client's CallOptions (here, its retries) and leaves the client's as
// they were; a client option function made per-call (PerCall) that sets
// a client-only option fails the call instead of being ignored.
func TestPerCallOptionsAreCallOptions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := failing(errcodes.New(errcodes.Unavailable, "down"))
		c := client(t, fake) // DefaultMaxAttempts: 3
		_, err := c.Invoke(context.Background(), req(), func(o *cloudreq.CallOptions) { o.Retry.MaxAttempts = 4 })
		assert.ErrorIs(t, err, errcodes.Unavailable)
		assert.Len(t, fake.Calls(), 4, "the call's MaxAttempts")
		_, err = c.Invoke(context.Background(), req())
		assert.ErrorIs(t, err, errcodes.Unavailable)
		assert.Len(t, fake.Calls(), 7, "the client's, unchanged")

		_, err = c.Invoke(context.Background(), req(), cloudreq.PerCall(func(o *cloudreq.Options) { o.Retry.MaxAttempts = 1 }))
		assert.ErrorIs(t, err, errcodes.Unavailable)
		assert.Len(t, fake.Calls(), 8, "PerCall applies a client option's CallOptions to the call")

		for name, f := range map[string]func(*cloudreq.Options){
			"Adapters":          func(o *cloudreq.Options) { o.Adapters = append(o.Adapters, &cloudreqtest.Adapter{}) },
			"ScaleToZeroWindow": func(o *cloudreq.Options) { o.ScaleToZeroWindow = time.Minute },
		} {
			sp := &spy{}
			obs := func(o *cloudreq.CallOptions) { o.Observers = append(o.Observers, sp) }
			for _, stream := range []bool{false, true} {
				if stream {
					_, err = c.Stream(context.Background(), req(), obs, cloudreq.PerCall(f))
				} else {
					_, err = c.Invoke(context.Background(), req(), obs, cloudreq.PerCall(f))
				}
				var e *errcodes.Error
				require.ErrorAs(t, err, &e, name)
				assert.Equal(t, errcodes.InvalidParam, e.Code, name)
				assert.False(t, e.Retryable, name)
				assert.Contains(t, e.Message, name+" is a client option", name)
			}
			assert.Len(t, fake.Calls(), 8, "%s: nothing is sent", name)
			assert.Empty(t, sp.ends, "%s: the call is refused before observers start", name)
		}
	})
}
