package emulator

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// sageMakerAccount is the account id in emulated ARNs and messages.
const sageMakerAccount = "123456789012"

// SageMakerEndpoint is an endpoint's shape under SageMaker. The zero value
// is a plain real-time endpoint: one production variant, AllTraffic, one
// model, no inference components.
type SageMakerEndpoint struct {
	// Variants names the production variants (default: AllTraffic). A
	// request's TargetVariant must be one of them; without one, the first
	// serves it.
	Variants []string `json:"variants,omitempty"`
	// MultiModel makes the endpoint a multi-model endpoint, the only kind
	// that accepts TargetModel.
	MultiModel bool `json:"multi_model,omitempty"`
	// InferenceComponents names the inference components deployed on the
	// endpoint. When set, every InvokeEndpoint and stream request must
	// name one (InferenceComponentName); when empty, none may.
	InferenceComponents []string `json:"inference_components,omitempty"`
}

// sageMakerDefaultVariant is the variant of an endpoint that names none.
const sageMakerDefaultVariant = "AllTraffic"

func (e SageMakerEndpoint) clone() SageMakerEndpoint {
	e.Variants = slices.Clone(e.Variants)
	e.InferenceComponents = slices.Clone(e.InferenceComponents)
	return e
}

func (e SageMakerEndpoint) validate() error {
	for _, l := range []struct {
		what  string
		names []string
	}{{"variants", e.Variants}, {"inference_components", e.InferenceComponents}} {
		what, names := l.what, l.names
		for i, n := range names {
			if n == "" || strings.ContainsAny(n, "/?#: ") {
				return fmt.Errorf("%s[%d]: %q must be non-empty, without '/', '?', '#', ':' or spaces", what, i, n)
			}
			if slices.Index(names, n) != i {
				return fmt.Errorf("%s[%d]: %q is listed twice", what, i, n)
			}
		}
	}
	return nil
}

// variants returns the endpoint's production variants.
func (e SageMakerEndpoint) variants() []string {
	if len(e.Variants) == 0 {
		return []string{sageMakerDefaultVariant}
	}
	return e.Variants
}

// sageMakerErr is one SageMaker Runtime error answer.
type sageMakerErr struct {
	status int
	typ    string // X-Amzn-ErrorType
	msg    string
	// errorCode, when set, is the body's ErrorCode member beside Message
	// (a ValidationError that has one, e.g. TARGET_MODEL_HEADER_NOT_SUPPORTED).
	errorCode string
	// plain makes the answer a fronting proxy's: msg as text/plain, with
	// no X-Amzn-ErrorType and no request id.
	plain bool
	// ModelError members
	origStatus int
	origMsg    string
}

