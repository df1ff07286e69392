package cloudreq_test

import (
	"context"
	"fmt"
	"io"
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

func chunks(texts ...string) []cloudreq.StreamChunk {
	var out []cloudreq.StreamChunk
	for _, t := range texts {
		out = append(out, cloudreq.StreamChunk{Data: []byte(t), Text: t})
	}
	return out
}

func drain(s *cloudreq.Stream) []string {
	var got []string
	for s.Next() {
		got = append(got, s.Chunk().Text)
	}
	return got
}

func TestStreamHappyPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs := append([]cloudreq.StreamChunk{{Data: []byte(`{"role":"assistant"}`)}}, chunks("Hel", "lo")...)
		cs = append(cs, cloudreq.StreamChunk{FinishReason: "stop", Usage: &cloudreq.Usage{InputTokens: 5, OutputTokens: 2}})
		fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Chunks: cs, ChunkDelay: 10 * time.Millisecond}}}
		s, err := client(t, fake).Stream(context.Background(), req())
		require.NoError(t, err)
		assert.Nil(t, s.Response(), "no final response before the end")
		got := drain(s)
		assert.Equal(t, []string{"", "Hel", "lo", ""}, got)
		require.NoError(t, s.Err())
		resp := s.Response()
		require.NotNil(t, resp)
		assert.Equal(t, cloudreq.Usage{InputTokens: 5, OutputTokens: 2, Source: "server"}, resp.Usage)
		assert.Equal(t, "stop", resp.FinishReason)
		tl := resp.Timing
		require.Len(t, tl.Chunks, 4)
		assert.False(t, tl.Chunks[0].Content, "role-only chunk is not content")
		assert.True(t, tl.Chunks[1].Content)
		assert.False(t, tl.Chunks[3].Content, "usage-only chunk is not content")
		assert.Equal(t, 20*time.Millisecond, tl.Chunks[1].At.Sub(tl.Send()))
		assert.True(t, tl.Streamed)
		assert.NoError(t, s.Close(), "Close after the end is fine")
	})
}

func TestStreamCountsTokensWithoutUsage(t *testing.T) {
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Chunks: chunks("a", "b", "c")}}}
	s, err := client(t, fake).Stream(context.Background(), req())
	require.NoError(t, err)
	drain(s)
	assert.Equal(t, cloudreq.Usage{OutputTokens: 3, Source: "counted"}, s.Response().Usage)
}

func TestStreamRetriedBeforeFirstChunk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{
			{Err: errcodes.New(errcodes.Throttled, "open refused")},
			{StreamErr: errcodes.New(errcodes.Unavailable, "reset before any chunk")},
			{Chunks: chunks("ok")},
		}}
		s, err := client(t, fake).Stream(context.Background(), req())
		require.NoError(t, err)
		assert.Equal(t, []string{"ok"}, drain(s))
		require.NoError(t, s.Err())
		assert.Len(t, fake.Calls(), 3)
		assert.Len(t, s.Response().Timing.Attempts, 3)
		assert.Len(t, s.Response().Errors, 2)
	})
}

func TestStreamNeverRetriedAfterFirstChunk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{
			{Chunks: chunks("one", "two"), StreamErr: errcodes.New(errcodes.Unavailable, "connection reset")},
			{Chunks: chunks("SHOULD NOT APPEAR")},
		}}
		s, err := client(t, fake).Stream(context.Background(), req())
		require.NoError(t, err)
		assert.Equal(t, []string{"one", "two"}, drain(s), "chunks received so far are kept")
		assert.Equal(t, errcodes.StreamInterrupted, errcodes.Of(s.Err()))
		assert.Len(t, fake.Calls(), 1)
		resp := s.Response()
		require.NotNil(t, resp)
		assert.Equal(t, 2, resp.Usage.OutputTokens)
	})
}

