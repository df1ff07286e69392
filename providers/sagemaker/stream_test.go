package sagemaker

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

func TestStreamInvokeYieldsParts(t *testing.T) {
	var path, accept string
	parts := []string{`{"a":1}`, "raw bytes \x00\x01", `{"b":2}`}
	frames := make([]frame, len(parts))
	for i, p := range parts {
		frames[i] = part(p)
	}
	h := streamHandler(t, frames...)
	ad, _ := testAdapter(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, accept = r.URL.Path, r.Header.Get("X-Amzn-SageMaker-Accept")
		h(w, r)
	}))
	call := invokeCall("ep", `{}`)
	call.Payload.Accept = "application/jsonlines"
	cs, err := ad.Stream(context.Background(), call)
	require.NoError(t, err)
	defer cs.Close()
	head := cs.Response()
	assert.Equal(t, 200, head.StatusCode)
	assert.Equal(t, "text/event-stream", head.ContentType)
	assert.Equal(t, "req-stream-1", head.RequestID)
	assert.Equal(t, map[string]string{HeaderInvokedVariant: "AllTraffic"}, head.Metadata)
	chunks, err := drain(cs)
	require.ErrorIs(t, err, io.EOF)
	require.Len(t, chunks, len(parts))
	for i, p := range parts {
		assert.Equal(t, p, string(chunks[i].Data))
		assert.True(t, chunks[i].Content)
		assert.Empty(t, chunks[i].Text)
	}
	assert.Equal(t, "/endpoints/ep/invocations-response-stream", path)
	assert.Equal(t, "application/jsonlines", accept)
}

// splitEvery cuts s into parts of n bytes, so lines straddle parts.
func splitEvery(s string, n int) []frame {
	var out []frame
	for len(s) > n {
		out = append(out, part(s[:n]))
		s = s[n:]
	}
	return append(out, part(s))
}

func TestStreamGenerateDialects(t *testing.T) {
	messagesSSE := "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n" +
		": keep-alive comment\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo \\\"w\\\"\"},\"finish_reason\":null}]}\r\n\r\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2,\"total_tokens\":7}}\n\n" +
		"data: [DONE]\n\n"
	tgiSSE := "data:{\"token\":{\"id\":1,\"text\":\"Hel\",\"logprob\":-0.1,\"special\":false},\"generated_text\":null,\"details\":null}\n\n" +
		"data:{\"token\":{\"id\":2,\"text\":\"lo \\\"w\\\"\",\"logprob\":-0.1,\"special\":false},\"generated_text\":null,\"details\":null}\n\n" +
		"data:{\"token\":{\"id\":3,\"text\":\"</s>\",\"logprob\":0,\"special\":true},\"generated_text\":\"Hello \\\"w\\\"\",\"details\":{\"finish_reason\":\"eos_token\",\"generated_tokens\":3,\"seed\":null}}\n\n"
	lmiLines := "{\"token\":{\"id\":1,\"text\":\"Hel\",\"log_prob\":-0.1}}\n" +
		"{\"token\":{\"id\":2,\"text\":\"lo \\\"w\\\"\",\"log_prob\":-0.1},\"generated_text\":\"Hello \\\"w\\\"\",\"details\":{\"finish_reason\":\"length\",\"generated_tokens\":2,\"input_length\":4}}" // no final newline
	cases := []struct {
		name       string
		dialect    Dialect
		stream     string
		wantFinish string
		wantUsage  *cloudreq.Usage
		wantChunks int
	}{
		{"messages SSE", DialectMessages, messagesSSE, "stop", &cloudreq.Usage{InputTokens: 5, OutputTokens: 2, Source: "server"}, 5},
		{"tgi SSE", DialectTGI, tgiSSE, "stop", &cloudreq.Usage{OutputTokens: 3, Source: "server"}, 3},
		{"tgi SSE, bare CR line ends", DialectTGI, strings.ReplaceAll(tgiSSE, "\n", "\r"), "stop", &cloudreq.Usage{OutputTokens: 3, Source: "server"}, 3},
		{"lmi jsonlines", DialectTGI, lmiLines, "length", &cloudreq.Usage{InputTokens: 4, OutputTokens: 2, Source: "server"}, 2},
	}
	for _, tc := range cases {
		for _, size := range []int{1, 7, 64, 1 << 20} {
			t.Run(tc.name+"/parts of "+itoa(size), func(t *testing.T) {
				var body []byte
				h := streamHandler(t, splitEvery(tc.stream, size)...)
				ad, _ := testAdapter(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					body, _ = io.ReadAll(r.Body)
					h(w, r)
				}))
				call, err := genCall("llm", true, ad, tc.dialect)
				require.NoError(t, err)
				cs, err := ad.Stream(context.Background(), call)
				require.NoError(t, err)
				defer cs.Close()
				chunks, err := drain(cs)
				require.ErrorIs(t, err, io.EOF)
				assert.Len(t, chunks, tc.wantChunks)
				assert.Equal(t, `Hello "w"`, texts(chunks))
				var finish string
				var usage *cloudreq.Usage
				for _, c := range chunks {
					if c.FinishReason != "" {
						finish = c.FinishReason
					}
					if c.Usage != nil {
						u := *c.Usage
						usage = &u
					}
					assert.True(t, bytes.HasPrefix(c.Data, []byte("{")), "Data is the JSON payload: %q", c.Data)
				}
				assert.Equal(t, tc.wantFinish, finish)
				assert.Equal(t, tc.wantUsage, usage)
				assert.Contains(t, string(body), `"stream":true`)
			})
		}
	}
}

