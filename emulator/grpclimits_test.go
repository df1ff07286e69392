package emulator

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/cloudinfer/cloudinfer/bench"
)

// startLimited starts a server with opts and the gRPC bounds that set
// changes, on free loopback ports, and closes it at the end of the test.
func startLimited(t *testing.T, opts Options, set func(*grpcLimits)) *Server {
	t.Helper()
	s, err := New(opts)
	require.NoError(t, err)
	set(&s.grpcLim)
	require.NoError(t, s.Start("127.0.0.1:0", "127.0.0.1:0"))
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s
}

// grpcConn dials s's gRPC listener. Every read and write on it must end
// within rawDeadline; the connection is closed at the end of the test.
func grpcConn(t *testing.T, s *Server) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.GRPCAddr(), rawDeadline)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(rawDeadline)))
	return c
}

// h2Conn dials s's gRPC listener and sends the HTTP/2 client preface and
// an empty SETTINGS frame; the framer reads and writes frames on it.
func h2Conn(t *testing.T, s *Server) (net.Conn, *http2.Framer) {
	t.Helper()
	c := grpcConn(t, s)
	_, err := io.WriteString(c, http2.ClientPreface)
	require.NoError(t, err)
	fr := http2.NewFramer(c, c)
	require.NoError(t, fr.WriteSettings())
	return c, fr
}

// isTimeout reports whether err is a read or write deadline passing.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// requireServerClosed fails unless the server closes c before its deadline.
func requireServerClosed(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	require.False(t, isTimeout(err), "the server must close the connection: %v", err)
}

// TestGRPCHandshakeTimeout: a connection that never completes the HTTP/2
// handshake (sends nothing, or only part of the client preface) is closed
// once the handshake bound is up.
func TestGRPCHandshakeTimeout(t *testing.T) {
	s := startLimited(t, Options{Seed: 1}, func(l *grpcLimits) { l.handshake = 200 * time.Millisecond })
	for _, tc := range []struct{ name, send string }{
		{"silent", ""},
		{"partial-preface", http2.ClientPreface[:10]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := grpcConn(t, s)
			_, err := io.WriteString(c, tc.send)
			require.NoError(t, err)
			_, err = io.Copy(io.Discard, c) // nil at EOF
			require.False(t, isTimeout(err), "the server must close the connection: %v", err)
		})
	}
}

// TestGRPCKeepalive: a connection that answers none of the server's pings
// is closed once the ping timeout is up (here 1 s of silence, grpc-go's
// shortest, then 400 ms); one that answers them stays open past that.
func TestGRPCKeepalive(t *testing.T) {
	s := startLimited(t, Options{Seed: 1}, func(l *grpcLimits) {
		l.pingAfter, l.pingTimeout = time.Second, 400*time.Millisecond
	})
	t.Run("dead", func(t *testing.T) {
		_, fr := h2Conn(t, s)
		pinged := false
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				requireServerClosed(t, err)
				break
			}
			if p, ok := f.(*http2.PingFrame); ok && !p.IsAck() {
				pinged = true
			}
		}
		assert.True(t, pinged, "the server pings before it gives up")
	})
	t.Run("alive", func(t *testing.T) {
		c, fr := h2Conn(t, s)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(2*time.Second)))
		pings := 0
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				require.True(t, isTimeout(err), "the connection must stay open: %v", err)
				break
			}
			switch f := f.(type) {
			case *http2.PingFrame:
				if !f.IsAck() {
					pings++
					require.NoError(t, fr.WritePing(true, f.Data))
				}
			case *http2.GoAwayFrame:
				t.Fatalf("GOAWAY %v %q", f.ErrCode, f.DebugData())
			}
		}
		assert.Positive(t, pings)
	})
}

// readPingAck reads frames until the ack of ping data, answering the
// server's own pings; a GOAWAY fails the test.
func readPingAck(t *testing.T, fr *http2.Framer, data [8]byte) {
	t.Helper()
	for {
		f, err := fr.ReadFrame()
		require.NoError(t, err)
		switch f := f.(type) {
		case *http2.PingFrame:
			if f.IsAck() && f.Data == data {
				return
			}
			if !f.IsAck() {
				require.NoError(t, fr.WritePing(true, f.Data))
			}
		case *http2.GoAwayFrame:
			t.Fatalf("GOAWAY %v %q", f.ErrCode, f.DebugData())
		}
	}
}

