package openai

import (
	"net/http"
	"strconv"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
	"github.com/cloudinfer/cloudinfer/internal/openaiwire"
)

// native returns the function that wraps a parsed body as an *APIError.
func native(status int) func(openaiwire.ErrorBody) error {
	return func(b openaiwire.ErrorBody) error {
		if status != 0 {
			b.Status = status
		}
		return &APIError{Provider: cloudreq.ProviderOpenAI, StatusCode: b.Status, Code: b.Code, Type: b.Type, Param: b.Param, Message: b.Message}
	}
}

// errorTable maps a non-2xx response from the body read of it: an
// OpenAI-compatible error envelope, else its text.
func errorTable(resp *http.Response, body []byte, rid string) *errcodes.Error {
	eb, ok := openaiwire.ParseError(body)
	if !ok {
		eb = openaiwire.ErrorBody{Message: httpadapter.ErrorText(body, resp.Header.Get("Content-Type"))}
	}
	return bodyError(resp, eb, rid)
}

// bodyError maps a parsed error body that came with resp.
func bodyError(resp *http.Response, eb openaiwire.ErrorBody, rid string) *errcodes.Error {
	code := openaiwire.Classify(resp.StatusCode, eb)
	pc := eb.ProviderCode()
	if pc == "" {
		pc = strconv.Itoa(resp.StatusCode)
	}
	return httpadapter.NewError(code, cloudreq.ProviderOpenAI, resp, pc, eb.Message, rid, native(resp.StatusCode)(eb))
}