func TestStreamIdleTimeoutCutsStallButNotSlowProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Chunks: chunks("a", "b", "c", "d"), ChunkDelay: 900 * time.Millisecond}}}
		s, err := client(t, slow, func(o *cloudreq.Options) { o.StreamIdleTimeout = time.Second }).Stream(context.Background(), req())
		require.NoError(t, err)
		assert.Len(t, drain(s), 4)
		assert.NoError(t, s.Err(), "a slow but progressing stream is not cut")

		stall := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Chunks: chunks("a"), Block: true}}}
		s, err = client(t, stall, func(o *cloudreq.Options) { o.StreamIdleTimeout = time.Second }).Stream(context.Background(), req())
		require.NoError(t, err)
		start := time.Now()
		assert.Len(t, drain(s), 1)
		assert.Equal(t, errcodes.Timeout, errcodes.Of(s.Err()))
		assert.Equal(t, time.Second, time.Since(start))
		assert.Len(t, stall.Calls(), 1)
	})
}

// TestStreamIdleTimeoutIgnoresSlowReader: the idle timeout times the
// server's silence, while Next waits, not the caller's own time between
// Next calls: a reader that takes longer than the timeout over each chunk
// of a stream that keeps coming is not cut.
func TestStreamIdleTimeoutIgnoresSlowReader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Chunks: chunks("a", "b", "c"), ChunkDelay: 100 * time.Millisecond}}}
		s, err := client(t, fake, func(o *cloudreq.Options) { o.StreamIdleTimeout = time.Second }).Stream(context.Background(), req())
		require.NoError(t, err)
		var got []string
		for s.Next() {
			got = append(got, s.Chunk().Text)
			time.Sleep(1500 * time.Millisecond) // the caller's own work on the chunk
		}
		require.NoError(t, s.Err())
		assert.Equal(t, []string{"a", "b", "c"}, got)
	})
}

func TestStreamFirstChunkTimeoutIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Block: true}, {Chunks: chunks("x")}}}
		s, err := client(t, fake, func(o *cloudreq.Options) { o.FirstChunkTimeout = time.Second }).Stream(context.Background(), req())
		require.NoError(t, err)
		assert.Equal(t, []string{"x"}, drain(s))
		assert.NoError(t, s.Err())
		assert.Len(t, fake.Calls(), 2)
	})
}

func TestStreamCloseAtAnyPoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Before reading.
		fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Chunks: chunks("a", "b")}}}
		c := client(t, fake)
		s, err := c.Stream(context.Background(), req())
		require.NoError(t, err)
		require.NoError(t, s.Close())
		assert.False(t, s.Next())
		assert.NoError(t, s.Err())
		assert.NotNil(t, s.Response())

		// From another goroutine while Next blocks.
		fake.Outcomes = []cloudreqtest.Outcome{{Chunks: chunks("a"), Block: true}}
		s, err = c.Stream(context.Background(), req())
		require.NoError(t, err)
		require.True(t, s.Next())
		time.AfterFunc(time.Second, func() { _ = s.Close() })
		start := time.Now()
		assert.False(t, s.Next())
		assert.Equal(t, time.Second, time.Since(start))
		assert.NoError(t, s.Err())
		assert.NoError(t, s.Close())
	})
}

func TestStreamCancelDuringBlockedRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Chunks: chunks("a"), Block: true}}}
		ctx, cancel := context.WithCancel(context.Background())
		s, err := client(t, fake).Stream(ctx, req())
		require.NoError(t, err)
		time.AfterFunc(time.Second, cancel)
		assert.Len(t, drain(s), 1)
		assert.Equal(t, errcodes.Canceled, errcodes.Of(s.Err()))
		assert.Len(t, fake.Calls(), 1)
	})
}

func TestStreamCancelDuringOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{BlockOpen: true}}}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		_, err := client(t, fake).Stream(ctx, req())
		assert.Equal(t, errcodes.Canceled, errcodes.Of(err))
		assert.Len(t, fake.Calls(), 1)
	})
}

func TestStreamOpenFailureExhaustsRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := failing(errcodes.New(errcodes.ModelNotReady, "loading"))
		sp := &spy{}
		_, err := client(t, fake, func(o *cloudreq.Options) {
			o.Observers = []cloudreq.Observer{sp}
			o.Retry.ColdStartWait = -1 // not-ready answers count towards MaxAttempts
		}).Stream(context.Background(), req())
		assert.Equal(t, errcodes.ModelNotReady, errcodes.Of(err))
		assert.Len(t, fake.Calls(), cloudreq.DefaultMaxAttempts)
		assert.Len(t, sp.attempts, cloudreq.DefaultMaxAttempts)
		require.Len(t, sp.ends, 1)
		assert.Equal(t, errcodes.ModelNotReady, sp.ends[0].Code)
	})
}

// order records the observer events of calls, in order.
type order struct {
	mu     sync.Mutex
	events []string
}

func (o *order) StartCall(ctx context.Context, _ *cloudreq.CloudRequest, _ bool) (context.Context, cloudreq.CallObserver) {
	return ctx, o
}

func (o *order) EndAttempt(a cloudreq.AttemptInfo) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, fmt.Sprintf("attempt %d", a.Attempt.Number))
}

func (o *order) EndCall(_ *cloudreq.CloudResponse, tl *latency.Timeline, err *errcodes.Error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, fmt.Sprintf("end %s after %d attempts", errcodes.Of(err), len(tl.Attempts)))
}

func (o *order) get() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.events...)
}

func TestStreamCloseWhileRetrying(t *testing.T) {
	t.Run("during the backoff", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			broke := errcodes.New(errcodes.Unavailable, "reset before any chunk")
			broke.RetryAfter = 10 * time.Second
			fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{StreamErr: broke}, {Chunks: chunks("too late")}}}
			ob := &order{}
			s, err := client(t, fake, func(o *cloudreq.Options) { o.Observers = []cloudreq.Observer{ob} }).Stream(context.Background(), req())
			require.NoError(t, err)
			time.AfterFunc(time.Second, func() { _ = s.Close() })
			start := time.Now()
			assert.False(t, s.Next())
			assert.Equal(t, time.Second, time.Since(start), "Close cuts the backoff short")
			assert.NoError(t, s.Err())
			synctest.Wait()
			assert.Len(t, fake.Calls(), 1, "no attempt is sent after Close")
			assert.Equal(t, []string{"attempt 1", "end ERR_CANCELED after 1 attempts"}, ob.get())
		})
	})
	t.Run("during the reopening attempt", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{
				{StreamErr: errcodes.New(errcodes.Unavailable, "reset before any chunk")},
				{BlockOpen: true},
			}}
			ob := &order{}
			s, err := client(t, fake, func(o *cloudreq.Options) {
				o.Observers = []cloudreq.Observer{ob}
				o.Retry.BaseDelay = time.Nanosecond
			}).Stream(context.Background(), req())
			require.NoError(t, err)
			done := make(chan bool)
			go func() { done <- s.Next() }()
			time.Sleep(time.Second)
			synctest.Wait()
			require.Len(t, fake.Calls(), 2, "the second attempt is waiting to open")
			require.NoError(t, s.Close())
			assert.False(t, <-done)
			assert.NoError(t, s.Err())
			// The call ends once, after its last attempt: observers never
			// see an attempt after the call's end, and the timeline is
			// complete when it is handed over.
			assert.Equal(t, []string{"attempt 1", "attempt 2", "end ERR_CANCELED after 2 attempts"}, ob.get())
			require.NotNil(t, s.Response())
			assert.Len(t, s.Response().Timing.Attempts, 2)
		})
	})
}

// lateOpener is a Streamer whose first open takes longer than the attempt
// timeout without watching its context (as an SDK may), and whose streams
// fail once their context ends, as an HTTP body does.
type lateOpener struct {
	cloudreqtest.Adapter
	late time.Duration
	n    int
}

func (a *lateOpener) Stream(ctx context.Context, call *cloudreq.Call) (cloudreq.ChunkStream, error) {
	a.n++
	if a.n == 1 {
		time.Sleep(a.late)
	}
	return &ctxStream{ctx: ctx, left: []string{"a", "b"}}, nil
}

type ctxStream struct {
	ctx  context.Context
	left []string
}

func (s *ctxStream) Response() *cloudreq.CloudResponse {
	return &cloudreq.CloudResponse{StatusCode: 200}
}