// TestGRPCPingPolicy: a client may ping every minPing, with no call in
// flight too, but one that floods the server with pings is sent GOAWAY
// ENHANCE_YOUR_CALM and disconnected. The bound in force admits grpc-go's
// shortest client keepalive (10 s) and the vertex adapter's (5 minutes).
func TestGRPCPingPolicy(t *testing.T) {
	assert.LessOrEqual(t, grpcMinPing, 10*time.Second)
	s := startLimited(t, Options{Seed: 1}, func(l *grpcLimits) { l.minPing = 50 * time.Millisecond })
	t.Run("spaced-idle", func(t *testing.T) {
		_, fr := h2Conn(t, s)
		for i := range 6 {
			if i > 0 {
				time.Sleep(100 * time.Millisecond)
			}
			data := [8]byte{1, byte(i)}
			require.NoError(t, fr.WritePing(false, data))
			readPingAck(t, fr, data)
		}
	})
	t.Run("flood", func(t *testing.T) {
		_, fr := h2Conn(t, s)
		for i := range 10 {
			require.NoError(t, fr.WritePing(false, [8]byte{2, byte(i)}))
		}
		for {
			f, err := fr.ReadFrame()
			require.NoError(t, err, "no GOAWAY")
			if g, ok := f.(*http2.GoAwayFrame); ok {
				assert.Equal(t, http2.ErrCodeEnhanceYourCalm, g.ErrCode)
				assert.Equal(t, "too_many_pings", string(g.DebugData()))
				break
			}
		}
	})
}

// TestGRPCSettings: the server announces its bounds on streams per
// connection and on request metadata; the first is no lower than the
// bench's bound on requests in flight, which may all share one connection.
func TestGRPCSettings(t *testing.T) {
	s := start(t, Options{Seed: 1})
	_, fr := h2Conn(t, s)
	f, err := fr.ReadFrame()
	require.NoError(t, err)
	sf, ok := f.(*http2.SettingsFrame)
	require.True(t, ok, "first frame %T", f)
	v, ok := sf.Value(http2.SettingMaxConcurrentStreams)
	assert.True(t, ok, "SETTINGS_MAX_CONCURRENT_STREAMS")
	assert.Equal(t, uint32(grpcMaxStreams), v)
	assert.GreaterOrEqual(t, grpcMaxStreams, bench.MaxWorkers)
	v, ok = sf.Value(http2.SettingMaxHeaderListSize)
	assert.True(t, ok, "SETTINGS_MAX_HEADER_LIST_SIZE")
	assert.Equal(t, uint32(maxHeaderBytes), v)
}

// TestGRPCHeaderLimit: request metadata over the limit is refused; metadata
// under it passes.
func TestGRPCHeaderLimit(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 1})
	ctx, cancel := context.WithTimeout(context.Background(), rawDeadline)
	defer cancel()
	pc := predictionClient(ctx, t, s)
	req := &aiplatformpb.GenerateContentRequest{
		Model:    "projects/demo/locations/us-central1/publishers/google/models/llama-3-8b",
		Contents: []*aiplatformpb.Content{{Role: "user", Parts: []*aiplatformpb.Part{{Data: &aiplatformpb.Part_Text{Text: "hi"}}}}},
	}
	_, err := pc.GenerateContent(metadata.AppendToOutgoingContext(ctx, "x-pad", strings.Repeat("x", 8<<10)), req)
	require.NoError(t, err)
	_, err = pc.GenerateContent(metadata.AppendToOutgoingContext(ctx, "x-pad", strings.Repeat("x", 2*maxHeaderBytes)), req)
	require.Error(t, err, "metadata over the limit")
}