// sageMakerErrorFor maps a fault to SageMaker Runtime's answer.
//
//	throttle, quota, queue-full   400 ThrottlingException (the runtime has no quota error)
//	model-not-ready               429 ModelNotReadyException
//	model-error                   424 ModelError, OriginalStatusCode 500
//	invalid                       400 ValidationError
//	not-found                     400 ValidationError "Endpoint X of account … not found."
//	unauthenticated               403 UnrecognizedClientException
//	forbidden                     403 AccessDeniedException
//	internal                      500 InternalFailure
//	unavailable                   503 ServiceUnavailable
//	timeout                       424 ModelError, OriginalStatusCode 0 (invocation timed out)
//	payload-too-large             413 ValidationError
//	model-overloaded              424 ModelError, OriginalStatusCode 429 (TGI's "Model is overloaded")
//	model-unavailable             424 ModelError, OriginalStatusCode 503 (TorchServe's no-worker answer)
//	gateway-overflow              503 text/plain from a fronting proxy (Envoy), no X-Amzn-ErrorType
func sageMakerErrorFor(f Fault, name string) sageMakerErr {
	switch f {
	case FaultThrottle, FaultQueueFull:
		return sageMakerErr{status: 400, typ: "ThrottlingException", msg: "Rate exceeded"}
	case FaultQuota:
		return sageMakerErr{status: 400, typ: "ThrottlingException", msg: "Request rate exceeds the account's invocation quota"}
	case FaultModelNotReady:
		return sageMakerErr{status: 429, typ: "ModelNotReadyException", msg: fmt.Sprintf("Model for endpoint %s is not ready: the inference component is scaling from zero, retry later", name)}
	case FaultModelError:
		return sageMakerErr{status: 424, typ: "ModelError", origStatus: 500, origMsg: `{"error":"Internal server error in the model container"}`}
	case FaultInvalid:
		return sageMakerErr{status: 400, typ: "ValidationError", msg: "1 validation error detected: Value at 'body' failed to satisfy constraint"}
	case FaultNotFound:
		return sageMakerErr{status: 400, typ: "ValidationError", msg: fmt.Sprintf("Endpoint %s of account %s not found.", name, sageMakerAccount)}
	case FaultUnauthenticated:
		return sageMakerErr{status: 403, typ: "UnrecognizedClientException", msg: "The security token included in the request is invalid."}
	case FaultForbidden:
		return sageMakerErr{status: 403, typ: "AccessDeniedException", msg: fmt.Sprintf("User is not authorized to perform: sagemaker:InvokeEndpoint on resource: arn:aws:sagemaker:us-east-1:%s:endpoint/%s", sageMakerAccount, name)}
	case FaultUnavailable:
		return sageMakerErr{status: 503, typ: "ServiceUnavailable", msg: "Service Unavailable"}
	case FaultTimeout:
		return sageMakerErr{status: 424, typ: "ModelError", origStatus: 0, origMsg: "Your invocation timed out while waiting for a response from container primary. Review the latency metrics for each container in Amazon CloudWatch, resolve the issue, and try again."}
	case FaultPayloadTooLarge:
		return sageMakerErr{status: 413, typ: "ValidationError", msg: fmt.Sprintf("Request payload size exceeds the maximum allowed size of %d bytes", sageMakerMaxBody)}
	case FaultModelOverloaded:
		return sageMakerErr{status: 424, typ: "ModelError", origStatus: 429, origMsg: `{"error":"Model is overloaded","error_type":"overloaded"}`}
	case FaultModelUnavailable:
		return sageMakerErr{status: 424, typ: "ModelError", origStatus: 503,
			origMsg: `{"code":503,"type":"ServiceUnavailableException","message":"Model \"model\" has no worker to serve inference request. Please use scale workers API to add workers."}`}
	case FaultGatewayOverflow:
		return sageMakerErr{status: 503, plain: true, msg: gatewayOverflowText}
	}
	return sageMakerErr{status: 500, typ: "InternalFailure", msg: "An internal error occurred"}
}

// sageMakerMaxBody is the largest body InvokeEndpoint takes: 6 MB.
const sageMakerMaxBody = 6 << 20

func writeSageMakerError(w http.ResponseWriter, e sageMakerErr, name, reqID string) {
	h := w.Header()
	if e.plain {
		h.Set("Content-Type", "text/plain")
		h.Set(headerContentLength, itoa(int64(len(e.msg))))
		w.WriteHeader(e.status)
		_, _ = io.WriteString(w, e.msg)
		return
	}
	h.Set("X-Amzn-ErrorType", e.typ+":http://internal.amazon.com/coral/com.amazon.coral.service/")
	h.Set("x-amzn-RequestId", reqID)
	if e.typ == "ModelError" {
		kind := "server"
		if e.origStatus >= 400 && e.origStatus < 500 {
			kind = "client"
		}
		msg := e.msg
		if msg == "" {
			msg = fmt.Sprintf("Received %s error (%d) from primary with message %q. See https://us-east-1.console.aws.amazon.com/cloudwatch/home?region=us-east-1#logEventViewer:group=/aws/sagemaker/Endpoints/%s in account %s for more information.", kind, e.origStatus, e.origMsg, name, sageMakerAccount)
		}
		writeJSON(w, e.status, map[string]any{
			"ErrorCode":          strings.ToUpper(kind) + "_ERROR_FROM_MODEL",
			"LogStreamArn":       fmt.Sprintf("arn:aws:logs:us-east-1:%s:log-group:/aws/sagemaker/Endpoints/%s", sageMakerAccount, name),
			"Message":            msg,
			"OriginalMessage":    e.origMsg,
			"OriginalStatusCode": e.origStatus,
		})
		return
	}
	if e.errorCode != "" {
		writeJSON(w, e.status, map[string]string{"ErrorCode": e.errorCode, "Message": e.msg})
		return
	}
	writeJSON(w, e.status, map[string]string{"message": e.msg})
}

