package emulator

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawDeadline bounds every read and write of a test's raw connection: a
// server that never answers fails the test when it is up.
const rawDeadline = 5 * time.Second

// rawConn dials s's HTTP listener. Every read and write on it must end
// within rawDeadline; the connection is closed at the end of the test.
func rawConn(t *testing.T, s *Server) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(s.URL(), "http://"), rawDeadline)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(rawDeadline)))
	return c
}

// readResponse reads one response to a request of method from br, body included.
func readResponse(t *testing.T, br *bufio.Reader, method string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	require.NoError(t, err, "no response")
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp, b
}

// requireClosed fails unless the server closes c (EOF) before the deadline.
func requireClosed(t *testing.T, br *bufio.Reader) {
	t.Helper()
	_, err := br.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the server must close the connection")
}

// restRoute is one REST route of a provider, with a request body of its
// own form and a check of its payload-too-large answer.
type restRoute struct {
	name       string
	path       string
	streamPath string
	streamBody string
	check413   func(t *testing.T, resp *http.Response, body []byte)
}

// jsonField returns the string at path (dot-separated) in body.
func jsonField(t *testing.T, body []byte, path string) string {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(body, &v), string(body))
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		require.True(t, ok, "%s in %s", path, body)
		v = m[k]
	}
	s, _ := v.(string)
	return s
}

// restRoutes are one generation route of each REST protocol, for endpoint ep.
func restRoutes(ep string) []restRoute {
	chat := func(extra string) string {
		return `{` + extra + `"messages":[{"role":"user","content":"hi"}],"max_tokens":40,"stream":true}`
	}
	return []restRoute{{
		name:       "sagemaker",
		path:       "/endpoints/" + ep + "/invocations",
		streamPath: "/endpoints/" + ep + "/invocations-response-stream",
		streamBody: `{"inputs":"hi","parameters":{"max_new_tokens":40},"stream":true}`,
		check413: func(t *testing.T, resp *http.Response, body []byte) {
			assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
			assert.True(t, strings.HasPrefix(resp.Header.Get("X-Amzn-ErrorType"), "ValidationError:"), resp.Header.Get("X-Amzn-ErrorType"))
			assert.Contains(t, jsonField(t, body, "message"), "payload size exceeds")
		},
	}, {
		name:       "azureml",
		path:       "/azureml/" + ep + "/score",
		streamPath: "/azureml/" + ep + "/score",
		streamBody: chat(""),
		check413: func(t *testing.T, resp *http.Response, body []byte) {
			assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
			assert.Equal(t, "PayloadTooLarge", jsonField(t, body, "error.code"))
		},
	}, {
		name:       "vertex",
		path:       "/v1/projects/demo/locations/us-central1/endpoints/" + ep + ":rawPredict",
		streamPath: "/v1/projects/demo/locations/us-central1/endpoints/" + ep + ":streamRawPredict",
		streamBody: chat(""),
		check413: func(t *testing.T, resp *http.Response, body []byte) {
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
			assert.Equal(t, "INVALID_ARGUMENT", jsonField(t, body, "error.status"))
			assert.Contains(t, string(body), `"reason":"PAYLOAD_TOO_LARGE"`)
		},
	}, {
		name:       "pai-eas",
		path:       "/api/predict/" + ep,
		streamPath: "/api/predict/" + ep,
		streamBody: `{"prompt":"hi","max_new_tokens":40,"use_stream_chat":"True"}`,
		check413: func(t *testing.T, resp *http.Response, body []byte) {
			assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
			assert.Equal(t, "Request Entity Too Large", string(body))
		},
	}, {
		name:       "openai",
		path:       "/v1/chat/completions",
		streamPath: "/v1/chat/completions",
		streamBody: chat(`"model":"` + ep + `",`),
		check413: func(t *testing.T, resp *http.Response, body []byte) {
			assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
			assert.Equal(t, "BadRequestError", jsonField(t, body, "error.type"))
		},
	}}
}

