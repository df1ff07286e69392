package cloudreqtest_test

// The tests below use the fake as a user testing their own service would:
// through a cloudreq.Client.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
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

func newClient(t *testing.T, fake *cloudreqtest.Adapter, optFns ...func(*cloudreq.Options)) *cloudreq.Client {
	t.Helper()
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{fake}}, optFns...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func invokeReq(body string) *cloudreq.CloudRequest {
	return &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderOpenAI, Service: cloudreq.ServiceOpenAICompatible, Action: cloudreq.ActionInvoke,
		Target: cloudreq.Target{Model: "m"}, Payload: cloudreq.Payload{Body: []byte(body)},
	}
}

func measure(resp *cloudreq.CloudResponse, err error) latency.Sample {
	o := latency.Outcome{Start: resp.Start, OutputTokens: resp.Usage.OutputTokens,
		TokenSource: latency.TokenSource(resp.Usage.Source)}
	if err != nil {
		o.Err = string(errcodes.Of(err))
	}
	return latency.Measure(resp.Timing, o)
}

// TestScriptedRetries: one Outcome per attempt, a Retry-After honoured by
// the client, and every attempt recorded with its number and body.
func TestScriptedRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		throttled := errcodes.New(errcodes.Throttled, "slow down")
		throttled.RetryAfter = 2 * time.Second
		fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{
			{Err: throttled},
			{Err: errcodes.New(errcodes.Unavailable, "try again")},
			{Response: &cloudreq.CloudResponse{StatusCode: 200, Data: []byte("ok")}},
		}}
		resp, err := newClient(t, fake).Invoke(context.Background(), invokeReq("q"))
		require.NoError(t, err)
		assert.Equal(t, "ok", string(resp.Data))
		require.Len(t, resp.Errors, 2)
		assert.Equal(t, errcodes.Throttled, resp.Errors[0].Code)
		assert.Equal(t, errcodes.Unavailable, resp.Errors[1].Code)
		require.Len(t, resp.Timing.Attempts, 3)
		assert.GreaterOrEqual(t, resp.Timing.Attempts[1].Backoff, 2*time.Second, "Retry-After honoured")

		calls := fake.Calls()
		require.Len(t, calls, 3)
		for i, c := range calls {
			assert.Equal(t, i+1, c.Attempt)
			assert.Equal(t, "q", string(c.Body))
		}
	})
}

// TestEveryCodeComesBackNormalized: whatever error an Outcome holds, the
// caller gets an *errcodes.Error with that code and the provider set.
func TestEveryCodeComesBackNormalized(t *testing.T) {
	type tc struct {
		err  error
		want errcodes.Code
	}
	cases := map[string]tc{
		"plain error": {errors.New("boom"), errcodes.Unknown},
		"EOF":         {io.ErrUnexpectedEOF, errcodes.Unavailable},
	}
	for _, code := range errcodes.All {
		cases[string(code)] = tc{errcodes.New(code, "scripted"), code}
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Err: c.err}}}
			cl := newClient(t, fake, func(o *cloudreq.Options) { o.Retry.MaxAttempts, o.Retry.ColdStartWait = 1, -1 })
			_, err := cl.Invoke(context.Background(), invokeReq("q"))
			var e *errcodes.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, c.want, e.Code)
			assert.ErrorIs(t, err, c.want)
			assert.Equal(t, cloudreq.ProviderOpenAI, e.Provider)
		})
	}
}

// TestScriptedStream: chunks with chosen text and token counts, delays on
// the test's clock, and a stream that breaks after N chunks.
func TestScriptedStream(t *testing.T) {
	chunks := []cloudreq.StreamChunk{{Text: "a"}, {Text: "bc", Tokens: 2}, {Text: "d"}}
	for name, streamErr := range map[string]error{
		"interrupted": errcodes.New(errcodes.StreamInterrupted, "cut"),
		"reset":       io.ErrUnexpectedEOF,
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{
					{Chunks: chunks, StreamErr: streamErr, Delay: 100 * time.Millisecond, ChunkDelay: 20 * time.Millisecond},
				}}
				s, err := newClient(t, fake).Stream(context.Background(), invokeReq("q"))
				require.NoError(t, err)
				var got string
				for s.Next() {
					got += s.Chunk().Text
				}
				assert.Equal(t, "abcd", got)
				assert.Equal(t, errcodes.StreamInterrupted, errcodes.Of(s.Err()))
				assert.Len(t, fake.Calls(), 1, "a stream is not retried after its first chunk")
				smp := measure(s.Response(), s.Err())
				assert.Equal(t, 120*time.Millisecond, smp.TTFT)
				assert.Equal(t, 160*time.Millisecond, smp.E2E)
				assert.Equal(t, 4, smp.OutputTokens)
				assert.Equal(t, (40*time.Millisecond)/3, smp.TPOT)
			})
		})
	}
}