// The request headers that choose what serves an invocation.
const (
	headerTargetVariant      = "X-Amzn-SageMaker-Target-Variant"
	headerTargetModel        = "X-Amzn-SageMaker-Target-Model"
	headerInferenceComponent = "X-Amzn-SageMaker-Inference-Component"
)

// sageMakerTarget checks what an invocation targets against the endpoint's
// shape, as the service does, and returns the production variant that
// serves it. InvokeEndpointWithResponseStream has no TargetModel (the
// service drops headers its API does not define), so stream says to ignore
// one.
func sageMakerTarget(ep *endpoint, h http.Header, stream bool) (string, *sageMakerErr) {
	sm := ep.SageMaker
	variants := sm.variants()
	variant := variants[0]
	if v := h.Get(headerTargetVariant); v != "" {
		if !slices.Contains(variants, v) {
			return "", &sageMakerErr{status: 400, typ: "ValidationError",
				msg: fmt.Sprintf("The target variant %s does not exist on endpoint %s of account %s.", v, ep.Name, sageMakerAccount)}
		}
		variant = v
	}
	if h.Get(headerTargetModel) != "" && !stream && !sm.MultiModel {
		return "", &sageMakerErr{status: 400, typ: "ValidationError", errorCode: "TARGET_MODEL_HEADER_NOT_SUPPORTED",
			msg: fmt.Sprintf("Endpoint %s is not a multi-model endpoint and does not support target model header.", ep.Name)}
	}
	ic := h.Get(headerInferenceComponent)
	switch {
	case ic == "" && len(sm.InferenceComponents) > 0:
		return "", &sageMakerErr{status: 400, typ: "ValidationError", errorCode: "INFERENCE_COMPONENT_NAME_MISSING",
			msg: "Inference Component Name header is required for endpoints to which you plan to deploy inference components. Please include Inference Component Name header or consider using SageMaker models."}
	case ic != "" && len(sm.InferenceComponents) == 0:
		return "", &sageMakerErr{status: 400, typ: "ValidationError",
			msg: "Inference Component Name header is not allowed for endpoints to which you dont plan to deploy inference components. Please remove the Inference Component Name header and try again."}
	case ic != "" && !slices.Contains(sm.InferenceComponents, ic):
		return "", &sageMakerErr{status: 400, typ: "ValidationError",
			msg: fmt.Sprintf("Inference Component %s of account %s not found.", ic, sageMakerAccount)}
	}
	return variant, nil
}

