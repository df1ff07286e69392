package openaiwire

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// MaxMessage is the longest message kept from an error body, in bytes.
const MaxMessage = 1024

// ErrorBody is a parsed error envelope (see the package doc for the shapes).
type ErrorBody struct {
	// Status is a status the body itself states: vLLM's numeric "code" or
	// Azure's "status" (0 if none).
	Status int
	// Code is a string "code" member (OpenAI "insufficient_quota", Azure
	// "parameter_not_supported"); a numeric code is in Status instead.
	Code string
	// Type is the "type" member ("BadRequestError", "invalid_request_error"),
	// or TGI's "error_type" ("validation", "overloaded", "generation").
	Type string
	// Param is the "param" member, if a string.
	Param string
	// Message is the message, cut to MaxMessage bytes.
	Message string
	// Detail is Azure's "detail" member as compact JSON (or text), cut to
	// MaxMessage bytes.
	Detail string
	// EstimatedTime is Hugging Face's model-loading estimate in seconds (0
	// if absent): the server is loading the model.
	EstimatedTime float64
	// Shape names the envelope recognized: "nested", "flat", "azure",
	// "hf" or "detail".
	Shape string
}

// ProviderCode returns the most specific native code: the string code,
// else the type, else the stated status.
func (e ErrorBody) ProviderCode() string {
	switch {
	case e.Code != "":
		return e.Code
	case e.Type != "":
		return e.Type
	case e.Status != 0:
		return strconv.Itoa(e.Status)
	}
	return ""
}

type rawError struct {
	Error         json.RawMessage `json:"error"`
	Object        json.RawMessage `json:"object"`
	Message       json.RawMessage `json:"message"`
	Type          json.RawMessage `json:"type"`
	Param         json.RawMessage `json:"param"`
	Code          json.RawMessage `json:"code"`
	Status        json.RawMessage `json:"status"`
	Detail        json.RawMessage `json:"detail"`
	EstimatedTime json.RawMessage `json:"estimated_time"`
	ErrorType     json.RawMessage `json:"error_type"`
}

// ParseError parses an error envelope. It reports false when body is not
// a JSON object in one of the known shapes. It never fails on odd member
// types: a member of an unexpected type is ignored.
func ParseError(body []byte) (ErrorBody, bool) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return ErrorBody{}, false
	}
	var top rawError
	if json.Unmarshal(body, &top) != nil {
		return ErrorBody{}, false
	}
	var e ErrorBody
	switch {
	case isObject(top.Error):
		var in rawError
		if json.Unmarshal(top.Error, &in) != nil {
			return ErrorBody{}, false
		}
		e = fields(in)
		e.Shape = "nested"
	case isString(top.Error):
		e.Message = str(top.Error)
		e.Type = str(top.ErrorType)
		e.EstimatedTime = num(top.EstimatedTime)
		e.Shape = "hf"
	case str(top.Object) == "error":
		e = fields(top)
		e.Shape = "flat"
	case len(top.Status) > 0 && (len(top.Code) > 0 || len(top.Message) > 0):
		e = fields(top) // reads a valid status
		e.Shape = "azure"
	case len(top.Message) > 0 || len(top.Code) > 0:
		e = fields(top)
		e.Shape = "flat"
	case isString(top.Detail):
		e.Message = str(top.Detail)
		e.Shape = "detail"
	default:
		return ErrorBody{}, false
	}
	if e.Detail == "" && len(top.Detail) > 0 && e.Shape != "detail" {
		e.Detail = cut(compact(top.Detail))
	}
	e.Message = cut(e.Message)
	return e, true
}

// fields reads the members shared by the nested and flat shapes.
func fields(r rawError) ErrorBody {
	e := ErrorBody{Message: str(r.Message), Type: str(r.Type), Param: str(r.Param)}
	switch {
	case isString(r.Code):
		c := str(r.Code)
		if n, err := strconv.Atoi(c); err == nil && n >= 100 && n < 600 {
			e.Status = n
		} else {
			e.Code = c
		}
	case len(r.Code) > 0 && r.Code[0] != 'n':
		if n := num(r.Code); n >= 100 && n < 600 {
			e.Status = int(n)
		}
	}
	if s := num(r.Status); s >= 100 && s < 600 {
		e.Status = int(s)
	}
	if len(r.Detail) > 0 {
		if isString(r.Detail) {
			e.Detail = cut(str(r.Detail))
		} else {
			e.Detail = cut(compact(r.Detail))
		}
	}
	return e
}

func isObject(r json.RawMessage) bool { return len(r) > 0 && r[0] == '{' }
func isString(r json.RawMessage) bool { return len(r) > 0 && r[0] == '"' }

func str(r json.RawMessage) string {
	var s string
	if !isString(r) || json.Unmarshal(r, &s) != nil {
		return ""
	}
	return s
}