// TestTimelinePhases: the fake reports when it read the request and when
// its answer began, as a transport does, so that a measured call has its
// server wait (the Delay) and its first-token phase.
func TestTimelinePhases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{
			{Response: &cloudreq.CloudResponse{StatusCode: 200, Usage: cloudreq.Usage{OutputTokens: 5}}, Delay: 50 * time.Millisecond},
		}}
		c := newClient(t, fake)
		resp, err := c.Invoke(context.Background(), invokeReq("q"))
		require.NoError(t, err)
		smp := measure(resp, nil)
		assert.True(t, smp.Has.Has(latency.ServerWait), "server wait measured")
		assert.Equal(t, 50*time.Millisecond, smp.Phases.ServerWait)
		assert.Equal(t, 50*time.Millisecond, smp.E2E)

		fake.Outcomes = []cloudreqtest.Outcome{{Chunks: []cloudreq.StreamChunk{{Text: "a"}, {Text: "b"}},
			Delay: 30 * time.Millisecond, ChunkDelay: 10 * time.Millisecond}}
		s, err := c.Stream(context.Background(), invokeReq("q"))
		require.NoError(t, err)
		for s.Next() {
		}
		require.NoError(t, s.Err())
		smp = measure(s.Response(), nil)
		assert.Equal(t, 30*time.Millisecond, smp.Phases.ServerWait)
		assert.True(t, smp.Has.Has(latency.FirstToken), "first-token phase measured")
		assert.Equal(t, 10*time.Millisecond, smp.Phases.FirstToken)
		assert.Equal(t, 40*time.Millisecond, smp.TTFT)
		assert.Equal(t, 10*time.Millisecond, smp.TPOT)
	})
}

// TestDelaysEndWithTheContext: a caller's cancel or deadline ends a
// scripted wait at once, whichever phase it is in.
func TestDelaysEndWithTheContext(t *testing.T) {
	long := time.Hour
	for name, o := range map[string]cloudreqtest.Outcome{
		"Invoke Delay":     {Delay: long},
		"Invoke Block":     {Block: true},
		"Stream Delay":     {Delay: long, Chunks: []cloudreq.StreamChunk{{Text: "a"}}},
		"Stream BlockOpen": {BlockOpen: true},
		"ChunkDelay":       {Chunks: []cloudreq.StreamChunk{{Text: "a"}, {Text: "b"}}, ChunkDelay: long},
		"Block after":      {Chunks: []cloudreq.StreamChunk{{Text: "a"}}, Block: true},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{o}}
				c := newClient(t, fake)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				time.AfterFunc(time.Second, cancel)
				start := time.Now()
				var err error
				if strings.HasPrefix(name, "Invoke") {
					_, err = c.Invoke(ctx, invokeReq("q"))
				} else {
					var s *cloudreq.Stream
					if s, err = c.Stream(ctx, invokeReq("q")); err == nil {
						for s.Next() {
						}
						err = s.Err()
					}
				}
				assert.Equal(t, errcodes.Canceled, errcodes.Of(err))
				assert.Equal(t, time.Second, time.Since(start))
			})
		})
	}
}

// TestStreamClosedEarly: a Close from another goroutine ends a read that
// waits, and leaves nothing running (synctest fails on a goroutine left
// blocked, goleak on one left at all).
func TestStreamClosedEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{
			{Chunks: []cloudreq.StreamChunk{{Text: "a"}, {Text: "b"}}, ChunkDelay: time.Hour},
		}}
		s, err := newClient(t, fake).Stream(context.Background(), invokeReq("q"))
		require.NoError(t, err)
		time.AfterFunc(time.Second, func() { _ = s.Close() })
		start := time.Now()
		assert.False(t, s.Next())
		assert.Equal(t, time.Second, time.Since(start))
		assert.NoError(t, s.Err(), "a Close is no error")
	})
}