func itoa(n int) string {
	if n >= 1<<20 {
		return "1MiB"
	}
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

func TestStreamGenerateThroughClient(t *testing.T) {
	sse := "data: {\"choices\":[{\"delta\":{\"content\":\"a\"},\"finish_reason\":null}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{\"content\":\"b\"},\"finish_reason\":\"length\"}]}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n"
	ad, _ := testAdapter(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		writeStreamHead(w, http.Header{"X-Emulator-Cold-Start": {"false"}})
		_, _ = w.Write(encodeFrames(t, splitEvery(sse, 10)...))
	}))
	s, err := testClient(t, ad).Stream(context.Background(), &cloudreq.CloudRequest{
		Provider: "aws", Service: "sagemaker", Action: "generate", Target: cloudreq.Target{Endpoint: "llm"},
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "x"}}},
	})
	require.NoError(t, err)
	defer s.Close()
	var text strings.Builder
	for s.Next() {
		text.WriteString(s.Chunk().Text)
	}
	require.NoError(t, s.Err())
	resp := s.Response()
	assert.Equal(t, "ab", text.String())
	assert.Equal(t, "length", resp.FinishReason)
	assert.Equal(t, cloudreq.Usage{InputTokens: 1, OutputTokens: 2, Source: "server"}, resp.Usage)
	assert.Equal(t, "false", resp.Header.Get("X-Emulator-Cold-Start"), "the stream's headers, as it opened")
	assert.Nil(t, resp.ServerStart, "the adapter reads no server's start report")
	assert.Equal(t, "req-stream-1", resp.RequestID)
}

func TestStreamTruncated(t *testing.T) {
	cases := []struct {
		name   string
		stream string
		text   string
	}{
		{"openai without finish or DONE", "data: {\"choices\":[{\"delta\":{\"content\":\"a\"},\"finish_reason\":null}]}\n\n", "a"},
		{"tgi without final event", "data:{\"token\":{\"text\":\"a\",\"special\":false},\"generated_text\":null,\"details\":null}\n\n", "a"},
		{"cut inside the last line", "data: {\"choices\":[{\"delta\":{\"content\":\"a\"},\"finish_reason\":null}]}\n\ndata: {\"choices\":[{\"delta\":{\"con", "a"},
		{"empty stream", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var frames []frame
			if tc.stream != "" {
				frames = splitEvery(tc.stream, 16)
			}
			ad, _ := testAdapter(t, streamHandler(t, frames...))
			call, err := genCall("llm", true, ad, "")
			require.NoError(t, err)
			cs, err := ad.Stream(context.Background(), call)
			require.NoError(t, err)
			defer cs.Close()
			chunks, err := drain(cs)
			var e *errcodes.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, errcodes.StreamInterrupted, e.Code)
			assert.Contains(t, e.Message, "truncated")
			assert.Equal(t, tc.text, texts(chunks))
			assert.Equal(t, len(chunks) == 0, e.Retryable, "retryable only before the first chunk")
			assert.Equal(t, "req-stream-1", e.RequestID)
			_, again := cs.Next()
			assert.Same(t, err, again, "the terminal error sticks")
		})
	}
}

