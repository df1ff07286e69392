package h1client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// server is an httptest server that counts the connections it accepted.
type server struct {
	*httptest.Server
	conns atomic.Int64
}

func newServer(t *testing.T, h http.HandlerFunc) *server {
	s := &server{}
	s.Server = httptest.NewUnstartedServer(h)
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// countingRT is a fallback that counts what it carried.
type countingRT struct {
	n  atomic.Int64
	rt http.RoundTripper
}

func (c *countingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(r)
}

func (c *countingRT) CloseIdleConnections() {
	c.rt.(interface{ CloseIdleConnections() }).CloseIdleConnections()
}

func newTransport(t *testing.T) (*Transport, *countingRT, *http.Client) {
	fb := &countingRT{rt: http.DefaultTransport.(*http.Transport).Clone()}
	tr := &Transport{Fallback: fb}
	t.Cleanup(tr.CloseIdleConnections)
	return tr, fb, &http.Client{Transport: tr}
}

func get(t *testing.T, c *http.Client, method, url string, body io.Reader) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	require.NoError(t, err)
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestReusesOneConnection(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %d %s", r.Method, r.URL.Path, r.ContentLength, b)
	})
	_, fb, c := newTransport(t)
	for i := range 20 {
		code, body := get(t, c, http.MethodPost, s.URL+"/x", strings.NewReader(fmt.Sprint("body", i)))
		assert.Equal(t, 200, code)
		assert.Equal(t, fmt.Sprintf("POST /x %d body%d", len(fmt.Sprint("body", i)), i), body)
	}
	assert.EqualValues(t, 1, s.conns.Load(), "one keep-alive connection for sequential requests")
	assert.Zero(t, fb.n.Load(), "cleartext requests are not the fallback's")
}

func TestConnectionCloseIsHonoured(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		_, _ = io.WriteString(w, "ok")
	})
	_, _, c := newTransport(t)
	for range 3 {
		code, body := get(t, c, http.MethodGet, s.URL, nil)
		assert.Equal(t, 200, code)
		assert.Equal(t, "ok", body)
	}
	assert.EqualValues(t, 3, s.conns.Load())

	// A request that asks for the close is not pooled either.
	s2 := newServer(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	for range 2 {
		req, _ := http.NewRequest(http.MethodGet, s2.URL, nil)
		req.Close = true
		resp, err := c.Do(req)
		require.NoError(t, err)
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	assert.EqualValues(t, 2, s2.conns.Load())
}

func TestStreamsChunksAsTheyCome(t *testing.T) {
	next := make(chan struct{})
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/again" {
			_, _ = io.WriteString(w, "ok")
			return
		}
		for i := range 3 {
			fmt.Fprintf(w, "chunk%d\n", i)
			w.(http.Flusher).Flush()
			if i < 2 {
				<-next // the client has read this chunk
			}
		}
	})
	_, _, c := newTransport(t)
	resp, err := c.Get(s.URL)
	require.NoError(t, err)
	assert.Equal(t, []string{"chunked"}, resp.TransferEncoding)
	br := bufio.NewReader(resp.Body)
	for i := range 3 {
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("chunk%d\n", i), line)
		if i < 2 {
			next <- struct{}{}
		}
	}
	_, err = br.ReadByte()
	assert.ErrorIs(t, err, io.EOF)
	require.NoError(t, resp.Body.Close())
	// Read to its end, the connection is reused.
	get(t, c, http.MethodGet, s.URL+"/again", nil)
	assert.EqualValues(t, 1, s.conns.Load())
}

func TestEarlyCloseDropsTheConnection(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("x", 64<<10))
	})
	_, _, c := newTransport(t)
	resp, err := c.Get(s.URL)
	require.NoError(t, err)
	var b [10]byte
	_, err = io.ReadFull(resp.Body, b[:])
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	n, err := resp.Body.Read(b[:])
	assert.Zero(t, n)
	assert.ErrorIs(t, err, io.EOF, "a closed body reads nothing")
	_, body := get(t, c, http.MethodGet, s.URL, nil)
	assert.Len(t, body, 64<<10)
	assert.EqualValues(t, 2, s.conns.Load(), "the unread body's connection is not reused")
}

