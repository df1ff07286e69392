package faults

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// TestTruncatedStreamsAreErrors: a stream that ends without its end
// marker ([DONE] or a finish reason), or with the provider's in-stream
// error event, is an error — never a success — for every provider; the
// chunks before it stay read. With no chunk delivered the stream is
// retried; the last attempt's error is the call's.
func TestTruncatedStreamsAreErrors(t *testing.T) {
	cases := []struct {
		name   string
		a      answer
		texts  int
		code   errcodes.Code
		anyErr bool // the code is the provider's class of the in-stream error
	}{
		{"no-end-marker", answer{chunks: 2, end: endTruncated}, 2, errcodes.StreamInterrupted, false},
		{"no-end-marker-no-chunk", answer{chunks: 0, end: endTruncated}, 0, errcodes.StreamInterrupted, false},
		{"in-stream-error", answer{chunks: 2, end: endError}, 2, "", true},
		{"in-stream-error-first", answer{chunks: 0, end: endError}, 0, "", true},
	}
	for _, b := range backends() {
		for _, c := range cases {
			t.Run(b.name+"/"+c.name, func(t *testing.T) {
				r := newRig(t, b, []answer{c.a})
				texts, resp, err := r.stream(context.Background())
				require.Error(t, err, "a truncated stream is never a success")
				var e *errcodes.Error
				require.ErrorAs(t, err, &e)
				if !c.anyErr {
					assert.Equal(t, c.code, e.Code, "%v", err)
				}
				assert.Len(t, texts, c.texts)
				if resp != nil {
					assert.Empty(t, resp.FinishReason)
				}
				if c.texts > 0 {
					assert.Equal(t, 1, r.rec.count(), "not retried after a chunk was read")
				}
			})
		}
	}
}

// frame encodes a PayloadPart carrying payload.
func frame(t testing.TB, payload string) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, payloadPart(&b, []byte(payload)))
	return b.Bytes()
}

// prelude is an eventstream prelude claiming total bytes, with a valid CRC.
func prelude(total, headers uint32) []byte {
	b := make([]byte, 12)
	binary.BigEndian.PutUint32(b[0:], total)
	binary.BigEndian.PutUint32(b[4:], headers)
	binary.BigEndian.PutUint32(b[8:], crc32.ChecksumIEEE(b[:8]))
	return b
}

// rawEventStream answers with the SageMaker stream head, then body.
func rawEventStream(body []byte) answer {
	return answer{raw: func(w http.ResponseWriter, _ *http.Request) {
		sagemakerWire{}.streamHead(w)
		_, _ = w.Write(body)
	}}
}

// TestSageMakerCorruptEventStream: eventstream framing faults — EOF in
// the middle of a frame, a bad prelude or message CRC, a frame whose
// prelude claims 4 GiB — fail the stream with ERR_STREAM_INTERRUPTED,
// for generate streams and for raw invoke streams (which have no end
// marker of their own), and keep what was read before.
func TestSageMakerCorruptEventStream(t *testing.T) {
	good := frame(t, sseChunk(0))
	next := frame(t, sseChunk(1))
	badMsgCRC := bytes.Clone(next)
	badMsgCRC[len(badMsgCRC)-1] ^= 0xff
	badPreludeCRC := bytes.Clone(next)
	badPreludeCRC[9] ^= 0xff
	cases := []struct {
		name string
		body []byte
	}{
		{"eof-mid-frame", append(bytes.Clone(good), next[:len(next)/2]...)},
		{"eof-mid-prelude", append(bytes.Clone(good), next[:6]...)},
		{"bad-message-crc", append(bytes.Clone(good), badMsgCRC...)},
		{"bad-prelude-crc", append(bytes.Clone(good), badPreludeCRC...)},
		{"4GiB-length-prefix", append(bytes.Clone(good), append(prelude(0xFFFFFFFF, 0), []byte("tiny")...)...)},
		{"headers-longer-than-frame", append(bytes.Clone(good), append(prelude(32, 0xFFFFF000), make([]byte, 20)...)...)},
	}
	b := sagemakerBackend()
	for _, c := range cases {
		for _, generate := range []bool{true, false} {
			name := c.name + "/generate"
			if !generate {
				name = c.name + "/invoke-stream"
			}
			t.Run(name, func(t *testing.T) {
				r := newRig(t, b, []answer{rawEventStream(c.body)})
				req := b.request(true)
				if !generate {
					req = b.request(false)
				}
				s, err := r.client.Stream(context.Background(), req)
				require.NoError(t, err)
				defer s.Close()
				n := 0
				for s.Next() {
					if s.Chunk().Content {
						n++
					}
				}
				require.Error(t, s.Err(), "a corrupt stream is never a success")
				assert.Equal(t, errcodes.StreamInterrupted, errcodes.Of(s.Err()), "%v", s.Err())
				assert.Equal(t, 1, n, "the good frame before the fault is kept")
				assert.Equal(t, 1, r.rec.count())
			})
		}
	}
}

// TestSageMakerInvokeStreamCleanEnd: a raw invoke stream whose frames are
// all whole ends cleanly at EOF (it has no end marker of its own).
func TestSageMakerInvokeStreamCleanEnd(t *testing.T) {
	b := sagemakerBackend()
	body := append(frame(t, "part-1"), frame(t, "part-2")...)
	r := newRig(t, b, []answer{rawEventStream(body)})
	s, err := r.client.Stream(context.Background(), b.request(false))
	require.NoError(t, err)
	defer s.Close()
	var parts []string
	for s.Next() {
		parts = append(parts, string(s.Chunk().Data))
	}
	require.NoError(t, s.Err())
	assert.Equal(t, []string{"part-1", "part-2"}, parts)
	assert.Equal(t, cloudreq.Usage{OutputTokens: 2, Source: "counted"}, s.Response().Usage)
}
