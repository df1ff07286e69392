package emulator

import (
	"bytes"
	"context"
	"encoding/binary"
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
	"golang.org/x/net/http2/hpack"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

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

// TestGRPCHeaderLimit: the server refuses a call whose metadata is over
// its 64 KiB bound (HPACK-decoded size, 32 bytes per field included) with
// RST_STREAM FRAME_SIZE_ERROR, before the call reaches the emulator (no
// record), and the connection stays open: a call on it with metadata just
// under the bound is answered. One name or value longer than the bound
// closes the connection instead. The requests go as raw HTTP/2 frames,
// since a grpc-go client refuses to send metadata over the bound the server
// announces, and grpc-go has no option to lift that check. An ordinary
// client's call with 8 KiB of metadata passes too.
func TestGRPCHeaderLimit(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 1})
	req := &aiplatformpb.GenerateContentRequest{
		Model:    "projects/demo/locations/us-central1/publishers/google/models/llama-3-8b",
		Contents: []*aiplatformpb.Content{{Role: "user", Parts: []*aiplatformpb.Part{{Data: &aiplatformpb.Part_Text{Text: "hi"}}}}},
	}
	body, err := proto.Marshal(req)
	require.NoError(t, err)

	_, fr := h2Conn(t, s)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	// The pad alone is the bound: the list is over it, no value is.
	require.NoError(t, h2Call(fr, s.GRPCAddr(), 1, strings.Repeat("x", maxHeaderBytes), body))
	f := h2Until(t, fr, 1, func(f http2.Frame) bool {
		_, rst := f.(*http2.RSTStreamFrame)
		_, answer := f.(*http2.MetaHeadersFrame)
		return rst || answer
	})
	require.IsType(t, &http2.RSTStreamFrame{}, f, "metadata over the bound")
	assert.Equal(t, http2.ErrCodeFrameSize, f.(*http2.RSTStreamFrame).ErrCode)

	// The pad, the other fields and 32 bytes per field stay under the bound.
	require.NoError(t, h2Call(fr, s.GRPCAddr(), 3, strings.Repeat("x", maxHeaderBytes-1024), body))
	var fields []hpack.HeaderField
	h2Until(t, fr, 3, func(f http2.Frame) bool {
		if h, ok := f.(*http2.MetaHeadersFrame); ok {
			fields = append(fields, h.Fields...)
		}
		return f.Header().Flags.Has(http2.FlagHeadersEndStream)
	})
	got := map[string]string{}
	for _, hf := range fields {
		got[hf.Name] = hf.Value
	}
	assert.Equal(t, "200", got[":status"])
	assert.Equal(t, "0", got["grpc-status"], "metadata under the bound: %q", got["grpc-message"])
	recs := waitRecords(t, s, 1)
	assert.Equal(t, "ok", recs[0].Outcome, "only the call under the bound reached the emulator")

	t.Run("value-over-bound", func(t *testing.T) {
		_, fr := h2Conn(t, s)
		// The server may close the connection before the whole header
		// block is written.
		if err := h2Call(fr, s.GRPCAddr(), 1, strings.Repeat("x", maxHeaderBytes+1), nil); err != nil {
			requireServerClosed(t, err)
			return
		}
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				requireServerClosed(t, err)
				break
			}
			if f.Header().StreamID == 1 {
				t.Fatalf("answered on the stream: %v", f)
			}
		}
	})
	assert.Len(t, s.Records(), 1, "no call over the bound reached the emulator")

	ctx, cancel := context.WithTimeout(context.Background(), rawDeadline)
	defer cancel()
	pc := predictionClient(ctx, t, s)
	_, err = pc.GenerateContent(metadata.AppendToOutgoingContext(ctx, "x-pad", strings.Repeat("x", 8<<10)), req)
	require.NoError(t, err)
}

// h2Call opens stream id with a GenerateContent call whose metadata holds
// x-pad: pad, in a HEADERS frame and as many CONTINUATION frames as the
// header block needs; with msg not nil it then sends msg as the call's
// one request message and ends the stream.
func h2Call(fr *http2.Framer, authority string, id uint32, pad string, msg []byte) error {
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, kv := range [][2]string{
		{":method", "POST"}, {":scheme", "http"}, {":authority", authority},
		{":path", "/google.cloud.aiplatform.v1.PredictionService/GenerateContent"},
		{"content-type", "application/grpc"}, {"te", "trailers"}, {"x-pad", pad},
	} {
		if err := enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]}); err != nil {
			return err
		}
	}
	const maxFrame = 16 << 10 // SETTINGS_MAX_FRAME_SIZE's initial value
	b := block.Bytes()
	frag := b[:min(len(b), maxFrame)]
	b = b[len(frag):]
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: frag, EndHeaders: len(b) == 0}); err != nil {
		return err
	}
	for len(b) > 0 {
		frag = b[:min(len(b), maxFrame)]
		b = b[len(frag):]
		if err := fr.WriteContinuation(id, len(b) == 0, frag); err != nil {
			return err
		}
	}
	if msg == nil {
		return nil
	}
	data := binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg))) // not compressed, length
	return fr.WriteData(id, true, append(data, msg...))
}

// h2Until reads frames, acknowledging the server's SETTINGS and PINGs,
// until a frame of stream id for which last is true, and returns it. A
// GOAWAY, or a RST_STREAM of stream id for which last is false, fails the
// test.
func h2Until(t *testing.T, fr *http2.Framer, id uint32, last func(http2.Frame) bool) http2.Frame {
	t.Helper()
	for {
		f, err := fr.ReadFrame()
		require.NoError(t, err)
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				require.NoError(t, fr.WriteSettingsAck())
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				require.NoError(t, fr.WritePing(true, f.Data))
			}
		case *http2.GoAwayFrame:
			t.Fatalf("GOAWAY %v %q", f.ErrCode, f.DebugData())
		}
		if f.Header().StreamID != id {
			continue
		}
		if last(f) {
			return f
		}
		if r, ok := f.(*http2.RSTStreamFrame); ok {
			t.Fatalf("RST_STREAM %v on stream %d", r.ErrCode, id)
		}
	}
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

