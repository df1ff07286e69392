package httpadapter

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

func TestReadLimited(t *testing.T) {
	b, cut, err := ReadLimited(strings.NewReader("hello"), 5)
	require.NoError(t, err)
	assert.False(t, cut)
	assert.Equal(t, "hello", string(b))
	b, cut, err = ReadLimited(strings.NewReader("hello!"), 5)
	require.NoError(t, err)
	assert.True(t, cut)
	assert.Equal(t, "hello", string(b))
}

func TestErrorText(t *testing.T) {
	tests := []struct{ body, ct, want string }{
		{"", "", ""},
		{"Authorization Failed", "text/plain", "Authorization Failed"},
		{"  request is discarded\n because the queue is full \n", "", "request is discarded because the queue is full"},
		{"<html><head><title>502 Bad Gateway</title></head></html>", "text/html", "502 Bad Gateway"},
		{"<!DOCTYPE html><html><body><h1>Service Unavailable</h1></body></html>", "", "Service Unavailable"},
		{"<html><body>no title</body></html>", "text/html", "HTML error page (34 bytes)"},
		{"\xff\xfe\x00", "", "binary error body (3 bytes)"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, ErrorText([]byte(tt.body), tt.ct), "%q", tt.body)
	}
	long := ErrorText([]byte(strings.Repeat("é", 2000)), "")
	assert.LessOrEqual(t, len(long), MaxErrorMessage+len("…"))
	assert.True(t, strings.HasSuffix(long, "…"))
}

func TestMetadataAndHead(t *testing.T) {
	h := http.Header{}
	h.Set("X-Request-Id", "r1")
	h.Set("X-Emulator-Ttft-Ms", "3")
	h.Set("Content-Type", "application/json")
	h.Set("Authorization", "secret")
	m := Metadata(h, "x-request-id", "absent")
	assert.Equal(t, map[string]string{"X-Request-Id": "r1"}, m, "the named headers only")
	assert.Nil(t, Metadata(http.Header{}))
	head := New(Config{IDHeaders: []string{"absent", "X-Request-Id"}}).Head(&http.Response{StatusCode: 200, Header: h})
	assert.Equal(t, "r1", head.RequestID)
	assert.Equal(t, "application/json", head.ContentType)
	assert.Equal(t, h, head.Header, "the headers as received")
	assert.Nil(t, head.ServerStart, "no provider reports its starts")
}

func TestContentTypes(t *testing.T) {
	assert.True(t, IsEventStream("text/event-stream; charset=utf-8"))
	assert.False(t, IsEventStream("application/json"))
	assert.True(t, IsJSON("application/json; charset=utf-8"))
	assert.True(t, IsJSON("application/problem+json"))
	assert.False(t, IsJSON("text/plain"))
}

func TestJoinPath(t *testing.T) {
	assert.Equal(t, "http://h/v1/x", JoinPath("http://h/", "/v1/x"))
	assert.Equal(t, "http://h/v1/x", JoinPath("http://h/v1", "/v1/x"))
	assert.Equal(t, "http://h/a/x", JoinPath("http://h/a", "x"))
	assert.Equal(t, "http://h/score?a=1", JoinPath("http://h/score", "?a=1"))
}

func TestNewError(t *testing.T) {
	resp := &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {"3"}}}
	native := errors.New("native")
	e := NewError(errcodes.Throttled, "p", resp, "429", "", "rid", native)
	assert.Equal(t, "Too Many Requests", e.Message)
	assert.Equal(t, 3*time.Second, e.RetryAfter)
	assert.True(t, e.Retryable)
	assert.ErrorIs(t, e, native)
	assert.Equal(t, 429, e.HTTPStatus)
	e = NewError(errcodes.Throttled, "p", &http.Response{StatusCode: 450, Header: http.Header{}}, "450", "", "", nil)
	assert.Equal(t, "HTTP 450", e.Message)
}

type recDecoder struct {
	frames   []string
	complete error
}