// TestBodyReadTimeout: a client that sends a request's headers and then
// none, or only a trickle, of its body is answered 408 and disconnected
// once Options.ReadBodyTimeout is up, on every route; a request whose
// handler never reads its body is answered too.
func TestBodyReadTimeout(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 1, ReadBodyTimeout: 200 * time.Millisecond})
	for _, rt := range restRoutes("llama-3-8b") {
		t.Run(rt.name+"/silent", func(t *testing.T) {
			c := rawConn(t, s)
			_, err := fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: emu\r\nContent-Type: application/json\r\nContent-Length: 64\r\n\r\n{", rt.path)
			require.NoError(t, err)
			br := bufio.NewReader(c)
			resp, _ := readResponse(t, br, http.MethodPost)
			assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
			assert.True(t, resp.Close, "Connection: close")
			requireClosed(t, br)
		})
		t.Run(rt.name+"/trickle", func(t *testing.T) {
			c := rawConn(t, s)
			_, err := fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: emu\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", rt.path)
			require.NoError(t, err)
			// One byte every 10 ms, 400 at most, until the server gives up.
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				tick := time.NewTicker(10 * time.Millisecond)
				defer tick.Stop()
				for range 400 {
					if _, err := io.WriteString(c, "1\r\n \r\n"); err != nil {
						return
					}
					select {
					case <-stop:
						return
					case <-tick.C:
					}
				}
			})
			defer wg.Wait()
			defer close(stop)
			br := bufio.NewReader(c)
			resp, _ := readResponse(t, br, http.MethodPost)
			assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
			requireClosed(t, br)
		})
	}
	t.Run("unread-body", func(t *testing.T) {
		// GET /v1/models never reads the body it was offered.
		c := rawConn(t, s)
		_, err := io.WriteString(c, "GET /v1/models HTTP/1.1\r\nHost: emu\r\nContent-Length: 64\r\n\r\n")
		require.NoError(t, err)
		br := bufio.NewReader(c)
		resp, _ := readResponse(t, br, http.MethodGet)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		requireClosed(t, br)
	})
}

// TestOversizedBody: a body over the limit gets the provider's
// payload-too-large answer, whether its declared length says so (answered
// before any of it is read, without 100 Continue) or a chunked body runs
// over and then stalls (tried on the OpenAI route, 8 MiB, and on Vertex,
// which has its own limit); the connection is closed after the answer.
func TestOversizedBody(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 1})
	for _, rt := range restRoutes("llama-3-8b") {
		t.Run(rt.name+"/declared", func(t *testing.T) {
			c := rawConn(t, s)
			_, err := fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: emu\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", rt.path, 1<<30)
			require.NoError(t, err)
			br := bufio.NewReader(c)
			resp, body := readResponse(t, br, http.MethodPost)
			rt.check413(t, resp, body)
			requireClosed(t, br)
		})
		if rt.name != "openai" && rt.name != "vertex" {
			continue
		}
		t.Run(rt.name+"/chunked", func(t *testing.T) {
			c := rawConn(t, s)
			_, err := fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: emu\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", rt.path)
			require.NoError(t, err)
			// Just over maxBody in 1 MiB chunks, then nothing: no last chunk.
			var wg sync.WaitGroup
			wg.Go(func() {
				chunk := fmt.Appendf(nil, "%x\r\n%s\r\n", 1<<20, strings.Repeat("x", 1<<20))
				for range maxBody/(1<<20) + 1 {
					if _, err := c.Write(chunk); err != nil {
						return
					}
				}
			})
			defer wg.Wait()
			br := bufio.NewReader(c)
			resp, body := readResponse(t, br, http.MethodPost)
			rt.check413(t, resp, body)
			requireClosed(t, br)
		})
	}
}

// TestHeaderLimit: request headers over the emulator's limit are refused
// with 431 before any handler runs.
func TestHeaderLimit(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 1})
	c := rawConn(t, s)
	_, err := fmt.Fprintf(c, "GET /v1/models HTTP/1.1\r\nHost: emu\r\nX-Big: %s\r\n\r\n", strings.Repeat("x", 2*maxHeaderBytes))
	require.NoError(t, err)
	resp, _ := readResponse(t, bufio.NewReader(c), http.MethodGet)
	assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
}

// bigEndpoint answers 65,536 tokens as fast as they can be written.
func bigEndpoint() Endpoint {
	return Endpoint{Name: "big", Providers: []Provider{OpenAI}, Profile: Profile{
		Name: "big", TTFTMs: Dist{Mean: 1}, OutputTokens: Dist{Mean: maxOutputTokens}, Slots: 1, MaxQueue: -1,
	}}
}

// TestWriteStall: a client that stops reading a long stream (several
// megabytes, more than the socket buffers hold) has its request ended once
// one write has waited Options.WriteStallTimeout, its slot freed and its
// record kept as canceled.
func TestWriteStall(t *testing.T) {
	s := start(t, Options{Seed: 1, WriteStallTimeout: 200 * time.Millisecond, Endpoints: []Endpoint{bigEndpoint()}})
	c := rawConn(t, s)
	require.NoError(t, c.(*net.TCPConn).SetReadBuffer(4096))
	body := `{"model":"big","messages":[{"role":"user","content":"hi"}],"stream":true}`
	_, err := fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: emu\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	require.NoError(t, err)
	// Read nothing more.
	recs := waitRecords(t, s, 1)
	assert.Equal(t, "canceled", recs[0].Outcome)
	assert.Less(t, recs[0].TokensSent, recs[0].OutputTokens)
	active, waiting := s.endpoints["big"].load()
	assert.Zero(t, active+waiting, "the slot is free")
}

