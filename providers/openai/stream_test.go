package openai

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/providers/providertest"
)

const (
	roleChunk  = `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}` + "\n\n"
	helloChunk = `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}]}` + "\n\n"
	worldChunk = `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" world"},"logprobs":null,"finish_reason":"stop"}]}` + "\n\n"
	usageChunk = `data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}}` + "\n\n"
	doneEvent  = "data: [DONE]\n\n"
)

func TestStreamGenerate(t *testing.T) {
	var body string
	var accept string
	a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		body, accept = string(b), r.Header.Get("Accept")
		w.Header().Set("X-Request-Id", "s-1")
		send := sseWriter(w)
		for _, c := range []string{": keep-alive\n\n", roleChunk, helloChunk, worldChunk, usageChunk, doneEvent} {
			send(c)
		}
	})
	out := stream(t, a, generateReq("m"))
	require.NoError(t, out.Err)
	assert.Contains(t, body, `"stream":true`)
	assert.Contains(t, body, `"stream_options":{"include_usage":true}`)
	assert.Equal(t, "text/event-stream", accept)

	require.Len(t, out.Chunks, 4)
	assert.False(t, out.Chunks[0].Content, "role-only chunk is not content")
	assert.True(t, out.Chunks[1].Content)
	assert.True(t, out.Chunks[2].Content)
	assert.Equal(t, "stop", out.Chunks[2].FinishReason)
	assert.False(t, out.Chunks[3].Content, "usage-only chunk is not content")
	require.NotNil(t, out.Chunks[3].Usage)
	assert.Contains(t, string(out.Chunks[1].Data), `"Hello"`, "Data is the SSE data field")
	assert.Equal(t, "Hello world", out.Text())

	assert.Equal(t, cloudreq.Usage{InputTokens: 4, OutputTokens: 2, Source: "server"}, out.Resp.Usage)
	assert.Equal(t, "stop", out.Resp.FinishReason)
	assert.Equal(t, "s-1", out.Resp.RequestID)
	assert.Equal(t, 200, out.Resp.StatusCode)
}

func TestStreamEndings(t *testing.T) {
	tests := []struct {
		name   string
		frames []string
		want   errcodes.Code // "" for a clean end
		text   string
	}{
		{"done", []string{helloChunk, doneEvent}, "", "Hello"},
		{"finish without done", []string{helloChunk, worldChunk}, "", "Hello world"},
		{"finish and usage without done", []string{helloChunk, worldChunk, usageChunk}, "", "Hello world"},
		{"no done no finish", []string{roleChunk, helloChunk}, errcodes.StreamInterrupted, "Hello"},
		{"empty body", nil, errcodes.StreamInterrupted, ""},
		{"cut inside an event", []string{helloChunk, `data: {"id":"c","choices":[{"delta":{"content":"x"}}]}` + "\n"}, errcodes.StreamInterrupted, "Hello"},
		{"CRLF and CR framing", []string{strings.ReplaceAll(helloChunk, "\n", "\r\n"), strings.ReplaceAll(worldChunk, "\n", "\r"), "data: [DONE]\r\n\r\n"}, "", "Hello world"},
		{"no space after colon", []string{strings.Replace(helloChunk, "data: ", "data:", 1), doneEvent}, "", "Hello"},
		{"malformed chunk", []string{helloChunk, "data: {\"choices\":[{\"delta\":{\"content\n\n"}, errcodes.StreamInterrupted, "Hello"},
		{"completions chunks", []string{`data: {"choices":[{"text":"a","finish_reason":null}]}` + "\n\n", `data: {"choices":[{"text":"b","finish_reason":"length"}]}` + "\n\n", doneEvent}, "", "ab"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
				send := sseWriter(w)
				for _, f := range tt.frames {
					send(f)
				}
			})
			out := stream(t, a, generateReq("m"))
			assert.Equal(t, tt.text, out.Text())
			if tt.want == "" {
				assert.NoError(t, out.Err)
				return
			}
			assert.Equal(t, tt.want, errcodes.Of(out.Err), "%v", out.Err)
			var e *errcodes.Error
			require.True(t, errors.As(out.Err, &e))
			assert.Equal(t, "openai", e.Provider)
		})
	}
}

func TestStreamMidStreamError(t *testing.T) {
	a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "s-err")
		send := sseWriter(w)
		send(roleChunk)
		send(helloChunk)
		send(`data: {"error":{"message":"engine error during generation","type":"InternalServerError","param":null,"code":500}}` + "\n\n")
		send(doneEvent)
	})
	out := stream(t, a, generateReq("m"))
	assert.Equal(t, "Hello", out.Text())
	var e *errcodes.Error
	require.True(t, errors.As(out.Err, &e))
	assert.Equal(t, errcodes.StreamInterrupted, e.Code)
	assert.Equal(t, "InternalServerError", e.ProviderCode)
	assert.Equal(t, "engine error during generation", e.Message)
	assert.Equal(t, "ERR_INTERNAL", e.Details["code"])
	assert.Equal(t, "s-err", e.RequestID)
	assert.False(t, e.Retryable, "a chunk already reached the caller")
	var api *APIError
	require.True(t, errors.As(out.Err, &api))
	assert.Equal(t, 500, api.StatusCode)
}

