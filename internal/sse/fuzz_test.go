package sse

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// reference parses a whole event stream the way the HTML standard's
// algorithm reads, written for clarity rather than speed: the oracle the
// fuzzer compares Reader with.
func reference(in []byte) (events []ev, truncated bool) {
	in = bytes.TrimPrefix(in, bom)
	var lines [][]byte
	for len(in) > 0 {
		i := bytes.IndexAny(in, "\r\n")
		if i < 0 {
			return events0(lines), true // an unterminated last line
		}
		lines = append(lines, in[:i])
		if in[i] == '\r' && i+1 < len(in) && in[i+1] == '\n' {
			i++
		}
		in = in[i+1:]
	}
	var (
		data    []byte
		hasData bool
		typ, id string
	)
	for _, l := range lines {
		switch {
		case len(l) == 0:
			if hasData {
				t := typ
				if t == "" {
					t = "message"
				}
				events = append(events, ev{t, id, string(data[:len(data)-1])})
			}
			data, hasData, typ = nil, false, ""
		case l[0] == ':':
		default:
			name, value := string(l), ""
			if i := bytes.IndexByte(l, ':'); i >= 0 {
				name, value = string(l[:i]), string(l[i+1:])
				if len(value) > 0 && value[0] == ' ' {
					value = value[1:]
				}
			}
			switch name {
			case "data":
				data = append(append(data, value...), '\n')
				hasData = true
			case "event":
				typ = value
			case "id":
				if !bytes.Contains([]byte(value), []byte{0}) {
					id = value
				}
			}
		}
	}
	return events, hasData
}

// events0 handles the truncated case: the events before the cut line.
func events0(lines [][]byte) []ev {
	var b bytes.Buffer
	for _, l := range lines {
		b.Write(l)
		b.WriteByte('\n')
	}
	ev, _ := reference(b.Bytes())
	return ev
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("data: hello\n\n"), []byte{1})
	f.Add([]byte("\xEF\xBB\xBFevent: x\r\nid: 1\r\ndata: a\r\ndata:b\r\n\r\n: c\rretry: 10\r\r"), []byte{2, 3})
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n"), []byte{5})
	f.Add([]byte("data: x\r"), []byte{})
	f.Fuzz(func(t *testing.T, in []byte, splits []byte) {
		sizes := make([]int, len(splits))
		for i, s := range splits {
			sizes[i] = int(s)
		}
		got, err := readAll(NewReader(&chunked{b: bytes.Clone(in), sizes: sizes}, Limits{MaxLine: 1 << 20, MaxEvent: 1 << 22}))
		want, truncated := reference(in)
		if len(got) != len(want) {
			t.Fatalf("%d events, want %d\ngot  %q\nwant %q", len(got), len(want), got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("event %d = %q, want %q", i, got[i], want[i])
			}
		}
		wantErr := io.EOF
		if truncated {
			wantErr = io.ErrUnexpectedEOF
		}
		if !errors.Is(err, wantErr) {
			t.Fatalf("ended with %v, want %v", err, wantErr)
		}

		// Small limits: never a panic, never more memory than the limit.
		r := NewReader(&chunked{b: bytes.Clone(in), sizes: sizes}, Limits{MaxLine: 16, MaxEvent: 32})
		for range len(in) + 2 {
			e, err := r.Next()
			if err != nil {
				break
			}
			if len(e.Data) > 32 {
				t.Fatalf("event of %d bytes past the 32-byte limit", len(e.Data))
			}
		}
		if cap(r.in.buf) > 17 {
			t.Fatalf("buffer grew to %d bytes", cap(r.in.buf))
		}
	})
}

func FuzzRecordReader(f *testing.F) {
	f.Add([]byte("{\"response\":\"a\"}\x00{\"response\":\"b\"}\x00"), []byte{1})
	f.Add([]byte("\x00\x00a\x00b"), []byte{2})
	f.Fuzz(func(t *testing.T, in []byte, splits []byte) {
		sizes := make([]int, len(splits))
		for i, s := range splits {
			sizes[i] = int(s)
		}
		var want [][]byte
		for _, rec := range bytes.Split(in, []byte{0}) {
			if len(rec) > 0 {
				want = append(want, rec)
			}
		}
		r := NewNULReader(&chunked{b: bytes.Clone(in), sizes: sizes}, 1<<20)
		for i := range len(want) + 1 {
			rec, err := r.Next()
			if i == len(want) {
				if !errors.Is(err, io.EOF) {
					t.Fatalf("ended with %v", err)
				}
				break
			}
			if err != nil || !bytes.Equal(rec, want[i]) {
				t.Fatalf("record %d = %q, %v; want %q", i, rec, err, want[i])
			}
		}
		small := NewNULReader(&chunked{b: bytes.Clone(in), sizes: sizes}, 8)
		for range len(in) + 2 {
			rec, err := small.Next()
			if err != nil {
				break
			}
			if len(rec) > 8 {
				t.Fatalf("record of %d bytes past the limit", len(rec))
			}
		}
	})
}
