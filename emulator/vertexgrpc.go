package emulator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
)

// grpcLimits bound what one gRPC client can hold (see the package
// documentation).
type grpcLimits struct {
	// handshake bounds the arrival of a new connection's HTTP/2 preface
	// and first SETTINGS frame.
	handshake time.Duration
	// pingAfter is how long a connection may send nothing before the
	// server pings it; pingTimeout is how long the server then waits for
	// any frame before it closes the connection.
	pingAfter, pingTimeout time.Duration
	// minPing is the shortest interval at which a client may ping, with or
	// without calls in flight.
	minPing time.Duration
	// maxStreams bounds the calls in flight on one connection.
	maxStreams uint32
	// maxHeaderList bounds a request's metadata (HPACK-decoded size).
	maxHeaderList uint32
}

// defaultGRPCLimits are the gRPC listener's bounds.
var defaultGRPCLimits = grpcLimits{
	handshake:     grpcHandshakeTimeout,
	pingAfter:     grpcPingAfter,
	pingTimeout:   grpcPingTimeout,
	minPing:       grpcMinPing,
	maxStreams:    grpcMaxStreams,
	maxHeaderList: maxHeaderBytes,
}

// Limits on gRPC clients (see the package documentation).
const (
	// grpcHandshakeTimeout: a gRPC client sends its preface as soon as it
	// connects; grpc-go's clients give up a connection attempt after 20 s.
	grpcHandshakeTimeout = 20 * time.Second
	// grpcPingAfter and grpcPingTimeout: a connection silent for 2 minutes
	// is pinged and closed when nothing comes back within 20 s.
	grpcPingAfter   = 2 * time.Minute
	grpcPingTimeout = 20 * time.Second
	// grpcMinPing is the shortest keepalive time a grpc-go client uses
	// (it raises shorter ones to 10 s); the vertex adapter pings after 5
	// minutes.
	grpcMinPing = 10 * time.Second
	// grpcMaxStreams is the bench's bound on requests in flight
	// (bench.MaxWorkers): the vertex adapter sends all of a target's
	// requests over one connection, and a client at this bound waits for
	// a call to end before it starts another, so a lower one would queue a
	// benchmark's requests in the client.
	grpcMaxStreams = 1 << 20
)

// newGRPCServer returns the gRPC server of Vertex AI's PredictionService.
func (s *Server) newGRPCServer() *grpc.Server {
	l := s.grpcLim
	g := grpc.NewServer(
		grpc.MaxRecvMsgSize(maxBody+1024),
		grpc.MaxHeaderListSize(l.maxHeaderList),
		grpc.ConnectionTimeout(l.handshake),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: l.pingAfter, Timeout: l.pingTimeout}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: l.minPing, PermitWithoutStream: true}),
		grpc.MaxConcurrentStreams(l.maxStreams),
	)
	aiplatformpb.RegisterPredictionServiceServer(g, &vertexGRPC{s: s})
	return g
}

// vertexGRPC implements Predict, RawPredict, StreamRawPredict,
// GenerateContent, StreamGenerateContent and ServerStreamingPredict of
// google.cloud.aiplatform.v1.PredictionService. Transport faults have no
// gRPC wire form the emulator can produce, so they become the status a
// client sees for them: reset-before-headers, html-502, gateway-overflow
// and close-mid-stream give UNAVAILABLE (html-502 and gateway-overflow with
// grpc-go's message for a non-gRPC answer); stall-mid-stream stalls, then
// gives UNAVAILABLE. malformed-body sends the answer, or for a stream the
// message after about half, with bytes that do not unmarshal, so that the
// client fails as on a corrupted answer; stream-error gives INTERNAL after
// about half the messages; stream-error-first gives the throttle status
// (RESOURCE_EXHAUSTED) before any message.
type vertexGRPC struct {
	aiplatformpb.UnimplementedPredictionServiceServer
	s *Server
}

