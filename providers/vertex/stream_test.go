package vertex

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
	"github.com/googleapis/gax-go/v2/apierror"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
)

// drain reads a stream to its end and returns the chunks' texts.
func drain(t *testing.T, s *cloudreq.Stream) []string {
	t.Helper()
	var out []string
	for i := 0; s.Next(); i++ {
		require.Less(t, i, 1000, "stream does not end")
		out = append(out, s.Chunk().Text)
	}
	return out
}

func TestStreamGenerate(t *testing.T) {
	f, addr := startFake(t)
	f.set(func(f *fakeServer) {
		f.header = metadata.Pairs("x-emulator-cold-start", "true", "x-emulator-cold-start-ms", "40")
		f.genChunks = []*aiplatformpb.GenerateContentResponse{
			genMsg("Hel", 0, 0, 0),
			genMsg("lo", 0, 0, 0),
			genMsg(" there", aiplatformpb.Candidate_MAX_TOKENS, 5, 3),
		}
	})
	c, _ := newFakeClient(t, addr, emulator.WithStartReport())
	s, err := c.Stream(context.Background(), genReq())
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, []string{"Hel", "lo", " there"}, drain(t, s))
	require.NoError(t, s.Err())
	resp := s.Response()
	require.NotNil(t, resp)
	assert.Equal(t, "length", resp.FinishReason)
	assert.Equal(t, cloudreq.Usage{InputTokens: 5, OutputTokens: 3, Source: "server"}, resp.Usage)
	assert.Equal(t, "40", resp.Header.Get(emulator.HeaderColdStartMs), "the header metadata, as the stream opened")
	assert.Equal(t, latency.Cold, resp.Start.Kind)
	assert.Equal(t, 40*time.Millisecond, resp.Start.Overhead)
	calls := f.Calls()
	require.Len(t, calls, 1)
	assert.Equal(t, "StreamGenerateContent", calls[0].Method)
	assert.Equal(t, "projects/p/locations/us-central1/publishers/google/models/gemini-2.0-flash", calls[0].Name)
	tl := resp.Timing
	require.Len(t, tl.Chunks, 3)
	assert.False(t, tl.LastAttempt().FirstByte.IsZero())
	assert.False(t, tl.Chunks[0].At.Before(tl.LastAttempt().FirstByte))
}

func TestStreamGenerateChunkData(t *testing.T) {
	f, addr := startFake(t)
	f.set(func(f *fakeServer) {
		f.genChunks = []*aiplatformpb.GenerateContentResponse{genMsg("x", aiplatformpb.Candidate_STOP, 1, 1)}
	})
	cs := openGenStream(t, addr)
	ch, err := cs.Next()
	require.NoError(t, err)
	var back aiplatformpb.GenerateContentResponse
	require.NoError(t, proto.Unmarshal(ch.Data, &back))
	assert.True(t, proto.Equal(genMsg("x", aiplatformpb.Candidate_STOP, 1, 1), &back), "Data is the message's wire form")
	assert.Equal(t, "stop", ch.FinishReason)
	assert.Equal(t, &cloudreq.Usage{InputTokens: 1, OutputTokens: 1, Source: "server"}, ch.Usage)
	_, err = cs.Next()
	assert.ErrorIs(t, err, errEOF())
}

func TestStreamRaw(t *testing.T) {
	f, addr := startFake(t)
	f.set(func(f *fakeServer) {
		f.header = metadata.Pairs("x-vertex-ai-deployed-model-id", "dm-9")
		f.rawChunks = [][]byte{
			[]byte("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"),
			[]byte("data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n"),
			[]byte("data: {\"choices\":[{\"delta\":{\"content\":\"!\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"),
		}
	})
	c, _ := newFakeClient(t, addr)
	req := invokeReq(`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`, "")
	s, err := c.Stream(context.Background(), req)
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, []string{"", "Hi", "!"}, drain(t, s))
	require.NoError(t, s.Err())
	resp := s.Response()
	assert.Equal(t, "stop", resp.FinishReason)
	assert.Equal(t, "dm-9", resp.Metadata[MetaDeployedModelID])
	calls := f.Calls()
	require.Len(t, calls, 1)
	assert.Equal(t, "StreamRawPredict", calls[0].Method)
	rp := calls[0].Req.(*aiplatformpb.StreamRawPredictRequest)
	assert.Equal(t, epName, rp.GetEndpoint())
	assert.Equal(t, "application/json", rp.GetHttpBody().GetContentType())
	assert.Equal(t, req.Payload.Body, rp.GetHttpBody().GetData())
	// The role-only chunk is read as OpenAI-compatible and is not content:
	// it counts no token, and TTFT is measured to the "Hi" chunk.
	assert.Equal(t, 2, resp.Usage.OutputTokens)
	require.Len(t, resp.Timing.Chunks, 3)
	assert.False(t, resp.Timing.Chunks[0].Content)
	assert.True(t, resp.Timing.Chunks[1].Content)
}