func TestStreamInvokeEmptyIsClean(t *testing.T) {
	ad, _ := testAdapter(t, streamHandler(t))
	cs, err := ad.Stream(context.Background(), invokeCall("ep", `{}`))
	require.NoError(t, err)
	defer cs.Close()
	chunks, err := drain(cs)
	assert.ErrorIs(t, err, io.EOF)
	assert.Empty(t, chunks)
}

func TestStreamInStreamErrors(t *testing.T) {
	cases := []struct {
		name      string
		exc       frame
		code      errcodes.Code
		provider  string
		details   map[string]string
		typed     func(error) bool
		retryable bool
	}{
		{
			name: "ModelStreamError StreamBroken",
			exc:  exception("ModelStreamError", `{"Message":"connection to model reset","ErrorCode":"StreamBroken"}`),
			code: errcodes.StreamInterrupted, provider: "ModelStreamError",
			details: map[string]string{"ErrorCode": "StreamBroken", "code": "ERR_UNAVAILABLE"},
			typed:   func(err error) bool { var x *types.ModelStreamError; return errors.As(err, &x) },
		},
		{
			name: "ModelStreamError ModelInvocationTimeExceeded",
			exc:  exception("ModelStreamError", `{"Message":"model took too long","ErrorCode":"ModelInvocationTimeExceeded"}`),
			code: errcodes.StreamInterrupted, provider: "ModelStreamError",
			details: map[string]string{"ErrorCode": "ModelInvocationTimeExceeded", "code": "ERR_TIMEOUT"},
			typed:   func(err error) bool { var x *types.ModelStreamError; return errors.As(err, &x) },
		},
		{
			name: "InternalStreamFailure",
			exc:  exception("InternalStreamFailure", `{"Message":"internal"}`),
			code: errcodes.StreamInterrupted, provider: "InternalStreamFailure",
			details: map[string]string{"code": "ERR_INTERNAL"},
			typed:   func(err error) bool { var x *types.InternalStreamFailure; return errors.As(err, &x) },
		},
		{
			name: "generic error frame",
			exc:  frame{kind: "error", name: "InternalServerError", payload: []byte("boom")},
			code: errcodes.StreamInterrupted, provider: "InternalServerError",
			details: map[string]string{"code": "ERR_INTERNAL"},
			typed:   func(error) bool { return true },
		},
	}
	for _, tc := range cases {
		for _, action := range []string{cloudreq.ActionInvoke, cloudreq.ActionGenerate} {
			t.Run(tc.name+"/"+action, func(t *testing.T) {
				ad, _ := testAdapter(t, streamHandler(t,
					part("data: {\"choices\":[{\"delta\":{\"content\":\"one\"}}]}\n\n"),
					part("data: {\"choices\":[{\"delta\":{\"content\":\"two\"}}]}\n\n"),
					tc.exc))
				call := invokeCall("llm", `{}`)
				if action == cloudreq.ActionGenerate {
					var err error
					call, err = genCall("llm", true, ad, "")
					require.NoError(t, err)
				}
				cs, err := ad.Stream(context.Background(), call)
				require.NoError(t, err)
				defer cs.Close()
				chunks, err := drain(cs)
				require.Len(t, chunks, 2, "chunks before the error are kept")
				if action == cloudreq.ActionGenerate {
					assert.Equal(t, "onetwo", texts(chunks))
				}
				var e *errcodes.Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, tc.code, e.Code)
				assert.Equal(t, tc.provider, e.ProviderCode)
				assert.Equal(t, "aws", e.Provider)
				assert.Equal(t, "req-stream-1", e.RequestID)
				assert.Equal(t, tc.details, e.Details)
				assert.False(t, e.Retryable, "never retryable after chunks reached the caller")
				assert.True(t, tc.typed(err), "errors.As reaches the SDK type: %T", e.Err)
			})
		}
	}
}

