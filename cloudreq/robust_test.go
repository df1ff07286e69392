package cloudreq_test

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/cloudreq/cloudreqtest"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/hooks"
	"github.com/cloudinfer/cloudinfer/latency"
)

// nilErr is the slip these tests make on purpose: a nil *errcodes.Error
// returned through the error interface.
var nilErr *errcodes.Error

// typedNilAdapter answers with a response and a typed nil error, or only
// the typed nil when noResponse is set; its streams end with chunks whose
// errors are typed nils, then io.EOF.
type typedNilAdapter struct{ noResponse bool }

func (typedNilAdapter) Describe() cloudreq.Description {
	return cloudreq.Description{Provider: "openai", Service: "openai-compatible", Actions: []string{"invoke"}}
}

func (a typedNilAdapter) Invoke(context.Context, *cloudreq.Call) (*cloudreq.CloudResponse, error) {
	if a.noResponse {
		return nil, nilErr
	}
	return &cloudreq.CloudResponse{StatusCode: 200}, nilErr
}

func (typedNilAdapter) Stream(context.Context, *cloudreq.Call) (cloudreq.ChunkStream, error) {
	return &typedNilStream{}, nilErr
}

type typedNilStream struct{ n int }

func (s *typedNilStream) Response() *cloudreq.CloudResponse {
	return &cloudreq.CloudResponse{StatusCode: 200}
}
func (s *typedNilStream) Close() error { return nilErr }
func (s *typedNilStream) Next() (cloudreq.StreamChunk, error) {
	if s.n++; s.n > 2 {
		return cloudreq.StreamChunk{}, io.EOF
	}
	return cloudreq.StreamChunk{Text: "t", Content: true}, nilErr
}

// typedNilHooks is a cloudreq.Hooks whose every phase returns a typed nil.
type typedNilHooks struct{}

func (typedNilHooks) PreValidate(context.Context, *cloudreq.CloudRequest) error  { return nilErr }
func (typedNilHooks) PreSerialize(context.Context, *cloudreq.CloudRequest) error { return nilErr }
func (typedNilHooks) PostDeserialize(context.Context, *cloudreq.CloudRequest, *cloudreq.CloudResponse, error) error {
	return nilErr
}

// typedNilSet is a hooks.Set with one hook per phase returning a typed nil.
func typedNilSet(t *testing.T) *hooks.Set {
	s := hooks.Default()
	require.NoError(t, s.Validate.Add("nil", hooks.PreValidateFunc(func(context.Context, *cloudreq.CloudRequest) error { return nilErr })))
	require.NoError(t, s.Serialize.Add("nil", hooks.PreSerializeFunc(func(context.Context, *cloudreq.CloudRequest) error { return nilErr })))
	require.NoError(t, s.Deserialize.Add("nil", hooks.PostDeserializeFunc(func(context.Context, *cloudreq.CloudRequest, *cloudreq.CloudResponse, error) error {
		return nilErr
	})))
	return s
}

// TestTypedNilErrorsAreNoErrors: a nil *errcodes.Error in a non-nil error,
// from an adapter, a stream or a hook, is read as no error. No panic
// crosses the API and no stream is left locked.
func TestTypedNilErrorsAreNoErrors(t *testing.T) {
	for name, h := range map[string]cloudreq.Hooks{"Hooks": typedNilHooks{}, "hooks.Set": typedNilSet(t)} {
		t.Run(name, func(t *testing.T) {
			c, err := cloudreq.New(cloudreq.Options{
				Adapters:    []cloudreq.Adapter{typedNilAdapter{}},
				CallOptions: cloudreq.CallOptions{Hooks: h},
			})
			require.NoError(t, err)
			resp, err := c.Invoke(context.Background(), req())
			require.NoError(t, err)
			assert.Equal(t, 200, resp.StatusCode)

			s, err := c.Stream(context.Background(), req())
			require.NoError(t, err)
			n := 0
			for s.Next() && n < 10 {
				n++
			}
			assert.NoError(t, s.Err())
			assert.Equal(t, 2, n)
			assert.NoError(t, s.Close())
		})
	}

	// Nothing at all: the adapter's slip is reported, not a success.
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{typedNilAdapter{noResponse: true}}})
	require.NoError(t, err)
	_, err = c.Invoke(context.Background(), req())
	assert.ErrorIs(t, err, errcodes.Internal)
	assert.Contains(t, err.Error(), "neither response nor error")
}

// TestWrappedTypedNil: the errcodes helpers describe a nil *Error wrapped
// in another error instead of dereferencing it.
func TestWrappedTypedNil(t *testing.T) {
	wrapped := fmt.Errorf("adapter: %w", nilErr)
	assert.Equal(t, errcodes.Unknown, errcodes.Of(wrapped))
	for _, e := range []*errcodes.Error{errcodes.From(wrapped), errcodes.FromTransport(wrapped)} {
		require.NotNil(t, e)
		assert.Equal(t, errcodes.Unknown, e.Code)
		assert.Contains(t, e.Error(), "nil *errcodes.Error")
	}
}

// panickyObserver is an Observer that panics in every method, or returns a nil
// context from StartCall when nilCtx is set.
type panickyObserver struct{ nilCtx bool }