// TestStreamRawServerUsage: a raw stream that reports usage (vLLM with
// include_usage) gives the server's counts, and a reasoning delta is the
// first content chunk.
func TestStreamRawServerUsage(t *testing.T) {
	f, addr := startFake(t)
	f.set(func(f *fakeServer) {
		f.rawChunks = [][]byte{
			[]byte("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"),
			[]byte("data: {\"choices\":[{\"delta\":{\"reasoning\":\"hmm\"}}]}\n\n"),
			[]byte("data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}\n\n"),
			[]byte("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":6}}\n\ndata: [DONE]\n\n"),
		}
	})
	c, _ := newFakeClient(t, addr)
	s, err := c.Stream(context.Background(), invokeReq(`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`, ""))
	require.NoError(t, err)
	defer s.Close()
	drain(t, s)
	require.NoError(t, s.Err())
	resp := s.Response()
	assert.Equal(t, cloudreq.Usage{InputTokens: 9, OutputTokens: 6, Source: "server"}, resp.Usage)
	require.Len(t, resp.Timing.Chunks, 4)
	assert.False(t, resp.Timing.Chunks[0].Content)
	assert.True(t, resp.Timing.Chunks[1].Content, "the reasoning delta is content")
}

func TestStreamTruncated(t *testing.T) {
	f, addr := startFake(t)
	f.set(func(f *fakeServer) {
		f.genChunks = []*aiplatformpb.GenerateContentResponse{genMsg("a", 0, 0, 0), genMsg("b", 0, 0, 0)}
	})
	c, _ := newFakeClient(t, addr)
	s, err := c.Stream(context.Background(), genReq())
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, []string{"a", "b"}, drain(t, s))
	err = s.Err()
	require.Error(t, err)
	assert.ErrorIs(t, err, errcodes.StreamInterrupted)
	assert.Contains(t, err.Error(), "without a finish reason")
	assert.Len(t, f.Calls(), 1, "a stream that delivered chunks is never retried")
}

func TestStreamEmptyGenerateIsRetriedThenInterrupted(t *testing.T) {
	f, addr := startFake(t)
	c, _ := newFakeClient(t, addr, func(o *cloudreq.Options) { o.Retry.MaxAttempts = 2 })
	s, err := c.Stream(context.Background(), genReq())
	if err == nil {
		drain(t, s)
		err = s.Err()
		s.Close()
	}
	assert.ErrorIs(t, err, errcodes.StreamInterrupted)
	assert.Len(t, f.Calls(), 2, "a stream interrupted before its first message is retried")
}