// serveSageMaker serves POST /endpoints/{name}/invocations,
// /endpoints/{name}/invocations-response-stream and
// /endpoints/{name}/async-invocations.
func (s *Server) serveSageMaker(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/endpoints/")
	name, op, ok := strings.Cut(rest, "/")
	reqID := s.uuid()
	body, tooLarge, err := s.readBody(w, r, sageMakerMaxBody)
	if err != nil {
		return
	}
	read := time.Now()
	// wait holds every answer until minAnswerDelay after the body was read.
	wait := func() { _ = s.sleepUntil(r.Context(), read.Add(minAnswerDelay)) }
	answer := func(status int, typ string, body any) {
		wait()
		w.Header().Set("X-Amzn-ErrorType", typ)
		w.Header().Set("x-amzn-RequestId", reqID)
		writeJSON(w, status, body)
	}
	fail := func(e sageMakerErr) {
		wait()
		writeSageMakerError(w, e, name, reqID)
	}
	if !ok || (op != "invocations" && op != "invocations-response-stream" && op != "async-invocations") {
		answer(http.StatusNotFound, "UnknownOperationException", map[string]string{"message": "Unknown operation " + r.URL.Path})
		return
	}
	if r.Method != http.MethodPost {
		answer(http.StatusNotFound, "UnknownOperationException", map[string]string{"message": "Unknown operation " + r.Method + " " + r.URL.Path})
		return
	}
	if tooLarge {
		fail(sageMakerErrorFor(FaultPayloadTooLarge, name))
		return
	}
	ep := s.lookup(name, SageMaker)
	if ep == nil {
		fail(sageMakerErrorFor(FaultNotFound, name))
		return
	}
	if !asyncInternal(r) && !s.authorized(ep, SageMaker, r, body) {
		e := sageMakerErrorFor(FaultUnauthenticated, name)
		if r.Header.Get("Authorization") != "" {
			e.typ, e.msg = "InvalidSignatureException", "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method."
		} else {
			e.typ, e.msg = "MissingAuthenticationTokenException", "Missing Authentication Token"
		}
		fail(e)
		return
	}
	if op == "async-invocations" {
		s.serveSageMakerAsync(w, r, name, reqID, body, wait, fail)
		return
	}
	stream := op == "invocations-response-stream"
	variant, terr := sageMakerTarget(ep, r.Header, stream)
	if terr != nil {
		fail(*terr)
		return
	}
	if sid := r.Header.Get(headerSessionID); sid != "" && sid != newSessionValue && !stream && isCloseSession(body) {
		s.closeSageMakerSession(w, ep, sid, reqID, arrivalOf(r), wait)
		return
	}
	gen, perr := parseSageMakerLLM(body)
	if perr != nil {
		// The container rejects the body; SageMaker reports it as a ModelError.
		fail(sageMakerErr{status: 424, typ: "ModelError", origStatus: 422, origMsg: fmt.Sprintf(`{"error":"Failed to deserialize the JSON body into the target type: %s","error_type":"validation"}`, perr)})
		return
	}
	newSession := r.Header.Get(headerSessionID) == newSessionValue
	if newSession && stream {
		fail(sageMakerErr{status: 400, typ: "ValidationError", msg: "A stateful session cannot be created with InvokeEndpointWithResponseStream; create it with InvokeEndpoint."})
		return
	}
	gen.stream = stream
	c, err := s.newCall(ep, SageMaker, op, gen, r.Header.Get, arrivalOf(r))
	c.hold()
	if err != nil {
		c.end(http.StatusBadRequest, "error")
		e := sageMakerErrorFor(FaultInvalid, name)
		e.msg = err.Error()
		fail(e)
		return
	}
	if ca := r.Header.Get("X-Amzn-SageMaker-Custom-Attributes"); ca != "" {
		w.Header().Set("X-Amzn-SageMaker-Custom-Attributes", ca)
	}
	wr := &sageMakerWire{reqID: reqID, variant: variant, enc: eventstream.NewEncoder(), chat: gen.dialect == dialectChat, oa: &openAIWire{chat: true, model: ep.Name, created: time.Now().Unix()},
		internalFailure: strings.EqualFold(r.Header.Get(HeaderStreamError), "InternalStreamFailure")}
	if newSession {
		wr.newSession = s.uuid()
		c.rec.SessionID = wr.newSession
	} else {
		c.rec.SessionID = r.Header.Get(headerSessionID)
	}
	s.serveGen(w, r, c, wr)
}

// isCloseSession reports whether body asks to close a stateful session:
// {"requestType":"CLOSE"}, the emulated container's close request (a
// real container defines its own).
func isCloseSession(body []byte) bool {
	var b struct {
		RequestType string `json:"requestType"`
	}
	return json.Unmarshal(body, &b) == nil && strings.EqualFold(b.RequestType, "CLOSE")
}

// closeSageMakerSession answers a close request of session sid: 200 with
// X-Amzn-SageMaker-Closed-Session-Id, and a record of route
// "close-session".
func (s *Server) closeSageMakerSession(w http.ResponseWriter, ep *endpoint, sid, reqID string, arrival time.Time, wait func()) {
	seq := ep.seq.next()
	s.store(Record{ID: fmt.Sprintf("emu-%s-%d-%d", ep.Name, s.instance, seq), Seq: seq, Endpoint: ep.Name, Provider: SageMaker,
		Route: "close-session", Arrival: arrival, Status: http.StatusOK, Outcome: "ok", SessionID: sid, TimeScale: s.scale})
	wait()
	w.Header().Set("x-amzn-RequestId", reqID)
	w.Header().Set(headerClosedSessionID, sid)
	writeJSON(w, http.StatusOK, map[string]string{"closed": sid})
}