// grpcStatus renders e with its details (ErrorInfo, QuotaFailure,
// BadRequest, and RetryInfo when retry > 0).
func (e vertexErr) grpcStatus(retry time.Duration) *status.Status {
	st := status.New(e.code, e.msg)
	var details []protoadapt.MessageV1
	if e.reason != "" {
		details = append(details, &errdetails.ErrorInfo{Reason: e.reason, Domain: vertexErrorDomain, Metadata: e.errorInfoMetadata()})
	}
	if e.quota {
		details = append(details, &errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{
			Subject: "aiplatform.googleapis.com/online_prediction_requests_per_base_model", Description: e.msg,
		}}})
	}
	if e.rate != "" {
		subject, desc, dims := e.rateViolation()
		details = append(details, &errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{
			Subject: subject, Description: desc, ApiService: vertexErrorDomain,
			QuotaMetric: vertexRateQuotaMetric, QuotaId: vertexRateQuotaID, QuotaDimensions: dims,
		}}})
	}
	if e.field != "" {
		details = append(details, &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: e.field, Description: e.msg}}})
	}
	if retry > 0 {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(retry)})
	}
	if len(details) == 0 {
		return st
	}
	if withD, err := st.WithDetails(details...); err == nil {
		return withD
	}
	return st
}

// incoming returns a getter of the request's metadata.
func incoming(ctx context.Context) headerGetter {
	md, _ := metadata.FromIncomingContext(ctx)
	return func(name string) string {
		if v := md.Get(strings.ToLower(name)); len(v) > 0 {
			return v[0]
		}
		return ""
	}
}

// prepare resolves the endpoint, checks credentials and parses the body.
// stream is whether the method streams, whatever the body says.
func (v *vertexGRPC) prepare(ctx context.Context, resource, method string, stream bool, parse func() (genRequest, error)) (*call, vertexTarget, error) {
	t, ok := parseVertexResource(resource)
	if !ok {
		e := vertexErrorFor(FaultInvalid, resource)
		e.msg = fmt.Sprintf("Invalid resource name %q: expected projects/{p}/locations/{l}/endpoints/{e} or .../publishers/{pub}/models/{m}", resource)
		return nil, t, e.grpcStatus(0).Err()
	}
	get := incoming(ctx)
	ep := v.s.lookup(t.name, Vertex)
	if ep == nil {
		return nil, t, vertexErrorFor(FaultNotFound, t.resource()).grpcStatus(0).Err()
	}
	if len(ep.Credentials.Keys) > 0 {
		tok, ok := bearer(get("authorization"))
		if !ok || !keyIn(tok, ep.Credentials.Keys) {
			return nil, t, vertexErrorFor(FaultUnauthenticated, t.resource()).grpcStatus(0).Err()
		}
	}
	gen, err := parse()
	if err != nil {
		e := vertexErrorFor(FaultInvalid, t.resource())
		e.msg = "Invalid request: " + err.Error()
		return nil, t, e.grpcStatus(0).Err()
	}
	gen.stream = stream
	c, err := v.s.newCall(ep, Vertex, method, gen, get, time.Now())
	if err != nil {
		c.end(400, "error")
		e := vertexErrorFor(FaultInvalid, t.resource())
		e.msg = err.Error()
		return nil, t, e.grpcStatus(0).Err()
	}
	return c, t, nil
}

