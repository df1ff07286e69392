package h1client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"testing"
)

// recordTrace returns a trace whose write hooks append what they are
// called with to *log.
func recordTrace(log *[]string) *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		WroteHeaderField: func(k string, v []string) { *log = append(*log, fmt.Sprintf("field %s %q", k, v)) },
		WroteHeaders:     func() { *log = append(*log, "headers") },
		WroteRequest:     func(i httptrace.WroteRequestInfo) { *log = append(*log, fmt.Sprintf("request %v", i.Err)) },
	}
}

// trackedBody is a body that is no in-memory reader of net/http's, and
// that counts its closes and may fail a read or its close.
type trackedBody struct {
	r        io.Reader
	readErr  error
	closeErr error
	closes   int
}

func (b *trackedBody) Read(p []byte) (int, error) {
	if b.readErr != nil {
		return 0, b.readErr
	}
	return b.r.Read(p)
}

func (b *trackedBody) Close() error { b.closes++; return b.closeErr }

// writeCase builds one request afresh (a body can be written once).
type writeCase struct {
	name  string
	plain bool // writeRequest writes it itself
	make  func() (*http.Request, *trackedBody)
}

func newReq(method, target string, body io.Reader, h map[string][]string) *http.Request {
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		panic(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	return req
}

func writeCases() []writeCase {
	payload := `{"model":"m","messages":[{"role":"user","content":"hello"}],"max_tokens":1}`
	plain := func(name, method, target, body string, h map[string][]string) writeCase {
		return writeCase{name, true, func() (*http.Request, *trackedBody) {
			var r io.Reader
			if body != "" {
				r = strings.NewReader(body)
			}
			return newReq(method, target, r, h), nil
		}}
	}
	tracked := func(name string, plain bool, length int64, tb func() *trackedBody) writeCase {
		return writeCase{name, plain, func() (*http.Request, *trackedBody) {
			b := tb()
			req := newReq("POST", "http://127.0.0.1:8080/v1/x", nil, nil)
			req.Body, req.ContentLength = b, length
			return req, b
		}}
	}
	return []writeCase{
		plain("post-json", "POST", "http://127.0.0.1:8080/v1/chat/completions", payload,
			map[string][]string{"Content-Type": {"application/json"}, "Authorization": {"Bearer k"}, "Accept": {"application/json"}}),
		plain("get-no-body", "GET", "http://example.com/a/b?q=1&r=%20x", "", nil),
		plain("empty-method", "", "http://example.com/", "", nil),
		plain("post-no-body", "POST", "http://h:1/p", "", nil),
		plain("put-no-body", "PUT", "http://h:1/p", "", nil),
		plain("patch-no-body", "PATCH", "http://h:1/p", "", nil),
		plain("delete-no-body", "DELETE", "http://h:1/p", "", nil),
		plain("head", "HEAD", "http://h:1/p", "", nil),
		plain("no-path", "GET", "http://h:1", "", nil),
		plain("escaped-path", "GET", "http://h/a%2Fb/c d", "", nil),
		plain("ipv6", "GET", "http://[::1]:8080/x", "", nil),
		plain("user-agent", "POST", "http://h/x", "abc", map[string][]string{"User-Agent": {"  my-agent/1.0 \t"}}),
		plain("blank-user-agent", "POST", "http://h/x", "abc", map[string][]string{"User-Agent": {""}}),
		plain("user-agent-many", "POST", "http://h/x", "abc", map[string][]string{"User-Agent": {"a", "b"}}),
		plain("excluded-keys", "POST", "http://h/x", "abc", map[string][]string{
			"Host": {"other"}, "Content-Length": {"99"}, "Transfer-Encoding": {"chunked"}, "Trailer": {"X"}}),
		plain("non-canonical-key", "POST", "http://h/x", "abc", map[string][]string{"x-lower": {"1"}, "X-Upper": {"2"}, "host": {"h2"}}),
		plain("invalid-key", "POST", "http://h/x", "abc", map[string][]string{"Bad Key": {"v"}, "Good": {"v"}, "": {"e"}}),
		plain("multi-values", "POST", "http://h/x", "abc", map[string][]string{"X-M": {"1", " 2 ", ""}, "X-E": {}}),
		plain("many-keys", "POST", "http://h/x", "abc", func() map[string][]string {
			h := map[string][]string{}
			for i := range 40 {
				h[fmt.Sprintf("X-K%02d", 39-i)] = []string{fmt.Sprint(i)}
			}
			return h
		}()),
		{"host-override", true, func() (*http.Request, *trackedBody) {
			req := newReq("POST", "http://127.0.0.1:1/x", strings.NewReader("b"), nil)
			req.Host = "api.example.com"
			return req, nil
		}},
		{"no-body-nobody", true, func() (*http.Request, *trackedBody) {
			req := newReq("POST", "http://h/x", nil, nil)
			req.Body = http.NoBody
			return req, nil
		}},
		{"in-memory-no-getbody", true, func() (*http.Request, *trackedBody) {
			req := newReq("POST", "http://h/x", nil, nil)
			req.Body, req.ContentLength = io.NopCloser(strings.NewReader("hello")), 5
			return req, nil
		}},
		{"streamed-with-getbody", true, func() (*http.Request, *trackedBody) {
			b := &trackedBody{r: strings.NewReader("hello")}
			req := newReq("POST", "http://h/x", nil, nil)
			req.Body, req.ContentLength = b, 5
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("hello")), nil }
			return req, b
		}},
		{"writer-to-body", true, func() (*http.Request, *trackedBody) {
			req := newReq("POST", "http://h/x", nil, nil)
			req.Body, req.ContentLength = io.NopCloser(bytes.NewBufferString("hello")), 5
			return req, nil
		}},
		plain("long-value", "GET", "http://h/x", "", map[string][]string{"X-A": {strings.Repeat("a", 300)}, "X-B": {"b"}}),
		tracked("streamed-body", true, 5, func() *trackedBody { return &trackedBody{r: strings.NewReader("hello")} }),
		tracked("short-body", true, 9, func() *trackedBody { return &trackedBody{r: strings.NewReader("hello")} }),
		tracked("long-body", true, 3, func() *trackedBody { return &trackedBody{r: strings.NewReader("hello")} }),
		tracked("read-error", true, 5, func() *trackedBody { return &trackedBody{readErr: errors.New("disk gone")} }),
		tracked("close-error", true, 5, func() *trackedBody {
			return &trackedBody{r: strings.NewReader("hello"), closeErr: errors.New("close failed")}
		}),
		// What req.Write writes itself.
		tracked("unknown-length", false, 0, func() *trackedBody { return &trackedBody{r: strings.NewReader("hello")} }),
		tracked("chunked", false, -1, func() *trackedBody { return &trackedBody{r: strings.NewReader("hello")} }),
		{"length-nil-body", false, func() (*http.Request, *trackedBody) {
			req := newReq("POST", "http://h/x", nil, nil)
			req.ContentLength = 4
			return req, nil
		}},
		{"close", false, func() (*http.Request, *trackedBody) {
			req := newReq("POST", "http://h/x", strings.NewReader("b"), nil)
			req.Close = true
			return req, nil
		}},
		{"trailer", false, func() (*http.Request, *trackedBody) {
			req := newReq("POST", "http://h/x", strings.NewReader("b"), nil)
			req.Trailer = http.Header{"X-T": {"1"}}
			return req, nil
		}},
		plain2("newline-value", "POST", "http://h/x", map[string][]string{"X-A": {"a\r\nInjected: 1"}}),
		plain2("newline-user-agent", "POST", "http://h/x", map[string][]string{"User-Agent": {"a\nb"}}),
		{"unicode-host", false, func() (*http.Request, *trackedBody) {
			req := newReq("GET", "http://h/x", nil, nil)
			req.Host = "bücher.example"
			return req, nil
		}},
		{"zone-host", false, func() (*http.Request, *trackedBody) {
			req := newReq("GET", "http://h/x", nil, nil)
			req.Host = "[fe80::1%25en0]:80"
			return req, nil
		}},
		{"invalid-host", false, func() (*http.Request, *trackedBody) {
			req := newReq("GET", "http://h/x", nil, nil)
			req.Host = "h/with space"
			return req, nil
		}},
		{"escaped-control-in-path", true, func() (*http.Request, *trackedBody) {
			req := newReq("GET", "http://h/x", nil, nil)
			req.URL.RawPath, req.URL.Path = "/a\x01b", "/a\x01b"
			return req, nil
		}},
		{"control-in-query", false, func() (*http.Request, *trackedBody) {
			req := newReq("GET", "http://h/x", nil, nil)
			req.URL.RawQuery = "a=\x01"
			return req, nil
		}},
		{"opaque", false, func() (*http.Request, *trackedBody) {
			req := newReq("GET", "http://h/x", nil, nil)
			req.URL = &url.URL{Scheme: "http", Opaque: "//h/opaque", Host: "h"}
			return req, nil
		}},
		{"connect", false, func() (*http.Request, *trackedBody) {
			req := newReq("GET", "http://h/x", nil, nil)
			req.Method = "CONNECT"
			return req, nil
		}},
	}
}