// SageMaker stateful sessions: a request whose session header is
// NEW_SESSION opens one, and the answer names it with its expiry.
const (
	headerSessionID    = "X-Amzn-SageMaker-Session-Id"
	headerNewSessionID = "X-Amzn-SageMaker-New-Session-Id"
	// headerClosedSessionID names the session a close request closed.
	headerClosedSessionID = "X-Amzn-SageMaker-Closed-Session-Id"
	newSessionValue       = "NEW_SESSION"
	// sageMakerSessionTTL is how long after its creation the emulator
	// says a session expires.
	sageMakerSessionTTL = 20 * time.Minute
)

// sageMakerAsyncMaxBody is the most an InvokeEndpointAsync request may
// carry inline (its Body); larger inputs go through InputLocation.
const sageMakerAsyncMaxBody = 128000

// serveSageMakerAsync answers InvokeEndpointAsync: exactly one of an
// inline body and X-Amzn-SageMaker-InputLocation, then 202 with the
// inference id and the S3 locations the result and failure will be
// written to, in the emulator's S3; the inference then runs in the
// background (runSageMakerAsync). wait holds the answer as every SageMaker
// answer is held (see minAnswerDelay).
func (s *Server) serveSageMakerAsync(w http.ResponseWriter, r *http.Request, name, reqID string, body []byte, wait func(), fail func(sageMakerErr)) {
	in := r.Header.Get("X-Amzn-SageMaker-InputLocation")
	switch {
	case (in == "") == (len(body) == 0):
		fail(sageMakerErr{status: 400, typ: "ValidationError", msg: "Provide exactly one of Body and InputLocation."})
		return
	case len(body) > sageMakerAsyncMaxBody:
		fail(sageMakerErr{status: 413, typ: "ValidationError", msg: fmt.Sprintf("Request payload size exceeds the maximum allowed size of %d bytes for inline asynchronous inference; use InputLocation", sageMakerAsyncMaxBody)})
		return
	}
	id := r.Header.Get("X-Amzn-SageMaker-Inference-Id")
	if id == "" {
		id = s.uuid()
	}
	out, failure := sageMakerAsyncLocations(name, id, r.Header)
	wait()
	h := w.Header()
	h.Set("x-amzn-RequestId", reqID)
	h.Set("X-Amzn-SageMaker-OutputLocation", out)
	h.Set("X-Amzn-SageMaker-FailureLocation", failure)
	writeJSON(w, http.StatusAccepted, map[string]string{"InferenceId": id})
	s.runSageMakerAsync(r.Header, name, body, in, out, failure)
}

// sageMakerAsyncBucket names the bucket, in the emulator's S3, of the
// locations async answers give.
const sageMakerAsyncBucket = "cloudinfer-emulator"

// sageMakerWire writes SageMaker answers. Streamed answers are eventstream
// PayloadPart frames whose bytes are the container's own stream: TGI
// `data:{"token":…}` events, or OpenAI chat chunks for a messages body (LMI).
type sageMakerWire struct {
	reqID   string
	variant string // the production variant that serves the call
	enc     *eventstream.Encoder
	chat    bool
	oa      *openAIWire
	// internalFailure makes the stream-error fault an InternalStreamFailure
	// exception (the service's own failure) instead of a ModelStreamError.
	internalFailure bool
	// newSession is the id of the stateful session the call opens, if any
	// (NEW_SESSION); only a successful answer names it.
	newSession string
	// tgi makes a TGI answer's token events and details.
	tgi tgiAnswer
}

func (m *sageMakerWire) successHeaders(h http.Header, c *call) {
	h.Set("x-amzn-RequestId", m.reqID)
	h.Set("X-Amzn-Invoked-Production-Variant", m.variant)
	if m.newSession != "" {
		h.Set(headerNewSessionID, m.newSession+"; Expires="+time.Now().Add(sageMakerSessionTTL).UTC().Format(time.RFC3339))
	}
	if c.gen.stream {
		h.Set("X-Amzn-SageMaker-Content-Type", "text/event-stream")
	}
}

func (m *sageMakerWire) writeError(w http.ResponseWriter, c *call, f Fault) {
	w.Header().Del(headerNewSessionID) // a failed call opens no session
	writeSageMakerError(w, sageMakerErrorFor(f, c.ep.Name), c.ep.Name, m.reqID)
}

func (m *sageMakerWire) streamContentType() string { return "application/vnd.amazon.eventstream" }

