package emulator

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
)

// azureDeployment is the name of every emulated endpoint's one deployment.
const azureDeployment = "default"

// azureErr is one Azure ML answer.
type azureErr struct {
	status     int
	code       string
	msg        string
	origStatus int    // 424: ms-azureml-model-error-statuscode
	reason     string // 424: ms-azureml-model-error-reason
	overflow   bool   // the fronting proxy's plain-text 503 (writeGatewayOverflow), not the service's answer
}

// azureErrorFor maps a fault to a managed online endpoint's /score answer:
//
//	throttle          429 TooManyRequests (Retry-After)
//	quota             429 QuotaExceeded
//	queue-full        429 TooManyPendingRequests (more than 2 × max_concurrent_requests_per_instance × instances)
//	model-not-ready   503 model_not_ready
//	model-error       424, ms-azureml-model-error-statuscode 500, -reason model_error
//	model-overloaded  424, ms-azureml-model-error-statuscode 429, -reason model_overloaded
//	model-unavailable 424, ms-azureml-model-error-statuscode 503, -reason model_unavailable
//	gateway-overflow  503, text/plain "upstream connect error or disconnect/reset before headers. reset reason: overflow"
//	invalid           400 BadRequest
//	not-found         404 DeploymentNotFound
//	unauthenticated   401 Unauthorized
//	forbidden         403 Forbidden
//	internal          500 InternalServerError
//	unavailable       503 ServiceUnavailable
//	timeout           408 RequestTimeout (request_timeout_ms exceeded)
//	payload-too-large 413 PayloadTooLarge
//
// Bodies are {"error":{"code":…,"message":…}} except 424, whose body is
// {"message":…} and whose details travel in the ms-azureml-model-error-*
// headers, and gateway-overflow's plain text.
func azureErrorFor(f Fault, name string) azureErr {
	switch f {
	case FaultThrottle:
		return azureErr{status: 429, code: "TooManyRequests", msg: "Rate limit exceeded for the endpoint, retry later"}
	case FaultQuota:
		return azureErr{status: 429, code: "QuotaExceeded", msg: "The subscription's request quota for this endpoint is exhausted"}
	case FaultQueueFull:
		return azureErr{status: 429, code: "TooManyPendingRequests", msg: "Too many pending requests: more than 2 x max_concurrent_requests_per_instance x instance_count"}
	case FaultModelNotReady:
		return azureErr{status: 503, code: "model_not_ready", msg: fmt.Sprintf("Deployment %s of endpoint %s is not ready: the model is being loaded", azureDeployment, name)}
	case FaultModelError:
		return azureErr{status: 424, msg: "An unexpected error occurred in scoring script. Check the logs for more info.", origStatus: 500, reason: "model_error"}
	case FaultModelOverloaded:
		return azureErr{status: 424, msg: "Model is overloaded", origStatus: 429, reason: "model_overloaded"}
	case FaultModelUnavailable:
		return azureErr{status: 424, msg: "The model server is temporarily unavailable", origStatus: 503, reason: "model_unavailable"}
	case FaultGatewayOverflow:
		return azureErr{status: 503, msg: gatewayOverflowText, overflow: true}
	case FaultInvalid:
		return azureErr{status: 400, code: "BadRequest", msg: "The request is invalid"}
	case FaultNotFound:
		return azureErr{status: 404, code: "DeploymentNotFound", msg: fmt.Sprintf("No valid deployments to route to for endpoint %s. Please check that the endpoint has at least one deployment with positive weight values or use a deployment specific header to route.", name)}
	case FaultUnauthenticated:
		return azureErr{status: 401, code: "Unauthorized", msg: "Key or token is missing, expired or invalid"}
	case FaultForbidden:
		return azureErr{status: 403, code: "Forbidden", msg: "The caller is not allowed to score on this endpoint"}
	case FaultUnavailable:
		return azureErr{status: 503, code: "ServiceUnavailable", msg: "The service is temporarily unavailable"}
	case FaultTimeout:
		return azureErr{status: 408, code: "RequestTimeout", msg: "Request timed out: the model exceeded request_timeout_ms"}
	case FaultPayloadTooLarge:
		return azureErr{status: 413, code: "PayloadTooLarge", msg: "Request payload exceeds the size limit"}
	}
	return azureErr{status: 500, code: "InternalServerError", msg: "Internal server error"}
}

func writeAzureError(w http.ResponseWriter, e azureErr) {
	if e.overflow {
		writeGatewayOverflow(w)
		return
	}
	if e.status == http.StatusFailedDependency {
		w.Header().Set("ms-azureml-model-error-statuscode", itoa(int64(e.origStatus)))
		w.Header().Set("ms-azureml-model-error-reason", e.reason)
		writeJSON(w, e.status, map[string]string{"message": e.msg})
		return
	}
	writeJSON(w, e.status, map[string]map[string]string{"error": {"code": e.code, "message": e.msg}})
}

