package paieas

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
	"github.com/cloudinfer/cloudinfer/internal/openaiwire"
)

// StatusQueueFull is PAI-EAS's "request discarded because the queue is
// full" status.
const StatusQueueFull = 450

// APIError is an error PAI-EAS (or the model server behind it) returned
// (Provider "alibaba"): the native error every HTTP or in-stream
// *errcodes.Error of this adapter wraps (reach it with errors.As). Code and
// Type are an OpenAI-style body's code and type, if any; StatusCode is 0
// for an in-stream error. The openai adapter's errors wrap the same type.
type APIError = httpadapter.APIError

// apiError wraps a parsed body as an *APIError of status (0: the status
// the body states).
func apiError(status int, b openaiwire.ErrorBody) *APIError {
	if status != 0 {
		b.Status = status
	}
	return &APIError{Provider: cloudreq.ProviderAlibaba, StatusCode: b.Status, Code: b.Code, Type: b.Type, Param: b.Param, Message: b.Message}
}

func native(status int) func(openaiwire.ErrorBody) error {
	return func(b openaiwire.ErrorBody) error { return apiError(status, b) }
}

// statusCodes is the PAI-EAS status table (see the package doc).
var statusCodes = map[int]errcodes.Code{
	http.StatusBadRequest:          errcodes.InvalidParam,
	http.StatusUnauthorized:        errcodes.Unauthenticated,
	http.StatusForbidden:           errcodes.PermissionDenied,
	http.StatusNotFound:            errcodes.NotFound,
	http.StatusMethodNotAllowed:    errcodes.InvalidParam,
	http.StatusRequestTimeout:      errcodes.Timeout,
	http.StatusTooManyRequests:     errcodes.Throttled,
	StatusQueueFull:                errcodes.Throttled,
	499:                            errcodes.Canceled,
	http.StatusInternalServerError: errcodes.Internal,
	http.StatusServiceUnavailable:  errcodes.Unavailable, // ERR_MODEL_NOT_READY when the body says so
}

// notReady reports whether a 503's body says that no instance is ready —
// EAS's "no ready instance" / "no available instance" (all instances not
// Ready, as when scaling from zero), or the model server's own "is loading"
// / "not ready" — rather than a transient refusal: a fronting proxy's
// "upstream connect error … reset reason: overflow" or "no healthy
// upstream", a model server's plain 503. Only the former is evidence of a
// cold start.
func notReady(eb openaiwire.ErrorBody) bool {
	m := strings.ToLower(eb.Message)
	return strings.Contains(m, "no ready instance") || strings.Contains(m, "no available instance") ||
		openaiwire.LoadingMessage(eb)
}

// statusCode maps a status by the table, then errcodes.ForHTTPStatus.
func statusCode(status int) errcodes.Code {
	if c, ok := statusCodes[status]; ok {
		return c
	}
	return errcodes.ForHTTPStatus(status)
}

// errorTable maps a non-2xx response from the body read of it: an
// OpenAI-style error envelope, else its text.
func errorTable(resp *http.Response, body []byte, rid string) *errcodes.Error {
	eb, ok := openaiwire.ParseError(body)
	if !ok {
		eb = openaiwire.ErrorBody{Message: httpadapter.ErrorText(body, resp.Header.Get("Content-Type"))}
	}
	return bodyError(resp, eb, rid)
}

// bodyError maps an error body: an OpenAI-style specific code (quota,
// rate limit, bad key, unknown model, not ready) first, then the status
// table.
func bodyError(resp *http.Response, eb openaiwire.ErrorBody, rid string) *errcodes.Error {
	code := statusCode(resp.StatusCode)
	if resp.StatusCode == http.StatusServiceUnavailable && notReady(eb) {
		code = errcodes.ModelNotReady
	}
	if c, ok := openaiwire.Specific(eb); ok {
		code = c
	} else if code == "" { // an error object in a 2xx body
		code = openaiwire.Classify(0, eb)
	}
	pc := eb.ProviderCode()
	if pc == "" || (pc == strconv.Itoa(eb.Status) && resp.StatusCode >= 300) {
		// The HTTP status, unless a 2xx body states its own.
		pc = strconv.Itoa(resp.StatusCode)
	}
	msg := eb.Message
	if msg == "" && resp.StatusCode == StatusQueueFull {
		msg = "request discarded because the queue is full"
	}
	return httpadapter.NewError(code, cloudreq.ProviderAlibaba, resp, pc, msg, rid, native(resp.StatusCode)(eb))
}