// An in-band error before any content is the whole answer: its own code
// and that code's retryability, never ERR_STREAM_INTERRUPTED.
func TestStreamErrorBeforeContentIsTheAnswer(t *testing.T) {
	cases := []struct {
		name      string
		frames    []frame
		code      errcodes.Code
		provider  string
		retryable bool
	}{
		{"InternalStreamFailure", []frame{exception("InternalStreamFailure", `{"Message":"try again"}`)},
			errcodes.Internal, "InternalStreamFailure", true},
		{"ModelStreamError ModelInvocationTimeExceeded", []frame{exception("ModelStreamError", `{"Message":"slow","ErrorCode":"ModelInvocationTimeExceeded"}`)},
			errcodes.Timeout, "ModelStreamError", true},
		{"OpenAI rate limit line", []frame{part("data: {\"error\":{\"message\":\"Rate limit reached\",\"type\":\"rate_limit_error\",\"code\":\"rate_limit_exceeded\"}}\n\ndata: [DONE]\n\n")},
			errcodes.Throttled, "rate_limit_exceeded", true},
		{"vLLM error line with an HTTP status code", []frame{part("data: {\"object\":\"error\",\"message\":\"busy\",\"type\":\"ServiceUnavailableError\",\"code\":503}\n\n")},
			errcodes.Unavailable, "ServiceUnavailableError", true},
		{"TGI overloaded line", []frame{part("data:{\"error\":\"Model is overloaded\",\"error_type\":\"overloaded\"}\n\n")},
			errcodes.Throttled, "overloaded", true},
		{"TGI validation line", []frame{part("data:{\"error\":\"Input validation error\",\"error_type\":\"validation\"}\n\n")},
			errcodes.InvalidParam, "validation", false},
		{"a role-only chunk is no content", []frame{
			part("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"),
			part("data: {\"error\":{\"message\":\"Rate limit reached\",\"type\":\"rate_limit_error\",\"code\":\"rate_limit_exceeded\"}}\n\n")},
			errcodes.Throttled, "rate_limit_exceeded", false /* a chunk reached the caller: no retry */},
		{"a line that is no JSON", []frame{part("data: {\"choices\":[{\"index\":0,\ndata: oops\n\n")},
			errcodes.ModelError, "MalformedLine", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ad, _ := testAdapter(t, streamHandler(t, tc.frames...))
			call, err := genCall("llm", true, ad, "")
			require.NoError(t, err)
			cs, err := ad.Stream(context.Background(), call)
			require.NoError(t, err)
			defer cs.Close()
			chunks, err := drain(cs)
			assert.Empty(t, texts(chunks))
			var e *errcodes.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tc.code, e.Code, "%v", err)
			assert.Equal(t, tc.provider, e.ProviderCode)
			assert.Equal(t, tc.retryable, e.Retryable)
			assert.Empty(t, e.Details["code"], "Details[\"code\"] is for an interruption")
		})
	}
}

