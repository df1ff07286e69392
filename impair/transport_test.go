package impair_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/impair"
)

// TestTransportOverTLS sends HTTPS requests through an impaired transport
// to a loopback server. Real timers may wake late but never early, so
// each phase takes at least its round trips: the TCP handshake one, the
// TLS 1.3 handshake one, the request one.
func TestTransportOverTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(append([]byte("echo:"), b...))
	}))
	defer srv.Close()
	const up, down = 4 * time.Millisecond, 6 * time.Millisecond
	rtt := up + down
	p := impair.Profile{Up: impair.Link{Delay: up}, Down: impair.Link{Delay: down}}
	tr, err := p.Transport(srv.Client().Transport.(*http.Transport), nil)
	require.NoError(t, err)
	tr.TLSClientConfig.MinVersion = tls.VersionTLS13
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}

	for i, fresh := range []bool{true, false} {
		var connStart, connDone, tlsStart, tlsDone, wrote, first time.Time
		reused := false
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			ConnectStart:         func(string, string) { connStart = time.Now() },
			ConnectDone:          func(string, string, error) { connDone = time.Now() },
			TLSHandshakeStart:    func() { tlsStart = time.Now() },
			TLSHandshakeDone:     func(tls.ConnectionState, error) { tlsDone = time.Now() },
			GotConn:              func(ci httptrace.GotConnInfo) { reused = ci.Reused },
			WroteRequest:         func(httptrace.WroteRequestInfo) { wrote = time.Now() },
			GotFirstResponseByte: func() { first = time.Now() },
		})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, stringsReader("ping"))
		require.NoError(t, err)
		res, err := hc.Do(req)
		require.NoError(t, err, i)
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		_ = res.Body.Close()
		assert.Equal(t, "echo:ping", string(body))
		assert.Equal(t, !fresh, reused)
		if fresh {
			assert.GreaterOrEqual(t, connDone.Sub(connStart), rtt, "the TCP handshake")
			assert.GreaterOrEqual(t, tlsDone.Sub(tlsStart), rtt, "the TLS handshake")
		}
		assert.GreaterOrEqual(t, first.Sub(wrote), rtt, "request up, response down")
	}
}

func TestDialHonoursContextDuringHandshake(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	d := impair.Profile{Up: impair.Link{Delay: time.Hour}}.Dialer(nil)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	c, err := d(ctx, "tcp", ln.Addr().String())
	assert.Nil(t, c)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "the hour-long handshake is not waited")
}

func TestDialerKeepsItsControl(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	refused := errors.New("control refused")
	nd := &net.Dialer{Control: func(string, string, syscall.RawConn) error { return refused }}
	_, err = impair.Profile{Up: impair.Link{Delay: time.Hour}}.Dialer(nd)(t.Context(), "tcp", ln.Addr().String())
	assert.ErrorIs(t, err, refused, "the dialer's own Control runs first")
	calls := 0
	nd = &net.Dialer{ControlContext: func(context.Context, string, string, syscall.RawConn) error { calls++; return nil }}
	c, err := impair.Profile{Up: impair.Link{Delay: time.Millisecond}}.Dialer(nd)(t.Context(), "tcp", ln.Addr().String())
	require.NoError(t, err)
	_ = c.Close()
	assert.Equal(t, 1, calls)
}

func TestTransportRefusesItsOwnTLSDialer(t *testing.T) {
	base := &http.Transport{DialTLSContext: func(context.Context, string, string) (net.Conn, error) { return nil, nil }}
	_, err := impair.Profile{}.Transport(base, nil)
	assert.ErrorContains(t, err, "bypass the impairment")
}

func stringsReader(s string) io.Reader { return &stringReader{s: s} }

type stringReader struct{ s string }

func (r *stringReader) Read(b []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := copy(b, r.s)
	r.s = r.s[n:]
	return n, nil
}