func (s *ctxStream) Next() (cloudreq.StreamChunk, error) {
	if err := s.ctx.Err(); err != nil {
		return cloudreq.StreamChunk{}, err
	}
	if len(s.left) == 0 {
		return cloudreq.StreamChunk{}, io.EOF
	}
	t := s.left[0]
	s.left = s.left[1:]
	return cloudreq.StreamChunk{Data: []byte(t), Text: t}, nil
}

func (s *ctxStream) Close() error { return nil }

// TestStreamOpenedPastAttemptTimeout: an attempt whose adapter returns
// after the attempt timeout fired has a dead context; it is a timed-out
// attempt (retried, as no chunk reached the caller), not a cancellation.
func TestStreamOpenedPastAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ad := &lateOpener{late: 2 * time.Second}
		c, err := cloudreq.New(cloudreq.Options{
			Adapters:    []cloudreq.Adapter{ad},
			CallOptions: cloudreq.CallOptions{AttemptTimeout: time.Second},
		})
		require.NoError(t, err)
		s, err := c.Stream(context.Background(), req())
		require.NoError(t, err)
		assert.Equal(t, []string{"a", "b"}, drain(s))
		require.NoError(t, s.Err())
		assert.Equal(t, 2, ad.n)
		tl := s.Response().Timing
		require.Len(t, tl.Attempts, 2)
		assert.Equal(t, string(errcodes.Timeout), tl.Attempts[0].Code)
	})
}

// bufferedOpener is a Streamer whose first attempt holds a chunk it
// returns only once its context ended, as a reader over bytes already
// buffered does; its later attempts stream normally.
type bufferedOpener struct {
	cloudreqtest.Adapter
	n int
}

func (a *bufferedOpener) Stream(ctx context.Context, call *cloudreq.Call) (cloudreq.ChunkStream, error) {
	a.n++
	if a.n == 1 {
		return &lateChunk{ctx: ctx}, nil
	}
	return &ctxStream{ctx: ctx, left: []string{"fresh"}}, nil
}

type lateChunk struct {
	ctx  context.Context
	sent bool
}

func (s *lateChunk) Response() *cloudreq.CloudResponse {
	return &cloudreq.CloudResponse{StatusCode: 200}
}

func (s *lateChunk) Next() (cloudreq.StreamChunk, error) {
	<-s.ctx.Done()
	if !s.sent {
		s.sent = true
		return cloudreq.StreamChunk{Data: []byte("stale"), Text: "stale"}, nil
	}
	return cloudreq.StreamChunk{}, s.ctx.Err()
}

func (s *lateChunk) Close() error { return nil }

// TestStreamFirstChunkAfterFirstChunkTimeout: a first chunk that an
// adapter returns after FirstChunkTimeout ended its attempt is not handed
// to the caller: the attempt timed out before any chunk reached the caller,
// so it is retried, rather than delivered from a dead attempt that then
// fails for good.
func TestStreamFirstChunkAfterFirstChunkTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ad := &bufferedOpener{}
		c, err := cloudreq.New(cloudreq.Options{
			Adapters:    []cloudreq.Adapter{ad},
			CallOptions: cloudreq.CallOptions{FirstChunkTimeout: time.Second},
		})
		require.NoError(t, err)
		s, err := c.Stream(context.Background(), req())
		require.NoError(t, err)
		assert.Equal(t, []string{"fresh"}, drain(s))
		require.NoError(t, s.Err())
		assert.Equal(t, 2, ad.n)
		tl := s.Response().Timing
		require.Len(t, tl.Attempts, 2)
		assert.Equal(t, string(errcodes.Timeout), tl.Attempts[0].Code)
	})
}