// run drives a call: admission, ground-truth header metadata, then for a
// stream (out not nil) one message per token, msg(i), sent through out
// (none when msg returns nil: the token is not sent, as a hidden thought),
// or for a unary call a wait until the last token.
func (v *vertexGRPC) run(ctx context.Context, c *call, t vertexTarget, out *stallSender, msg func(i int) (any, error)) (err error) {
	outcome := "ok"
	if out != nil {
		out.c = c
	}
	defer func() {
		code := status.Code(err)
		if code == codes.Canceled || code == codes.DeadlineExceeded && outcome == "canceled" {
			outcome = "canceled"
		}
		if out == nil {
			c.end(httpStatusOf(code), outcome)
			return
		}
		out.end(httpStatusOf(code), outcome)
	}()
	header := func() {
		md := metadata.MD{}
		for _, kv := range c.truth() {
			md.Set(strings.ToLower(kv[0]), kv[1])
		}
		md.Set("x-vertex-ai-endpoint-id", t.name)
		md.Set("x-vertex-ai-deployed-model-id", vertexDeployedModelID)
		_ = grpc.SetHeader(ctx, md)
	}
	if aerr := c.admit(ctx); aerr != nil {
		if !errors.Is(aerr, errStateFault) {
			outcome = "canceled"
			return status.FromContextError(aerr).Err()
		}
		header()
		switch f := c.fault(); f {
		case FaultResetBeforeHeaders:
			outcome = "fault"
			return status.Error(codes.Unavailable, "connection reset by peer")
		case FaultHTML502:
			outcome = "fault"
			return status.Error(codes.Unavailable, "unexpected HTTP status code received from server: 502 (Bad Gateway); transport: received unexpected content-type \"text/html\"")
		default:
			outcome = "error"
			return vertexErrorFor(f, t.resource()).grpcStatus(c.retryIn).Err()
		}
	}
	header()
	f := c.fault()
	if f == FaultStreamErrorFirst {
		// The rate-limit refusal, before any message; a unary call gets
		// the same answer, the throttle's.
		outcome = "error"
		if out == nil {
			c.setFault(FaultThrottle)
		}
		return vertexErrorFor(FaultThrottle, t.resource()).grpcStatus(c.ep.scaled(1000)).Err()
	}
	midErr := func() error {
		outcome = "fault"
		switch f {
		case FaultStallMidStream:
			c.stall(ctx)
			return status.Error(codes.Unavailable, "transport is closing")
		case FaultStreamError:
			return vertexErrorFor(FaultInternal, t.resource()).grpcStatus(0).Err()
		}
		return status.Error(codes.Unavailable, "error reading from server: EOF")
	}
	if out == nil {
		if f == FaultStreamError {
			if err := v.s.sleepUntil(ctx, c.firstAt); err != nil {
				outcome = "canceled"
				return status.FromContextError(err).Err()
			}
			outcome = "error"
			c.setFault(FaultModelError)
			return vertexErrorFor(FaultModelError, t.resource()).grpcStatus(0).Err()
		}
		if err := v.s.sleepUntil(ctx, c.lastAt()); err != nil {
			outcome = "canceled"
			return status.FromContextError(err).Err()
		}
		if f == FaultMalformedBody {
			// The handler sends an answer that does not unmarshal.
			outcome = "fault"
			return nil
		}
		if f.midStream() {
			return midErr()
		}
		c.sentAll()
		return nil
	}
	for i := range c.n {
		if err := c.waitToken(ctx, i); err != nil {
			outcome = "canceled"
			return status.FromContextError(err).Err()
		}
		if f.midStream() && i == c.breakAt && f != FaultMalformedBody {
			return midErr()
		}
		m, err := msg(i)
		if err == nil && m == nil {
			continue
		}
		if err == nil {
			if f == FaultMalformedBody && i == c.breakAt {
				outcome = "fault"
				if err = out.send(vertexUnreadable(c, m)); err == nil {
					return nil
				}
			} else {
				err = out.send(m)
			}
		}
		if err != nil {
			outcome = "canceled"
			return err
		}
		c.sent(i)
	}
	if f == FaultMalformedBody {
		// A one-message answer meets its fault after its only message.
		outcome = "fault"
		m, err := msg(c.n - 1)
		if err == nil {
			err = out.send(vertexUnreadable(c, m))
		}
		return err
	}
	if f.midStream() {
		return midErr()
	}
	return nil
}

// vertexUnreadable returns m, a response message, made to fail to unmarshal
// on the client when the call's fault is malformed-body: a truncated field
// follows its fields on the wire ("proto: cannot parse invalid wire-format
// data"), as a corrupted answer would.
func vertexUnreadable[M any](c *call, m M) M {
	if pm, ok := any(m).(proto.Message); ok && c.fault() == FaultMalformedBody {
		pm.ProtoReflect().SetUnknown(protoreflect.RawFields{0xff})
	}
	return m
}

// Predict answers one prediction (the generated text) per instance.
func (v *vertexGRPC) Predict(ctx context.Context, req *aiplatformpb.PredictRequest) (*aiplatformpb.PredictResponse, error) {
	c, t, err := v.prepare(ctx, req.GetEndpoint(), "Predict", false, func() (genRequest, error) {
		b, err := instancesJSON(req.GetInstances(), req.GetParameters())
		if err != nil {
			return genRequest{}, err
		}
		return parseInstances(b)
	})
	if err != nil {
		return nil, err
	}
	if err := v.run(ctx, c, t, nil, nil); err != nil {
		return nil, err
	}
	preds := make([]*structpb.Value, max(c.gen.instances, 1))
	for i := range preds {
		preds[i] = structpb.NewStringValue(c.text())
	}
	return vertexUnreadable(c, &aiplatformpb.PredictResponse{
		Predictions:      preds,
		DeployedModelId:  vertexDeployedModelID,
		Model:            fmt.Sprintf("projects/%s/locations/%s/models/%s", t.project, t.location, t.name),
		ModelDisplayName: t.name,
		ModelVersionId:   "1",
	}), nil
}

