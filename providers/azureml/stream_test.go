package azureml

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/providers/providertest"
)

const (
	sseRole  = `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}` + "\n\n"
	sseHello = `data: {"choices":[{"index":0,"delta":{"content":"Hello"}}]}` + "\n\n"
	sseEnd   = `data: {"choices":[{"index":0,"delta":{"content":"!"},"finish_reason":"stop"}]}` + "\n\n"
	sseUsage = `data: {"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":2}}` + "\n\n"
	sseDone  = "data: [DONE]\n\n"
)

func TestStreamChat(t *testing.T) {
	var s seen
	a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		recorder(&s, 0, "", "")(discard{}, r)
		writeFlushed(w, "text/event-stream", sseRole, sseHello, sseEnd, sseUsage, sseDone)
	}, func(o *Options) { o.API = APIChat })
	out := stream(t, a, generateReq())
	require.NoError(t, out.Err)
	assert.Equal(t, "Hello!", out.Text())
	assert.Equal(t, 2, out.Content())
	assert.Equal(t, cloudreq.Usage{InputTokens: 2, OutputTokens: 2, Source: "server"}, out.Resp.Usage)
	assert.Equal(t, "text/event-stream", s.accept)
	assert.Contains(t, string(s.body), `"stream_options":{"include_usage":true}`)
}

// discard is a ResponseWriter that writes nowhere.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}

func TestStreamEndings(t *testing.T) {
	tests := []struct {
		name  string
		ct    string
		parts []string
		text  string
		want  errcodes.Code
	}{
		{"truncated", "text/event-stream", []string{sseRole, sseHello}, "Hello", errcodes.StreamInterrupted},
		{"mid-stream error", "text/event-stream", []string{sseHello, `data: {"error":{"code":"content_filter","message":"filtered"}}` + "\n\n"}, "Hello", errcodes.StreamInterrupted},
		{"finish without done", "text/event-stream", []string{sseHello, sseEnd}, "Hello!", ""},
		{"whole json on /score", "application/json", []string{`{"output":"all at once"}`}, "all at once", ""},
		{"plain bytes", "text/plain", []string{"a", "b"}, "ab", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := server(t, func(w http.ResponseWriter, r *http.Request) { writeFlushed(w, tt.ct, tt.parts...) })
			out := stream(t, a, generateReq())
			assert.Equal(t, tt.text, out.Text())
			if tt.want == "" {
				assert.NoError(t, out.Err)
				return
			}
			assert.Equal(t, tt.want, errcodes.Of(out.Err), "%v", out.Err)
			var e *errcodes.Error
			require.ErrorAs(t, out.Err, &e)
			assert.Equal(t, "azure", e.Provider)
		})
	}
}

func TestStreamCancel(t *testing.T) {
	h, released := providertest.HoldAfter("text/event-stream", sseHello)
	a, _ := server(t, h)
	providertest.CancelMidStream(t, client(t, a), generateReq(), released)
}

func TestStreamOpenError(t *testing.T) {
	a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(429)
		_, _ = w.Write([]byte(`{"error":{"code":"TooManyRequests","message":"slow"}}`))
	})
	out := stream(t, a, generateReq())
	assert.Equal(t, errcodes.Throttled, errcodes.Of(out.Err))
}

// TestStreamInvokeDecoding: an invoke of /score passes each SSE event's
// data through as text, whatever its shape; the chat route decodes OpenAI
// chunks for invoke as for generate.
func TestStreamInvokeDecoding(t *testing.T) {
	tests := []struct {
		name    string
		opt     func(*Options)
		path    string
		parts   []string
		text    string
		content int
	}{
		{"score, plain events", nil, "", []string{"data: hello\n\n", "data: world\n\n"}, "helloworld", 2},
		{"score, json events without an end", nil, "", []string{`data: {"token":"a"}` + "\n\n"}, `{"token":"a"}`, 1},
		{"chat route", func(o *Options) { o.API = APIChat }, "", []string{sseRole, sseHello, sseEnd, sseUsage, sseDone}, "Hello!", 2},
		{"path to chat completions", nil, "/v1/chat/completions?api-version=1", []string{sseHello, sseEnd, sseDone}, "Hello!", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []func(*Options)
			if tt.opt != nil {
				opts = append(opts, tt.opt)
			}
			a, _ := server(t, func(w http.ResponseWriter, r *http.Request) { writeFlushed(w, "text/event-stream", tt.parts...) }, opts...)
			r := invokeReq(`{"anything":1}`)
			r.Target.Path = tt.path
			out := stream(t, a, r)
			require.NoError(t, out.Err)
			assert.Equal(t, tt.text, out.Text())
			assert.Equal(t, tt.content, out.Content())
		})
	}
}