func plain2(name, method, target string, h map[string][]string) writeCase {
	return writeCase{name, false, func() (*http.Request, *trackedBody) {
		return newReq(method, target, strings.NewReader("abc"), h), nil
	}}
}

// failAfter is a connection that takes n bytes, then fails.
type failAfter struct {
	out bytes.Buffer
	n   int
}

var errConnReset = errors.New("connection reset")

func (f *failAfter) Write(p []byte) (int, error) {
	if f.n < 0 {
		return f.out.Write(p)
	}
	if len(p) > f.n {
		k := f.n
		f.out.Write(p[:k])
		f.n = 0
		return k, errConnReset
	}
	f.n -= len(p)
	return f.out.Write(p)
}

// sameError reports whether got is want: the same type and text, but
// for the wrapper Request.Write puts on an error of the body's copy (see
// writeRequest), where the text alone is compared.
func sameError(got, want error) bool {
	if got == nil || want == nil {
		return got == want
	}
	if fmt.Sprintf("%T", want) == "http.requestBodyReadError" {
		return got.Error() == want.Error()
	}
	return fmt.Sprintf("%T", got) == fmt.Sprintf("%T", want) && got.Error() == want.Error()
}

// TestWriteRequestAsNetHTTP checks that writeRequest writes what
// req.Write writes, calls the same hooks in the same order, returns the
// same error and closes the body as often, on a connection that takes
// everything and on ones that fail part way, and that it writes the
// plain requests itself.
func TestWriteRequestAsNetHTTP(t *testing.T) {
	for _, tc := range writeCases() {
		for _, cut := range []int{-1, 0, 10, 70, 130, 200} {
			t.Run(fmt.Sprintf("%s/cut=%d", tc.name, cut), func(t *testing.T) {
				run := func(ours bool) (string, []string, int, error) {
					req, tb := tc.make()
					var log []string
					trace := recordTrace(&log)
					req = req.WithContext(httptrace.WithClientTrace(context.Background(), trace))
					if ours {
						if _, _, _, ok := plainRequest(req, nil); ok != tc.plain {
							t.Fatalf("plainRequest = %v, want %v", ok, tc.plain)
						}
					}
					conn := &failAfter{n: cut}
					bw := bufio.NewWriterSize(conn, 64)
					var err error
					if ours {
						err = writeRequest(bw, req, trace)
					} else {
						err = req.Write(bw)
					}
					_ = bw.Flush()
					closes := -1
					if tb != nil {
						closes = tb.closes
					}
					return conn.out.String(), log, closes, err
				}
				wantOut, wantLog, wantCloses, wantErr := run(false)
				gotOut, gotLog, gotCloses, gotErr := run(true)
				if gotOut != wantOut {
					t.Errorf("wrote\n%q\nnet/http wrote\n%q", gotOut, wantOut)
				}
				if strings.Join(gotLog, "\n") != strings.Join(wantLog, "\n") {
					t.Errorf("hooks\n%s\nnet/http's\n%s", strings.Join(gotLog, "\n"), strings.Join(wantLog, "\n"))
				}
				if !sameError(gotErr, wantErr) {
					t.Errorf("error %T %v, net/http's %T %v", gotErr, gotErr, wantErr, wantErr)
				}
				if gotCloses != wantCloses {
					t.Errorf("body closed %d times, by net/http %d", gotCloses, wantCloses)
				}
			})
		}
	}
}