func TestCancelEndsABlockedCall(t *testing.T) {
	release := make(chan struct{})
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/body" {
			_, _ = io.WriteString(w, "head")
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	_, _, c := newTransport(t)

	// Before the header.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/header", nil)
	_, err := c.Do(req)
	assert.ErrorIs(t, err, context.Canceled)

	// In the body.
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/body", nil)
	resp, err := c.Do(req)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	assert.Equal(t, "head", string(b))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, resp.Body.Close())
}

// oneShot is a raw server that answers one request per connection
// without saying so (no Connection: close) and then closes it, and tells
// closed each time it has.
func oneShot(t *testing.T) (string, *atomic.Int64, <-chan struct{}) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var conns atomic.Int64
	closed := make(chan struct{}, 16)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			wg.Go(func() {
				defer func() { nc.Close(); closed <- struct{}{} }()
				req, err := http.ReadRequest(bufio.NewReader(nc))
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				_, _ = io.WriteString(nc, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			})
		}
	})
	return "http://" + ln.Addr().String(), &conns, closed
}

func TestIdleConnectionClosedByServerIsNotReused(t *testing.T) {
	u, conns, closed := oneShot(t)
	tr, _, c := newTransport(t)
	tr.ProbeIdle = -1 // probe every reuse
	for range 3 {
		code, body := get(t, c, http.MethodPost, u, strings.NewReader("x"))
		assert.Equal(t, 200, code)
		assert.Equal(t, "ok", body)
		<-closed // the server has closed the connection (on loopback its end is then queued here)
	}
	assert.EqualValues(t, 3, conns.Load())
}

func TestResponseHeaderTimeout(t *testing.T) {
	release := make(chan struct{})
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	tr, _, c := newTransport(t)
	tr.ResponseHeaderTimeout = 30 * time.Millisecond
	_, err := c.Get(s.URL)
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	assert.True(t, ne.Timeout())
	assert.Contains(t, err.Error(), "timeout awaiting response headers")
}

func TestFallbackCarriesTheRest(t *testing.T) {
	tls := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "tls") }))
	defer tls.Close()
	plain := newServer(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "plain") })

	fb := &countingRT{rt: tls.Client().Transport}
	tr := &Transport{Fallback: fb}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	_, body := get(t, c, http.MethodGet, tls.URL, nil)
	assert.Equal(t, "tls", body)
	assert.EqualValues(t, 1, fb.n.Load(), "https goes to the fallback")

	req, _ := http.NewRequest(http.MethodPost, plain.URL, strings.NewReader("x"))
	req.Header.Set("Expect", "100-continue")
	resp, err := c.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "plain", string(b))
	assert.EqualValues(t, 2, fb.n.Load(), "Expect goes to the fallback")

	proxied := &Transport{Fallback: fb, Proxy: func(*http.Request) (*url.URL, error) { return url.Parse("http://127.0.0.1:1") }}
	req, _ = http.NewRequest(http.MethodGet, plain.URL, nil)
	if resp, err := proxied.RoundTrip(req); err == nil {
		resp.Body.Close()
	}
	assert.EqualValues(t, 3, fb.n.Load(), "a proxied request goes to the fallback")

	bad := &Transport{Fallback: fb, Proxy: func(*http.Request) (*url.URL, error) { return nil, errors.New("bad proxy") }}
	req, _ = http.NewRequest(http.MethodGet, plain.URL, nil)
	_, err = bad.RoundTrip(req)
	assert.ErrorContains(t, err, "bad proxy")
}