func (p panickyObserver) StartCall(context.Context, *cloudreq.CloudRequest, bool) (context.Context, cloudreq.CallObserver) {
	if p.nilCtx {
		return nil, p
	}
	panic("observer boom")
}
func (panickyObserver) EndAttempt(cloudreq.AttemptInfo) { panic("observer boom") }
func (panickyObserver) EndCall(*cloudreq.CloudResponse, *latency.Timeline, *errcodes.Error) {
	panic("observer boom")
}

// TestObserverPanicDropped: an observer's panic or nil context changes
// nothing about the call, whether it succeeds or fails.
func TestObserverPanicDropped(t *testing.T) {
	for _, ob := range []panickyObserver{{}, {nilCtx: true}} {
		c, err := cloudreq.New(cloudreq.Options{
			Adapters:    []cloudreq.Adapter{typedNilAdapter{}},
			CallOptions: cloudreq.CallOptions{Observers: []cloudreq.Observer{ob}},
		})
		require.NoError(t, err)
		resp, err := c.Invoke(context.Background(), req())
		require.NoError(t, err)
		assert.Equal(t, 200, resp.StatusCode)
		_, err = c.Invoke(context.Background(), &cloudreq.CloudRequest{Provider: "nope"})
		assert.ErrorIs(t, err, errcodes.InvalidParam)
	}
}

// deafStream is a ChunkStream whose Next ignores its context: after one
// chunk it blocks until the stream is closed.
type deafStream struct {
	n      int
	closed chan struct{}
	once   sync.Once
}

func (s *deafStream) Response() *cloudreq.CloudResponse {
	return &cloudreq.CloudResponse{StatusCode: 200}
}
func (s *deafStream) Close() error {
	s.once.Do(func() { close(s.closed) })
	return nil
}
func (s *deafStream) Next() (cloudreq.StreamChunk, error) {
	if s.n++; s.n == 1 {
		return cloudreq.StreamChunk{Text: "t", Content: true}, nil
	}
	<-s.closed
	return cloudreq.StreamChunk{}, io.ErrClosedPipe
}

type deafAdapter struct{ typedNilAdapter }

func (deafAdapter) Stream(context.Context, *cloudreq.Call) (cloudreq.ChunkStream, error) {
	return &deafStream{closed: make(chan struct{})}, nil
}

// TestCloseUnblocksADeafNext: Close from another goroutine ends a Next
// blocked in an adapter's read that does not watch the context.
func TestCloseUnblocksADeafNext(t *testing.T) {
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{deafAdapter{}}})
	require.NoError(t, err)
	s, err := c.Stream(context.Background(), req())
	require.NoError(t, err)
	require.True(t, s.Next())
	done := make(chan bool, 1)
	go func() { done <- s.Next() }()
	time.Sleep(20 * time.Millisecond) // let Next block in the read
	require.NoError(t, s.Close())
	select {
	case more := <-done:
		assert.False(t, more)
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock Next")
	}
}

// panickyStream is a ChunkStream whose Response or Close panics.
type panickyStream struct{ inResponse, inClose bool }

func (p *panickyStream) Response() *cloudreq.CloudResponse {
	if p.inResponse {
		panic("response boom")
	}
	return &cloudreq.CloudResponse{StatusCode: 200}
}

func (p *panickyStream) Next() (cloudreq.StreamChunk, error) {
	return cloudreq.StreamChunk{Text: "x"}, nil
}

func (p *panickyStream) Close() error {
	if p.inClose {
		panic("close boom")
	}
	return nil
}

type panickyStreamer struct {
	cloudreqtest.Adapter
	cs *panickyStream
}

func (a *panickyStreamer) Stream(context.Context, *cloudreq.Call) (cloudreq.ChunkStream, error) {
	return a.cs, nil
}

// TestStreamAdapterPanicsDoNotCrossTheAPI: a panic in a ChunkStream's
// Response or Close fails the call, or is dropped, and leaves the Stream
// usable: it never reaches the caller nor leaves the Stream locked.
func TestStreamAdapterPanicsDoNotCrossTheAPI(t *testing.T) {
	t.Run("Response", func(t *testing.T) {
		c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{&panickyStreamer{cs: &panickyStream{inResponse: true}}}})
		require.NoError(t, err)
		var s *cloudreq.Stream
		require.NotPanics(t, func() { s, err = c.Stream(context.Background(), req()) })
		assert.Nil(t, s)
		assert.Equal(t, errcodes.Internal, errcodes.Of(err))
	})
	t.Run("Close", func(t *testing.T) {
		c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{&panickyStreamer{cs: &panickyStream{inClose: true}}}})
		require.NoError(t, err)
		s, err := c.Stream(context.Background(), req())
		require.NoError(t, err)
		require.True(t, s.Next())
		assert.NotPanics(t, func() { _ = s.Close() })
		// A Stream left locked would block these for good: run them apart,
		// with a guard that fails the test instead of hanging it.
		done := make(chan bool, 1)
		go func() { done <- !s.Next() && s.Response() != nil }()
		select {
		case ok := <-done:
			assert.True(t, ok, "closed: Next is false and the response is final")
		case <-time.After(10 * time.Second):
			t.Fatal("the Stream was left locked")
		}
	})
}
