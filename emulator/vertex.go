package emulator

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
)

// Vertex AI ids reported in responses and headers.
const (
	vertexDeployedModelID = "4242424242424242424"
	vertexErrorDomain     = "aiplatform.googleapis.com"
)

// vertexErr is one google.rpc.Status answer.
type vertexErr struct {
	code   codes.Code
	reason string // ErrorInfo reason
	msg    string
	quota  bool // add a QuotaFailure detail
	// rate names the base model of a per-minute rate quota, and rateLoc
	// its region: a QuotaFailure violation and the ErrorInfo's quota
	// metadata say so.
	rate, rateLoc string
	field         string
	// retry adds a RetryInfo detail (REST; gRPC takes it as an argument).
	retry time.Duration
}

// Vertex's per-minute rate quota on generation requests, which its
// throttle answer names.
const (
	vertexRateQuotaMetric = "aiplatform.googleapis.com/generate_content_requests_per_minute_per_project_per_base_model"
	vertexRateQuotaID     = "GenerateContentRequestsPerMinutePerProjectPerBaseModel"
)

// rateViolation is the QuotaFailure violation of the rate quota.
func (e vertexErr) rateViolation() (subject, desc string, dims map[string]string) {
	return "project:demo", "Quota exceeded for " + vertexRateQuotaMetric + " with base model: " + e.rate + ".",
		map[string]string{"base_model": e.rate, "region": e.rateLoc}
}

// rateMetadata is the ErrorInfo metadata of a rate-quota refusal, as
// Google's quota system fills it.
func (e vertexErr) rateMetadata() map[string]string {
	return map[string]string{
		"service": vertexErrorDomain, "quota_metric": vertexRateQuotaMetric,
		"quota_limit": vertexRateQuotaID, "quota_location": e.rateLoc,
	}
}

// errorInfoMetadata is the metadata of e's ErrorInfo.
func (e vertexErr) errorInfoMetadata() map[string]string {
	if e.rate != "" {
		return e.rateMetadata()
	}
	return map[string]string{"service": vertexErrorDomain}
}