func TestStreamInbandErrorLine(t *testing.T) {
	ad, _ := testAdapter(t, streamHandler(t,
		part("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n"),
		part("data: {\"error\":{\"message\":\"CUDA out of memory\",\"type\":\"InternalServerError\",\"code\":500}}\n\ndata: [DONE]\n\n")))
	call, err := genCall("llm", true, ad, "")
	require.NoError(t, err)
	cs, err := ad.Stream(context.Background(), call)
	require.NoError(t, err)
	defer cs.Close()
	chunks, err := drain(cs)
	assert.Equal(t, "x", texts(chunks))
	var e *errcodes.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, errcodes.StreamInterrupted, e.Code)
	assert.Equal(t, "InternalServerError", e.ProviderCode)
	assert.Equal(t, "ERR_INTERNAL", e.Details["code"], "the in-band error's own code")
	assert.False(t, e.Retryable)
	assert.Contains(t, e.Message, "CUDA out of memory")
	var ie *inbandError
	assert.ErrorAs(t, err, &ie)
}

// hijackCut writes the stream head and whole frames, then half of the next
// frame, and drops the connection.
func hijackCut(t *testing.T, whole []frame, cut frame) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer conn.Close()
		body := encodeFrames(t, whole...)
		half := encodeFrames(t, cut)
		body = append(body, half[:len(half)/2]...)
		_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/vnd.amazon.eventstream\r\n" +
			"X-Amzn-RequestId: req-cut\r\nContent-Length: " + itoa(len(body)+100) + "\r\n\r\n")
		_, _ = buf.Write(body)
		_ = buf.Flush()
	}
}

func TestStreamBodyCutMidFrame(t *testing.T) {
	for _, action := range []string{cloudreq.ActionInvoke, cloudreq.ActionGenerate} {
		t.Run(action, func(t *testing.T) {
			ad, _ := testAdapter(t, hijackCut(t,
				[]frame{part("data: {\"choices\":[{\"delta\":{\"content\":\"one\"}}]}\n\n")},
				part("data: {\"choices\":[{\"delta\":{\"content\":\"two\"},\"finish_reason\":\"stop\"}]}\n\n")))
			call := invokeCall("llm", `{}`)
			if action == cloudreq.ActionGenerate {
				var err error
				call, err = genCall("llm", true, ad, "")
				require.NoError(t, err)
			}
			cs, err := ad.Stream(context.Background(), call)
			require.NoError(t, err)
			defer cs.Close()
			chunks, err := drain(cs)
			require.Len(t, chunks, 1)
			var e *errcodes.Error
			require.ErrorAs(t, err, &e, "a cut body is not a clean end")
			assert.Equal(t, errcodes.StreamInterrupted, e.Code)
			assert.Equal(t, "req-cut", e.RequestID)
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
		})
	}
}

func TestStreamCutBeforeFirstChunkIsRetryableUnavailable(t *testing.T) {
	ad, _ := testAdapter(t, hijackCut(t, nil, part("never whole")))
	cs, err := ad.Stream(context.Background(), invokeCall("ep", `{}`))
	require.NoError(t, err)
	defer cs.Close()
	_, err = cs.Next()
	var e *errcodes.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, errcodes.Unavailable, e.Code)
	assert.True(t, e.Retryable)
}

// blockingStream sends one part, then holds the stream open until the
// client goes away.
func blockingStream(t *testing.T) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		writeStreamHead(w, nil)
		enc := eventstream.NewEncoder()
		if err := enc.Encode(w, part("data: {\"choices\":[{\"delta\":{\"content\":\"first\"}}]}\n\n").message()); err != nil {
			t.Errorf("encode: %v", err)
		}
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
			t.Error("client never went away")
		}
	}
}