// writeAzureScoreError is the errorWriter of /score.
func writeAzureScoreError(w http.ResponseWriter, f Fault, name, msg string) {
	e := azureErrorFor(f, name)
	if msg != "" {
		e.msg = msg
	}
	writeAzureError(w, e)
}

// writeAzureServerlessError writes the flat error body of serverless
// (model inference) deployments: {"status":…,"code":…,"message":…,"detail":{}},
// with azureErrorFor's status and code except
//
//	invalid            422 invalid_payload
//	model-error        500 model_error
//	model-overloaded   429 TooManyRequests (the model's own back-pressure)
//	model-unavailable  503 ServiceUnavailable
//	gateway-overflow   503, the proxy's plain text as on /score
func writeAzureServerlessError(w http.ResponseWriter, f Fault, name, msg string) {
	e := azureErrorFor(f, name)
	code := e.code
	switch f {
	case FaultInvalid:
		e.status, code = 422, "invalid_payload"
	case FaultModelError:
		e.status, code = 500, "model_error"
	case FaultModelOverloaded:
		e.status, code = 429, "TooManyRequests"
	case FaultModelUnavailable:
		e.status, code = 503, "ServiceUnavailable"
	}
	if msg != "" {
		e.msg = msg
	}
	if e.overflow {
		writeGatewayOverflow(w)
		return
	}
	writeJSON(w, e.status, map[string]any{"status": e.status, "code": code, "message": e.msg, "detail": map[string]any{}})
}

// azureChatParams are the body members the model inference API defines
// for chat completions; others are "extra parameters".
var azureChatParams = map[string]bool{
	"messages": true, "model": true, "stream": true, "max_tokens": true, "temperature": true,
	"top_p": true, "stop": true, "frequency_penalty": true, "presence_penalty": true,
	"response_format": true, "seed": true, "tools": true, "tool_choice": true,
}

// azureExtraParams returns the body's members the model inference API does
// not define, sorted, when the request's extra-parameters header refuses
// them: absent or "error" (the API's default); "drop" and "pass-through"
// accept them. A body that is no JSON object has none (it fails parsing
// later).
func azureExtraParams(body []byte, mode string) []string {
	if m := strings.ToLower(strings.TrimSpace(mode)); m == "drop" || m == "pass-through" {
		return nil
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(body, &members) != nil {
		return nil
	}
	var extra []string
	for k := range members {
		if !azureChatParams[k] {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	return extra
}

// writeAzureExtraParams answers a serverless chat request that carries
// extra parameters the extra-parameters header does not accept.
func writeAzureExtraParams(w http.ResponseWriter, extra []string) {
	msg := fmt.Sprintf("Extra parameters %q are not allowed when extra-parameters is not set or set to be 'error'. Set extra-parameters to 'drop' or 'pass-through'.", extra)
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"status": http.StatusUnprocessableEntity,
		"code": "parameter_not_supported", "message": msg, "detail": map[string]any{"extra_parameters": extra}})
}

// serveAzureMLHost serves Azure ML's own URL shape: /score,
// /chat/completions and /info at the root of
// https://{endpoint}.{region}.inference.ml.azure.com, the endpoint being
// the Host's first label. A Host that is an IP address or localhost (the
// emulator's own address, given as a scoring URI) names no endpoint: the
// 404 says which URLs do.
func (s *Server) serveAzureMLHost(w http.ResponseWriter, r *http.Request) {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" || net.ParseIP(host) != nil || strings.EqualFold(host, "localhost") {
		w.Header().Set("x-request-id", s.uuid())
		root := "http://" + r.Host
		if r.TLS != nil {
			root = "https://" + r.Host
		}
		writeAzureError(w, azureErr{status: http.StatusNotFound, code: "NotFound", msg: fmt.Sprintf(
			"No endpoint is named by host %s: use %s/azureml/{endpoint}/score, %s/azureml/{endpoint}/chat/completions, "+
				"or a Host of {endpoint}.{region}.inference.ml.azure.com", r.Host, root, root)})
		return
	}
	name, _, _ := strings.Cut(host, ".")
	r.URL.Path = "/azureml/" + name + r.URL.Path
	s.serveAzureML(w, r)
}