// vertexErrorFor maps a fault to Vertex AI's answer (REST and gRPC):
//
//	throttle              RESOURCE_EXHAUSTED (429), ErrorInfo RATE_LIMIT_EXCEEDED + QuotaFailure of a
//	                      per-minute quota (GenerateContentRequestsPerMinutePerProjectPerBaseModel)
//	queue-full            RESOURCE_EXHAUSTED (429), ErrorInfo RATE_LIMIT_EXCEEDED
//	quota                 RESOURCE_EXHAUSTED (429), ErrorInfo QUOTA_EXCEEDED + QuotaFailure
//	model-overloaded      RESOURCE_EXHAUSTED (429), the container's 429 relayed, no details
//	model-unavailable     UNAVAILABLE (503), the container's 503 relayed, no details
//	gateway-overflow      (REST: the proxy's plain-text 503; gRPC: UNAVAILABLE as grpc-go reports it)
//	model-not-ready       UNAVAILABLE (503), ErrorInfo MODEL_NOT_READY
//	model-error           FAILED_PRECONDITION (400), ErrorInfo MODEL_ERROR
//	invalid               INVALID_ARGUMENT (400), ErrorInfo INVALID_INPUT + BadRequest
//	not-found             NOT_FOUND (404), ErrorInfo ENDPOINT_NOT_FOUND
//	unauthenticated       UNAUTHENTICATED (401), ErrorInfo ACCESS_TOKEN_INVALID
//	forbidden             PERMISSION_DENIED (403), ErrorInfo IAM_PERMISSION_DENIED
//	internal              INTERNAL (500)
//	unavailable           UNAVAILABLE (503)
//	timeout               DEADLINE_EXCEEDED (504)
//	payload-too-large     INVALID_ARGUMENT (400), ErrorInfo PAYLOAD_TOO_LARGE
func vertexErrorFor(f Fault, resource string) vertexErr {
	switch f {
	case FaultThrottle:
		model, loc := resource[strings.LastIndexByte(resource, '/')+1:], "us-central1"
		if t, ok := parseVertexResource(resource); ok {
			loc = t.location
		}
		return vertexErr{code: codes.ResourceExhausted, reason: "RATE_LIMIT_EXCEEDED", rate: model, rateLoc: loc,
			msg: "Quota exceeded for " + vertexRateQuotaMetric + " with base model: " + model + ". Please submit a quota increase request."}
	case FaultQueueFull:
		return vertexErr{code: codes.ResourceExhausted, reason: "RATE_LIMIT_EXCEEDED", msg: "Resource exhausted, please try again later. Please refer to https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 for more details."}
	case FaultModelOverloaded:
		return vertexErr{code: codes.ResourceExhausted, msg: "The model server returned an error (status 429): {\"error\":\"Model is overloaded, retry later\"}"}
	case FaultModelUnavailable:
		return vertexErr{code: codes.Unavailable, msg: "The model server returned an error (status 503): {\"error\":\"The engine is temporarily unable to take requests\"}"}
	case FaultGatewayOverflow:
		return vertexErr{code: codes.Unavailable, msg: vertexGatewayOverflowGRPC}
	case FaultQuota:
		return vertexErr{code: codes.ResourceExhausted, reason: "QUOTA_EXCEEDED", quota: true, msg: "Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model with base model: " + resource + ". Please submit a quota increase request."}
	case FaultModelNotReady:
		return vertexErr{code: codes.Unavailable, reason: "MODEL_NOT_READY", msg: "The deployed model of " + resource + " is not ready: replicas are scaling up. Please retry."}
	case FaultModelError:
		return vertexErr{code: codes.FailedPrecondition, reason: "MODEL_ERROR", msg: "The model server returned an error: {\"error\":\"Internal server error in the model container\"}"}
	case FaultInvalid:
		return vertexErr{code: codes.InvalidArgument, reason: "INVALID_INPUT", msg: "Request contains an invalid argument.", field: "instances"}
	case FaultNotFound:
		return vertexErr{code: codes.NotFound, reason: "ENDPOINT_NOT_FOUND", msg: fmt.Sprintf("Endpoint `%s` not found.", resource)}
	case FaultUnauthenticated:
		return vertexErr{code: codes.Unauthenticated, reason: "ACCESS_TOKEN_INVALID", msg: "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential."}
	case FaultForbidden:
		return vertexErr{code: codes.PermissionDenied, reason: "IAM_PERMISSION_DENIED", msg: fmt.Sprintf("Permission 'aiplatform.endpoints.predict' denied on resource '%s' (or it may not exist).", resource)}
	case FaultUnavailable:
		return vertexErr{code: codes.Unavailable, msg: "The service is currently unavailable."}
	case FaultTimeout:
		return vertexErr{code: codes.DeadlineExceeded, msg: "Deadline exceeded while waiting for the model server."}
	case FaultPayloadTooLarge:
		return vertexErr{code: codes.InvalidArgument, reason: "PAYLOAD_TOO_LARGE", msg: fmt.Sprintf("Request payload size exceeds the limit: %d bytes.", vertexMaxBody)}
	}
	return vertexErr{code: codes.Internal, msg: "Internal error encountered."}
}

// vertexGatewayOverflowGRPC is what grpc-go reports for a fronting proxy's
// plain-text 503 (gateway-overflow): the gRPC server cannot send a non-gRPC
// answer, so it sends the status the client would make of one.
var vertexGatewayOverflowGRPC = fmt.Sprintf("unexpected HTTP status code received from server: 503 (Service Unavailable); transport: received unexpected content-type %q\ndata: %q",
	"text/plain", gatewayOverflowText)

// httpStatusOf maps a gRPC code to its HTTP status (google.rpc.Code mapping).
func httpStatusOf(c codes.Code) int {
	switch c {
	case codes.OK:
		return 200
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange:
		return 400
	case codes.Unauthenticated:
		return 401
	case codes.PermissionDenied:
		return 403
	case codes.NotFound:
		return 404
	case codes.AlreadyExists, codes.Aborted:
		return 409
	case codes.ResourceExhausted:
		return 429
	case codes.Canceled:
		return 499
	case codes.Unimplemented:
		return 501
	case codes.Unavailable:
		return 503
	case codes.DeadlineExceeded:
		return 504
	}
	return 500
}