// TestStreamErrorEventClass: an error event that opens a stream, before
// any content, is the whole answer: it is classified as an HTTP error
// with that code would be, with that code's retryability. After content
// it ends the stream with ERR_STREAM_INTERRUPTED, not retryable, the
// event's class in Details["code"].
func TestStreamErrorEventClass(t *testing.T) {
	tests := []struct {
		event     string
		class     errcodes.Code
		retryable bool
	}{
		{`{"error":{"code":"429","message":"Rate limit is exceeded. Try again in 1 seconds."}}`, errcodes.Throttled, true},
		{`{"error":{"code":"RateLimitReached","message":"Rate limit reached"}}`, errcodes.Throttled, true},
		{`{"error":{"code":"TooManyRequests","message":"slow down"}}`, errcodes.Throttled, true},
		{`{"error":{"code":"DeploymentNotReady","message":"warming up"}}`, errcodes.ModelNotReady, true},
		{`{"error":{"code":"QuotaExceeded","message":"spent"}}`, errcodes.QuotaExceeded, false},
		{`{"status":429,"code":"rate_limited","message":"slow down"}`, errcodes.Throttled, true},
		{`{"error":{"message":"boom","type":"server_error"}}`, errcodes.Internal, true},
	}
	for _, tt := range tests {
		t.Run(tt.event, func(t *testing.T) {
			for _, first := range []bool{true, false} {
				parts := []string{sseRole, sseHello, "data: " + tt.event + "\n\n"}
				if first {
					parts = []string{sseRole, "data: " + tt.event + "\n\n"}
				}
				a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
					writeFlushed(w, "text/event-stream", parts...)
				}, func(o *Options) { o.API = APIChat })
				out := stream(t, a, generateReq())
				var e *errcodes.Error
				require.ErrorAs(t, out.Err, &e)
				if first {
					assert.Equal(t, tt.class, e.Code, "before content: %v", e)
					assert.Equal(t, tt.retryable, e.Retryable, "before content")
					assert.Zero(t, out.Content())
					continue
				}
				assert.Equal(t, errcodes.StreamInterrupted, e.Code, "after content: %v", e)
				assert.Equal(t, string(tt.class), e.Details["code"], "after content")
				assert.False(t, e.Retryable, "after content")
			}
		})
	}
}

// modelInference answers like the Azure AI model inference API of a
// serverless deployment: stream_options is not among its parameters, so
// with the default extra-parameters (error) it refuses the request with a
// 422, and accepts it when the header says to drop (or pass through)
// unknown parameters.
func modelInference(s *seen) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		recorder(s, 0, "", "")(discard{}, r)
		s.mu.Lock()
		body := string(s.body)
		s.mu.Unlock()
		switch r.Header.Get("extra-parameters") {
		case "drop", "pass-through", "allow":
		default:
			if strings.Contains(body, `"stream_options"`) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnprocessableEntity)
				_, _ = io.WriteString(w, `{"status":422,"code":"parameter_not_supported","detail":{},"message":"stream_options is not a supported parameter"}`)
				return
			}
		}
		writeFlushed(w, "text/event-stream", sseRole, sseHello, sseEnd, sseUsage, sseDone)
	}
}

// TestStreamChatExtraParameters: on the serverless chat route the stream
// usage request (stream_options, not a parameter of the model inference
// API) goes with "extra-parameters: drop", so that a deployment that does
// not know it drops it rather than refusing the call. A caller's own
// extra-parameters header is kept, and /score streams carry none.
func TestStreamChatExtraParameters(t *testing.T) {
	var s seen
	a, _ := server(t, modelInference(&s), func(o *Options) { o.API = APIChat })
	out := stream(t, a, generateReq())
	require.NoError(t, out.Err)
	assert.Equal(t, "Hello!", out.Text())
	assert.Equal(t, 2, out.Resp.Usage.OutputTokens)
	assert.Contains(t, string(s.body), `"stream_options":{"include_usage":true}`)

	var hdr http.Header
	a, _ = server(t, func(w http.ResponseWriter, r *http.Request) {
		hdr = r.Header.Clone()
		writeFlushed(w, "text/event-stream", sseRole, sseHello, sseEnd, sseDone)
	}, func(o *Options) { o.API = APIChat })
	r := generateReq()
	r.Header = http.Header{"Extra-Parameters": {"pass-through"}}
	require.NoError(t, stream(t, a, r).Err)
	assert.Equal(t, []string{"pass-through"}, hdr.Values("extra-parameters"), "the caller's choice stands")

	for _, api := range []API{APIScore, APIChat} {
		a, _ = server(t, func(w http.ResponseWriter, r *http.Request) {
			hdr = r.Header.Clone()
			writeFlushed(w, "text/event-stream", sseRole, sseHello, sseEnd, sseDone)
		}, func(o *Options) { o.API, o.OmitStreamUsage = api, api == APIChat })
		require.NoError(t, stream(t, a, generateReq()).Err)
		assert.Empty(t, hdr.Get("extra-parameters"), "no stream_options, no header (%s)", api)
	}
}