func TestStreamErrorBeforeContentIsRetried(t *testing.T) {
	n := 0
	a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		n++
		send := sseWriter(w)
		if n == 1 {
			send(`data: {"error":{"message":"overloaded","type":"ServiceUnavailableError","code":503}}` + "\n\n")
			return
		}
		send(helloChunk)
		send(doneEvent)
	})
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{a}}, func(o *cloudreq.Options) {
		o.Retry.MaxAttempts = 2
		o.Retry.BaseDelay = time.Millisecond
	})
	require.NoError(t, err)
	s, err := c.Stream(ctx(t), generateReq("m"))
	require.NoError(t, err)
	defer s.Close()
	var got string
	for s.Next() {
		got += s.Chunk().Text
	}
	require.NoError(t, s.Err())
	assert.Equal(t, "Hello", got)
	assert.Equal(t, 2, n)
}

func TestStreamConnectionCut(t *testing.T) {
	a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		send := sseWriter(w)
		send(helloChunk)
		c, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = c.Close()
		}
	})
	out := stream(t, a, generateReq("m"))
	assert.Equal(t, "Hello", out.Text())
	assert.Equal(t, errcodes.StreamInterrupted, errcodes.Of(out.Err), "%v", out.Err)
}

func TestStreamCancelMidStream(t *testing.T) {
	h, released := providertest.HoldAfter("text/event-stream", helloChunk)
	a, _ := server(t, h)
	first := providertest.CancelMidStream(t, client(t, a), generateReq("m"), released)
	assert.Equal(t, "Hello", first.Text)
}

func TestStreamCloseReleasesConnection(t *testing.T) {
	released := make(chan struct{})
	a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		send := sseWriter(w)
		send(helloChunk)
		<-r.Context().Done()
		close(released)
	})
	cs, err := a.Stream(ctx(t), call(t, a, generateReq("m"), true))
	require.NoError(t, err)
	ch, err := cs.Next()
	require.NoError(t, err)
	assert.Equal(t, "Hello", ch.Text)
	require.NoError(t, cs.Close())
	require.NoError(t, cs.Close(), "Close twice is fine")
	select {
	case <-released:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not release the connection")
	}
}

func TestStreamJSONResponse(t *testing.T) {
	a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, chatResponse)
	})
	out := stream(t, a, generateReq("m"))
	require.NoError(t, out.Err)
	require.Len(t, out.Chunks, 1)
	assert.Equal(t, "Hello there", out.Chunks[0].Text)
	assert.Equal(t, 2, out.Resp.Usage.OutputTokens)
}

func TestStreamEventTooLarge(t *testing.T) {
	a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		send := sseWriter(w)
		send("data: " + strings.Repeat("x", 4096) + "\n\n")
	}, func(o *Options) { o.MaxEventBytes = 1024 })
	out := stream(t, a, generateReq("m"))
	assert.Equal(t, errcodes.PayloadTooLarge, errcodes.Of(out.Err), "%v", out.Err)
}

func TestStreamOpenError(t *testing.T) {
	a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(429)
		_, _ = io.WriteString(w, `{"error":{"message":"slow","type":"RateLimitError","code":429}}`)
	})
	out := stream(t, a, generateReq("m"))
	assert.Equal(t, errcodes.Throttled, errcodes.Of(out.Err))
}

func TestStreamInvokeRaw(t *testing.T) {
	a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		f := w.(http.Flusher)
		for _, s := range []string{"one ", "two"} {
			_, _ = io.WriteString(w, s)
			f.Flush()
		}
	})
	out := stream(t, a, invokeReq(`{"stream":true}`))
	require.NoError(t, out.Err)
	assert.Equal(t, "one two", out.Text())
}

// TestStreamMidStreamTGIError: TGI's Messages API reports a failure during
// generation as {"error":"…","error_type":"…"}; its error_type is the
// native code.
func TestStreamMidStreamTGIError(t *testing.T) {
	a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		send := sseWriter(w)
		send(helloChunk)
		send(`data: {"error":"Request failed during generation: Server error: CUDA out of memory","error_type":"generation"}` + "\n\n")
	})
	out := stream(t, a, generateReq("m"))
	assert.Equal(t, "Hello", out.Text())
	var e *errcodes.Error
	require.True(t, errors.As(out.Err, &e))
	assert.Equal(t, errcodes.StreamInterrupted, e.Code)
	assert.Equal(t, "generation", e.ProviderCode)
	assert.Equal(t, "ERR_MODEL_ERROR", e.Details["code"])
	var api *APIError
	require.True(t, errors.As(out.Err, &api))
	assert.Equal(t, "generation", api.Type)
}