// rpcStatusName is the google.rpc.Code enum name of c (e.g. INVALID_ARGUMENT).
func rpcStatusName(c codes.Code) string {
	s := c.String()
	var b strings.Builder
	for i, r := range s {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	up := strings.ToUpper(b.String())
	if up == "CANCELED" {
		return "CANCELLED"
	}
	return up
}

// restBody renders e as the REST error body.
func (e vertexErr) restBody() map[string]any {
	var details []map[string]any
	if e.reason != "" {
		details = append(details, map[string]any{
			"@type":  "type.googleapis.com/google.rpc.ErrorInfo",
			"reason": e.reason, "domain": vertexErrorDomain,
			"metadata": e.errorInfoMetadata(),
		})
	}
	if e.quota {
		details = append(details, map[string]any{
			"@type": "type.googleapis.com/google.rpc.QuotaFailure",
			"violations": []map[string]string{{
				"subject":     "aiplatform.googleapis.com/online_prediction_requests_per_base_model",
				"description": e.msg,
			}},
		})
	}
	if e.rate != "" {
		subject, desc, dims := e.rateViolation()
		details = append(details, map[string]any{
			"@type": "type.googleapis.com/google.rpc.QuotaFailure",
			"violations": []map[string]any{{
				"subject": subject, "description": desc,
				"apiService": vertexErrorDomain, "quotaMetric": vertexRateQuotaMetric, "quotaId": vertexRateQuotaID,
				"quotaDimensions": dims,
			}},
		})
	}
	if e.retry > 0 {
		details = append(details, map[string]any{
			"@type":      "type.googleapis.com/google.rpc.RetryInfo",
			"retryDelay": strconv.FormatFloat(e.retry.Seconds(), 'f', -1, 64) + "s",
		})
	}
	if e.field != "" {
		details = append(details, map[string]any{
			"@type":           "type.googleapis.com/google.rpc.BadRequest",
			"fieldViolations": []map[string]string{{"field": e.field, "description": e.msg}},
		})
	}
	body := map[string]any{"code": httpStatusOf(e.code), "message": e.msg, "status": rpcStatusName(e.code)}
	if details != nil {
		body["details"] = details
	}
	return map[string]any{"error": body}
}

func writeVertexError(w http.ResponseWriter, e vertexErr) {
	writeJSON(w, httpStatusOf(e.code), e.restBody())
}

// vertexErrorWriter is the errorWriter of the Vertex REST routes.
func vertexErrorWriter(resource string) errorWriter {
	return func(w http.ResponseWriter, f Fault, _, msg string) {
		writeVertexFault(w, f, resource, msg, 0)
	}
}

// writeVertexFault answers fault f on a REST route: the google.rpc.Status
// JSON (msg, when set, replaces its message; retry adds a RetryInfo), or
// for gateway-overflow the fronting proxy's plain-text 503.
func writeVertexFault(w http.ResponseWriter, f Fault, resource, msg string, retry time.Duration) {
	if f == FaultGatewayOverflow {
		writeGatewayOverflow(w)
		return
	}
	e := vertexErrorFor(f, resource)
	if msg != "" {
		e.msg = msg
	}
	e.retry = retry
	writeVertexError(w, e)
}

// vertexTarget is a parsed Vertex resource path.
type vertexTarget struct {
	project, location string
	publisher         string // "" for endpoints
	name              string // endpoint id or model id
	method            string
}

func (t vertexTarget) resource() string {
	if t.publisher != "" {
		return fmt.Sprintf("projects/%s/locations/%s/publishers/%s/models/%s", t.project, t.location, t.publisher, t.name)
	}
	return fmt.Sprintf("projects/%s/locations/%s/endpoints/%s", t.project, t.location, t.name)
}

// parseVertexResource parses "projects/p/locations/l/endpoints/e" or
// "projects/p/locations/l/publishers/pub/models/m", with an optional
// ":method" suffix.
func parseVertexResource(path string) (vertexTarget, bool) {
	var t vertexTarget
	path, t.method, _ = strings.Cut(path, ":")
	f := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(f) == 6 && f[0] == "projects" && f[2] == "locations" && f[4] == "endpoints":
		t.project, t.location, t.name = f[1], f[3], f[5]
	case len(f) == 8 && f[0] == "projects" && f[2] == "locations" && f[4] == "publishers" && f[6] == "models":
		t.project, t.location, t.publisher, t.name = f[1], f[3], f[5], f[7]
	default:
		return t, false
	}
	for _, s := range []string{t.project, t.location, t.name} {
		if s == "" {
			return t, false
		}
	}
	return t, true
}

