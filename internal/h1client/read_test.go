package h1client

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

const loopJSON = `{"id":"cmpl-loop","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}]}`

// readCases are raw responses (each followed by what comes after it on
// the connection) and whether readPlain reads them itself.
var readCases = []struct {
	name  string
	plain bool
	raw   string
}{
	{"json", true, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + fmt.Sprint(len(loopJSON)) +
		"\r\nDate: Mon, 07 Dec 2026 14:00:00 GMT\r\n\r\n" + loopJSON + "HTTP/1.1 200 OK\r\n"},
	{"lower-case-keys", true, "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\nx-request-id: abc\r\nserver: uvicorn\r\n\r\nokNEXT"},
	{"no-reason", true, "HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok"},
	{"odd-reason", true, "HTTP/1.1 429 Too  Many\tRequests \r\nContent-Length: 0\r\n\r\n"},
	{"error-status", true, "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 3\r\nContent-Length: 5\r\n\r\nbusy!"},
	{"spaces-around-values", true, "HTTP/1.1 200 OK\r\nX-A:   a b  \r\nX-B:\t\tb\t\r\nX-Empty:\r\nContent-Length:  3 \r\n\r\nabc"},
	{"repeated-keys", true, "HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nX-M: 1\r\nset-cookie: b=2\r\nSET-COOKIE: c=3\r\nContent-Length: 1\r\n\r\nx"},
	{"connection-close", true, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"},
	{"connection-keep-alive", true, "HTTP/1.1 200 OK\r\nConnection: keep-alive, Upgrade\r\nContent-Length: 2\r\n\r\nok"},
	{"connection-close-token", true, "HTTP/1.1 200 OK\r\nConnection: foo, Close\r\nContent-Length: 2\r\n\r\nok"},
	{"obs-text", true, "HTTP/1.1 200 OK\r\nX-U: caf\xc3\xa9\r\nContent-Length: 2\r\n\r\nok"},
	{"truncated-body", true, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"},
	{"digit-key", true, "HTTP/1.1 200 OK\r\n1x-a: v\r\nContent-Length: 1\r\n\r\nx"},
	{"big-length", true, "HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775807\r\n\r\nabc"},

	// What http.ReadResponse reads.
	{"http10", false, "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"},
	{"chunked", false, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"},
	{"no-length", false, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil close"},
	{"two-lengths", false, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok"},
	{"bad-length", false, "HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok"},
	{"empty-length", false, "HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\nok"},
	{"length-overflow", false, "HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775808\r\n\r\nok"},
	{"no-content", false, "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"},
	{"not-modified", false, "HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n"},
	{"informational", false, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"},
	{"trailer", false, "HTTP/1.1 200 OK\r\nTrailer: X-T\r\nContent-Length: 2\r\n\r\nok"},
	{"pragma", false, "HTTP/1.1 200 OK\r\nPragma: no-cache\r\nContent-Length: 2\r\n\r\nok"},
	{"folded", false, "HTTP/1.1 200 OK\r\nX-A: a\r\n  b\r\nContent-Length: 2\r\n\r\nok"},
	{"bare-lf", false, "HTTP/1.1 200 OK\nContent-Length: 2\n\nok"},
	{"bare-lf-field", false, "HTTP/1.1 200 OK\r\nX-A: a\nContent-Length: 2\r\n\r\nok"},
	{"space-before-colon", false, "HTTP/1.1 200 OK\r\nX-A : a\r\nContent-Length: 2\r\n\r\nok"},
	{"no-colon", false, "HTTP/1.1 200 OK\r\nX-A\r\nContent-Length: 2\r\n\r\nok"},
	{"underscore-key", false, "HTTP/1.1 200 OK\r\nX_A: a\r\nContent-Length: 2\r\n\r\nok"},
	{"control-in-value", false, "HTTP/1.1 200 OK\r\nX-A: a\x01b\r\nContent-Length: 2\r\n\r\nok"},
	{"two-spaces", false, "HTTP/1.1  200 OK\r\nContent-Length: 2\r\n\r\nok"},
	{"bad-status", false, "HTTP/1.1 2x0 OK\r\nContent-Length: 2\r\n\r\nok"},
	{"long-status", false, "HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\nok"},
	{"not-http", false, "ICY 200 OK\r\nContent-Length: 2\r\n\r\nok"},
	{"incomplete-header", false, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"},
}

// compareRead reads raw as a response to req with readPlain and with
// http.ReadResponse, and fails t where readPlain read it and the two
// differ in any field, the body, its error or what is left on the
// connection. It returns whether readPlain read it.
func compareRead(t *testing.T, raw, method string) bool {
	t.Helper()
	req, err := http.NewRequest(method, "http://h/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	read := func(ours bool) (*http.Response, string, string, string, bool) {
		br := bufio.NewReaderSize(strings.NewReader(raw), bufSize)
		if _, err := br.Peek(1); err != nil {
			return nil, "", "", "", false
		}
		var resp *http.Response
		if ours {
			var ok bool
			if resp, ok = readPlain(br, req); !ok {
				if br.Buffered() != min(len(raw), bufSize) {
					t.Fatalf("declined, having read %d bytes", min(len(raw), bufSize)-br.Buffered())
				}
				return nil, "", "", "", false
			}
		} else if resp, err = http.ReadResponse(br, req); err != nil {
			return nil, "", "", "", false
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var rest []byte
		if err == nil {
			rest, _ = io.ReadAll(br)
		}
		return resp, string(body), fmt.Sprint(err), string(rest), true
	}
	got, gotBody, gotErr, gotRest, ok := read(true)
	if !ok {
		return false
	}
	want, wantBody, wantErr, wantRest, wantOK := read(false)
	if !wantOK {
		t.Fatalf("read %q, which http.ReadResponse refuses", raw)
	}
	for _, f := range []struct {
		name      string
		got, want any
	}{
		{"Status", got.Status, want.Status}, {"StatusCode", got.StatusCode, want.StatusCode},
		{"Proto", got.Proto, want.Proto}, {"ProtoMajor", got.ProtoMajor, want.ProtoMajor},
		{"ProtoMinor", got.ProtoMinor, want.ProtoMinor}, {"Header", got.Header, want.Header},
		{"ContentLength", got.ContentLength, want.ContentLength}, {"Close", got.Close, want.Close},
		{"TransferEncoding", got.TransferEncoding, want.TransferEncoding}, {"Trailer", got.Trailer, want.Trailer},
		{"Uncompressed", got.Uncompressed, want.Uncompressed}, {"Request", got.Request, want.Request},
		{"NoBody", got.Body == http.NoBody, want.Body == http.NoBody},
		{"body", gotBody, wantBody}, {"body error", gotErr, wantErr}, {"rest", gotRest, wantRest},
	} {
		if !reflect.DeepEqual(f.got, f.want) {
			t.Errorf("%s: %#v, http.ReadResponse's %#v", f.name, f.got, f.want)
		}
	}
	return true
}

// TestReadPlainAsNetHTTP checks that readPlain reads the plain responses
// itself, as http.ReadResponse reads them, and declines the rest having
// read nothing.
func TestReadPlainAsNetHTTP(t *testing.T) {
	for _, tc := range readCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := compareRead(t, tc.raw, "POST"); got != tc.plain {
				t.Fatalf("readPlain read it: %v, want %v", got, tc.plain)
			}
		})
	}
	t.Run("head", func(t *testing.T) {
		if compareRead(t, readCases[0].raw, "HEAD") {
			t.Fatal("readPlain read the answer to a HEAD request")
		}
	})
}

// TestReadPlainEmptyReads: a zero-length read of a body ends as net/http's
// does where the connection ends early, with its last data and the
// error together.
func TestReadPlainEmptyReads(t *testing.T) {
	raw := "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort"
	reads := func(ours bool) string {
		br := bufio.NewReaderSize(iotest.DataErrReader(strings.NewReader(raw)), bufSize)
		_, _ = br.Peek(1)
		req, _ := http.NewRequest("GET", "http://h/x", nil)
		var resp *http.Response
		if ours {
			var ok bool
			if resp, ok = readPlain(br, req); !ok {
				t.Fatal("declined")
			}
		} else {
			var err error
			if resp, err = http.ReadResponse(br, req); err != nil {
				t.Fatal(err)
			}
		}
		var out []string
		buf := make([]byte, 16)
		for _, n := range []int{5, 0, 0, 4} {
			k, err := resp.Body.Read(buf[:n])
			out = append(out, fmt.Sprintf("%d %v", k, err))
		}
		return strings.Join(out, "; ")
	}
	if got, want := reads(true), reads(false); got != want {
		t.Fatalf("reads %s, net/http's %s", got, want)
	}
}

// FuzzReadPlain checks that whatever readPlain reads, it reads as
// http.ReadResponse does.
func FuzzReadPlain(f *testing.F) {
	for _, tc := range readCases {
		f.Add([]byte(tc.raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { compareRead(t, string(raw), "POST") })
}

// BenchmarkReadResponse is the reading of the load generator's answer (a
// non-streamed chat completion) by readPlain and by http.ReadResponse,
// header and body.
func BenchmarkReadResponse(b *testing.B) {
	raw := readCases[0].raw
	for _, ours := range []bool{true, false} {
		name := "reader=h1client"
		if !ours {
			name = "reader=net-http"
		}
		b.Run(name, func(b *testing.B) {
			sr := strings.NewReader(raw)
			br := bufio.NewReaderSize(sr, bufSize)
			req, _ := http.NewRequest("POST", "http://h/x", nil)
			buf := make([]byte, 512)
			b.ReportAllocs()
			for b.Loop() {
				sr.Reset(raw)
				br.Reset(sr)
				_, _ = br.Peek(1)
				var resp *http.Response
				var ok bool
				if ours {
					resp, ok = readPlain(br, req)
				} else {
					var err error
					resp, err = http.ReadResponse(br, req)
					ok = err == nil
				}
				if !ok {
					b.Fatal("not read")
				}
				for {
					if _, err := resp.Body.Read(buf); err != nil {
						break
					}
				}
			}
		})
	}
}
