package faults

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

const html502 = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"

// respond answers status with contentType and body.
func respond(status int, contentType, body string) answer {
	return answer{raw: func(w http.ResponseWriter, _ *http.Request) {
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}}
}

// TestMalformedResponses: bodies that are not what the protocol promises —
// a load balancer's HTML 502, cut JSON, a 200 carrying an error, the wrong
// content type, a stream that is not a stream — end in a normalized
// *errcodes.Error (never a panic, never a success), for Invoke and for
// Stream; the status still decides retryability where there is one.
func TestMalformedResponses(t *testing.T) {
	cases := []struct {
		name  string
		a     answer
		codes []errcodes.Code // acceptable codes (the first for a status)
		// stream limits the case to one mode (0 both, 1 invoke, 2 stream).
		only int
	}{
		{"html-502", respond(502, "text/html", html502), []errcodes.Code{errcodes.Unavailable}, 0},
		{"html-502-as-json", respond(502, "application/json", html502), []errcodes.Code{errcodes.Unavailable}, 0},
		{"cut-json-500", respond(500, "application/json", `{"error":{"message":"bo`), []errcodes.Code{errcodes.Internal}, 0},
		{"cut-json-400", respond(400, "application/json", `{"message":`), []errcodes.Code{errcodes.InvalidParam}, 0},
		{"binary-503", respond(503, "application/octet-stream", "\x00\xff\xfe\x01garbage"), []errcodes.Code{errcodes.Unavailable, errcodes.ModelNotReady}, 0},
		{"empty-500", respond(500, "", ""), []errcodes.Code{errcodes.Internal}, 0},
		{"200-error-body", respond(200, "application/json", `{"error":{"message":"model crashed","type":"server_error","code":500}}`),
			[]errcodes.Code{errcodes.Internal, errcodes.ModelError, errcodes.Unknown, errcodes.StreamInterrupted}, 0},
		// A 2xx body that does not parse is ERR_MODEL_ERROR on every
		// provider (the cross-provider contract), streamed or not.
		{"200-cut-json", respond(200, "application/json", `{"choices":[{"message":{"content":"o`),
			[]errcodes.Code{errcodes.ModelError}, 0},
		{"200-html", respond(200, "text/html", "<html><body>Welcome to nginx!</body></html>"),
			[]errcodes.Code{errcodes.ModelError}, 0},
		// As SSE it is well formed, empty and unterminated (truncated); as
		// an eventstream (SageMaker) it does not parse.
		{"stream-not-sse", respond(200, "text/event-stream", "hello world, no events here\n"),
			[]errcodes.Code{errcodes.StreamInterrupted, errcodes.ModelError}, 2},
		{"stream-garbage-events", respond(200, "text/event-stream", "data: {not json\n\ndata: [1,2\n\n"),
			[]errcodes.Code{errcodes.ModelError}, 2},
	}
	for _, b := range httpBackends() {
		for _, c := range cases {
			for _, stream := range modes() {
				if (c.only == 1 && stream) || (c.only == 2 && !stream) {
					continue
				}
				t.Run(b.name+"/"+c.name+"/"+mode(stream), func(t *testing.T) {
					r := newRig(t, b, []answer{c.a}, withClient(func(o *cloudreq.Options) { o.Retry.MaxAttempts = 1 }))
					var err error
					if stream {
						_, _, err = r.stream(context.Background())
					} else {
						// Generate parses the body (an invoke passes any bytes through).
						req := b.request(true)
						_, err = r.client.Invoke(context.Background(), req)
					}
					require.Error(t, err, "never a success")
					var e *errcodes.Error
					require.ErrorAs(t, err, &e)
					assert.Contains(t, c.codes, e.Code, "%v", err)
					assert.NotEmpty(t, e.Provider)
					assert.Less(t, len(e.Error()), 2048, "a bounded message")
					assert.NotContains(t, e.Error(), "<html", "an HTML page is not pasted into the message")
				})
			}
		}
	}
}

// TestInvokePassesBytesThrough: a raw invoke returns whatever 2xx bytes
// the model wrote (malformed JSON included): only generate parses.
func TestInvokePassesBytesThrough(t *testing.T) {
	for _, b := range httpBackends() {
		t.Run(b.name, func(t *testing.T) {
			r := newRig(t, b, []answer{respond(200, "application/json", `{"not":"closed`)})
			resp, err := r.invoke(context.Background())
			require.NoError(t, err)
			assert.Equal(t, `{"not":"closed`, string(resp.Data))
		})
	}
}

// TestVertexNonGRPCAnswers: a proxy in front of Vertex's gRPC endpoint
// that answers in plain HTTP/2 — an HTML 502, a 200 that is not gRPC —
// yields a normalized error, the 502 a retryable ERR_UNAVAILABLE.
func TestVertexNonGRPCAnswers(t *testing.T) {
	cases := []struct {
		name      string
		status    int
		ct, body  string
		code      errcodes.Code
		retryable bool
	}{
		{"html-502", 502, "text/html", html502, errcodes.Unavailable, true},
		{"html-200", 200, "text/html", "<html>hi</html>", errcodes.Unknown, false},
		// An answer whose bytes do not unmarshal: a 2xx body that does not parse.
		{"grpc-garbage", 200, "application/grpc", "\x00\x00\x00\x00\x05hello", errcodes.ModelError, false},
	}
	for _, c := range cases {
		for _, stream := range modes() {
			t.Run(c.name+"/"+mode(stream), func(t *testing.T) {
				noLeaks(t)
				srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					w.Header().Set("Content-Type", c.ct)
					w.WriteHeader(c.status)
					_, _ = io.WriteString(w, c.body)
				}))
				srv.Config.Protocols = new(http.Protocols)
				srv.Config.Protocols.SetUnencryptedHTTP2(true)
				srv.Start()
				t.Cleanup(srv.Close)
				ad := newVertexAt(t, srv.Listener.Addr().String())
				c1, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}}, func(o *cloudreq.Options) { o.Retry.MaxAttempts = 1 })
				require.NoError(t, err)
				b := vertexBackend()
				if stream {
					var s *cloudreq.Stream
					s, err = c1.Stream(context.Background(), b.request(true))
					if err == nil {
						for s.Next() {
						}
						err = s.Err()
						_ = s.Close()
					}
				} else {
					_, err = c1.Invoke(context.Background(), b.request(false))
				}
				var e *errcodes.Error
				require.ErrorAs(t, err, &e)
				if c.code != errcodes.Unknown {
					assert.Equal(t, c.code, e.Code, "%v", err)
					assert.Equal(t, c.retryable, e.Retryable, "%v", err)
				}
				assert.Equal(t, cloudreq.ProviderGCP, e.Provider)
				// grpc-go quotes the start of a non-gRPC body in its status
				// message; it stays short.
				assert.Less(t, len(e.Error()), 2048, "a bounded message")
			})
		}
	}
}
