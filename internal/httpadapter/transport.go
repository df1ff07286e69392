package httpadapter

import (
	"net"
	"net/http"
	"time"
)

// Settings of the transport an HTTP adapter builds for itself when the
// caller gives it no client (NewTransport).
const (
	// DefaultMaxIdleConnsPerHost is how many idle connections the
	// transport keeps per host: 256, about as many as a client has calls
	// in flight to one endpoint under load. net/http's default transport
	// keeps 2, so at 64 concurrent calls most requests would open a new
	// connection (a TCP and TLS handshake each) and close it again.
	DefaultMaxIdleConnsPerHost = 256
	// DefaultIdleConnTimeout closes a connection idle that long: 90 s,
	// net/http's default.
	DefaultIdleConnTimeout = 90 * time.Second
	// DefaultResponseHeaderTimeout bounds the wait for a response's
	// headers once the request is written: 10 minutes. It is there so that
	// a server that takes a request and never answers cannot hold a call,
	// and its connection, forever when the caller set no deadline; it is
	// no latency bound. A streaming LLM server sends its headers at once,
	// or with the first token after prefill, but one that does not stream
	// sends them only when the whole generation is done, which for a long
	// answer from a slow or loaded model takes minutes: the bound must be
	// generous. 10 minutes is the default request timeout of OpenAI's own
	// Python and Node SDKs. Bound calls more tightly with cloudreq's
	// Timeout, AttemptTimeout and FirstChunkTimeout. It does not bound the
	// body, which a stream may send for longer.
	DefaultResponseHeaderTimeout = 10 * time.Minute
)

// NewTransport returns a new transport for one adapter: a clone of
// http.DefaultTransport (its proxy from the environment, dialer, TLS and
// HTTP/2 settings) with the connection pool and header timeout above:
// MaxIdleConnsPerHost DefaultMaxIdleConnsPerHost, no total idle limit
// (MaxIdleConns 0), IdleConnTimeout DefaultIdleConnTimeout and
// ResponseHeaderTimeout DefaultResponseHeaderTimeout. When
// http.DefaultTransport was replaced by something that is not an
// *http.Transport, it starts from net/http's default settings instead.
//
// The adapter owns the transport: its Close closes the transport's idle
// connections, which closes nothing of http.DefaultTransport's.
func NewTransport() *http.Transport {
	var t *http.Transport
	if dt, ok := http.DefaultTransport.(*http.Transport); ok {
		t = dt.Clone()
	} else {
		t = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:     true,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		}
	}
	TuneTransport(t)
	return t
}

// TuneTransport sets t's connection pool and response header timeout to
// NewTransport's, leaving its other settings as they are.
func TuneTransport(t *http.Transport) {
	t.MaxIdleConns = 0
	t.MaxIdleConnsPerHost = DefaultMaxIdleConnsPerHost
	t.IdleConnTimeout = DefaultIdleConnTimeout
	t.ResponseHeaderTimeout = DefaultResponseHeaderTimeout
}