// instancesJSON renders predict instances and parameters as the REST body.
func instancesJSON(instances []*structpb.Value, params *structpb.Value) ([]byte, error) {
	arr, err := protojson.Marshal(&structpb.ListValue{Values: instances})
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(`{"instances":`)
	b.Write(arr)
	if params != nil {
		p, err := protojson.Marshal(params)
		if err != nil {
			return nil, err
		}
		b.WriteString(`,"parameters":`)
		b.Write(p)
	}
	b.WriteString("}")
	return b.Bytes(), nil
}

// rawWire picks the answer form of a raw body.
func rawWire(c *call, model string) wire {
	if c.gen.dialect == dialectInstances {
		return &vertexPredictWire{vertexWire: vertexWire{target: vertexTarget{project: "local", location: "local", name: model}}}
	}
	return &openAIWire{chat: c.gen.dialect == dialectChat, model: model, created: time.Now().Unix()}
}

// RawPredict answers the container's raw response to HttpBody.Data.
func (v *vertexGRPC) RawPredict(ctx context.Context, req *aiplatformpb.RawPredictRequest) (*httpbody.HttpBody, error) {
	c, t, err := v.prepare(ctx, req.GetEndpoint(), "RawPredict", false, func() (genRequest, error) {
		return parseRawPredict(req.GetHttpBody().GetData())
	})
	if err != nil {
		return nil, err
	}
	if err := v.run(ctx, c, t, nil, nil); err != nil {
		return nil, err
	}
	ct, body := rawWire(c, t.name).whole(c)
	return vertexUnreadable(c, &httpbody.HttpBody{ContentType: ct, Data: body}), nil
}

// StreamRawPredict streams the container's SSE bytes, one HttpBody per event.
func (v *vertexGRPC) StreamRawPredict(req *aiplatformpb.StreamRawPredictRequest, stream aiplatformpb.PredictionService_StreamRawPredictServer) error {
	return v.serveStream(stream, func(ctx context.Context, out *stallSender) error {
		c, t, err := v.prepare(ctx, req.GetEndpoint(), "StreamRawPredict", true, func() (genRequest, error) {
			g, err := parseRawPredict(req.GetHttpBody().GetData())
			if err == nil && g.dialect == dialectInstances {
				err = errors.New("StreamRawPredict needs an OpenAI chat or completions body")
			}
			return g, err
		})
		if err != nil {
			return err
		}
		oa := &openAIWire{chat: c.gen.dialect == dialectChat, model: t.name, created: time.Now().Unix()}
		chunk := func(fn func(io.Writer) error) (any, error) {
			var b bytes.Buffer
			if err := fn(&b); err != nil {
				return nil, err
			}
			return &httpbody.HttpBody{ContentType: "text/event-stream", Data: b.Bytes()}, nil
		}
		err = v.run(ctx, c, t, out, func(i int) (any, error) {
			return chunk(func(w io.Writer) error {
				if i == 0 {
					if err := oa.begin(w, c); err != nil {
						return err
					}
				}
				return oa.token(w, c, i)
			})
		})
		if err != nil || c.fault() == FaultMalformedBody {
			return err // the client could not read on past the unreadable message
		}
		m, err := chunk(func(w io.Writer) error { return oa.end(w, c) })
		if err != nil {
			return err
		}
		return out.send(m)
	})
}

// generateContentJSON renders a GenerateContentRequest as its REST body.
func generateContentJSON(req *aiplatformpb.GenerateContentRequest) ([]byte, error) {
	return protojson.Marshal(req)
}

// GenerateContent answers the whole generation.
func (v *vertexGRPC) GenerateContent(ctx context.Context, req *aiplatformpb.GenerateContentRequest) (*aiplatformpb.GenerateContentResponse, error) {
	c, t, err := v.prepare(ctx, req.GetModel(), "GenerateContent", false, func() (genRequest, error) {
		b, err := generateContentJSON(req)
		if err != nil {
			return genRequest{}, err
		}
		return parseContents(b)
	})
	if err != nil {
		return nil, err
	}
	if err := v.run(ctx, c, t, nil, nil); err != nil {
		return nil, err
	}
	var ga geminiAnswer
	return vertexUnreadable(c, ga.message(c, -1)), nil
}

