package sse

import (
	"bytes"
	"fmt"
	"io"
)

// DefaultMaxRecord is the longest record RecordReader accepts by default: 4 MiB.
const DefaultMaxRecord = 4 << 20

// RecordReader reads records separated by one delimiter byte — NUL for the
// legacy PAI-EAS LLM streams. Empty records (two delimiters in a row) are
// skipped. It is not safe for concurrent use.
type RecordReader struct {
	in    window
	delim byte
	fatal error
}

// NewRecordReader returns a reader of delim-separated records of at most
// maxRecord bytes (DefaultMaxRecord when maxRecord <= 0).
func NewRecordReader(r io.Reader, delim byte, maxRecord int) *RecordReader {
	if maxRecord <= 0 {
		maxRecord = DefaultMaxRecord
	}
	maxRecord = min(maxRecord, maxLimit)
	return &RecordReader{in: window{src: r, limit: maxRecord}, delim: delim}
}

// NewNULReader returns a reader of NUL-separated records.
func NewNULReader(r io.Reader, maxRecord int) *RecordReader {
	return NewRecordReader(r, 0, maxRecord)
}

// Next returns the next non-empty record, without its delimiter. The slice
// is valid until the next call. A last record with no delimiter after it is
// returned as it is (whether it is complete is for the caller's format to
// say); then Next returns io.EOF, or the source's error. A record longer
// than the limit returns ErrLineTooLong.
func (r *RecordReader) Next() ([]byte, error) {
	if r.fatal != nil {
		return nil, r.fatal
	}
	for {
		u := r.in.unread()
		if i := bytes.IndexByte(u[r.in.seen:], r.delim); i >= 0 {
			i += r.in.seen
			r.in.consume(i + 1)
			if i == 0 {
				continue
			}
			return u[:i], nil
		}
		r.in.seen = len(u)
		if len(u) > r.in.limit {
			r.fatal = fmt.Errorf("%w (%d bytes)", ErrLineTooLong, r.in.limit)
			return nil, r.fatal
		}
		if r.in.err != nil {
			r.in.consume(len(u))
			r.fatal = r.in.err
			if len(u) > 0 {
				return u, nil
			}
			return nil, r.fatal
		}
		if !r.in.fill() {
			r.fatal = fmt.Errorf("%w (%d bytes)", ErrLineTooLong, r.in.limit)
			return nil, r.fatal
		}
	}
}
