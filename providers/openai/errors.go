package openai

import (
	"net/http"
	"strconv"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
	"github.com/cloudinfer/cloudinfer/internal/openaiwire"
)

// APIError is the error an OpenAI-compatible server returned, as parsed
// from its body. It is the native error every HTTP or in-stream
// *errcodes.Error of this adapter wraps (reach it with errors.As).
type APIError struct {
	// StatusCode is the HTTP status, or the status the body states for an
	// in-stream error (0 if none).
	StatusCode int
	// Code is a string error code ("insufficient_quota"), Type the error
	// type ("BadRequestError", "invalid_request_error"), Param the
	// offending parameter.
	Code, Type, Param string
	// Message is the server's message (or an HTML page's title).
	Message string
}

// Error implements error.
func (e *APIError) Error() string {
	s := "openai: HTTP " + strconv.Itoa(e.StatusCode)
	if e.StatusCode == 0 {
		s = "openai: in-stream error"
	}
	if c := e.Code; c != "" {
		s += " " + c
	} else if e.Type != "" {
		s += " " + e.Type
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// native returns the function that wraps a parsed body as an *APIError.
func native(status int) func(openaiwire.ErrorBody) error {
	return func(b openaiwire.ErrorBody) error {
		s := status
		if s == 0 {
			s = b.Status
		}
		return &APIError{StatusCode: s, Code: b.Code, Type: b.Type, Param: b.Param, Message: b.Message}
	}
}

// responseError maps a non-2xx response; it reads at most MaxErrorBytes of
// its body.
func (a *Adapter) responseError(resp *http.Response) *errcodes.Error {
	body, _, _ := httpadapter.ReadLimited(resp.Body, a.opts.MaxErrorBytes)
	rid := httpadapter.FirstHeader(resp.Header, idHeaders...)
	if eb, ok := openaiwire.ParseError(body); ok {
		return a.bodyError(resp, eb, rid)
	}
	eb := openaiwire.ErrorBody{Message: httpadapter.ErrorText(body, resp.Header.Get("Content-Type"))}
	return a.bodyError(resp, eb, rid)
}

// bodyError maps a parsed error body that came with resp.
func (a *Adapter) bodyError(resp *http.Response, eb openaiwire.ErrorBody, rid string) *errcodes.Error {
	code := openaiwire.Classify(resp.StatusCode, eb)
	pc := eb.ProviderCode()
	if pc == "" {
		pc = strconv.Itoa(resp.StatusCode)
	}
	return httpadapter.NewError(code, cloudreq.ProviderOpenAI, resp, pc, eb.Message, rid, native(resp.StatusCode)(eb))
}