// StreamGenerateContent sends one GenerateContentResponse per token
// (thoughts left out unless includeThoughts is set; see geminiAnswer); the
// last carries the finish reasons and usage.
func (v *vertexGRPC) StreamGenerateContent(req *aiplatformpb.GenerateContentRequest, stream aiplatformpb.PredictionService_StreamGenerateContentServer) error {
	return v.serveStream(stream, func(ctx context.Context, out *stallSender) error {
		c, t, err := v.prepare(ctx, req.GetModel(), "StreamGenerateContent", true, func() (genRequest, error) {
			b, err := generateContentJSON(req)
			if err != nil {
				return genRequest{}, err
			}
			return parseContents(b)
		})
		if err != nil {
			return err
		}
		var ga geminiAnswer
		return v.run(ctx, c, t, out, func(i int) (any, error) {
			if m := ga.message(c, i); m != nil {
				return m, nil
			}
			return nil, nil // a hidden thought: nothing to send
		})
	})
}

// stallSender sends a server stream's messages, each bounded by
// Options.WriteStallTimeout. grpc-go's SendMsg waits while the client's
// flow-control window is shut, until the stream ends, and only the
// handler's return ends it: a client that reads nothing would otherwise
// hold the call, its slot and its goroutine as long as the connection
// lives. So, with the bound on, serveStream runs the handler's work in a
// goroutine of its own (the worker), which sends each message itself,
// arming the stream's timer before SendMsg and stopping it after; the
// handler's goroutine waits for the worker's end or the timer. When the
// timer fires first, the handler cancels the worker's context, ends the
// call (its record says canceled, status 504, its slot is freed) and
// returns DEADLINE_EXCEEDED, which ends the stream and with it the blocked
// SendMsg; the worker then leaves the call alone and returns. The client,
// should it read again, gets what was queued, then the status.
//
// The call passes to the handler only while the worker is in SendMsg: the
// worker stores it in sending before arming the timer, which orders its
// writes to the call's record before the handler's load; the handler takes
// it once it has received the timer's value, and from then on the worker
// touches it no more. The worker learns of that from timer.Stop: with Go
// 1.23+ timer channels, Stop reports false only when the value of the
// latest Reset has been received, and none is received after Stop reports
// true.
type stallSender struct {
	stream  grpc.ServerStream
	timeout time.Duration
	// timer bounds the message in SendMsg; nil without the bound, when
	// the handler's own goroutine sends.
	timer *time.Timer
	// c is run's call until run has ended it (the worker's own).
	c *call
	// sending is the call the handler ends if the message in SendMsg
	// stalls: c, or nil when run has already ended it.
	sending atomic.Pointer[call]
	// stalled is set by the worker when its send met the stall: the
	// handler has the call, and the worker sends nothing more.
	stalled bool
}

// errStalled is what the worker's send returns after a stall; the client
// gets the handler's status instead.
var errStalled = status.Error(codes.DeadlineExceeded, "stream stalled")

// serveStream runs body, the work of a stream handler, with the
// stallSender of stream: with Options.WriteStallTimeout > 0 in a worker
// goroutine (see stallSender), else in the handler's goroutine. body's ctx
// is the stream's context, canceled on a stall.
func (v *vertexGRPC) serveStream(stream grpc.ServerStream, body func(ctx context.Context, out *stallSender) error) error {
	out := &stallSender{stream: stream, timeout: v.s.opts.WriteStallTimeout}
	if out.timeout <= 0 {
		return body(stream.Context(), out)
	}
	ctx, cancel := context.WithCancelCause(stream.Context())
	defer cancel(nil)
	out.timer = time.NewTimer(out.timeout)
	out.timer.Stop()
	done := make(chan error, 1)
	go func() { done <- body(ctx, out) }()
	select {
	case err := <-done:
		return err
	case <-out.timer.C:
		err := status.Errorf(codes.DeadlineExceeded, "stream stalled: the client took no message for %v", out.timeout)
		cancel(err)
		if c := out.sending.Load(); c != nil {
			c.end(httpStatusOf(codes.DeadlineExceeded), "canceled")
		}
		return err
	}
}

// send sends m. With the bound on, a message the client has not let
// through within it fails with errStalled, and so does every send after.
func (o *stallSender) send(m any) error {
	if o.timer == nil {
		return o.stream.SendMsg(m)
	}
	if o.stalled {
		return errStalled
	}
	o.sending.Store(o.c)
	o.timer.Reset(o.timeout)
	err := o.stream.SendMsg(m)
	if !o.timer.Stop() {
		o.stalled = true
		return errStalled
	}
	return err
}

// end ends run's call with status and outcome, unless the handler has
// ended it on a stall.
func (o *stallSender) end(status int, outcome string) {
	if o.stalled {
		return
	}
	c := o.c
	o.c = nil
	c.end(status, outcome)
}