// parseRawPredict reads a rawPredict body: the container's own body, or the
// REST GAPIC form {"endpoint":…,"httpBody":{"contentType":…,"data":<base64>}}.
func parseRawPredict(body []byte) (genRequest, error) {
	var probe map[string]json.RawMessage
	if err := decodeObject(body, &probe); err != nil {
		return genRequest{}, err
	}
	if hb, ok := probe["httpBody"]; ok {
		var h struct {
			ContentType string `json:"contentType"`
			Data        string `json:"data"`
		}
		if err := json.Unmarshal(hb, &h); err != nil {
			return genRequest{}, fmt.Errorf("httpBody: %s", jsonErrText(err))
		}
		data, err := decodeBase64(h.Data)
		if err != nil {
			return genRequest{}, fmt.Errorf("httpBody.data: %w", err)
		}
		body = data
		probe = nil
		if err := decodeObject(body, &probe); err != nil {
			return genRequest{}, fmt.Errorf("httpBody.data: %w", err)
		}
	}
	switch {
	case probe["messages"] != nil:
		return parseChat(body)
	case probe["instances"] != nil:
		return parseInstances(body)
	case probe["prompt"] != nil:
		return parseCompletion(body)
	}
	return genRequest{}, fmt.Errorf("the model server expects an OpenAI chat body {\"messages\":…}, a completions body {\"prompt\":…} or {\"instances\":[…]}")
}

// serveVertexREST serves POST /v1/projects/{p}/locations/{l}/{endpoints/{e}|publishers/{pub}/models/{m}}:{method}.
func (s *Server) serveVertexREST(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/v1beta1/"), "/v1/")
	t, ok := parseVertexResource(path)
	res := t.resource()
	fail := func(f Fault, msg string) { vertexErrorWriter(res)(w, f, t.name, msg) }
	if !ok || t.method == "" {
		writeVertexError(w, vertexErr{code: codes.NotFound, msg: "Unknown path " + r.URL.Path})
		return
	}
	if r.Method != http.MethodPost {
		writeVertexError(w, vertexErr{code: codes.Unimplemented, msg: "Method " + r.Method + " is not supported on " + r.URL.Path})
		return
	}
	switch t.method {
	case "predict", "rawPredict", "streamRawPredict", "generateContent", "streamGenerateContent", "serverStreamingPredict":
	default:
		writeVertexError(w, vertexErr{code: codes.NotFound, msg: "Method :" + t.method + " is not served by the emulator"})
		return
	}
	body, tooLarge, err := s.readBody(w, r, vertexMaxBody)
	if err != nil {
		return
	}
	if tooLarge {
		fail(FaultPayloadTooLarge, "")
		return
	}
	ep := s.lookup(t.name, Vertex)
	if ep == nil {
		fail(FaultNotFound, "")
		return
	}
	if !s.authorized(ep, Vertex, r, body) {
		fail(FaultUnauthenticated, "")
		return
	}
	var gen genRequest
	var perr error
	switch t.method {
	case "predict":
		gen, perr = parseInstances(body)
	case "serverStreamingPredict":
		gen, perr = parseStreamingPredictJSON(body)
	case "rawPredict", "streamRawPredict":
		gen, perr = parseRawPredict(body)
		if perr == nil && t.method == "streamRawPredict" && gen.dialect == dialectInstances {
			perr = fmt.Errorf("streamRawPredict needs an OpenAI chat or completions body with \"stream\": true")
		}
	default:
		gen, perr = parseContents(body)
	}
	if perr != nil {
		e := vertexErrorFor(FaultInvalid, res)
		e.msg = "Invalid request: " + perr.Error()
		writeVertexError(w, e)
		return
	}
	sse := r.URL.Query().Get("alt") == "sse"
	switch t.method {
	case "predict", "generateContent":
		gen.stream = false
	case "streamRawPredict":
		gen.stream = true
	case "streamGenerateContent", "serverStreamingPredict":
		gen.stream = true
	}
	c, err := s.newCall(ep, Vertex, t.method, gen, r.Header.Get, arrivalOf(r))
	if err != nil {
		c.end(http.StatusBadRequest, "error")
		fail(FaultInvalid, err.Error())
		return
	}
	errw := vertexErrorWriter(res)
	vw := vertexWire{target: t, errw: errw}
	switch {
	case t.method == "serverStreamingPredict":
		s.serveGen(w, r, c, &vertexSSPWire{vertexRESTStream{vertexWire: vw, sse: sse}})
	case gen.dialect == dialectChat || gen.dialect == dialectCompletion:
		s.serveGen(w, r, c, &vertexRawWire{vertexWire: vw, oa: &openAIWire{chat: gen.dialect == dialectChat, model: t.name, created: time.Now().Unix(), errw: errw}})
	case gen.dialect == dialectInstances:
		s.serveGen(w, r, c, &vertexPredictWire{vertexWire: vw})
	default:
		s.serveGen(w, r, c, &vertexContentWire{vertexRESTStream: vertexRESTStream{vertexWire: vw, sse: sse}})
	}
}