// TestWriteRequestFlushesStreamedBodyHeader checks that the header of a
// request whose body is no in-memory reader reaches the connection before
// the body is read, as req.Write sends it.
func TestWriteRequestFlushesStreamedBodyHeader(t *testing.T) {
	var out bytes.Buffer
	bw := bufio.NewWriterSize(&out, 4096)
	req := newReq("POST", "http://h/x", nil, nil)
	atRead := "(not read)"
	req.Body = &trackedBody{r: readerFunc(func(p []byte) (int, error) {
		if atRead != "(not read)" {
			return 0, io.EOF
		}
		atRead = out.String()
		return copy(p, "hello"), nil
	})}
	req.ContentLength = 5
	if err := writeRequest(bw, req, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(atRead, "\r\n\r\n") || !strings.HasPrefix(atRead, "POST /x HTTP/1.1\r\n") {
		t.Fatalf("the connection held %q when the body was read, want the whole header", atRead)
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// BenchmarkWriteRequest is the writing of the load generator's request
// (an OpenAI chat completion, as the adapter builds it) by writeRequest
// and by net/http's req.Write.
func BenchmarkWriteRequest(b *testing.B) {
	payload := []byte(`{"model":"m","messages":[{"role":"user","content":"hello"}],"max_tokens":1}`)
	for _, ours := range []bool{true, false} {
		name := "writer=h1client"
		if !ours {
			name = "writer=net-http"
		}
		b.Run(name, func(b *testing.B) {
			bw := bufio.NewWriterSize(io.Discard, bufSize)
			req := newReq("POST", "http://127.0.0.1:18080/v1/chat/completions", nil, map[string][]string{
				"Content-Type": {"application/json"}, "Accept": {"application/json"}, "User-Agent": {"cloudinfer/dev"}})
			rd := bytes.NewReader(payload)
			b.ReportAllocs()
			for b.Loop() {
				rd.Reset(payload)
				req.Body, req.ContentLength = io.NopCloser(rd), int64(len(payload))
				req.GetBody = func() (io.ReadCloser, error) { return nil, nil }
				var err error
				if ours {
					err = writeRequest(bw, req, nil)
				} else {
					err = req.Write(bw)
				}
				if err != nil {
					b.Fatal(err)
				}
				_ = bw.Flush()
			}
		})
	}
}
