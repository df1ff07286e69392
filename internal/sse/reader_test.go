package sse

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ev is an event in comparable form.
type ev struct{ Type, ID, Data string }

// readAll reads every event from r and the error that ended the stream.
func readAll(r *Reader) ([]ev, error) {
	var out []ev
	for range 1 << 20 {
		e, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, ev{string(e.Type), string(e.ID), string(e.Data)})
	}
	return out, errors.New("too many events")
}

// chunked is a reader that returns its input in pieces of the given sizes
// (cycled), so that every split point can be exercised.
type chunked struct {
	b     []byte
	sizes []int
	i     int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := len(c.b)
	if len(c.sizes) > 0 {
		n = max(c.sizes[c.i%len(c.sizes)], 1)
		c.i++
	}
	n = min(n, len(p), len(c.b))
	copy(p, c.b[:n])
	c.b = c.b[n:]
	return n, nil
}

func TestReader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []ev
		err  error
	}{
		{"empty", "", nil, io.EOF},
		{"one event LF", "data: hello\n\n", []ev{{"message", "", "hello"}}, io.EOF},
		{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", []ev{{"message", "", "a"}, {"message", "", "b"}}, io.EOF},
		{"CR only", "data: a\r\rdata: b\r\r", []ev{{"message", "", "a"}, {"message", "", "b"}}, io.EOF},
		{"mixed endings", "data: a\r\ndata: b\n\r\n", []ev{{"message", "", "a\nb"}}, io.EOF},
		{"no space after colon", "data:x\n\n", []ev{{"message", "", "x"}}, io.EOF},
		{"only one space removed", "data:  x\n\n", []ev{{"message", "", " x"}}, io.EOF},
		{"multi-line data", "data: a\ndata: b\ndata:\n\n", []ev{{"message", "", "a\nb\n"}}, io.EOF},
		{"field without colon", "data\n\n", []ev{{"message", "", ""}}, io.EOF},
		{"comments ignored", ": ping\n:\ndata: x\n: mid\n\n", []ev{{"message", "", "x"}}, io.EOF},
		{"BOM skipped", "\xEF\xBB\xBFdata: x\n\n", []ev{{"message", "", "x"}}, io.EOF},
		{"second BOM kept", "\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\n", nil, io.EOF},
		{"event type", "event: delta\ndata: x\n\ndata: y\n\n", []ev{{"delta", "", "x"}, {"message", "", "y"}}, io.EOF},
		{"event type without data is dropped", "event: ping\n\ndata: y\n\n", []ev{{"message", "", "y"}}, io.EOF},
		{"id persists", "id: 7\ndata: x\n\ndata: y\n\nid\ndata: z\n\n", []ev{{"message", "7", "x"}, {"message", "7", "y"}, {"message", "", "z"}}, io.EOF},
		{"id with NUL ignored", "id: 1\n\nid: a\x00b\ndata: x\n\n", []ev{{"message", "1", "x"}}, io.EOF},
		{"unknown fields ignored", "foo: bar\ndata: x\n\n", []ev{{"message", "", "x"}}, io.EOF},
		{"blank lines between", "\n\n\ndata: x\n\n\n", []ev{{"message", "", "x"}}, io.EOF},
		{"truncated in event", "data: x\n\ndata: y\n", []ev{{"message", "", "x"}}, io.ErrUnexpectedEOF},
		{"truncated mid line", "data: x\n\ndata: y", []ev{{"message", "", "x"}}, io.ErrUnexpectedEOF},
		{"trailing comment without newline", "data: x\n\n: bye", []ev{{"message", "", "x"}}, io.ErrUnexpectedEOF},
		{"trailing comment", "data: x\n\n: bye\n", []ev{{"message", "", "x"}}, io.EOF},
		{"openai done", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []ev{{"message", "", `{"a":1}`}, {"message", "", "[DONE]"}}, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, sizes := range [][]int{nil, {1}, {2, 3}, {7}} {
				got, err := readAll(NewReader(&chunked{b: []byte(tt.in), sizes: sizes}, Limits{}))
				assert.Equal(t, tt.want, got, "chunk sizes %v", sizes)
				assert.ErrorIs(t, err, tt.err, "chunk sizes %v", sizes)
			}
		})
	}
}

func TestReaderCRLFSplitAcrossReads(t *testing.T) {
	// The CR arrives in one read, the LF in the next: the LF must not be
	// taken for an empty line (which would dispatch an event early).
	in := "data: a\r\ndata: b\r\n\r\n"
	got, err := readAll(NewReader(iotest.OneByteReader(strings.NewReader(in)), Limits{}))
	assert.ErrorIs(t, err, io.EOF)
	assert.Equal(t, []ev{{"message", "", "a\nb"}}, got)
}

// blockingAfter returns its data, then blocks (fails the test) on any
// further read: an event must be dispatched from what has arrived.
type blockingAfter struct {
	t    *testing.T
	data []byte
}

