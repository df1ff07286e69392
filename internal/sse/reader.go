package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"
)

// Default limits.
const (
	// DefaultMaxLine is the longest line Reader accepts by default: 1 MiB.
	DefaultMaxLine = 1 << 20
	// DefaultMaxEvent is the most data bytes one event may hold by default: 4 MiB.
	DefaultMaxEvent = 4 << 20
)

// Errors that end a stream because a bound was passed. They are sticky: once
// returned, every later Next returns them again.
var (
	// ErrLineTooLong means a line (or NUL-delimited record) was longer than its limit.
	ErrLineTooLong = errors.New("sse: line exceeds the size limit")
	// ErrEventTooLarge means one event's data was larger than its limit.
	ErrEventTooLarge = errors.New("sse: event data exceeds the size limit")
)

// Limits bounds a Reader's memory. Zero fields take the defaults.
type Limits struct {
	// MaxLine is the longest line, in bytes, without its line ending.
	MaxLine int
	// MaxEvent is the most data bytes of one event (its data lines joined).
	MaxEvent int
}

func (l Limits) withDefaults() Limits {
	if l.MaxLine <= 0 {
		l.MaxLine = DefaultMaxLine
	}
	if l.MaxEvent <= 0 {
		l.MaxEvent = DefaultMaxEvent
	}
	l.MaxLine, l.MaxEvent = min(l.MaxLine, maxLimit), min(l.MaxEvent, maxLimit)
	return l
}

// Event is one dispatched event. Its slices belong to the Reader and are
// valid until the next call to Next; do not modify them.
type Event struct {
	// Type is the event type: the last "event" field of the event, or
	// "message" when it had none.
	Type []byte
	// ID is the last event ID: the last "id" field seen so far in the
	// stream (it carries over to later events, as the standard says).
	ID []byte
	// Data is the event's data lines joined by LF.
	Data []byte
}

// messageType is the default event type. It is capped so that an append by
// a caller cannot write into it.
var messageType = []byte("message")[:7:7]

// bom is the UTF-8 byte order mark a stream may start with.
var bom = []byte{0xEF, 0xBB, 0xBF}

// Reader reads events from a text/event-stream. It is not safe for
// concurrent use.
type Reader struct {
	in       window
	lim      Limits
	started  bool  // the byte order mark check is done
	skipLF   bool  // the last line ended with CR: an LF next is part of it
	fatal    error // a sticky limit or source error
	data     []byte
	hasData  bool
	typ      []byte
	id       []byte
	retry    time.Duration
	hasRetry bool
}

// NewReader returns a Reader over r with the given limits (zero fields take
// the defaults).
func NewReader(r io.Reader, lim Limits) *Reader {
	lim = lim.withDefaults()
	return &Reader{in: window{src: r, limit: lim.MaxLine}, lim: lim}
}

// Retry returns the reconnection time the stream last set with a "retry"
// field, and whether it set one.
func (r *Reader) Retry() (time.Duration, bool) { return r.retry, r.hasRetry }

// Next returns the next event. At a clean end of the stream it returns
// io.EOF; when the stream ends inside an event (pending data lines, or a
// last line with no line ending) it returns io.ErrUnexpectedEOF. Source
// errors are returned as they are; ErrLineTooLong and ErrEventTooLarge
// report a bound passed.
func (r *Reader) Next() (Event, error) {
	if r.fatal != nil {
		return Event{}, r.fatal
	}
	if !r.started {
		r.skipBOM()
	}
	r.data, r.hasData, r.typ = r.data[:0], false, r.typ[:0]
	for {
		line, err := r.line()
		if err != nil {
			if err == io.EOF && len(line) > 0 {
				// A last line with no line ending: the stream was cut.
				err = io.ErrUnexpectedEOF
			} else if err == io.EOF && r.hasData {
				err = io.ErrUnexpectedEOF
			}
			r.fatal = err
			return Event{}, err
		}
		if len(line) == 0 {
			if !r.hasData {
				r.typ = r.typ[:0]
				continue
			}
			ev := Event{Type: r.typ, ID: r.id, Data: r.data[:len(r.data)-1]}
			if len(ev.Type) == 0 {
				ev.Type = messageType
			}
			return ev, nil
		}
		if err := r.field(line); err != nil {
			r.fatal = err
			return Event{}, err
		}
	}
}

// skipBOM drops a leading byte order mark, reading only as far as needed to
// tell (a stream that starts with a comment is never held back).
func (r *Reader) skipBOM() {
	for {
		u := r.in.unread()
		if len(u) >= len(bom) || !bytes.HasPrefix(bom, u) || r.in.err != nil {
			if bytes.HasPrefix(u, bom) {
				r.in.consume(len(bom))
			}
			r.started = true
			return
		}
		if !r.in.fill() {
			// A limit under the BOM's length leaves no room to tell: the
			// bytes are kept, and the line limit refuses them.
			r.started = true
			return
		}
	}
}

// line returns the next line without its ending. The slice points into the
// read buffer and is valid until the next call. At the source's end it
// returns the unterminated rest (possibly empty) with the source's error.
func (r *Reader) line() ([]byte, error) {
	for {
		u := r.in.unread()
		if r.skipLF && len(u) > 0 {
			r.skipLF = false
			if u[0] == '\n' {
				r.in.consume(1)
				u = u[1:]
			}
		}
		if i := indexEOL(u[r.in.seen:]); i >= 0 {
			i += r.in.seen
			r.skipLF = u[i] == '\r'
			r.in.consume(i + 1)
			return u[:i], nil
		}
		r.in.seen = len(u)
		if len(u) > r.lim.MaxLine {
			return nil, fmt.Errorf("%w (%d bytes)", ErrLineTooLong, r.lim.MaxLine)
		}
		if r.in.err != nil {
			r.in.consume(len(u))
			return u, r.in.err
		}
		if !r.in.fill() {
			return nil, fmt.Errorf("%w (%d bytes)", ErrLineTooLong, r.lim.MaxLine)
		}
	}
}

// indexEOL returns the index of the first CR or LF in b, or -1.
func indexEOL(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return bytes.IndexByte(b, '\r')
	}
	if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
		return j
	}
	return i
}

// field processes one non-empty line.
func (r *Reader) field(line []byte) error {
	if line[0] == ':' {
		return nil // a comment
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) { // no allocation: the compiler compares in place
	case "data":
		if len(r.data)+len(value) > r.lim.MaxEvent {
			return fmt.Errorf("%w (%d bytes)", ErrEventTooLarge, r.lim.MaxEvent)
		}
		r.data = append(append(r.data, value...), '\n')
		r.hasData = true
	case "event":
		r.typ = append(r.typ[:0], value...)
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			r.id = append(r.id[:0], value...)
		}
	case "retry":
		if ms, ok := digits(value); ok {
			r.retry, r.hasRetry = time.Duration(ms)*time.Millisecond, true
		}
	}
	return nil
}

// digits parses a non-empty run of ASCII digits that fits a duration in
// milliseconds.
func digits(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	const maxMS = int64(1<<63-1) / int64(time.Millisecond)
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
		if n > maxMS {
			return 0, false
		}
	}
	return n, true
}