// vertexWire holds what every Vertex REST answer shares.
type vertexWire struct {
	target vertexTarget
	errw   errorWriter
}

func (v *vertexWire) successHeaders(h http.Header, _ *call) {
	h.Set("X-Vertex-AI-Endpoint-Id", v.target.name)
	h.Set("X-Vertex-AI-Deployed-Model-Id", vertexDeployedModelID)
}

func (v *vertexWire) writeError(w http.ResponseWriter, c *call, f Fault) {
	writeVertexFault(w, f, v.target.resource(), "", c.retryIn)
}

// streamErrorFirstBody is the in-band error that opens a stream under
// stream-error-first: the rate-limit refusal, {"error":{…}}.
func (v *vertexWire) streamErrorFirstBody(c *call) []byte {
	e := vertexErrorFor(FaultThrottle, v.target.resource())
	e.retry = c.ep.scaled(1000)
	b, _ := json.Marshal(e.restBody())
	return b
}

// streamError writes the mid-stream error: an SSE data event, or (in a JSON
// array stream) one more element, holding {"error":{…}}.
func (v *vertexWire) streamErrorBody() []byte {
	b, _ := json.Marshal(vertexErrorFor(FaultInternal, v.target.resource()).restBody())
	return b
}

// vertexRawWire answers rawPredict / streamRawPredict with the container's
// OpenAI-compatible body or SSE stream.
type vertexRawWire struct {
	vertexWire
	oa *openAIWire
}

func (v *vertexRawWire) streamContentType() string               { return v.oa.streamContentType() }
func (v *vertexRawWire) begin(w io.Writer, c *call) error        { return v.oa.begin(w, c) }
func (v *vertexRawWire) token(w io.Writer, c *call, i int) error { return v.oa.token(w, c, i) }
func (v *vertexRawWire) end(w io.Writer, c *call) error          { return v.oa.end(w, c) }
func (v *vertexRawWire) streamError(w io.Writer, c *call) error  { return v.oa.streamError(w, c) }
func (v *vertexRawWire) malformed(w io.Writer, c *call) error    { return v.oa.malformed(w, c) }
func (v *vertexRawWire) whole(c *call) (string, []byte)          { return v.oa.whole(c) }

// streamErrorFirst relays the container's own in-band error event.
func (v *vertexRawWire) streamErrorFirst(w io.Writer, c *call) error {
	return v.oa.streamErrorFirst(w, c)
}

// vertexPredictWire answers :predict (and rawPredict of an instances body)
// with {"predictions":[…],"deployedModelId":…,"model":…}; one prediction
// (the generated text) per instance.
type vertexPredictWire struct{ vertexWire }