func num(r json.RawMessage) float64 {
	var f float64
	if len(r) == 0 || json.Unmarshal(r, &f) != nil {
		return 0
	}
	return f
}

func compact(r json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, r) != nil {
		return ""
	}
	return b.String()
}

// cut shortens s to MaxMessage bytes at a rune boundary.
func cut(s string) string {
	if len(s) <= MaxMessage {
		return s
	}
	i := MaxMessage
	for i > 0 && !utf8Start(s[i]) {
		i--
	}
	return s[:i] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// codeByName maps OpenAI-compatible error codes and types to portable
// codes. Keys are lower case.
var codeByName = map[string]errcodes.Code{
	// OpenAI "code" values.
	"insufficient_quota":      errcodes.QuotaExceeded,
	"rate_limit_exceeded":     errcodes.Throttled,
	"invalid_api_key":         errcodes.Unauthenticated,
	"model_not_found":         errcodes.NotFound,
	"context_length_exceeded": errcodes.InvalidParam,
	"model_not_ready":         errcodes.ModelNotReady,
	"content_filter":          errcodes.InvalidParam, // OpenAI, Azure OpenAI
	// OpenAI "type" values.
	"invalid_request_error": errcodes.InvalidParam,
	"authentication_error":  errcodes.Unauthenticated,
	"permission_error":      errcodes.PermissionDenied,
	"not_found_error":       errcodes.NotFound,
	"rate_limit_error":      errcodes.Throttled,
	"server_error":          errcodes.Internal,
	"api_error":             errcodes.Internal,
	"overloaded_error":      errcodes.Unavailable,
	"timeout_error":         errcodes.Timeout,
	// vLLM "type" values (exception class names).
	"badrequesterror":         errcodes.InvalidParam,
	"authenticationerror":     errcodes.Unauthenticated,
	"permissiondeniederror":   errcodes.PermissionDenied,
	"notfounderror":           errcodes.NotFound,
	"ratelimiterror":          errcodes.Throttled,
	"internalservererror":     errcodes.Internal,
	"serviceunavailableerror": errcodes.Unavailable,
	"timeouterror":            errcodes.Timeout,
	"modelnotreadyerror":      errcodes.ModelNotReady,
	// TGI "error_type" values.
	"validation":            errcodes.InvalidParam,
	"overloaded":            errcodes.Throttled,
	"generation":            errcodes.ModelError,
	"incomplete_generation": errcodes.Internal,
}

// specificCodes are the codes precise enough to override the HTTP status.
var specificCodes = map[string]bool{
	"insufficient_quota": true, "rate_limit_exceeded": true, "invalid_api_key": true,
	"model_not_found": true, "context_length_exceeded": true, "model_not_ready": true,
	"modelnotreadyerror": true,
}

// Classify gives the portable code of an OpenAI-compatible error, in this
// order: a specific "code" or "type" (quota, rate limit, bad key, unknown
// model, model not ready); a model-loading signal on a 503; the HTTP status
// (or the status the body states, for an error met inside a stream or in
// a 2xx body); the generic type; and ERR_UNKNOWN. status is 0 for an error
// met inside a stream.
//
// The model-loading signal is Hugging Face's "estimated_time" member or, as
// a last resort, a 503 whose message says the model is "loading" or "not
// ready" — vLLM-style servers have no structured not-ready code.
func Classify(status int, e ErrorBody) errcodes.Code {
	if c, ok := Specific(e); ok {
		return c
	}
	if status == 0 || (status >= 200 && status < 300) {
		// No HTTP error status: the body's own status is the evidence.
		status = e.Status
	}
	if status == http.StatusServiceUnavailable && LoadingMessage(e) {
		return errcodes.ModelNotReady
	}
	if c := errcodes.ForHTTPStatus(status); c != "" && status != 0 {
		return c
	}
	for _, k := range []string{e.Code, e.Type} {
		if c, ok := codeByName[strings.ToLower(k)]; ok {
			return c
		}
	}
	return errcodes.Unknown
}

// Specific returns the code of a "code" or "type" precise enough to win
// over the HTTP status: insufficient_quota, rate_limit_exceeded,
// invalid_api_key, model_not_found, context_length_exceeded,
// model_not_ready.
func Specific(e ErrorBody) (errcodes.Code, bool) {
	for _, k := range []string{e.Code, e.Type} {
		if k = strings.ToLower(k); specificCodes[k] {
			return codeByName[k], true
		}
	}
	return "", false
}

// LoadingMessage reports whether e says the model is still loading:
// Hugging Face's estimated_time, or (last resort) the message's words.
func LoadingMessage(e ErrorBody) bool {
	if e.EstimatedTime > 0 {
		return true
	}
	m := strings.ToLower(e.Message)
	return strings.Contains(m, "is loading") || strings.Contains(m, "currently loading") ||
		strings.Contains(m, "not ready") || strings.Contains(m, "not_ready")
}