func (b *blockingAfter) Read(p []byte) (int, error) {
	if len(b.data) == 0 {
		b.t.Fatal("reader asked for more input than the event needs")
	}
	n := copy(p, b.data)
	b.data = b.data[n:]
	return n, nil
}

func TestReaderDispatchesWithoutLookahead(t *testing.T) {
	for _, in := range []string{"data: x\r\r", "data: x\n\n", "data: x\r\n\r\n", "\xEF\xBB\xBFdata: x\r\r"} {
		r := NewReader(&blockingAfter{t: t, data: []byte(in)}, Limits{})
		e, err := r.Next()
		require.NoError(t, err, "%q", in)
		assert.Equal(t, "x", string(e.Data))
	}
}

func TestReaderRetry(t *testing.T) {
	r := NewReader(strings.NewReader("retry: 1500\ndata: x\n\nretry: 12x\ndata: y\n\n"), Limits{})
	_, ok := r.Retry()
	assert.False(t, ok)
	_, err := r.Next()
	require.NoError(t, err)
	d, ok := r.Retry()
	assert.True(t, ok)
	assert.Equal(t, 1500*time.Millisecond, d)
	_, err = r.Next()
	require.NoError(t, err)
	d, _ = r.Retry()
	assert.Equal(t, 1500*time.Millisecond, d, "a non-digit retry is ignored")

	r = NewReader(strings.NewReader("retry: 99999999999999999999\ndata: x\n\n"), Limits{})
	_, err = r.Next()
	require.NoError(t, err)
	_, ok = r.Retry()
	assert.False(t, ok, "an overflowing retry is ignored")
}

func TestReaderLimits(t *testing.T) {
	long := "data: " + strings.Repeat("x", 100) + "\n\n"
	_, err := readAll(NewReader(strings.NewReader(long), Limits{MaxLine: 64}))
	assert.ErrorIs(t, err, ErrLineTooLong)

	// Exactly at the limit is fine.
	exact := "data: " + strings.Repeat("x", 58) + "\n\n"
	got, err := readAll(NewReader(iotest.HalfReader(strings.NewReader(exact)), Limits{MaxLine: 64}))
	assert.ErrorIs(t, err, io.EOF)
	assert.Len(t, got, 1)

	many := strings.Repeat("data: "+strings.Repeat("y", 30)+"\n", 10) + "\n"
	_, err = readAll(NewReader(strings.NewReader(many), Limits{MaxLine: 64, MaxEvent: 200}))
	assert.ErrorIs(t, err, ErrEventTooLarge)
	got, err = readAll(NewReader(strings.NewReader(many), Limits{MaxLine: 64, MaxEvent: 309}))
	assert.ErrorIs(t, err, io.EOF)
	assert.Len(t, got, 1)

	// The error is sticky.
	r := NewReader(strings.NewReader(long+long), Limits{MaxLine: 64})
	_, err1 := r.Next()
	_, err2 := r.Next()
	assert.ErrorIs(t, err1, ErrLineTooLong)
	assert.ErrorIs(t, err2, ErrLineTooLong)
}

// endless yields the same byte forever, like a server that never ends a line.
type endless byte

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(e)
	}
	return len(p), nil
}

func TestReaderBoundedMemoryOnEndlessLine(t *testing.T) {
	r := NewReader(endless('x'), Limits{MaxLine: 1 << 16})
	_, err := r.Next()
	assert.ErrorIs(t, err, ErrLineTooLong)
	assert.LessOrEqual(t, cap(r.in.buf), 1<<16+1)
}

func TestReaderSourceError(t *testing.T) {
	boom := errors.New("connection reset")
	src := io.MultiReader(strings.NewReader("data: x\n\ndata: y\n"), iotest.ErrReader(boom))
	got, err := readAll(NewReader(src, Limits{}))
	assert.Equal(t, []ev{{"message", "", "x"}}, got)
	assert.ErrorIs(t, err, boom)
}

type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

func TestReaderNoProgress(t *testing.T) {
	_, err := NewReader(zeroReader{}, Limits{}).Next()
	assert.ErrorIs(t, err, io.ErrNoProgress)
}

func TestRecordReader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
		err  error
	}{
		{"empty", "", nil, io.EOF},
		{"records", `{"response":"a"}` + "\x00" + `{"response":"b"}` + "\x00", []string{`{"response":"a"}`, `{"response":"b"}`}, io.EOF},
		{"empty records skipped", "\x00\x00a\x00\x00b\x00", []string{"a", "b"}, io.EOF},
		{"last without delimiter", "a\x00b", []string{"a", "b"}, io.EOF},
	}
	for _, tt := range tests {
		for _, sizes := range [][]int{nil, {1}, {3}} {
			r := NewNULReader(&chunked{b: []byte(tt.in), sizes: sizes}, 0)
			var got []string
			var err error
			for range 100 {
				var rec []byte
				if rec, err = r.Next(); err != nil {
					break
				}
				got = append(got, string(rec))
			}
			assert.Equal(t, tt.want, got, "%s %v", tt.name, sizes)
			assert.ErrorIs(t, err, tt.err, "%s %v", tt.name, sizes)
		}
	}
}