func (m *sageMakerWire) part(w io.Writer, b []byte) error {
	return m.enc.Encode(w, eventstream.Message{
		Headers: eventstream.Headers{
			{Name: ":message-type", Value: eventstream.StringValue("event")},
			{Name: ":event-type", Value: eventstream.StringValue("PayloadPart")},
			{Name: ":content-type", Value: eventstream.StringValue("application/octet-stream")},
		},
		Payload: b,
	})
}

// capture runs an SSE writer into a buffer.
func capture(fn func(io.Writer) error) []byte {
	var b strings.Builder
	_ = fn(&b)
	return []byte(b.String())
}

func (m *sageMakerWire) begin(w io.Writer, c *call) error {
	if !m.chat {
		return nil
	}
	return m.part(w, capture(func(b io.Writer) error { return m.oa.begin(b, c) }))
}

func (m *sageMakerWire) token(w io.Writer, c *call, i int) error {
	if m.chat {
		return m.part(w, capture(func(b io.Writer) error { return m.oa.token(b, c, i) }))
	}
	b, err := json.Marshal(m.tgi.event(c, i))
	if err != nil {
		return err
	}
	return m.part(w, append(append([]byte("data:"), b...), "\n\n"...))
}

func tgiFinish(f string) string {
	if f == "length" {
		return "length"
	}
	return "eos_token"
}

func (m *sageMakerWire) end(w io.Writer, c *call) error {
	if !m.chat {
		return nil
	}
	return m.part(w, capture(func(b io.Writer) error { return m.oa.end(b, c) }))
}

func (m *sageMakerWire) streamError(w io.Writer, c *call) error {
	if m.internalFailure {
		b, _ := json.Marshal(map[string]string{"Message": "Internal stream failure"})
		return m.enc.Encode(w, eventstream.Message{
			Headers: eventstream.Headers{
				{Name: ":message-type", Value: eventstream.StringValue("exception")},
				{Name: ":exception-type", Value: eventstream.StringValue("InternalStreamFailure")},
				{Name: ":content-type", Value: eventstream.StringValue("application/json")},
			},
			Payload: b,
		})
	}
	b, _ := json.Marshal(map[string]string{
		"Message":   fmt.Sprintf("Model stream for endpoint %s broke: the container closed the response stream", c.ep.Name),
		"ErrorCode": "StreamBroken",
	})
	return m.enc.Encode(w, eventstream.Message{
		Headers: eventstream.Headers{
			{Name: ":message-type", Value: eventstream.StringValue("exception")},
			{Name: ":exception-type", Value: eventstream.StringValue("ModelStreamError")},
			{Name: ":content-type", Value: eventstream.StringValue("application/json")},
		},
		Payload: b,
	})
}

// streamErrorFirst opens the stream with a ModelStreamError whose
// ErrorCode is ModelInvocationTimeExceeded: the model sent nothing within
// the invocation timeout. (SageMaker's stream has no in-band throttle:
// throttling is refused before the stream opens.)
func (m *sageMakerWire) streamErrorFirst(w io.Writer, c *call) error {
	b, _ := json.Marshal(map[string]string{
		"Message":   fmt.Sprintf("Model stream for endpoint %s timed out: the model did not respond within the invocation timeout", c.ep.Name),
		"ErrorCode": "ModelInvocationTimeExceeded",
	})
	return m.enc.Encode(w, eventstream.Message{
		Headers: eventstream.Headers{
			{Name: ":message-type", Value: eventstream.StringValue("exception")},
			{Name: ":exception-type", Value: eventstream.StringValue("ModelStreamError")},
			{Name: ":content-type", Value: eventstream.StringValue("application/json")},
		},
		Payload: b,
	})
}

func (m *sageMakerWire) malformed(w io.Writer, _ *call) error {
	// A frame whose prelude CRC is wrong.
	_, err := w.Write([]byte{0, 0, 0, 40, 0, 0, 0, 8, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8})
	return err
}

func (m *sageMakerWire) whole(c *call) (string, []byte) {
	if m.chat {
		return m.oa.whole(c)
	}
	type generated struct {
		GeneratedText string      `json:"generated_text"`
		Details       *tgiDetails `json:"details,omitempty"`
	}
	out := generated{GeneratedText: c.text()}
	if c.gen.details {
		out.Details = m.tgi.details(c)
	}
	b, _ := json.Marshal([]generated{out})
	return "application/json", b
}