// TestTimeoutsKeepStreams: neither bound cuts a stream that lasts longer
// than both, whose tokens come further apart than WriteStallTimeout, nor
// the next request on the same connection after an idle pause as long.
func TestTimeoutsKeepStreams(t *testing.T) {
	const bound = 100 * time.Millisecond
	ep := Endpoint{Name: "slow", Providers: []Provider{OpenAI}, Profile: Profile{
		Name: "slow", TTFTMs: Dist{Mean: 150}, TPOTMs: Dist{Mean: 150}, OutputTokens: Dist{Mean: 4},
	}}
	s := start(t, Options{Seed: 1, ReadBodyTimeout: bound, WriteStallTimeout: bound, Endpoints: []Endpoint{ep}})
	c := rawConn(t, s)
	br := bufio.NewReader(c)
	body := `{"model":"slow","messages":[{"role":"user","content":"hi"}],"stream":true}`
	_, err := fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: emu\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	require.NoError(t, err)
	resp, b := readResponse(t, br, http.MethodPost)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.False(t, resp.Close)
	assert.Contains(t, string(b), "data: [DONE]")
	rec := waitRecords(t, s, 1)[0]
	assert.Equal(t, "ok", rec.Outcome)
	assert.Greater(t, rec.E2EMs, 4*float64(bound/time.Millisecond))

	// Idle past both bounds, then the next request on the connection.
	time.Sleep(2 * bound)
	_, err = io.WriteString(c, "GET /v1/models HTTP/1.1\r\nHost: emu\r\n\r\n")
	require.NoError(t, err)
	resp, b = readResponse(t, br, http.MethodGet)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(b), `"slow"`)
}

// TestClientGoneMidStream: a client that goes away after the first bytes
// of a stream ends its request at once on every protocol, HTTP and gRPC,
// not when its next token (10 s on) is due: the record says canceled, the
// slot is free, and the goroutines end (the package's goleak check).
func TestClientGoneMidStream(t *testing.T) {
	ep := Endpoint{Name: "long", Profile: Profile{
		Name: "long", TTFTMs: Dist{Mean: 1}, TPOTMs: Dist{Mean: 10000}, OutputTokens: Dist{Mean: 40},
	}}
	s := start(t, Options{Seed: 1, Endpoints: []Endpoint{ep}})
	// gone waits for the request's record and checks it and the endpoint.
	gone := func(t *testing.T) {
		t.Helper()
		rec := waitRecords(t, s, 1)[0]
		s.ResetRecords()
		assert.Equal(t, "canceled", rec.Outcome)
		assert.Less(t, rec.TokensSent, rec.OutputTokens)
		active, waiting := s.endpoints["long"].load()
		assert.Zero(t, active+waiting, "the slot is free")
	}
	for _, rt := range restRoutes("long") {
		t.Run(rt.name, func(t *testing.T) {
			c := rawConn(t, s)
			_, err := fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: emu\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", rt.streamPath, len(rt.streamBody), rt.streamBody)
			require.NoError(t, err)
			resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodPost})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			_, err = resp.Body.Read(make([]byte, 1))
			require.NoError(t, err, "the first token")
			require.NoError(t, c.Close())
			gone(t)
		})
	}
	t.Run("vertex-grpc", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), rawDeadline)
		defer cancel()
		pc := predictionClient(ctx, t, s)
		sctx, scancel := context.WithCancel(ctx)
		st, err := pc.StreamGenerateContent(sctx, &aiplatformpb.GenerateContentRequest{
			Model:    "projects/demo/locations/us-central1/publishers/google/models/long",
			Contents: []*aiplatformpb.Content{{Role: "user", Parts: []*aiplatformpb.Part{{Data: &aiplatformpb.Part_Text{Text: "hi"}}}}},
		})
		require.NoError(t, err)
		_, err = st.Recv()
		require.NoError(t, err, "the first chunk")
		scancel()
		_, err = st.Recv()
		require.Error(t, err)
		gone(t)
	})
}

// TestSageMakerPayloadLimit: SageMaker takes bodies of up to 6 MiB
// (6291456 bytes, as its 413 message says) and refuses one byte more.
func TestSageMakerPayloadLimit(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 1})
	for _, tc := range []struct {
		size int
		want int
	}{{6 << 20, http.StatusOK}, {6<<20 + 1, http.StatusRequestEntityTooLarge}} {
		body := `{"inputs":"` + strings.Repeat("x", tc.size-len(`{"inputs":"`)-len(`"}`)) + `"}`
		require.Len(t, body, tc.size)
		resp, err := http.Post(s.URL()+"/endpoints/llama-3-8b/invocations", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, tc.want, resp.StatusCode, "%d bytes: %s", tc.size, b)
	}
}