func (d *recDecoder) Decode(f []byte) (cloudreq.StreamChunk, bool, error) {
	if string(f) == "END" {
		return cloudreq.StreamChunk{}, true, nil
	}
	if string(f) == "BAD" {
		return cloudreq.StreamChunk{}, false, errcodes.New(errcodes.Internal, "bad frame")
	}
	d.frames = append(d.frames, string(f))
	return cloudreq.StreamChunk{Text: string(f)}, false, nil
}
func (d *recDecoder) Complete() error { return d.complete }

type closer struct {
	io.Reader
	closed int
}

func (c *closer) Close() error { c.closed++; return nil }

func drain(s *Stream) ([]string, error) {
	var out []string
	for range 100 {
		ch, err := s.Next()
		if err != nil {
			return out, err
		}
		out = append(out, ch.Text)
	}
	return out, errors.New("too many")
}

func TestStreamFramings(t *testing.T) {
	tests := []struct {
		name     string
		framing  Framing
		body     string
		complete error
		want     []string
		err      error
	}{
		{"sse end marker", FramingSSE, "data: a\n\ndata: END\n\ndata: never\n\n", nil, []string{"a"}, io.EOF},
		{"sse complete at eof", FramingSSE, "data: a\n\n", nil, []string{"a"}, io.EOF},
		{"sse incomplete at eof", FramingSSE, "data: a\n\n", errcodes.New(errcodes.StreamInterrupted, "x"), []string{"a"}, errcodes.StreamInterrupted},
		{"sse cut inside event", FramingSSE, "data: a\n\ndata: b", nil, []string{"a"}, errcodes.StreamInterrupted},
		{"sse in-band error", FramingSSE, "data: a\n\ndata: BAD\n\n", nil, []string{"a"}, errcodes.Internal},
		{"sse too large", FramingSSE, "data: " + strings.Repeat("x", 100) + "\n\n", nil, nil, errcodes.PayloadTooLarge},
		{"nul", FramingNUL, "a\x00b\x00", nil, []string{"a", "b"}, io.EOF},
		{"whole", FramingWhole, "all of it", nil, []string{"all of it"}, io.EOF},
		{"whole empty", FramingWhole, "", nil, nil, io.EOF},
		{"whole too large", FramingWhole, strings.Repeat("x", 100), nil, nil, errcodes.PayloadTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := &closer{Reader: strings.NewReader(tt.body)}
			s := NewStream(nil, body, StreamConfig{Provider: "p", Framing: tt.framing, Decoder: &recDecoder{complete: tt.complete}, MaxFrame: 64})
			got, err := drain(s)
			assert.Equal(t, tt.want, got)
			assert.ErrorIs(t, err, tt.err)
			if e, ok := err.(*errcodes.Error); ok {
				assert.Equal(t, "p", e.Provider)
			}
			_, err2 := s.Next()
			assert.Equal(t, err, err2, "the end is sticky")
			assert.Equal(t, 1, body.closed, "the body is closed once at the end")
			require.NoError(t, s.Close())
			assert.Equal(t, 1, body.closed)
			assert.NotNil(t, s.Response())
		})
	}
}

func TestStreamRaw(t *testing.T) {
	body := &closer{Reader: iotest.DataErrReader(strings.NewReader("abc"))}
	s := NewStream(&cloudreq.CloudResponse{StatusCode: 200}, body, StreamConfig{Provider: "p", Framing: FramingRaw, Decoder: TextDecoder{}})
	got, err := drain(s)
	assert.Equal(t, []string{"abc"}, got)
	assert.ErrorIs(t, err, io.EOF)

	boom := errors.New("connection reset by peer")
	body = &closer{Reader: io.MultiReader(strings.NewReader("ab"), iotest.ErrReader(boom))}
	s = NewStream(nil, body, StreamConfig{Provider: "p", Framing: FramingRaw, Decoder: TextDecoder{}})
	got, err = drain(s)
	assert.Equal(t, []string{"ab"}, got)
	assert.ErrorIs(t, err, errcodes.StreamInterrupted)
	assert.ErrorIs(t, err, boom)
}

// holdingBody serves data, then blocks its reader until it is closed: a
// server that keeps the connection open after its stream's end marker.
type holdingBody struct {
	r      io.Reader
	closed chan struct{}
	once   sync.Once
}

