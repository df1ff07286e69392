package vertex

import (
	"bytes"
	"encoding/json"
	"net/http"

	_ "google.golang.org/genproto/googleapis/rpc/errdetails" // the details' @types, resolved through the global registry
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
	"github.com/cloudinfer/cloudinfer/internal/openaiwire"
)

// codeOfName maps a google.rpc.Code name (the REST error's "status") to
// its gRPC code.
var codeOfName = func() map[string]codes.Code {
	m := make(map[string]codes.Code, len(statusNames))
	for c, n := range statusNames {
		m[n] = c
	}
	return m
}()

// restErrorBody is the REST form of a google.rpc.Status:
// {"error":{"code":429,"message":…,"status":"RESOURCE_EXHAUSTED","details":[…]}}.
type restErrorBody struct {
	Error *struct {
		Code    int               `json:"code"`
		Message string            `json:"message"`
		Status  string            `json:"status"`
		Details []json.RawMessage `json:"details"`
	} `json:"error"`
}

// googleStatus reads a REST error body as the gRPC status it stands for:
// the code from "status" (else from the HTTP code, "code"), the message,
// and each detail whose @type is known (ErrorInfo, RetryInfo,
// QuotaFailure, BadRequest, RequestInfo, …; others are skipped). ok is
// false for a body that is not Google's error object.
func googleStatus(body []byte) (*status.Status, bool) {
	var rs restErrorBody
	if json.Unmarshal(body, &rs) != nil || rs.Error == nil {
		return nil, false
	}
	e := rs.Error
	c, ok := codeOfName[e.Status]
	if !ok {
		if e.Status != "" || e.Code == 0 {
			return nil, false
		}
		c = codeOfHTTP(e.Code)
	}
	p := &spb.Status{Code: int32(c), Message: e.Message}
	for _, d := range e.Details {
		a := &anypb.Any{}
		if protojson.Unmarshal(d, a) == nil {
			p.Details = append(p.Details, a)
		}
	}
	return status.FromProto(p), true
}

// codeOfHTTP is the gRPC code of an HTTP status (google/rpc/code.proto's
// mapping, read backwards).
func codeOfHTTP(s int) codes.Code {
	switch s {
	case http.StatusBadRequest:
		return codes.InvalidArgument
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusForbidden:
		return codes.PermissionDenied
	case http.StatusNotFound:
		return codes.NotFound
	case http.StatusConflict:
		return codes.Aborted
	case http.StatusTooManyRequests:
		return codes.ResourceExhausted
	case 499:
		return codes.Canceled
	case http.StatusNotImplemented:
		return codes.Unimplemented
	case http.StatusServiceUnavailable:
		return codes.Unavailable
	case http.StatusGatewayTimeout:
		return codes.DeadlineExceeded
	}
	return codes.Internal
}

// restErrorOf maps a Google REST error body as the gRPC path maps the
// same status (mapError: the status name, then the ErrorInfo reason,
// QuotaFailure and RetryInfo details), with the HTTP status the answer
// came with (httpStatus, 0 for an error inside a 2xx stream: the status's
// own). ok is false for a body that is not Google's error object.
func restErrorOf(body []byte, httpStatus int) (*errcodes.Error, bool) {
	st, ok := googleStatus(body)
	if !ok {
		return nil, false
	}
	e, ok := mapError(st.Err()).(*errcodes.Error)
	if !ok {
		return nil, false
	}
	if httpStatus != 0 {
		e.HTTPStatus = httpStatus
	}
	return e, true
}

// restErrorTable is the REST transport's error table: Google's error
// object is mapped by restErrorOf; any other body (a fronting proxy's
// plain-text 503 or HTML 502, a model container's own error relayed) by
// its HTTP status, with an OpenAI-style body's own class where it has one.
func restErrorTable(resp *http.Response, body []byte, requestID string) *errcodes.Error {
	if e, ok := restErrorOf(body, resp.StatusCode); ok {
		if e.RequestID == "" {
			e.RequestID = requestID
		}
		if e.RetryAfter == 0 {
			if d, ok := cloudreq.RetryAfter(resp.Header, timeNow()); ok {
				e.RetryAfter = d
			}
		}
		return e
	}
	if r, err := openaiwire.Decode(body); err == nil && r.Error != nil {
		return httpadapter.NewError(openaiwire.Classify(resp.StatusCode, *r.Error), cloudreq.ProviderGCP, resp,
			r.Error.ProviderCode(), r.Error.Message, requestID, nil)
	}
	return httpadapter.StatusError(cloudreq.ProviderGCP, resp, body, requestID)
}

// inBandError maps an error object that arrived as a stream frame:
// Google's (restErrorOf) or a model container's OpenAI-style one; ok is
// false for a frame that is no error object.
func inBandError(frame []byte) (*errcodes.Error, bool) {
	b := bytes.TrimSpace(frame)
	if len(b) == 0 || b[0] != '{' || !bytes.Contains(b, []byte(`"error"`)) {
		return nil, false
	}
	if e, ok := restErrorOf(b, 0); ok {
		return e, true
	}
	r, err := openaiwire.Decode(b)
	if err != nil || r.Error == nil {
		return nil, false
	}
	msg := r.Error.Message
	if msg == "" {
		msg = "the model server reported an error in its stream"
	}
	e := errcodes.New(openaiwire.Classify(0, *r.Error), msg)
	e.Provider, e.ProviderCode = cloudreq.ProviderGCP, r.Error.ProviderCode()
	return e, true
}