// TestStreamMidStreamStatus: a status that ends a stream after it
// delivered a chunk is ERR_STREAM_INTERRUPTED, not retryable (the caller
// has consumed output), whatever the status: its own portable code is kept
// in Details["code"], its name in ProviderCode, and its RetryInfo is not a
// reason to retry.
func TestStreamMidStreamStatus(t *testing.T) {
	rateLimited, err := status.New(codes.ResourceExhausted, "slow down").WithDetails(
		errorInfo("RATE_LIMIT_EXCEEDED"), &errdetails.RetryInfo{RetryDelay: durationpb.New(time.Second)})
	require.NoError(t, err)
	tests := []struct {
		name     string
		end      error
		own      errcodes.Code
		provider string
	}{
		{"throttled", rateLimited.Err(), errcodes.Throttled, "RESOURCE_EXHAUSTED"},
		{"internal", status.Error(codes.Internal, "model crashed"), errcodes.Internal, "INTERNAL"},
		{"invalid", status.Error(codes.InvalidArgument, "bad token"), errcodes.InvalidParam, "INVALID_ARGUMENT"},
		{"unavailable", status.Error(codes.Unavailable, "backend went away"), errcodes.Unavailable, "UNAVAILABLE"},
		{"malformed", status.Error(codes.Internal, "grpc: failed to unmarshal the received message: proto: cannot parse invalid wire-format data"), errcodes.ModelError, "INTERNAL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, addr := startFake(t)
			f.set(func(f *fakeServer) {
				f.genChunks = []*aiplatformpb.GenerateContentResponse{genMsg("a", 0, 0, 0)}
				f.streamEnd = tt.end
			})
			c, _ := newFakeClient(t, addr)
			s, err := c.Stream(context.Background(), genReq())
			require.NoError(t, err)
			defer s.Close()
			assert.Equal(t, []string{"a"}, drain(t, s))
			require.ErrorIs(t, s.Err(), errcodes.StreamInterrupted)
			e := errcodes.From(s.Err())
			assert.False(t, e.Retryable, "%v", e)
			assert.Zero(t, e.RetryAfter)
			assert.Equal(t, string(tt.own), e.Details["code"])
			assert.Equal(t, tt.provider, e.ProviderCode)
			assert.Equal(t, cloudreq.ProviderGCP, e.Provider)
			assert.NotErrorIs(t, s.Err(), tt.own, "only the stream's code matches")
			var ae *apierror.APIError
			assert.ErrorAs(t, s.Err(), &ae, "the status stays reachable")
			assert.Len(t, f.Calls(), 1)
		})
	}
}

// TestStreamStatusBeforeContent: a status that ends a stream before any
// message is the whole answer: its own code and that code's retryability.
func TestStreamStatusBeforeContent(t *testing.T) {
	rateLimited, err := status.New(codes.ResourceExhausted, "Resource exhausted, please try again later.").WithDetails(
		errorInfo("RATE_LIMIT_EXCEEDED"), &errdetails.RetryInfo{RetryDelay: durationpb.New(time.Millisecond)})
	require.NoError(t, err)
	f, addr := startFake(t)
	f.set(func(f *fakeServer) {
		f.header = metadata.Pairs("x-vertex-ai-endpoint-id", "e") // headers go out before the status
		f.streamEnd = rateLimited.Err()
	})
	cs := openGenStream(t, addr)
	_, err = cs.Next()
	require.ErrorIs(t, err, errcodes.Throttled)
	e := errcodes.From(err)
	assert.True(t, e.Retryable)
	assert.Equal(t, time.Millisecond, e.RetryAfter)
	assert.Equal(t, "RATE_LIMIT_EXCEEDED", e.Details["reason"])
}

func TestStreamTransportBreak(t *testing.T) {
	f, addr := startFake(t)
	f.set(func(f *fakeServer) {
		f.genChunks = []*aiplatformpb.GenerateContentResponse{genMsg("a", 0, 0, 0), genMsg("b", 0, 0, 0)}
		f.breakNow = make(chan struct{})
	})
	cs := openGenStream(t, addr)
	var texts []string
	for i := 0; i < 10; i++ {
		ch, err := cs.Next()
		if err != nil {
			assert.ErrorIs(t, err, errcodes.StreamInterrupted)
			var e *errcodes.Error
			require.ErrorAs(t, err, &e)
			assert.False(t, e.Retryable)
			assert.Contains(t, e.Message, "stream broke after 2 messages")
			break
		}
		texts = append(texts, ch.Text)
		if len(texts) == 2 {
			close(f.breakNow)
		}
	}
	assert.Equal(t, []string{"a", "b"}, texts)
}

func TestStreamCancelMidStream(t *testing.T) {
	f, addr := startFake(t)
	f.set(func(f *fakeServer) {
		f.genChunks = []*aiplatformpb.GenerateContentResponse{genMsg("a", 0, 0, 0)}
		f.hold = true
	})
	c, _ := newFakeClient(t, addr)
	s, err := c.Stream(context.Background(), genReq())
	require.NoError(t, err)
	require.True(t, s.Next())
	assert.Equal(t, "a", s.Chunk().Text)

	// Close from another goroutine while Next blocks on the held stream.
	done := make(chan bool)
	go func() { done <- s.Next() }()
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, s.Close())
	select {
	case more := <-done:
		assert.False(t, more)
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock Next")
	}
	select {
	case <-f.canceled:
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the RPC canceled")
	}
	assert.NoError(t, s.Err(), "a stream closed by the caller has no error")
	require.NoError(t, s.Close(), "Close twice is fine")
}