// serveAzureML serves /azureml/{endpoint}/score, the serverless
// /azureml/{endpoint}/chat/completions (also …/v1/chat/completions) and
// the model inference API's GET /azureml/{endpoint}/info.
func (s *Server) serveAzureML(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/azureml/")
	name, sub, _ := strings.Cut(rest, "/")
	h := w.Header()
	h.Set("x-request-id", s.uuid())
	if id := r.Header.Get("x-ms-client-request-id"); id != "" {
		h.Set("x-ms-client-request-id", id)
	}
	ep := s.lookup(name, AzureML)
	switch sub {
	case "score":
	case "chat/completions", "v1/chat/completions":
		if ep == nil {
			writeAzureServerlessError(w, FaultNotFound, name, "")
			return
		}
		s.serveOpenAIGen(w, r, ep, AzureML, true, writeAzureServerlessError)
		return
	case "info":
		s.serveAzureInfo(w, r, ep, name)
		return
	default:
		writeAzureError(w, azureErr{status: 404, code: "NotFound", msg: "Unknown path: use /azureml/{endpoint}/score, /azureml/{endpoint}/chat/completions or /azureml/{endpoint}/info"})
		return
	}
	if r.Method != http.MethodPost {
		methodNotAllowed(w, AzureML, http.MethodPost)
		return
	}
	body, tooLarge, err := s.readBody(w, r, maxBody)
	if err != nil {
		return
	}
	if tooLarge {
		writeAzureError(w, azureErrorFor(FaultPayloadTooLarge, name))
		return
	}
	if ep == nil {
		writeAzureError(w, azureErrorFor(FaultNotFound, name))
		return
	}
	if !s.authorized(ep, AzureML, r, body) {
		writeAzureError(w, azureErrorFor(FaultUnauthenticated, name))
		return
	}
	if d := r.Header.Get("azureml-model-deployment"); d != "" && d != azureDeployment && d != name {
		writeAzureError(w, azureErr{status: 404, code: "DeploymentNotFound", msg: fmt.Sprintf("Deployment %s not found for endpoint %s", d, name)})
		return
	}
	gen, perr := parseAMLScore(body)
	if perr != nil {
		// The scoring script rejects the input; the endpoint reports a 424.
		writeAzureError(w, azureErr{status: 424, msg: "Bad request to the model: " + perr.Error(), origStatus: 400, reason: "invalid_input"})
		return
	}
	if gen.dialect != dialectChat {
		gen.stream = false
	}
	c, err := s.newCall(ep, AzureML, "score", gen, r.Header.Get, arrivalOf(r))
	if err != nil {
		c.end(http.StatusBadRequest, "error")
		writeAzureScoreError(w, FaultInvalid, name, err.Error())
		return
	}
	s.serveGen(w, r, c, &azureScoreWire{chat: gen.dialect == dialectChat,
		oa: &openAIWire{chat: true, model: name, created: time.Now().Unix(), errw: writeAzureScoreError}})
}

// azureScoreWire answers /score: {"output": text} for the model catalog's
// input_data form; an OpenAI chat completion (or its SSE stream) for a
// messages body.
type azureScoreWire struct {
	chat bool
	oa   *openAIWire
}

func (a *azureScoreWire) successHeaders(h http.Header, _ *call) {
	h.Set("azureml-model-deployment", azureDeployment)
}

func (a *azureScoreWire) writeError(w http.ResponseWriter, c *call, f Fault) {
	writeAzureScoreError(w, f, c.ep.Name, "")
}

func (a *azureScoreWire) streamContentType() string               { return a.oa.streamContentType() }
func (a *azureScoreWire) begin(w io.Writer, c *call) error        { return a.oa.begin(w, c) }
func (a *azureScoreWire) token(w io.Writer, c *call, i int) error { return a.oa.token(w, c, i) }
func (a *azureScoreWire) end(w io.Writer, c *call) error          { return a.oa.end(w, c) }
func (a *azureScoreWire) streamError(w io.Writer, c *call) error {
	return a.oa.streamError(w, c)
}
func (a *azureScoreWire) malformed(w io.Writer, c *call) error { return a.oa.malformed(w, c) }

// streamErrorFirst opens a /score stream as its container (vLLM) does
// when it refuses: a rate-limit error event, then [DONE].
func (a *azureScoreWire) streamErrorFirst(w io.Writer, c *call) error {
	return a.oa.streamErrorFirst(w, c)
}

func (a *azureScoreWire) whole(c *call) (string, []byte) {
	if a.chat {
		return a.oa.whole(c)
	}
	b, _ := json.Marshal(map[string]string{"output": c.text()})
	return "application/json", b
}

// serveAzureInfo answers the model inference API's GET {base}/info
// (api-version accepted, not required) with its ModelInfo:
// {"model_name":<endpoint>,"model_type":"chat-completions","model_provider_name":"cloudinfer emulator"}.
// Its errors are in the serverless flat form.
func (s *Server) serveAzureInfo(w http.ResponseWriter, r *http.Request, ep *endpoint, name string) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, AzureML, http.MethodGet)
		return
	}
	if ep == nil {
		writeAzureServerlessError(w, FaultNotFound, name, "")
		return
	}
	if !s.authorized(ep, AzureML, r, nil) {
		writeAzureServerlessError(w, FaultUnauthenticated, name, "")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{
		"model_name": ep.Name, "model_type": "chat-completions", "model_provider_name": "cloudinfer emulator",
	})
}

// azureChatWire is the serverless chat route's wire: OpenAI chunks, with
// the model inference API's own rate-limit error event.
type azureChatWire struct{ *openAIWire }

// streamErrorFirst writes the model inference API's single error event,
// {"error":{"code":"429","message":…}}, and ends the stream.
func (a azureChatWire) streamErrorFirst(w io.Writer, c *call) error {
	return writeSSE(w, map[string]map[string]string{"error": {
		"code":    "429",
		"message": "Rate limit is exceeded. Try again in 1 seconds.",
	}})
}