func TestRecordReaderLimit(t *testing.T) {
	r := NewNULReader(endless('x'), 1000)
	_, err := r.Next()
	assert.ErrorIs(t, err, ErrLineTooLong)
	assert.LessOrEqual(t, cap(r.in.buf), 1001)

	r = NewNULReader(strings.NewReader(strings.Repeat("x", 1000)+"\x00"), 1000)
	rec, err := r.Next()
	require.NoError(t, err)
	assert.Len(t, rec, 1000)
}

func TestRecordReaderSourceError(t *testing.T) {
	boom := errors.New("reset")
	r := NewNULReader(io.MultiReader(strings.NewReader("a\x00b"), iotest.ErrReader(boom)), 0)
	rec, err := r.Next()
	require.NoError(t, err)
	assert.Equal(t, "a", string(rec))
	rec, err = r.Next()
	require.NoError(t, err)
	assert.Equal(t, "b", string(rec), "a partial last record is returned; the format decides")
	_, err = r.Next()
	assert.ErrorIs(t, err, boom)
}

func TestEventSlicesAreReused(t *testing.T) {
	r := NewReader(bytes.NewReader([]byte("data: aaaa\n\ndata: bbbb\n\n")), Limits{})
	e1, err := r.Next()
	require.NoError(t, err)
	first := e1.Data
	_, err = r.Next()
	require.NoError(t, err)
	assert.Equal(t, "bbbb", string(first), "Data is only valid until the next Next")
}

// TestTinyLimitWithBOMPrefix: a limit too small to tell a byte order mark
// ends in ErrLineTooLong, not in a loop.
func TestTinyLimitWithBOMPrefix(t *testing.T) {
	for _, limit := range []int{1, 2} {
		done := make(chan error, 1)
		go func() {
			_, err := readAll(NewReader(strings.NewReader("\xEF\xBBxdata: a\n\n"), Limits{MaxLine: limit, MaxEvent: limit}))
			done <- err
		}()
		select {
		case err := <-done:
			assert.ErrorIs(t, err, ErrLineTooLong, "limit %d", limit)
		case <-time.After(5 * time.Second):
			t.Fatalf("limit %d: Next did not return", limit)
		}
	}
}

// errTooSlow ends a read that went on past its time budget.
var errTooSlow = errors.New("reading took far longer than linear time allows")

// budgeted serves r in reads of at most n bytes and fails once its time
// budget is spent, so that a parse that does not finish fails quickly.
type budgeted struct {
	r     io.Reader
	n     int
	until time.Time
}

func (b *budgeted) Read(p []byte) (int, error) {
	if time.Now().After(b.until) {
		return 0, errTooSlow
	}
	return b.r.Read(p[:min(len(p), b.n)])
}

// TestLongLineInSmallReadsIsLinear: a 4 MiB line arriving 16 bytes at a
// time is searched for its end once, not again from its start after
// every read. Searching again made it quadratic: about 15 s of CPU for
// this input, which a server could force by trickling a long line. Read
// in linear time it takes milliseconds; the budget is two orders of
// magnitude above that and still below the quadratic time.
func TestLongLineInSmallReadsIsLinear(t *testing.T) {
	const size = 4 << 20
	line := strings.Repeat("x", size)
	r := NewReader(&budgeted{r: strings.NewReader("data:" + line + "\n\n"), n: 16, until: time.Now().Add(10 * time.Second)}, Limits{MaxLine: 2 * size, MaxEvent: 2 * size})
	e, err := r.Next()
	require.NoError(t, err)
	assert.Len(t, e.Data, size)

	rr := NewNULReader(&budgeted{r: strings.NewReader(line + "\x00"), n: 16, until: time.Now().Add(10 * time.Second)}, 2*size)
	rec, err := rr.Next()
	require.NoError(t, err)
	assert.Len(t, rec, size)
}

// TestHugeLimits: the largest limits mean "no practical limit"; the room
// for one byte past the limit must not overflow into a negative size.
func TestHugeLimits(t *testing.T) {
	got, err := readAll(NewReader(strings.NewReader("data: x\n\n"), Limits{MaxLine: math.MaxInt, MaxEvent: math.MaxInt}))
	assert.ErrorIs(t, err, io.EOF)
	assert.Equal(t, []ev{{"message", "", "x"}}, got)

	rec, err := NewNULReader(strings.NewReader("a\x00"), math.MaxInt).Next()
	require.NoError(t, err)
	assert.Equal(t, "a", string(rec))
}
