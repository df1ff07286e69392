package sse

import (
	"errors"
	"io"
	"math"
)

// initialBuffer is the first size of a reader's buffer; it doubles as
// needed up to the line or record limit.
const initialBuffer = 4 << 10

// maxLimit is the largest limit a reader keeps: room for one byte past it
// must still be an int.
const maxLimit = math.MaxInt - 1

// maxEmptyReads bounds consecutive (0, nil) reads before giving up, as
// bufio does.
const maxEmptyReads = 100

// window is the growable read buffer both readers share. The unread bytes
// are buf[r:w]. Its capacity never exceeds limit+1, so one line or record of
// at most limit bytes always fits.
type window struct {
	src   io.Reader
	buf   []byte
	r, w  int
	err   error // the source's sticky error (io.EOF at the end)
	limit int
	// seen is how many of the unread bytes were already searched for a
	// delimiter, in vain: a reader searches only what came after them, so
	// a long line arriving in small reads costs linear time, not
	// quadratic.
	seen int
}

// unread returns the bytes read from the source and not yet consumed.
func (b *window) unread() []byte { return b.buf[b.r:b.w] }

// consume marks the first n unread bytes as used.
func (b *window) consume(n int) {
	b.r += n
	b.seen = 0
}

// fill reads once more from the source. When there is no room after the
// unread bytes it first moves them to the front and, if the buffer is still
// full, grows it up to limit+1 bytes; so each byte is moved a bounded number
// of times however small the source's reads are. It reports false when the
// buffer is full at its limit (the caller's line or record is too long) and
// records the source's error.
func (b *window) fill() bool {
	if b.r == b.w {
		b.r, b.w = 0, 0
	}
	if b.w == len(b.buf) && b.r > 0 {
		b.w = copy(b.buf, b.buf[b.r:b.w])
		b.r = 0
	}
	if b.w == len(b.buf) {
		if len(b.buf) > b.limit {
			return false
		}
		n := min(max(2*len(b.buf), initialBuffer), b.limit+1)
		nb := make([]byte, n)
		copy(nb, b.buf[:b.w])
		b.buf = nb
	}
	for range maxEmptyReads {
		n, err := b.src.Read(b.buf[b.w:])
		if n < 0 || n > len(b.buf)-b.w {
			b.err = errors.New("sse: source returned an invalid count")
			return true
		}
		b.w += n
		if err != nil {
			b.err = err
			return true
		}
		if n > 0 {
			return true
		}
	}
	b.err = io.ErrNoProgress
	return true
}
