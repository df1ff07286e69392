package vertex

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"

	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// chunkStream is one open server stream: streamGenerateContent (gen),
// streamRawPredict (raw) or serverStreamingPredict (ssp).
type chunkStream struct {
	gen aiplatformpb.PredictionService_StreamGenerateContentClient
	raw aiplatformpb.PredictionService_StreamRawPredictClient
	ssp aiplatformpb.PredictionService_ServerStreamingPredictClient

	resp *cloudreq.CloudResponse

	// A message (or end) read before the stream was handed out.
	pendingGen *aiplatformpb.GenerateContentResponse
	pendingRaw *httpbody.HttpBody
	pendingSSP *aiplatformpb.StreamingPredictResponse
	pendingErr error
	pending    bool

	mu sync.Mutex
	// ctx is the RPC's context; cancel ends it.
	ctx    context.Context
	cancel context.CancelFunc
	closed bool

	// Read state, touched only by Next.
	chunks   int
	calls    int // tool calls seen, which numbers the next
	finished bool
	err      error // the terminal result (io.EOF or the failure), once known
	buf      []byte
	sb       strings.Builder
}

var wireOut = proto.MarshalOptions{}

// Response implements cloudreq.ChunkStream.
func (s *chunkStream) Response() *cloudreq.CloudResponse { return s.resp }

// peek reads the first message ahead, for streams that ended without
// headers. It returns the mapped error of a failed RPC.
func (s *chunkStream) peek() error {
	s.pending = true
	switch {
	case s.gen != nil:
		s.pendingGen, s.pendingErr = s.gen.Recv()
	case s.ssp != nil:
		s.pendingSSP, s.pendingErr = s.ssp.Recv()
	default:
		s.pendingRaw, s.pendingErr = s.raw.Recv()
	}
	if s.pendingErr != nil && !errors.Is(s.pendingErr, io.EOF) {
		return mapError(s.pendingErr)
	}
	return nil
}

// Next implements cloudreq.ChunkStream.
func (s *chunkStream) Next() (cloudreq.StreamChunk, error) {
	if s.err != nil {
		return cloudreq.StreamChunk{}, s.err
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return cloudreq.StreamChunk{}, s.fail(errcodes.New(errcodes.Canceled, "vertex: stream closed"))
	}
	if s.gen != nil {
		m, err := s.recvGen()
		if err != nil {
			return cloudreq.StreamChunk{}, s.endWith(err)
		}
		return s.genChunk(m)
	}
	if s.ssp != nil {
		m, err := s.recvSSP()
		if err != nil {
			return cloudreq.StreamChunk{}, s.endWith(err)
		}
		return s.sspChunk(m)
	}
	m, err := s.recvRaw()
	if err != nil {
		return cloudreq.StreamChunk{}, s.endWith(err)
	}
	s.chunks++
	data := m.GetData()
	rc := rawText(data)
	if rc.finish != "" {
		s.finished = true
	}
	// A chunk read in a known dialect is content when it carries text or
	// reasoning (not a role-only or usage-only event); any other non-empty
	// chunk is.
	return cloudreq.StreamChunk{Data: data, Text: rc.text, Content: rc.content(data), FinishReason: rc.finish, Usage: rc.usage}, nil
}

func (s *chunkStream) recvGen() (*aiplatformpb.GenerateContentResponse, error) {
	if s.pending {
		s.pending = false
		return s.pendingGen, s.pendingErr
	}
	return s.gen.Recv()
}

func (s *chunkStream) recvRaw() (*httpbody.HttpBody, error) {
	if s.pending {
		s.pending = false
		return s.pendingRaw, s.pendingErr
	}
	return s.raw.Recv()
}

// genChunk turns one GenerateContentResponse into a chunk. Data is the
// message's protobuf encoding, valid until the next call to Next.
func (s *chunkStream) genChunk(m *aiplatformpb.GenerateContentResponse) (cloudreq.StreamChunk, error) {
	var err error
	s.buf, err = wireOut.MarshalAppend(s.buf[:0], m)
	if err != nil {
		s.chunks++
		return cloudreq.StreamChunk{}, s.fail(errcodes.Wrap(err, errcodes.Internal, "vertex: encoding a stream message"))
	}
	ch := s.genFields(m)
	ch.Data = s.buf
	return ch, nil
}

