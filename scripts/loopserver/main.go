// Command loopserver is the minimal OpenAI-compatible server that
// scripts/vs-vegeta.sh measures load generators against: every request
// is read to its end and answered at once with one fixed, non-streamed
// chat completion of one output token. It listens on loopback only.
//
//	go run ./scripts/loopserver -addr 127.0.0.1:18080
//	go run ./scripts/loopserver -impl nethttp   # net/http's server instead
//
// By default it answers with a lean HTTP/1.1 loop of its own (keep-alive,
// Content-Length or chunked request bodies, Expect: 100-continue,
// pipelining) instead of net/http's server, which costs nearly twice the
// CPU per request (124 against 68–75 µs at 4,000/s on a 2-core machine):
// there the server shares the cores with the generator it measures, and
// every cycle it spends is one the generator cannot.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
)

// reply is the one answer: a chat completion with one output token.
const reply = `{"id":"cmpl-loop","object":"chat.completion","created":0,"model":"m",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`

func main() {
	addr := flag.String("addr", "127.0.0.1:18080", "loopback address to listen on")
	impl := flag.String("impl", "lean", "the server: lean (its own HTTP/1.1 loop) or nethttp (net/http's)")
	flag.Parse()
	if ip := net.ParseIP(hostOf(*addr)); ip == nil || !ip.IsLoopback() {
		log.Fatalf("loopserver: %s is not a loopback address", *addr)
	}
	switch *impl {
	case "lean":
		ln, err := net.Listen("tcp", *addr)
		if err != nil {
			log.Fatal(err)
		}
		log.Fatal(serveLean(ln))
	case "nethttp":
		log.Fatal(http.ListenAndServe(*addr, netHTTPHandler()))
	default:
		log.Fatalf("loopserver: -impl %q: want lean or nethttp", *impl)
	}
}

func hostOf(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return h
}

// netHTTPHandler answers every request with reply, on net/http's server.
func netHTTPHandler() http.Handler {
	body := []byte(reply)
	length := strconv.Itoa(len(body))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		hd := w.Header()
		hd["Content-Type"] = []string{"application/json"}
		hd["Content-Length"] = []string{length}
		_, _ = w.Write(body)
	})
}

// The lean server's answers, whole.
var (
	answer      = []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(reply)) + "\r\n\r\n" + reply)
	answerClose = []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(reply)) + "\r\n\r\n" + reply)
	continue100 = []byte("HTTP/1.1 100 Continue\r\n\r\n")
	badRequest  = []byte("HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
)

// serveLean serves ln's connections, one goroutine each, until ln fails.
func serveLean(ln net.Listener) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		go serveConn(c)
	}
}

// serveConn answers c's requests in order until the client closes it, asks
// to, or sends something that is not HTTP/1.x.
func serveConn(c net.Conn) {
	defer c.Close()
	br := bufio.NewReaderSize(c, 4096)
	bw := bufio.NewWriterSize(c, 4096)
	for {
		h, err := readHead(br)
		if err != nil {
			if errors.Is(err, errBad) {
				_, _ = bw.Write(badRequest)
				_ = bw.Flush()
			}
			return
		}
		if h.expect {
			if _, err := bw.Write(continue100); err != nil || bw.Flush() != nil {
				return
			}
		}
		if h.chunked {
			if _, err := io.Copy(io.Discard, httputil.NewChunkedReader(br)); err != nil {
				return
			}
			if err := skipTrailer(br); err != nil {
				return
			}
		} else if _, err := br.Discard(int(h.length)); err != nil {
			return
		}
		a := answer
		if h.close {
			a = answerClose
		}
		if _, err := bw.Write(a); err != nil {
			return
		}
		// A pipelined request already read waits for the next answer to
		// go out with this one.
		if h.close || br.Buffered() == 0 {
			if bw.Flush() != nil || h.close {
				return
			}
		}
	}
}

// head is what the lean server needs of a request's head.
type head struct {
	length  int64
	chunked bool
	close   bool
	expect  bool
}

var errBad = errors.New("bad request")

// readHead reads a request line and its header fields.
func readHead(br *bufio.Reader) (head, error) {
	var h head
	line, err := br.ReadSlice('\n')
	if err != nil {
		return h, err
	}
	line = bytes.TrimRight(line, "\r\n")
	sp := bytes.LastIndexByte(line, ' ')
	if sp < 0 || !bytes.HasPrefix(line[sp+1:], []byte("HTTP/1.")) {
		return h, errBad
	}
	h.close = string(line[sp+1:]) == "HTTP/1.0" // unless it asks to keep alive
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return h, errBad
			}
			return h, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			return h, nil
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return h, errBad
		}
		name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 {
				return h, errBad
			}
			h.length = n
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			h.chunked = bytes.Contains(bytes.ToLower(value), []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			v := bytes.ToLower(value)
			if bytes.Contains(v, []byte("close")) {
				h.close = true
			} else if bytes.Contains(v, []byte("keep-alive")) {
				h.close = false
			}
		case bytes.EqualFold(name, []byte("Expect")):
			h.expect = bytes.EqualFold(value, []byte("100-continue"))
		}
	}
}

// skipTrailer reads a chunked body's trailer fields, to the empty line.
func skipTrailer(br *bufio.Reader) error {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			return nil
		}
	}
}