func TestTraceHooks(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</a.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		_, _ = io.WriteString(w, "ok")
	})
	_, _, c := newTransport(t)
	var mu sync.Mutex
	var events []string
	add := func(e string) { mu.Lock(); events = append(events, e); mu.Unlock() }
	trace := &httptrace.ClientTrace{
		GetConn: func(string) { add("GetConn") },
		GotConn: func(i httptrace.GotConnInfo) {
			add(fmt.Sprintf("GotConn reused=%v idle=%v", i.Reused, i.WasIdle))
		},
		ConnectStart:         func(string, string) { add("ConnectStart") },
		ConnectDone:          func(string, string, error) { add("ConnectDone") },
		WroteHeaderField:     func(k string, _ []string) { add("Header " + k) },
		WroteHeaders:         func() { add("WroteHeaders") },
		WroteRequest:         func(httptrace.WroteRequestInfo) { add("WroteRequest") },
		GotFirstResponseByte: func() { add("FirstByte") },
		Got1xxResponse:       func(code int, _ textproto.MIMEHeader) error { add(fmt.Sprint("1xx ", code)); return nil },
	}
	for range 2 {
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, s.URL, nil)
		req.Header.Set("Authorization", "secret")
		resp, err := c.Do(req)
		require.NoError(t, err)
		assert.Equal(t, 200, resp.StatusCode)
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	want := []string{"GetConn", "ConnectStart", "ConnectDone", "GotConn reused=false idle=false",
		"Header Host", "Header User-Agent", "Header Authorization", "WroteHeaders", "WroteRequest", "FirstByte", "1xx 103",
		"GetConn", "GotConn reused=true idle=true",
		"Header Host", "Header User-Agent", "Header Authorization", "WroteHeaders", "WroteRequest", "FirstByte", "1xx 103"}
	assert.Equal(t, want, events)
}

func TestBodilessResponsesReuse(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	_, _, c := newTransport(t)
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodGet} {
		code, body := get(t, c, m, s.URL, nil)
		assert.Equal(t, 204, code)
		assert.Empty(t, body)
	}
	assert.EqualValues(t, 1, s.conns.Load())
}

func TestPoolBoundsAndCloseIdle(t *testing.T) {
	gate := make(chan struct{})
	var in sync.WaitGroup
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			in.Done()
			<-gate
		}
		_, _ = io.WriteString(w, "ok")
	})
	tr, _, c := newTransport(t)
	tr.MaxIdleConnsPerHost = 1
	in.Add(3)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { get(t, c, http.MethodGet, s.URL+"/hold", nil) })
	}
	in.Wait() // three connections at once
	close(gate)
	wg.Wait()
	require.EqualValues(t, 3, s.conns.Load())
	for range 3 {
		get(t, c, http.MethodGet, s.URL, nil)
	}
	assert.EqualValues(t, 3, s.conns.Load(), "one idle connection was kept")
	tr.CloseIdleConnections()
	get(t, c, http.MethodGet, s.URL, nil)
	assert.EqualValues(t, 4, s.conns.Load(), "closed idle connections are not reused")

	tr.IdleConnTimeout = time.Nanosecond
	time.Sleep(time.Millisecond)
	get(t, c, http.MethodGet, s.URL, nil)
	assert.EqualValues(t, 5, s.conns.Load(), "a connection idle too long is not reused")
}

func TestConcurrentUse(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(b)
	})
	_, _, c := newTransport(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				want := fmt.Sprintf("g%d-i%d", g, i)
				_, body := get(t, c, http.MethodPost, s.URL, strings.NewReader(want))
				assert.Equal(t, want, body)
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, s.conns.Load(), int64(8))
}

func TestDialError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	_, _, c := newTransport(t)
	_, err = c.Get("http://" + addr)
	var op *net.OpError
	require.ErrorAs(t, err, &op)
	assert.Equal(t, "dial", op.Op)
}

// BenchmarkRoundTrip is one small request and response on a pooled
// loopback connection, with this transport and with net/http's.
func BenchmarkRoundTrip(b *testing.B) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	defer s.Close()
	std := http.DefaultTransport.(*http.Transport).Clone()
	defer std.CloseIdleConnections()
	h1 := &Transport{Fallback: std}
	defer h1.CloseIdleConnections()
	for _, tc := range []struct {
		name string
		rt   http.RoundTripper
	}{{"h1client", h1}, {"net-http", std}} {
		b.Run(tc.name, func(b *testing.B) {
			c := &http.Client{Transport: tc.rt}
			body := []byte(`{"model":"m","prompt":"hello"}`)
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, s.URL, strings.NewReader(string(body)))
				resp, err := c.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
