package vertex

import (
	"errors"
	"net/http"
	"strings"

	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// statusNames are the canonical google.rpc.Code names (ProviderCode), and
// httpStatus their HTTP equivalents (google/rpc/code.proto).
var statusNames = map[codes.Code]string{
	codes.OK: "OK", codes.Canceled: "CANCELLED", codes.Unknown: "UNKNOWN",
	codes.InvalidArgument: "INVALID_ARGUMENT", codes.DeadlineExceeded: "DEADLINE_EXCEEDED",
	codes.NotFound: "NOT_FOUND", codes.AlreadyExists: "ALREADY_EXISTS",
	codes.PermissionDenied: "PERMISSION_DENIED", codes.ResourceExhausted: "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION", codes.Aborted: "ABORTED",
	codes.OutOfRange: "OUT_OF_RANGE", codes.Unimplemented: "UNIMPLEMENTED",
	codes.Internal: "INTERNAL", codes.Unavailable: "UNAVAILABLE", codes.DataLoss: "DATA_LOSS",
	codes.Unauthenticated: "UNAUTHENTICATED",
}

var httpStatus = map[codes.Code]int{
	codes.OK: http.StatusOK, codes.Canceled: 499, codes.Unknown: http.StatusInternalServerError,
	codes.InvalidArgument: http.StatusBadRequest, codes.DeadlineExceeded: http.StatusGatewayTimeout,
	codes.NotFound: http.StatusNotFound, codes.AlreadyExists: http.StatusConflict,
	codes.PermissionDenied: http.StatusForbidden, codes.ResourceExhausted: http.StatusTooManyRequests,
	codes.FailedPrecondition: http.StatusBadRequest, codes.Aborted: http.StatusConflict,
	codes.OutOfRange: http.StatusBadRequest, codes.Unimplemented: http.StatusNotImplemented,
	codes.Internal: http.StatusInternalServerError, codes.Unavailable: http.StatusServiceUnavailable,
	codes.DataLoss: http.StatusInternalServerError, codes.Unauthenticated: http.StatusUnauthorized,
}

// codeFor maps a gRPC code to its portable code before details are
// consulted (RESOURCE_EXHAUSTED and UNAVAILABLE are refined by mapError).
var codeFor = map[codes.Code]errcodes.Code{
	codes.InvalidArgument:    errcodes.InvalidParam,
	codes.FailedPrecondition: errcodes.InvalidParam,
	codes.OutOfRange:         errcodes.InvalidParam,
	codes.Unimplemented:      errcodes.InvalidParam,
	codes.AlreadyExists:      errcodes.InvalidParam,
	codes.Unauthenticated:    errcodes.Unauthenticated,
	codes.PermissionDenied:   errcodes.PermissionDenied,
	codes.NotFound:           errcodes.NotFound,
	codes.ResourceExhausted:  errcodes.Throttled,
	codes.Unavailable:        errcodes.Unavailable,
	codes.Aborted:            errcodes.Unavailable,
	codes.DeadlineExceeded:   errcodes.Timeout,
	codes.Canceled:           errcodes.Canceled,
	codes.Internal:           errcodes.Internal,
	codes.Unknown:            errcodes.Internal,
	codes.DataLoss:           errcodes.Internal,
}

// notReadyReasons are ErrorInfo reason fragments that mean the model or its
// deployment is not ready yet (loading, or scaling up from zero).
var notReadyReasons = []string{"NOT_READY", "SCALING", "SCALE_UP", "LOADING", "COLD_START"}

// mapError turns the error of a GAPIC call or a stream read into an
// *errcodes.Error of provider gcp. Errors that carry no gRPC status
// (context and transport errors) are returned as they are, for the client
// to classify. The *apierror.APIError stays reachable with errors.As.
func mapError(err error) error {
	if err == nil {
		return nil
	}
	var ae *apierror.APIError
	if !errors.As(err, &ae) {
		if _, ok := status.FromError(err); !ok {
			return err
		}
		// Stream reads return bare status errors: parse their details the
		// same way the GAPIC unary path does.
		if ae, _ = apierror.FromError(err); ae == nil {
			return err
		}
	}
	st := ae.GRPCStatus()
	if st == nil {
		return err
	}
	c := st.Code()
	code, ok := codeFor[c]
	if !ok {
		code = errcodes.Unknown
	}
	d := ae.Details()
	reason := strings.ToUpper(ae.Reason())
	terminal := false
	switch c {
	case codes.InvalidArgument:
		if strings.Contains(reason, "TOO_LARGE") {
			code = errcodes.PayloadTooLarge
		}
	case codes.FailedPrecondition, codes.Internal, codes.Unknown:
		if strings.Contains(reason, "MODEL_ERROR") {
			code = errcodes.ModelError
		}
	case codes.ResourceExhausted:
		switch {
		case reason == "RATE_LIMIT_EXCEEDED":
			// Google's reason for a rate quota (requests or tokens per
			// minute), which comes with a QuotaFailure detail too: it
			// refills, so the request is throttled, not out of quota.
		case d.QuotaFailure != nil || strings.Contains(reason, "QUOTA"):
			code = errcodes.QuotaExceeded
		case reason == "" && strings.Contains(st.Message(), "larger than max"):
			// grpc-go's own message-size limits (client or server side:
			// "received message larger than max", "message after
			// decompression larger than max", "trying to send message
			// larger than max") carry no details: a documented
			// last-resort string match.
			code = errcodes.PayloadTooLarge
		}
	case codes.Unavailable:
		if reason == "" && strings.Contains(st.Message(), "authentication handshake failed") {
			// grpc-go reports a failed TLS handshake as UNAVAILABLE with
			// no details (a documented last-resort string match): the
			// same handshake again cannot succeed.
			terminal = true
			if strings.Contains(st.Message(), "certificate") {
				code = errcodes.Unauthenticated
			}
		}
		for _, r := range notReadyReasons {
			if reason != "" && strings.Contains(reason, r) {
				code = errcodes.ModelNotReady
				break
			}
		}
	}
	e := errcodes.Wrap(ae, code, st.Message())
	if terminal {
		e.Retryable = false
	}
	e.Provider = cloudreq.ProviderGCP
	e.ProviderCode = statusNames[c]
	if e.ProviderCode == "" {
		e.ProviderCode = c.String()
	}
	e.HTTPStatus = httpStatus[c]
	if e.HTTPStatus == 0 {
		e.HTTPStatus = http.StatusInternalServerError
	}
	if ei := d.ErrorInfo; ei != nil {
		e.Details = map[string]string{}
		if ei.GetReason() != "" {
			e.Details["reason"] = ei.GetReason()
		}
		if ei.GetDomain() != "" {
			e.Details["domain"] = ei.GetDomain()
		}
	}
	if qf := d.QuotaFailure; qf != nil && len(qf.GetViolations()) > 0 {
		if e.Details == nil {
			e.Details = map[string]string{}
		}
		v := qf.GetViolations()[0]
		e.Details["quota_subject"] = v.GetSubject()
		e.Details["quota_description"] = v.GetDescription()
	}
	if ri := d.RetryInfo; ri != nil && ri.GetRetryDelay() != nil {
		if dl := ri.GetRetryDelay().AsDuration(); dl > 0 {
			e.RetryAfter = dl
		}
	}
	if rq := d.RequestInfo; rq != nil {
		e.RequestID = rq.GetRequestId()
	}
	return e
}
