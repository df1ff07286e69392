package azureml

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/hooks"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
	"github.com/cloudinfer/cloudinfer/internal/openaiwire"
)

// codeByName maps Azure ML and serverless error codes (lower case) to
// portable codes. They win over the HTTP status.
var codeByName = map[string]errcodes.Code{
	"model_not_ready":         errcodes.ModelNotReady,
	"modelnotready":           errcodes.ModelNotReady,
	"deploymentnotready":      errcodes.ModelNotReady,
	"deployment_not_ready":    errcodes.ModelNotReady,
	"insufficient_quota":      errcodes.QuotaExceeded,
	"quotaexceeded":           errcodes.QuotaExceeded,
	"quota_exceeded":          errcodes.QuotaExceeded,
	"rate_limit_exceeded":     errcodes.Throttled,
	"toomanyrequests":         errcodes.Throttled,
	"ratelimitreached":        errcodes.Throttled,
	"invalid_api_key":         errcodes.Unauthenticated,
	"model_not_found":         errcodes.NotFound,
	"deploymentnotfound":      errcodes.NotFound,
	"context_length_exceeded": errcodes.InvalidParam,
}

// statusCodes is the Azure ML status table (see the package doc).
var statusCodes = map[int]errcodes.Code{
	http.StatusBadRequest:            errcodes.InvalidParam,
	http.StatusUnauthorized:          errcodes.Unauthenticated,
	http.StatusForbidden:             errcodes.PermissionDenied,
	http.StatusNotFound:              errcodes.NotFound,
	http.StatusRequestTimeout:        errcodes.Timeout,
	http.StatusConflict:              errcodes.InvalidParam,
	http.StatusRequestEntityTooLarge: errcodes.PayloadTooLarge,
	http.StatusUnprocessableEntity:   errcodes.InvalidParam,
	http.StatusFailedDependency:      errcodes.ModelError,
	http.StatusTooManyRequests:       errcodes.Throttled,
	http.StatusInternalServerError:   errcodes.Internal,
	http.StatusBadGateway:            errcodes.Unavailable,
	http.StatusServiceUnavailable:    errcodes.Unavailable,
	http.StatusGatewayTimeout:        errcodes.Timeout,
}

// classify gives the code of an error response: a known error code first,
// then a not-ready 503 told by its text (last resort), then the status.
// With status 0 or 2xx (an error object in a stream or a successful body)
// the status the body states stands in for it, else its type.
func classify(status int, code string, eb openaiwire.ErrorBody) errcodes.Code {
	for _, k := range []string{code, eb.Code, eb.Type} {
		if c, ok := codeByName[strings.ToLower(k)]; ok {
			return c
		}
	}
	if status == http.StatusServiceUnavailable && openaiwire.LoadingMessage(eb) {
		return errcodes.ModelNotReady
	}
	if c, ok := statusCodes[status]; ok {
		return c
	}
	if c := errcodes.ForHTTPStatus(status); c != "" && status != 0 {
		return c
	}
	return openaiwire.Classify(0, eb)
}

// containerClass gives the code of a 424 by the status the model
// container answered (ms-azureml-model-error-statuscode): its own
// back-pressure, 429, is ERR_THROTTLED and a 503 ERR_UNAVAILABLE, both
// retryable; any other status is ERR_MODEL_ERROR.
func containerClass(status string) errcodes.Code {
	switch strings.TrimSpace(status) {
	case "429":
		return errcodes.Throttled
	case "503":
		return errcodes.Unavailable
	}
	return errcodes.ModelError
}

// streamClass gives the class of an error object met in a stream (or in a
// whole body standing in for one): a known error code, else the status
// the body states, else its type.
func streamClass(eb openaiwire.ErrorBody) errcodes.Code { return classify(0, "", eb) }

// native returns the function that wraps an in-stream error body as an
// *azcore.ResponseError.
func native(status int) func(openaiwire.ErrorBody) error {
	return func(b openaiwire.ErrorBody) error {
		s := status
		if s == 0 {
			s = b.Status
		}
		return &azcore.ResponseError{ErrorCode: b.ProviderCode(), StatusCode: s}
	}
}

// errorTable maps a non-2xx response (its body already bounded by the
// transport) to an *errcodes.Error wrapping an *azcore.ResponseError.
func errorTable(resp *http.Response, body []byte, rid string) *errcodes.Error {
	eb, ok := openaiwire.ParseError(body)
	if !ok {
		eb = openaiwire.ErrorBody{Message: httpadapter.ErrorText(body, resp.Header.Get("Content-Type"))}
	}
	return fromBody(resp, body, eb, rid)
}

// bodyError maps an error object found in a 2xx body.
func bodyError(resp *http.Response, eb openaiwire.ErrorBody, rid string) *errcodes.Error {
	return fromBody(resp, nil, eb, rid)
}

func fromBody(resp *http.Response, body []byte, eb openaiwire.ErrorBody, rid string) *errcodes.Error {
	headerCode := resp.Header.Get(HeaderErrorCode)
	code := classify(resp.StatusCode, headerCode, eb)
	if code == errcodes.ModelError && resp.StatusCode == http.StatusFailedDependency {
		code = containerClass(resp.Header.Get(HeaderModelErrorStatus))
	}
	pc := headerCode
	if pc == "" {
		pc = eb.ProviderCode()
	}
	if pc == "" || (pc == strconv.Itoa(eb.Status) && resp.StatusCode >= 300) {
		// The HTTP status, unless a 2xx body states its own.
		pc = strconv.Itoa(resp.StatusCode)
	}
	// azcore's own error type, from the bounded body, is the native error.
	nr := *resp
	nr.Body = io.NopCloser(bytes.NewReader(body))
	if resp.Request != nil {
		// The native error keeps the request for diagnosis, without its
		// credentials.
		nr.Request = resp.Request.Clone(context.Background())
		nr.Request.Header = hooks.RedactHeaders(resp.Request.Header)
	}
	var nativeErr error = runtime.NewResponseError(&nr)
	e := httpadapter.NewError(code, cloudreq.ProviderAzure, resp, pc, eb.Message, rid, nativeErr)
	if resp.StatusCode == http.StatusFailedDependency || resp.Header.Get(HeaderModelErrorStatus) != "" {
		e.Details = map[string]string{}
		for _, h := range []string{HeaderModelErrorStatus, HeaderModelErrorReason} {
			if v := resp.Header.Get(h); v != "" {
				e.Details[h] = v
			}
		}
		if e.Message == "" || e.Message == http.StatusText(resp.StatusCode) {
			if r := resp.Header.Get(HeaderModelErrorReason); r != "" {
				e.Message = httpadapter.ErrorText([]byte("the model container failed: "+r), "text/plain")
			}
		}
	}
	if eb.Detail != "" {
		if e.Details == nil {
			e.Details = map[string]string{}
		}
		e.Details["detail"] = eb.Detail
	}
	return e
}