func (v *vertexPredictWire) streamContentType() string         { return "application/json" }
func (v *vertexPredictWire) begin(io.Writer, *call) error      { return nil }
func (v *vertexPredictWire) token(io.Writer, *call, int) error { return nil }
func (v *vertexPredictWire) end(io.Writer, *call) error        { return nil }
func (v *vertexPredictWire) streamError(w io.Writer, _ *call) error {
	_, err := w.Write(v.streamErrorBody())
	return err
}
func (v *vertexPredictWire) malformed(w io.Writer, _ *call) error {
	_, err := io.WriteString(w, `{"predictions":["`)
	return err
}

func (v *vertexPredictWire) whole(c *call) (string, []byte) {
	preds := make([]string, max(c.gen.instances, 1))
	for i := range preds {
		preds[i] = c.text()
	}
	b, _ := json.Marshal(map[string]any{
		"predictions":      preds,
		"deployedModelId":  vertexDeployedModelID,
		"model":            fmt.Sprintf("projects/%s/locations/%s/models/%s", v.target.project, v.target.location, v.target.name),
		"modelDisplayName": v.target.name,
		"modelVersionId":   "1",
	})
	return "application/json", b
}

// vertexRESTStream is the framing of Vertex's REST streams: with
// alt=sse, `data: {…}` events and no [DONE]; else a streamed JSON array
// `[{…}\n,\r\n{…}]`. generateContent and serverStreamingPredict share it.
type vertexRESTStream struct {
	vertexWire
	sse bool
	// elements counts the stream's elements written so far.
	elements int
}

func (v *vertexRESTStream) streamContentType() string {
	if v.sse {
		return "text/event-stream"
	}
	return "application/json; charset=UTF-8"
}

func (v *vertexRESTStream) begin(w io.Writer, _ *call) error {
	if v.sse {
		return nil
	}
	_, err := io.WriteString(w, "[")
	return err
}

func (v *vertexRESTStream) element(w io.Writer, b []byte) error {
	v.elements++
	if v.sse {
		_, err := w.Write(append(append([]byte("data: "), b...), "\r\n\r\n"...))
		return err
	}
	if v.elements > 1 {
		if _, err := io.WriteString(w, "\n,\r\n"); err != nil {
			return err
		}
	}
	_, err := w.Write(b)
	return err
}

func (v *vertexRESTStream) end(w io.Writer, _ *call) error {
	if v.sse {
		return nil
	}
	_, err := io.WriteString(w, "]")
	return err
}

// streamError ends the stream with an error element, {"error":{…}}.
func (v *vertexRESTStream) streamError(w io.Writer, c *call) error {
	if err := v.element(w, v.streamErrorBody()); err != nil {
		return err
	}
	return v.end(w, c)
}

// streamErrorFirst sends the rate-limit refusal as the stream's only
// element: an SSE data event, or a one-element JSON array.
func (v *vertexRESTStream) streamErrorFirst(w io.Writer, c *call) error {
	if err := v.begin(w, c); err != nil {
		return err
	}
	if err := v.element(w, v.streamErrorFirstBody(c)); err != nil {
		return err
	}
	return v.end(w, c)
}

// vertexContentWire answers generateContent and streamGenerateContent
// in vertexRESTStream's framing. The messages are the gRPC route's
// (geminiAnswer), in their JSON form.
type vertexContentWire struct {
	vertexRESTStream
	ga geminiAnswer
}

// token writes token i's message; nothing for a hidden thought.
func (v *vertexContentWire) token(w io.Writer, c *call, i int) error {
	m := v.ga.message(c, i)
	if m == nil {
		return nil
	}
	b, err := geminiJSON(m)
	if err != nil {
		return err
	}
	return v.element(w, b)
}

func (v *vertexContentWire) malformed(w io.Writer, _ *call) error {
	if v.sse {
		_, err := io.WriteString(w, "data: {\"candidates\": [{\"content\": {\"parts\r\n\r\n")
		return err
	}
	_, err := io.WriteString(w, "\n,\r\n{\"candidates\": [{\"content\"")
	return err
}

func (v *vertexContentWire) whole(c *call) (string, []byte) {
	b, _ := geminiJSON(v.ga.message(c, -1))
	return "application/json; charset=UTF-8", b
}

// decodeBase64 accepts standard or URL-safe base64, padded or not.
func decodeBase64(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, fmt.Errorf("not base64")
}
