package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"
)

func startLean(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() { _ = serveLean(ln) }()
	return ln.Addr().String()
}

// TestLeanAnswersAsNetHTTP sends the requests a load generator sends (a
// Content-Length body, a chunked one, one that expects 100-continue) over
// one keep-alive connection and checks each answer is the reply.
func TestLeanAnswersAsNetHTTP(t *testing.T) {
	addr := startLean(t)
	tr := &http.Transport{MaxConnsPerHost: 1, ExpectContinueTimeout: time.Second}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	reused := 0
	for i, mk := range []func() *http.Request{
		func() *http.Request {
			r, _ := http.NewRequest("POST", "http://"+addr+"/v1/chat/completions", strings.NewReader(`{"model":"m"}`))
			return r
		},
		func() *http.Request { // chunked: no length known
			r, _ := http.NewRequest("POST", "http://"+addr+"/v1/chat/completions", io.MultiReader(strings.NewReader(`{"model":`), strings.NewReader(`"m"}`)))
			return r
		},
		func() *http.Request {
			r, _ := http.NewRequest("POST", "http://"+addr+"/x", strings.NewReader(strings.Repeat("a", 10000)))
			r.Header.Set("Expect", "100-continue")
			return r
		},
		func() *http.Request { r, _ := http.NewRequest("GET", "http://"+addr+"/", nil); return r },
	} {
		req := mk()
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(ci httptrace.GotConnInfo) {
				if ci.Reused {
					reused++
				}
			},
		}))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || string(b) != reply || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("request %d: %d %q %v", i, resp.StatusCode, b, err)
		}
	}
	if reused != 3 {
		t.Fatalf("%d of 3 later requests reused the connection", reused)
	}
}

// TestLeanPipelinesAndCloses sends two requests at once, the second
// asking to close, and a malformed one on another connection.
func TestLeanPipelinesAndCloses(t *testing.T) {
	addr := startLean(t)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, err = io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"+
		"POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\n\r\nde")
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for i := range 2 {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if string(b) != reply || resp.Close != (i == 1) {
			t.Fatalf("answer %d: %q close=%v", i, b, resp.Close)
		}
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("after Connection: close: %v, want the server's close", err)
	}

	bad, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	_ = bad.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.WriteString(bad, "hello\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(bad), nil)
	if err != nil || resp.StatusCode != 400 {
		t.Fatalf("malformed request: %v %v", resp, err)
	}
}
