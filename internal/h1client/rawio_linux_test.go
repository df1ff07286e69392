package h1client

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tcpPair returns the two ends of a loopback TCP connection, closed when
// the test ends.
func tcpPair(t *testing.T) (client, server net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	server, err = ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { _ = server.Close() })
	return client, server
}

// TestConnectionsUseRawIO checks that a dialed TCP connection's buffers
// read and write through rawIO, so that the tests of this package cover
// it.
func TestConnectionsUseRawIO(t *testing.T) {
	nc, _ := tcpPair(t)
	_, ok := wrapIO(nc).(*rawIO)
	require.True(t, ok, "a TCP connection is read and written with raw system calls")
}

// TestLargeBodiesBothWays sends and receives bodies larger than a
// socket's buffers, to a server that reads late: the writes and reads
// wait in the poller (EAGAIN) and lose nothing.
func TestLargeBodiesBothWays(t *testing.T) {
	body := make([]byte, 8<<20)
	for i := range body {
		body[i] = byte(i * 7)
	}
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond) // the client's write fills the socket first
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		_, _ = w.Write(b)
	})
	_, _, c := newTransport(t)
	code, got := get(t, c, http.MethodPost, srv.URL, bytes.NewReader(body))
	require.Equal(t, 200, code)
	require.Equal(t, sha256.Sum256(body), sha256.Sum256([]byte(got)))
}

// TestResetIsTheSocketsError checks that a connection the server resets
// fails with the errors net.Conn would give: a *net.OpError for a read,
// wrapping ECONNRESET.
func TestResetIsTheSocketsError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		buf := make([]byte, 4096)
		_, _ = c.Read(buf)                // the request
		_ = c.(*net.TCPConn).SetLinger(0) // close with a reset
		_ = c.Close()
	}()
	_, _, c := newTransport(t)
	_, err = c.Get("http://" + ln.Addr().String() + "/")
	<-done
	require.Error(t, err)
	require.True(t, errors.Is(err, syscall.ECONNRESET), "%v", err)
	var oe *net.OpError
	require.ErrorAs(t, err, &oe)
	require.Equal(t, "read", oe.Op)
	require.Equal(t, ln.Addr().String(), oe.Addr.String())
}

// TestClosedAndTimedOut checks rawIO's errors on a closed connection and
// past a deadline, against net.Conn's own.
func TestClosedAndTimedOut(t *testing.T) {
	nc, peer := tcpPair(t)
	rw := wrapIO(nc)

	require.NoError(t, nc.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
	_, err := rw.Read(make([]byte, 8))
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	require.True(t, ne.Timeout(), "%v", err)
	var oe *net.OpError
	require.ErrorAs(t, err, &oe)
	require.Equal(t, "read", oe.Op)
	require.NoError(t, nc.SetReadDeadline(time.Time{}))

	_, err = peer.Write([]byte("hi"))
	require.NoError(t, err)
	buf := make([]byte, 8)
	n, err := rw.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "hi", string(buf[:n]))
	n, err = rw.Write([]byte("there"))
	require.NoError(t, err)
	require.Equal(t, 5, n)

	_, err = io.ReadFull(peer, buf[:5]) // all read: the close is a FIN
	require.NoError(t, err)
	require.NoError(t, peer.Close())
	n, err = rw.Read(buf)
	require.Zero(t, n)
	require.ErrorIs(t, err, io.EOF) // the peer's close

	require.NoError(t, nc.Close())
	_, err = rw.Read(buf)
	require.ErrorIs(t, err, net.ErrClosed)
	require.ErrorAs(t, err, &oe)
	require.Equal(t, "read", oe.Op)
	require.NotContains(t, err.Error(), "raw-") // one OpError, as net.Conn's
	_, err = rw.Write([]byte("x"))
	require.ErrorIs(t, err, net.ErrClosed)
	require.ErrorAs(t, err, &oe)
	require.Equal(t, "write", oe.Op)
}