func (b *holdingBody) Read(p []byte) (int, error) {
	if n, err := b.r.Read(p); n > 0 || err != io.EOF {
		return n, err
	}
	<-b.closed
	return 0, errors.New("read on closed body")
}

func (b *holdingBody) Close() error {
	b.once.Do(func() { close(b.closed) })
	return nil
}

// TestStreamEndNotHeldByTheServer: after the end marker, Next returns at
// once (within drainSync) even when the server holds the connection
// open, and the body is closed within drainWait.
func TestStreamEndNotHeldByTheServer(t *testing.T) {
	body := &holdingBody{r: strings.NewReader("data: a\n\ndata: END\n\n"), closed: make(chan struct{})}
	s := NewStream(nil, body, StreamConfig{Provider: "p", Framing: FramingSSE, Decoder: &recDecoder{}, MaxFrame: 64})
	start := time.Now()
	got, err := drain(s)
	assert.Equal(t, []string{"a"}, got)
	assert.ErrorIs(t, err, io.EOF)
	assert.Less(t, time.Since(start), drainWait, "the end is not held for the drain")
	select {
	case <-body.closed:
	case <-time.After(5 * drainWait):
		t.Fatal("the body was never closed")
	}
}

// TestReadLimitedSize: whatever the size said (right, short, long or
// unknown) and however the reader hands out its bytes, ReadLimitedSize
// gives what io.ReadAll of an io.LimitReader of limit+1 bytes gives,
// cut to the limit; with the right size, one allocation.
func TestReadLimitedSize(t *testing.T) {
	failing := errors.New("read failed")
	readers := map[string]func(string) io.Reader{
		"plain":     func(s string) io.Reader { return strings.NewReader(s) },
		"one byte":  func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"data+EOF":  func(s string) io.Reader { return iotest.DataErrReader(strings.NewReader(s)) },
		"half":      func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
		"then fail": func(s string) io.Reader { return io.MultiReader(strings.NewReader(s), iotest.ErrReader(failing)) },
	}
	for _, n := range []int{0, 1, 5, 6, 511, 512, 513, 2000} {
		body := strings.Repeat("x", n)
		for _, limit := range []int64{1, 5, 6, 512, 1000, math.MaxInt64} {
			for _, size := range []int64{-1, 0, int64(n), int64(n) - 1, int64(n) + 7} {
				for name, mk := range readers {
					want, werr := io.ReadAll(io.LimitReader(mk(body), min(limit, math.MaxInt64-1)+1))
					wantCut := limit != math.MaxInt64 && int64(len(want)) > limit
					if wantCut {
						want = want[:limit]
					}
					got, cut, err := ReadLimitedSize(mk(body), limit, size)
					at := fmt.Sprintf("%d bytes, limit %d, size %d, %s", n, limit, size, name)
					assert.Equal(t, string(want), string(got), at)
					assert.Equal(t, wantCut, cut, at)
					assert.Equal(t, werr, err, at)
				}
			}
		}
	}
	full := strings.Repeat("y", 300)
	r := strings.NewReader(full)
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset(full)
		if _, _, err := ReadLimitedSize(r, 1<<20, 300); err != nil {
			t.Fatal(err)
		}
	})
	assert.Equal(t, 1.0, allocs, "allocations with the right size")

	// A size far past what comes is trusted up to maxSizeHint.
	got, cut, err := ReadLimitedSize(strings.NewReader("short"), 1<<40, 1<<39)
	require.NoError(t, err)
	assert.False(t, cut)
	assert.Equal(t, "short", string(got))
	assert.Equal(t, maxSizeHint, cap(got), "the buffer made from the declared size")
}

// TestReadLimitedNoOverflow: the largest limit means "no limit", not a
// limit+1 that wraps negative and reads nothing.
func TestReadLimitedNoOverflow(t *testing.T) {
	b, cut, err := ReadLimited(strings.NewReader("hello"), math.MaxInt64)
	require.NoError(t, err)
	assert.False(t, cut)
	assert.Equal(t, "hello", string(b))
}