func TestStreamContextCanceled(t *testing.T) {
	f, addr := startFake(t)
	f.set(func(f *fakeServer) {
		f.genChunks = []*aiplatformpb.GenerateContentResponse{genMsg("a", 0, 0, 0)}
		f.hold = true
	})
	c, _ := newFakeClient(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	s, err := c.Stream(ctx, genReq())
	require.NoError(t, err)
	defer s.Close()
	require.True(t, s.Next())
	cancel()
	assert.False(t, s.Next())
	assert.ErrorIs(t, s.Err(), errcodes.Canceled)
	<-f.canceled
}

func TestStreamOpenRetried(t *testing.T) {
	f, addr := startFake(t)
	f.set(func(f *fakeServer) {
		f.errs = []error{status.Error(codes.Unavailable, "warming up")}
		f.rawChunks = [][]byte{[]byte(`{"token":{"text":"x"}}`)}
	})
	c, _ := newFakeClient(t, addr)
	s, err := c.Stream(context.Background(), invokeReq("x", "text/plain"))
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, []string{"x"}, drain(t, s))
	require.NoError(t, s.Err())
	assert.Len(t, f.Calls(), 2)
	require.Len(t, s.Response().Timing.Attempts, 2)
	assert.Equal(t, "ERR_UNAVAILABLE", s.Response().Timing.Attempts[0].Code)
}

func TestStreamNextAfterClose(t *testing.T) {
	f, addr := startFake(t)
	f.set(func(f *fakeServer) { f.rawChunks = [][]byte{[]byte("x")} })
	a := newFakeAdapter(t, addr)
	req := invokeReq("x", "text/plain")
	cs, err := a.Stream(context.Background(), &cloudreq.Call{Request: req, Payload: req.Payload, Attempt: 1})
	require.NoError(t, err)
	require.NoError(t, cs.Close())
	_, err = cs.Next()
	assert.ErrorIs(t, err, errcodes.Canceled)
	_, err = cs.Next()
	assert.ErrorIs(t, err, errcodes.Canceled, "a closed stream keeps returning its error, never a clean end")
}

// TestStreamErrorIsSticky: once a stream failed, Next keeps returning that
// error; io.EOF, a clean and complete end, comes only after one.
func TestStreamErrorIsSticky(t *testing.T) {
	tests := []struct {
		name string
		end  error
		want errcodes.Code
	}{
		{"truncated", nil, errcodes.StreamInterrupted},
		{"status", status.Error(codes.Internal, "model crashed"), errcodes.StreamInterrupted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, addr := startFake(t)
			f.set(func(f *fakeServer) {
				f.genChunks = []*aiplatformpb.GenerateContentResponse{genMsg("a", 0, 0, 0)}
				f.streamEnd = tt.end
			})
			cs := openGenStream(t, addr)
			ch, err := cs.Next()
			require.NoError(t, err)
			assert.Equal(t, "a", ch.Text)
			_, first := cs.Next()
			assert.ErrorIs(t, first, tt.want)
			for range 2 {
				_, err = cs.Next()
				assert.Equal(t, first, err)
			}
		})
	}
	ok := func(f *fakeServer) { f.genChunks = []*aiplatformpb.GenerateContentResponse{genMsg("a", 1, 0, 0)} }
	f, addr := startFake(t)
	f.set(ok)
	cs := openGenStream(t, addr)
	_, err := cs.Next()
	require.NoError(t, err)
	for range 2 {
		_, err = cs.Next()
		assert.ErrorIs(t, err, errEOF(), "a clean end stays one")
	}
}