// genFields reads one GenerateContentResponse into a chunk, Data left
// unset (the gRPC stream's is the message's encoding, the REST stream's
// its JSON frame).
func (s *chunkStream) genFields(m *aiplatformpb.GenerateContentResponse) cloudreq.StreamChunk {
	s.chunks++
	s.sb.Reset()
	fin := candidateText(&s.sb, m)
	if fin != "" {
		s.finished = true
	}
	var reasoning string
	var calls []cloudreq.ToolCall
	var lps []cloudreq.TokenLogprob
	if c := m.GetCandidates(); len(c) > 0 && richParts(c[0]) {
		var text, rs strings.Builder
		calls = readCandidate(c[0], &text, &rs, s.calls)
		s.calls += len(calls)
		reasoning, lps = rs.String(), candidateLogprobs(c[0])
		if len(calls) > 0 && fin == "stop" {
			fin = "tool_calls"
		}
	}
	if s.resp.RequestID == "" {
		// Every message repeats the response's id; the first one gives it.
		s.resp.RequestID = m.GetResponseId()
	}
	return cloudreq.StreamChunk{Text: s.sb.String(), Reasoning: reasoning, ToolCallDeltas: calls, Logprobs: lps, FinishReason: fin, Usage: usageOf(m)}
}

// endWith ends the stream on a read error: io.EOF is a clean end for raw
// streams and for generate streams that reported a finish reason; anything
// else is mapped. After the first message, a status (the server's, or
// grpc-go's for a broken connection or a message it could not read) is
// ERR_STREAM_INTERRUPTED: the caller consumed part of the answer, so the
// status's own code cannot be acted on as if the call had not run. The
// exceptions keep their codes: the caller's own end of the RPC (its
// context, or CANCELLED, which grpc-go gives a call whose connection the
// client closed) and a message over Options.MaxResponseBytes.
func (s *chunkStream) endWith(err error) error {
	if errors.Is(err, io.EOF) {
		if s.gen != nil && !s.finished {
			return s.fail(errcodes.Errorf(errcodes.StreamInterrupted,
				"vertex: stream ended after %d messages without a finish reason", s.chunks))
		}
		s.err = io.EOF
		s.cancel()
		return io.EOF
	}
	mapped := mapError(err)
	var e *errcodes.Error
	if s.chunks == 0 || s.ctx.Err() != nil || !errors.As(mapped, &e) ||
		e.Code == errcodes.PayloadTooLarge || e.Code == errcodes.StreamInterrupted || e.Code == errcodes.Canceled {
		return s.fail(mapped)
	}
	what := "ended with " + e.ProviderCode
	if transportBreak(err) {
		what = "broke"
	}
	return s.fail(interrupted(e, "vertex: stream "+what+" after "+strconv.Itoa(s.chunks)+" messages: "+status.Convert(err).Message()))
}

// interrupted turns e, a mapped status that ended a stream after content,
// into ERR_STREAM_INTERRUPTED, not retryable: the status's portable code
// goes to Details["code"], its name, HTTP status, details and request id
// are kept, and it wraps e's native error (not e, so that errors.Is
// matches only the stream's code). RetryAfter is dropped with the
// retryability.
func interrupted(e *errcodes.Error, msg string) *errcodes.Error {
	out := errcodes.Wrap(e.Err, errcodes.StreamInterrupted, msg)
	out.Provider, out.ProviderCode, out.HTTPStatus, out.RequestID = cloudreq.ProviderGCP, e.ProviderCode, e.HTTPStatus, e.RequestID
	out.Details = make(map[string]string, len(e.Details)+1)
	for k, v := range e.Details {
		out.Details[k] = v
	}
	out.Details["code"] = string(e.Code)
	out.Retryable = false
	return out
}

// fail ends the stream with err, which later calls to Next return too, and
// releases the RPC.
func (s *chunkStream) fail(err error) error {
	s.err = err
	s.cancel()
	var e *errcodes.Error
	if errors.As(err, &e) && e.Provider == "" {
		e.Provider = cloudreq.ProviderGCP
	}
	if e != nil && e.Code == errcodes.StreamInterrupted {
		// Before the first message nothing reached the caller, and the
		// client may retry the call, as for the other adapters.
		e.Retryable = s.chunks == 0
	}
	return err
}

// transportBreak reports whether a read error is the connection or the
// HTTP/2 stream breaking rather than a status the server sent. gRPC gives
// such breaks a status with no details; UNAVAILABLE without details always
// counts, INTERNAL and UNKNOWN only with grpc-go's transport messages (a
// documented last-resort string match: grpc-go exposes no other signal).
func transportBreak(err error) bool {
	st, ok := status.FromError(err)
	if !ok || len(st.Details()) > 0 {
		return false
	}
	switch st.Code() {
	case codes.Unavailable:
		return true
	case codes.Internal, codes.Unknown:
		m := st.Message()
		for _, frag := range []string{"RST_STREAM", "without sending trailers", "error reading from server", "transport is closing", "connection error"} {
			if strings.Contains(m, frag) {
				return true
			}
		}
	}
	return false
}

// Close implements cloudreq.ChunkStream: it cancels the RPC.
func (s *chunkStream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		s.cancel()
	}
	return nil
}