// stallClient dials s's gRPC listener with fixed 64 KiB flow-control
// windows (no window growth), so that a stream the client does not read
// stops the server's sends once about 128 KiB are queued.
func stallClient(t *testing.T, s *Server) aiplatformpb.PredictionServiceClient {
	t.Helper()
	cc, err := grpc.NewClient(s.GRPCAddr(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(1<<16), grpc.WithInitialConnWindowSize(1<<16))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	return aiplatformpb.NewPredictionServiceClient(cc)
}

// TestGRPCWriteStall: a client that opens a long stream (65,536 tokens,
// megabytes) and never reads it has its call ended once one message has
// waited Options.WriteStallTimeout: the record says canceled, the slot is
// free, and the goroutines end (the package's goleak check).
func TestGRPCWriteStall(t *testing.T) {
	ep := bigEndpoint()
	ep.Providers = []Provider{Vertex}
	s := start(t, Options{Seed: 1, WriteStallTimeout: 200 * time.Millisecond, Endpoints: []Endpoint{ep}})
	pc := stallClient(t, s)
	chat := []byte(`{"model":"big","messages":[{"role":"user","content":"hi"}],"stream":true}`)
	for _, tc := range []struct {
		name string
		open func(ctx context.Context) error
	}{{"StreamGenerateContent", func(ctx context.Context) error {
		_, err := pc.StreamGenerateContent(ctx, &aiplatformpb.GenerateContentRequest{
			Model:    "projects/demo/locations/us-central1/publishers/google/models/big",
			Contents: []*aiplatformpb.Content{{Role: "user", Parts: []*aiplatformpb.Part{{Data: &aiplatformpb.Part_Text{Text: "hi"}}}}},
		})
		return err
	}}, {"StreamRawPredict", func(ctx context.Context) error {
		_, err := pc.StreamRawPredict(ctx, &aiplatformpb.StreamRawPredictRequest{
			Endpoint: "projects/demo/locations/us-central1/endpoints/big",
			HttpBody: &httpbody.HttpBody{ContentType: "application/json", Data: chat},
		})
		return err
	}}} {
		t.Run(tc.name, func(t *testing.T) {
			// The call's deadline is far past the record's wait: only the
			// stall bound can end it in time.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			require.NoError(t, tc.open(ctx)) // and read nothing
			rec := waitRecords(t, s, 1)[0]
			s.ResetRecords()
			assert.Equal(t, "canceled", rec.Outcome)
			assert.Equal(t, 504, rec.Status)
			assert.Greater(t, rec.TokensSent, 0)
			assert.Less(t, rec.TokensSent, rec.OutputTokens)
			active, waiting := s.endpoints["big"].load()
			assert.Zero(t, active+waiting, "the slot is free")
		})
	}
}

// TestGRPCSlowStreamKept: the stall bound does not cut a stream whose
// tokens come further apart than it, nor a stream read slowly.
func TestGRPCSlowStreamKept(t *testing.T) {
	const bound = 100 * time.Millisecond
	ep := Endpoint{Name: "slow", Providers: []Provider{Vertex}, Profile: Profile{
		Name: "slow", TTFTMs: Dist{Mean: 150}, TPOTMs: Dist{Mean: 150}, OutputTokens: Dist{Mean: 4},
	}}
	s := start(t, Options{Seed: 1, WriteStallTimeout: bound, Endpoints: []Endpoint{ep}})
	ctx, cancel := context.WithTimeout(context.Background(), rawDeadline)
	defer cancel()
	st, err := stallClient(t, s).StreamGenerateContent(ctx, &aiplatformpb.GenerateContentRequest{
		Model:    "projects/demo/locations/us-central1/publishers/google/models/slow",
		Contents: []*aiplatformpb.Content{{Role: "user", Parts: []*aiplatformpb.Part{{Data: &aiplatformpb.Part_Text{Text: "hi"}}}}},
	})
	require.NoError(t, err)
	n := 0
	for {
		_, err := st.Recv()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "status %v", status.Code(err))
		n++
		time.Sleep(2 * bound) // a slow reader, with nothing queued past its window
	}
	assert.Equal(t, 4, n)
	rec := waitRecords(t, s, 1)[0]
	assert.Equal(t, "ok", rec.Outcome)
	assert.Greater(t, rec.E2EMs, 4*float64(bound/time.Millisecond))
}