// TestGRPCStreamUnbounded: with no stall bound (a negative
// Options.WriteStallTimeout) both streaming methods send every token and
// their records say so.
func TestGRPCStreamUnbounded(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 1, WriteStallTimeout: -1})
	ctx, cancel := context.WithTimeout(context.Background(), rawDeadline)
	defer cancel()
	pc := stallClient(t, s)
	recvAll := func(st grpc.ClientStream, m any) int {
		n := 0
		for {
			err := st.RecvMsg(m)
			if err == io.EOF {
				return n
			}
			require.NoError(t, err)
			n++
		}
	}
	gc, err := pc.StreamGenerateContent(ctx, &aiplatformpb.GenerateContentRequest{
		Model:    "projects/demo/locations/us-central1/publishers/google/models/llama-3-8b",
		Contents: []*aiplatformpb.Content{{Role: "user", Parts: []*aiplatformpb.Part{{Data: &aiplatformpb.Part_Text{Text: "hi"}}}}},
	})
	require.NoError(t, err)
	msgs := map[string]int{"StreamGenerateContent": recvAll(gc, &aiplatformpb.GenerateContentResponse{})}
	raw, err := pc.StreamRawPredict(ctx, &aiplatformpb.StreamRawPredictRequest{
		Endpoint: "projects/demo/locations/us-central1/endpoints/llama-3-8b",
		HttpBody: &httpbody.HttpBody{ContentType: "application/json", Data: []byte(`{"messages":[{"role":"user","content":"hi"}],"stream":true}`)},
	})
	require.NoError(t, err)
	msgs["StreamRawPredict"] = recvAll(raw, &httpbody.HttpBody{}) - 1 // and the closing event
	for _, rec := range waitRecords(t, s, 2) {
		assert.Equal(t, "ok", rec.Outcome, rec.Route)
		assert.Equal(t, 200, rec.Status, rec.Route)
		assert.Equal(t, rec.OutputTokens, rec.TokensSent, rec.Route)
		assert.Equal(t, rec.OutputTokens, msgs[rec.Route], rec.Route)
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

// BenchmarkGRPCStreamMessage is the cost of one streamed message of
// StreamGenerateContent, from the server's token loop to the client's Recv,
// over a loopback gRPC connection: tokens come with no gap between them,
// so the figure is the send path's own. guard=on bounds every message by
// Options.WriteStallTimeout; guard=off runs without the bound.
func BenchmarkGRPCStreamMessage(b *testing.B) {
	for _, stall := range []time.Duration{-1, time.Minute} {
		name := "guard=on"
		if stall < 0 {
			name = "guard=off"
		}
		b.Run(name, func(b *testing.B) {
			ep := Endpoint{Name: "burst", Providers: []Provider{Vertex}, Profile: Profile{
				Name: "burst", TTFTMs: Dist{Mean: 1}, OutputTokens: Dist{Mean: maxOutputTokens}, MaxQueue: -1,
			}}
			s := start(b, Options{TimeScale: 0.001, Seed: 1, WriteStallTimeout: stall, Endpoints: []Endpoint{ep}})
			cc, err := grpc.NewClient(s.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				b.Fatal(err)
			}
			defer cc.Close()
			pc := aiplatformpb.NewPredictionServiceClient(cc)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			stream := func(n int) {
				limit := int32(n)
				st, err := pc.StreamGenerateContent(ctx, &aiplatformpb.GenerateContentRequest{
					Model:            "projects/demo/locations/us-central1/publishers/google/models/burst",
					Contents:         []*aiplatformpb.Content{{Role: "user", Parts: []*aiplatformpb.Part{{Data: &aiplatformpb.Part_Text{Text: "hi"}}}}},
					GenerationConfig: &aiplatformpb.GenerationConfig{MaxOutputTokens: &limit},
				})
				if err != nil {
					b.Fatal(err)
				}
				got := 0
				for {
					_, err := st.Recv()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					got++
				}
				if got != n {
					b.Fatalf("got %d messages, want %d", got, n)
				}
			}
			stream(16) // the connection is up
			b.ReportAllocs()
			b.ResetTimer()
			for left := b.N; left > 0; left -= maxOutputTokens {
				stream(min(left, maxOutputTokens))
			}
		})
	}
}

// nopStream is a server stream whose SendMsg takes every message at once.
type nopStream struct{ grpc.ServerStream }

func (nopStream) Context() context.Context { return context.Background() }
func (nopStream) SendMsg(any) error        { return nil }

// BenchmarkStallSenderSend is the stall guard's own cost per message: the
// stream takes each message at once, the stream handler's goroutine waits
// in serveStream as it does for a live call.
func BenchmarkStallSenderSend(b *testing.B) {
	for _, stall := range []time.Duration{-1, time.Minute} {
		name := "guard=on"
		if stall < 0 {
			name = "guard=off"
		}
		b.Run(name, func(b *testing.B) {
			s, err := New(Options{Seed: 1, WriteStallTimeout: stall})
			if err != nil {
				b.Fatal(err)
			}
			v := &vertexGRPC{s: s}
			msg := &httpbody.HttpBody{}
			b.ReportAllocs()
			err = v.serveStream(nopStream{}, func(_ context.Context, out *stallSender) error {
				for b.Loop() {
					if err := out.send(msg); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}