// TestStreamResponseCompleteAfterCloseOrError: a stream that ends with a
// Close or an error still has a complete final response: the errors of the
// attempts before the one that opened, and the start verdict.
func TestStreamResponseCompleteAfterCloseOrError(t *testing.T) {
	for _, end := range []string{"close", "error"} {
		t.Run(end, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := cloudreqtest.Outcome{
					Response: &cloudreq.CloudResponse{StatusCode: 200, ServerStart: &cloudreq.ServerStart{Cold: true}},
					Chunks:   chunks("a", "b"),
				}
				if end == "error" {
					o.StreamErr = errcodes.New(errcodes.Unavailable, "connection reset")
				}
				fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Err: errcodes.New(errcodes.Throttled, "busy")}, o}}
				s, err := client(t, fake).Stream(context.Background(), req())
				require.NoError(t, err)
				require.True(t, s.Next())
				if end == "close" {
					require.NoError(t, s.Close())
				} else {
					drain(s)
					require.Error(t, s.Err())
				}
				resp := s.Response()
				require.NotNil(t, resp)
				assert.Equal(t, latency.Cold, resp.Start.Kind)
				assert.Equal(t, latency.ReasonServerReported, resp.Start.Reason)
				require.Len(t, resp.Errors, 1)
				assert.Equal(t, errcodes.Throttled, resp.Errors[0].Code)
				assert.Len(t, resp.Timing.Attempts, 2)
			})
		})
	}
	// Closed before its first chunk: the endpoint served nothing, so the
	// call has no start verdict and is no evidence for the next call, which
	// is the endpoint's first served request.
	t.Run("close before the first chunk", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			o := cloudreqtest.Outcome{Response: &cloudreq.CloudResponse{StatusCode: 200}, Chunks: chunks("a")}
			fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Err: errcodes.New(errcodes.Throttled, "busy")}, o, o}}
			c := client(t, fake, func(o *cloudreq.Options) { o.ScaleToZeroWindow = time.Hour })
			s, err := c.Stream(context.Background(), req())
			require.NoError(t, err)
			require.NoError(t, s.Close())
			resp := s.Response()
			require.NotNil(t, resp)
			assert.Empty(t, resp.Start.Kind)
			require.Len(t, resp.Errors, 1)
			next, err := c.Invoke(context.Background(), req())
			require.NoError(t, err)
			assert.Equal(t, latency.Cold, next.Start.Kind, "the first served request")
		})
	})
}

// bufferedAdapter streams chunks it already holds, whatever the context
// says, as a transport does with bytes it read ahead.
type bufferedAdapter struct{ texts []string }

func (bufferedAdapter) Describe() cloudreq.Description {
	return cloudreq.Description{Provider: "fake", Service: "fake", Actions: []string{cloudreq.ActionInvoke}}
}

func (bufferedAdapter) Invoke(context.Context, *cloudreq.Call) (*cloudreq.CloudResponse, error) {
	return &cloudreq.CloudResponse{StatusCode: 200}, nil
}

func (a bufferedAdapter) Stream(context.Context, *cloudreq.Call) (cloudreq.ChunkStream, error) {
	return &bufferedStream{texts: a.texts}, nil
}

type bufferedStream struct{ texts []string }

func (s *bufferedStream) Response() *cloudreq.CloudResponse {
	return &cloudreq.CloudResponse{StatusCode: 200}
}

func (s *bufferedStream) Next() (cloudreq.StreamChunk, error) {
	if len(s.texts) == 0 {
		return cloudreq.StreamChunk{FinishReason: "stop"}, io.EOF
	}
	t := s.texts[0]
	s.texts = s.texts[1:]
	return cloudreq.StreamChunk{Text: t, Tokens: 1}, nil
}

func (s *bufferedStream) Close() error { return nil }

// A stream whose remaining chunks are already buffered when the caller
// cancels ends canceled at the next Next, not as a success.
func TestStreamCanceledWithChunksBuffered(t *testing.T) {
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{bufferedAdapter{[]string{"a", "b", "c", "d", "e"}}}})
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := req()
	r.Provider, r.Service, r.Action = "fake", "fake", cloudreq.ActionInvoke
	s, err := c.Stream(ctx, r)
	require.NoError(t, err)
	defer s.Close()
	got := 0
	for s.Next() {
		got++
		if got == 2 {
			cancel()
		}
	}
	assert.Equal(t, 2, got, "no chunk is delivered after the cancel")
	assert.Equal(t, errcodes.Canceled, errcodes.Of(s.Err()), "%v", s.Err())
}