func TestRawText(t *testing.T) {
	tests := []struct {
		in, text, finish string
		known            bool
	}{
		{``, "", "", false},
		{`plain bytes`, "", "", false},
		{`{"choices":[{"delta":{"content":"hi"}}]}`, "hi", "", true},
		{`{"choices":[{"delta":{"role":"assistant"}}]}`, "", "", true},
		{`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}`, "", "", true},
		{`{"choices":[{"text":"yo","finish_reason":"length"}]}`, "yo", "length", true},
		{`{"token":{"text":"t","special":false}}`, "t", "", true},
		{`{"token":{"text":"</s>","special":true}}`, "", "", true},
		{`{"candidates":[{"content":{"parts":[{"text":"a"},{"text":"b"}]},"finishReason":"STOP"}]}`, "ab", "stop", true},
		{`{"candidates":[{"content":{"parts":[{"text":"a"}]},"finishReason":"NEW_REASON"}]}`, "a", "new_reason", true},
		{"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"b\"},\"finish_reason\":\"stop\"}]}\r\n\r\ndata: [DONE]\n", "ab", "stop", true},
		{"data: [DONE]\n\n", "", "", true},
		{"event: ping\ndata: not json\n\n", "", "", false},
		{`{"output":"a model's own format"}`, "", "", false},
		{`{"choices":[`, "", "", false},
	}
	for _, tt := range tests {
		c := rawText([]byte(tt.in))
		assert.Equal(t, tt.text, c.text, tt.in)
		assert.Equal(t, tt.finish, c.finish, tt.in)
		assert.Equal(t, tt.known, c.known, tt.in)
	}
	assert.Equal(t, "content_filter", finishReason(aiplatformpb.Candidate_SAFETY))
	assert.Equal(t, "malformed_function_call", finishReason(aiplatformpb.Candidate_MALFORMED_FUNCTION_CALL))
	assert.True(t, strings.HasPrefix(finishReason(aiplatformpb.Candidate_OTHER), "other"))
}

func errEOF() error { return io.EOF }

// blockedPrompt is the message Vertex answers a blocked prompt with: prompt
// feedback and usage, no candidates.
func blockedPrompt() *aiplatformpb.GenerateContentResponse {
	return &aiplatformpb.GenerateContentResponse{
		PromptFeedback: &aiplatformpb.GenerateContentResponse_PromptFeedback{
			BlockReason:        aiplatformpb.GenerateContentResponse_PromptFeedback_PROHIBITED_CONTENT,
			BlockReasonMessage: "The prompt was blocked",
		},
		UsageMetadata: &aiplatformpb.GenerateContentResponse_UsageMetadata{PromptTokenCount: 4},
		ResponseId:    "resp-blocked",
	}
}

func TestStreamGenerateBlockedPrompt(t *testing.T) {
	f, addr := startFake(t)
	f.set(func(f *fakeServer) {
		f.genChunks = []*aiplatformpb.GenerateContentResponse{blockedPrompt()}
	})
	c, _ := newFakeClient(t, addr)
	s, err := c.Stream(context.Background(), genReq())
	require.NoError(t, err)
	defer s.Close()
	assert.Empty(t, strings.Join(drain(t, s), ""))
	require.NoError(t, s.Err(), "a blocked prompt is an answer, not a truncated stream")
	assert.Equal(t, "content_filter", s.Response().FinishReason)
}

func TestCandidateTextBlockedPrompt(t *testing.T) {
	var sb strings.Builder
	assert.Equal(t, "content_filter", candidateText(&sb, blockedPrompt()))
	assert.Empty(t, sb.String())
	assert.Equal(t, "", candidateText(&sb, &aiplatformpb.GenerateContentResponse{}))
}

// TestRawTextReasoningAndUsage: reasoning deltas (vLLM's "reasoning",
// "reasoning_content") are content though they carry no answer text, and
// the server's usage is read in each dialect that reports it.
func TestRawTextReasoningAndUsage(t *testing.T) {
	for _, tt := range []struct {
		in      string
		content bool
		usage   *cloudreq.Usage
	}{
		{`{"choices":[{"delta":{"reasoning":"hm"}}]}`, true, nil},
		{`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]}`, true, nil},
		{`{"choices":[{"delta":{"tool_calls":[ ]}}]}`, false, nil},
		{`{"choices":[{"delta":{"reasoning_content":"hm"}}]}`, true, nil},
		{`{"choices":[{"delta":{"role":"assistant","reasoning":null}}]}`, false, nil},
		{`{"choices":[{"delta":{"reasoning":{"text":"hm"}}}]}`, true, nil},
		{`{"choices":[{"delta":{"role":"assistant","reasoning":{ }}}]}`, false, nil},
		{`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}`, false, &cloudreq.Usage{InputTokens: 3, OutputTokens: 2}},
		{"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n", true, &cloudreq.Usage{InputTokens: 5, OutputTokens: 1}},
		{`{"candidates":[{"content":{"parts":[{"text":"a"}]}}],"usageMetadata":{"promptTokenCount":4,"candidatesTokenCount":7}}`, true, &cloudreq.Usage{InputTokens: 4, OutputTokens: 7}},
		{`{"token":{"text":"</s>","special":true},"details":{"finish_reason":"length","generated_tokens":8}}`, false, &cloudreq.Usage{OutputTokens: 8}},
	} {
		c := rawText([]byte(tt.in))
		assert.Equal(t, tt.content, c.content([]byte(tt.in)), tt.in)
		assert.Equal(t, tt.usage, c.usage, tt.in)
	}
}