// TestConcurrentCalls: calls from many goroutines, Calls read meanwhile;
// every attempt is recorded once, with its own headers and body.
func TestConcurrentCalls(t *testing.T) {
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{
		Response: &cloudreq.CloudResponse{StatusCode: 200, Metadata: map[string]string{"k": "v"}},
		Chunks:   []cloudreq.StreamChunk{{Text: "a", Data: []byte("a")}, {Text: "b", Data: []byte("b")}},
	}}}
	c := newClient(t, fake)
	const n = 16
	var wg sync.WaitGroup
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				for _, r := range fake.Calls() {
					_ = r.Request.Header.Get("X-N")
				}
			}
		}
	}()
	for i := range n {
		wg.Go(func() {
			r := invokeReq(strconv.Itoa(i))
			r.Header = http.Header{"X-N": {strconv.Itoa(i)}}
			if i%2 == 0 {
				resp, err := c.Invoke(context.Background(), r)
				if assert.NoError(t, err) {
					resp.Metadata["k"] = strconv.Itoa(i)
				}
				return
			}
			s, err := c.Stream(context.Background(), r)
			if !assert.NoError(t, err) {
				return
			}
			for s.Next() {
			}
			assert.NoError(t, s.Err())
		})
	}
	wg.Wait()
	close(stop)
	seen := map[string]bool{}
	for _, r := range fake.Calls() {
		h := r.Request.Header.Get("X-N")
		assert.Equal(t, h, string(r.Body))
		assert.Equal(t, 1, r.Attempt)
		assert.False(t, seen[h], "attempt %s recorded once", h)
		seen[h] = true
	}
	assert.Len(t, seen, n)
}

// TestChunksAreNotShared: each attempt's stream yields its own chunk
// bytes, as a real stream does, so that a reader that changes them changes
// neither the Outcome nor another attempt's chunks.
func TestChunksAreNotShared(t *testing.T) {
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{
		Chunks: []cloudreq.StreamChunk{{Data: []byte("data"), Text: "t", Usage: &cloudreq.Usage{OutputTokens: 1}}},
	}}}
	c := newClient(t, fake)
	for range 2 {
		s, err := c.Stream(context.Background(), invokeReq("q"))
		require.NoError(t, err)
		require.True(t, s.Next())
		ch := s.Chunk()
		assert.Equal(t, "data", string(ch.Data))
		ch.Data[0] = 'X'
		ch.Usage.OutputTokens = 99
		_ = s.Close()
	}
	assert.Equal(t, "data", string(fake.Outcomes[0].Chunks[0].Data))
	assert.Equal(t, 1, fake.Outcomes[0].Chunks[0].Usage.OutputTokens)
}

// TestRespondScriptsEachCall: Respond picks an attempt's Outcome from what
// was sent, so that concurrent calls each get their own script.
func TestRespondScriptsEachCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &cloudreqtest.Adapter{Respond: func(r cloudreqtest.Recorded) cloudreqtest.Outcome {
			if r.Attempt == 1 {
				return cloudreqtest.Outcome{Err: errcodes.New(errcodes.Throttled, "first attempt")}
			}
			return cloudreqtest.Outcome{Response: &cloudreq.CloudResponse{StatusCode: 200,
				Data: []byte(r.Request.Target.Model + ":" + string(r.Body))}}
		}}
		c := newClient(t, fake)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				r := invokeReq(strconv.Itoa(i))
				r.Target.Model = "m" + strconv.Itoa(i)
				resp, err := c.Invoke(context.Background(), r)
				if assert.NoError(t, err) {
					assert.Equal(t, fmt.Sprintf("m%d:%d", i, i), string(resp.Data))
					assert.Len(t, resp.Errors, 1)
				}
			})
		}
		wg.Wait()
		assert.Len(t, fake.Calls(), 16)
	})
}

// TestRespondMayInspectCalls: Respond runs outside the fake's lock, so it
// may read Calls.
func TestRespondMayInspectCalls(t *testing.T) {
	fake := &cloudreqtest.Adapter{}
	fake.Respond = func(cloudreqtest.Recorded) cloudreqtest.Outcome {
		return cloudreqtest.Outcome{Response: &cloudreq.CloudResponse{StatusCode: 200,
			Data: []byte(strconv.Itoa(len(fake.Calls())))}}
	}
	resp, err := newClient(t, fake).Invoke(context.Background(), invokeReq("q"))
	require.NoError(t, err)
	assert.Equal(t, "1", string(resp.Data))
}

// TestRespondPanicIsContained: a panic in Respond fails the call with
// ERR_INTERNAL, and the fake goes on serving.
func TestRespondPanicIsContained(t *testing.T) {
	var panics bool
	fake := &cloudreqtest.Adapter{Respond: func(cloudreqtest.Recorded) cloudreqtest.Outcome {
		if panics {
			panic("bug in the test's script")
		}
		return cloudreqtest.Outcome{}
	}}
	c := newClient(t, fake)
	panics = true
	_, err := c.Invoke(context.Background(), invokeReq("q"))
	assert.Equal(t, errcodes.Internal, errcodes.Of(err))
	_, err = c.Stream(context.Background(), invokeReq("q"))
	assert.Equal(t, errcodes.Internal, errcodes.Of(err))
	panics = false
	_, err = c.Invoke(context.Background(), invokeReq("q"))
	assert.NoError(t, err)
	assert.Len(t, fake.Calls(), 3)
}