// TestErrorTextCutInsideARune: a body whose first 2 KiB end inside a
// multi-byte character (whitespace before it collapses, so the message
// is short) gives a valid UTF-8 message.
func TestErrorTextCutInsideARune(t *testing.T) {
	body := "a" + strings.Repeat(" ", 4*MaxErrorMessage-2) + "é and more"
	got := ErrorText([]byte(body), "text/plain")
	assert.True(t, utf8.ValidString(got), "%q", got)
	assert.Equal(t, "a", got)
}

// TestStreamCloseEndsTheDrain: Close after the end marker, while the drain
// still waits on a server that holds the connection open, closes the body
// at once and leaves no goroutine behind, instead of leaving both to the
// drain's own bound.
func TestStreamCloseEndsTheDrain(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	body := &holdingBody{r: strings.NewReader("data: a\n\ndata: END\n\n"), closed: make(chan struct{})}
	s := NewStream(nil, body, StreamConfig{Provider: "p", Framing: FramingSSE, Decoder: &recDecoder{}, MaxFrame: 64})
	_, err := drain(s)
	require.ErrorIs(t, err, io.EOF)
	require.NoError(t, s.Close())
	select {
	case <-body.closed:
	default:
		t.Fatal("Close returned with the body still open")
	}
}

// TestStreamCloseWhileNextBlocks: Close from another goroutine makes a
// blocked Next return, and releases the body.
func TestStreamCloseWhileNextBlocks(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	body := &holdingBody{r: strings.NewReader("data: a\n\n"), closed: make(chan struct{})}
	s := NewStream(nil, body, StreamConfig{Provider: "p", Framing: FramingSSE, Decoder: &recDecoder{}})
	ch, err := s.Next()
	require.NoError(t, err)
	assert.Equal(t, "a", ch.Text)
	errc := make(chan error, 1)
	go func() {
		_, err := s.Next()
		errc <- err
	}()
	require.NoError(t, s.Close())
	err = <-errc
	assert.Equal(t, errcodes.Canceled, errcodes.Of(err), "a read Close broke is a cancel: %v", err)
	assert.False(t, errcodes.From(err).Retryable)
	_, err = s.Next()
	assert.Equal(t, errcodes.Canceled, errcodes.Of(err), "the end is sticky")
}

// TestStreamNextAfterClose: Next on a closed stream is ERR_CANCELED, not a
// retryable interruption.
func TestStreamNextAfterClose(t *testing.T) {
	s := NewStream(nil, io.NopCloser(strings.NewReader("data: a\n\ndata: b\n\n")), StreamConfig{Provider: "p", Framing: FramingSSE, Decoder: &recDecoder{}})
	_, err := s.Next()
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = s.Next()
	var e *errcodes.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, errcodes.Canceled, e.Code)
	assert.Equal(t, "p", e.Provider)
	assert.False(t, e.Retryable)
}

// eofOnCloseBody blocks a read past its data until Close, which ends it
// with io.EOF, as some transports end a body that is closed.
type eofOnCloseBody struct {
	holdingBody
	blocked chan struct{} // closed once a read waits for Close
	once    sync.Once
}

func (b *eofOnCloseBody) Read(p []byte) (int, error) {
	if n, err := b.r.Read(p); n > 0 || err != io.EOF {
		return n, err
	}
	b.once.Do(func() { close(b.blocked) })
	<-b.closed
	return 0, io.EOF
}

// TestStreamCloseEndingReadWithEOF: a read that Close ends with io.EOF
// before the stream was complete is ERR_CANCELED too, not the decoder's
// retryable interruption.
func TestStreamCloseEndingReadWithEOF(t *testing.T) {
	body := &eofOnCloseBody{holdingBody: holdingBody{r: strings.NewReader("data: a\n\n"), closed: make(chan struct{})}, blocked: make(chan struct{})}
	dec := &recDecoder{complete: Interrupted("p", "no end marker", nil)}
	s := NewStream(nil, body, StreamConfig{Provider: "p", Framing: FramingSSE, Decoder: dec})
	_, err := s.Next()
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() {
		_, err := s.Next()
		errc <- err
	}()
	<-body.blocked
	require.NoError(t, s.Close())
	err = <-errc
	assert.Equal(t, errcodes.Canceled, errcodes.Of(err), "%v", err)
	assert.False(t, errcodes.From(err).Retryable)
}