// openGenStream opens a generate stream of genReq through an adapter
// dialing addr; the stream is closed with the test.
func openGenStream(t *testing.T, addr string) cloudreq.ChunkStream {
	t.Helper()
	a := newFakeAdapter(t, addr)
	req := genReq()
	p, err := a.Encode(req, true)
	require.NoError(t, err)
	cs, err := a.Stream(context.Background(), &cloudreq.Call{Request: req, Payload: p, Attempt: 1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func TestInvokeText(t *testing.T) {
	tests := []struct {
		name, body, ct string
		text, finish   string
		usage          *cloudreq.Usage
	}{
		{"openai chat", `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hello!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`, "application/json",
			"Hello!", "stop", &cloudreq.Usage{InputTokens: 5, OutputTokens: 2, Source: "server"}},
		{"openai completion", `{"object":"text_completion","choices":[{"index":0,"text":" world","finish_reason":"length"}]}`, "", " world", "length", nil},
		{"tgi", `{"generated_text":"Hi there","details":{"finish_reason":"eos_token","generated_tokens":3}}`, "application/json", "Hi there", "stop", &cloudreq.Usage{OutputTokens: 3, Source: "server"}},
		{"tgi array", `[{"generated_text":"Hi","details":{"finish_reason":"length","generated_tokens":1}}]`, "application/json", "Hi", "length", &cloudreq.Usage{OutputTokens: 1, Source: "server"}},
		{"predictions strings", `{"predictions":["Prompt:\nhi\nOutput:\nhello","second"],"deployedModelId":"1"}`, "application/json", "Prompt:\nhi\nOutput:\nhello", "", nil},
		{"predictions content", `{"predictions":[{"content":"a poem"}]}`, "application/json", "a poem", "", nil},
		{"predictions text", `{"predictions":[{"text":"t"}]}`, "application/json", "t", "", nil},
		{"predictions generated_text", `{"predictions":[{"generated_text":"g"}]}`, "application/json", "g", "", nil},
		{"gemini", `{"candidates":[{"content":{"role":"model","parts":[{"text":"a"},{"text":"b"}]},"finishReason":"MAX_TOKENS"}],"usageMetadata":{"promptTokenCount":4,"candidatesTokenCount":2}}`, "application/json",
			"ab", "length", &cloudreq.Usage{InputTokens: 4, OutputTokens: 2, Source: "server"}},
		{"numbers", `{"predictions":[[0.1,0.2]]}`, "application/json", "", "", nil},
		{"other json", `{"result":"x"}`, "application/json", "", "", nil},
		{"not json", `Hello`, "text/plain", "", "", nil},
		{"json text as csv", `{"generated_text":"x"}`, "text/csv", "", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, finish, usage := invokeText([]byte(tt.body), tt.ct)
			assert.Equal(t, tt.text, text)
			assert.Equal(t, tt.finish, finish)
			assert.Equal(t, tt.usage, usage)
		})
	}
}

// TestStreamRequestID: a generate stream's response carries its
// responseId as RequestID, as a generate call's does.
func TestStreamRequestID(t *testing.T) {
	f, addr := startFake(t)
	f.set(func(f *fakeServer) {
		f.genChunks = []*aiplatformpb.GenerateContentResponse{genMsg("a", 0, 0, 0), genMsg("b", aiplatformpb.Candidate_STOP, 1, 2)}
	})
	c, _ := newFakeClient(t, addr)
	s, err := c.Stream(context.Background(), genReq())
	require.NoError(t, err)
	defer s.Close()
	drain(t, s)
	require.NoError(t, s.Err())
	assert.Equal(t, "resp-1", s.Response().RequestID)
}