func TestStreamCancelMidStream(t *testing.T) {
	ad, _ := testAdapter(t, blockingStream(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	call, err := genCall("llm", true, ad, "")
	require.NoError(t, err)
	cs, err := ad.Stream(ctx, call)
	require.NoError(t, err)
	defer cs.Close()
	ch, err := cs.Next()
	require.NoError(t, err)
	assert.Equal(t, "first", ch.Text)
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err = cs.Next()
	assert.Equal(t, errcodes.Canceled, errcodes.Of(err))
	require.NoError(t, cs.Close())
	require.NoError(t, cs.Close(), "Close twice is fine")
}

func TestStreamCloseMidStream(t *testing.T) {
	ad, _ := testAdapter(t, blockingStream(t))
	cs, err := ad.Stream(context.Background(), invokeCall("ep", `{}`))
	require.NoError(t, err)
	_, err = cs.Next()
	require.NoError(t, err)
	time.AfterFunc(20*time.Millisecond, func() { _ = cs.Close() })
	_, err = cs.Next()
	assert.Equal(t, errcodes.Canceled, errcodes.Of(err), "a closed stream is not a clean end: %v", err)
}

func TestStreamClientCloseMidStream(t *testing.T) {
	ad, _ := testAdapter(t, blockingStream(t))
	s, err := testClient(t, ad).Stream(context.Background(), invokeCall("ep", `{}`).Request)
	require.NoError(t, err)
	require.True(t, s.Next())
	time.AfterFunc(20*time.Millisecond, func() { _ = s.Close() })
	assert.False(t, s.Next())
	assert.NoError(t, s.Err(), "Close is not an error for the caller")
}

func TestStreamRejectsTargetModel(t *testing.T) {
	ad, _ := testAdapter(t, streamHandler(t))
	call := invokeCall("ep", `{}`)
	call.Request.Target.Model = "m.tar.gz"
	_, err := ad.Stream(context.Background(), call)
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
}

func TestStreamOpenError(t *testing.T) {
	ad, _ := testAdapter(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amzn-ErrorType", "ModelNotReadyException")
		w.Header().Set("X-Amzn-RequestId", "rid-nr")
		w.Header().Set("Retry-After", "2")
		w.WriteHeader(429)
		_, _ = w.Write([]byte(`{"message":"Model is loading"}`))
	}))
	_, err := ad.Stream(context.Background(), invokeCall("ep", `{}`))
	var e *errcodes.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, errcodes.ModelNotReady, e.Code)
	assert.True(t, e.Retryable)
	assert.Equal(t, 2*time.Second, e.RetryAfter)
	assert.Equal(t, "rid-nr", e.RequestID)
}

// TestStreamMultiLineData: SSE joins a field's data lines with "\n"; a
// JSON object spread over several lines is one event, read as soon as it
// is whole. A field that never becomes one fails the stream loudly.
func TestStreamMultiLineData(t *testing.T) {
	const stop = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
	cases := []struct {
		name   string
		stream string
		text   string
		code   errcodes.Code // "" for a clean end
	}{
		{"joined", "data: {\"choices\":[{\"index\":0,\ndata: \"delta\":{\"content\":\"Hel\"}}]}\n\n" +
			"data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n" + stop, "Hello", ""},
		{"comment and id inside the event", "data: {\"choices\":[{\"index\":0,\n: ping\nid: 4\ndata: \"delta\":{\"content\":\"Hi\"}}]}\n\n" + stop, "Hi", ""},
		{"ends at the stream's end", stop + "data: {\"choices\":[{\"index\":0,\ndata: \"delta\":{\"content\":\"x\"}}]}", "x", ""},
		// (The failing event comes last: the test server reports writes
		// to a client that already went away.)
		{"never JSON", "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\ndata: oops\n\n", "a", errcodes.StreamInterrupted},
		{"cut at the stream's end", "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[{\"index\":0,", "a", errcodes.StreamInterrupted},
	}
	for _, tc := range cases {
		for _, size := range []int{1, 1 << 20} {
			t.Run(tc.name+"/parts of "+itoa(size), func(t *testing.T) {
				ad, _ := testAdapter(t, streamHandler(t, splitEvery(tc.stream, size)...))
				call, err := genCall("llm", true, ad, DialectMessages)
				require.NoError(t, err)
				cs, err := ad.Stream(context.Background(), call)
				require.NoError(t, err)
				defer cs.Close()
				chunks, err := drain(cs)
				assert.Equal(t, tc.text, texts(chunks))
				if tc.code == "" {
					require.ErrorIs(t, err, io.EOF)
					return
				}
				assert.Equal(t, tc.code, errcodes.Of(err), "%v", err)
			})
		}
	}
}
