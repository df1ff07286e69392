package sagemaker

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// Error codes SageMaker and the AWS front end send that the SDK has no type
// for; they arrive as smithy.GenericAPIError with this ErrorCode.
var (
	throttleCodes = map[string]bool{
		"ThrottlingException": true, "Throttling": true, "ThrottledException": true,
		"TooManyRequestsException": true, "RequestLimitExceeded": true,
	}
	authCodes = map[string]bool{
		"InvalidSignatureException": true, "UnrecognizedClientException": true,
		"ExpiredTokenException": true, "ExpiredToken": true, "IncompleteSignature": true,
		"IncompleteSignatureException": true, "MissingAuthenticationToken": true,
		"MissingAuthenticationTokenException": true, "InvalidClientTokenId": true,
		"SignatureDoesNotMatch": true, "RequestExpired": true,
	}
	deniedCodes = map[string]bool{
		"AccessDeniedException": true, "AccessDenied": true,
	}
	tooLargeCodes = map[string]bool{
		"RequestEntityTooLargeException": true, "RequestEntityTooLarge": true, "PayloadTooLargeException": true,
	}
)

// notFoundMessage recognizes the ValidationError SageMaker sends for a
// missing endpoint ("Endpoint foo of account 123 not found.") or inference
// component. SageMaker gives these no code of their own, so the message is
// the only evidence: a documented last resort, like timedOutMessage.
var notFoundMessage = regexp.MustCompile(`(?i)\bnot found\b|could not find`)

// credentialsFailure maps a failure to get credentials: a transport
// failure or the call's end (a credential service that did not answer)
// keeps its code, anything else is ERR_UNAUTHENTICATED, not retryable. The
// provider's own words are not quoted (they may name files or keys), only
// the transport's (see transportCause); the error stays wrapped.
func credentialsFailure(err error, cred *credentialsError) *errcodes.Error {
	var e *errcodes.Error
	if cause := transportCause(cred.err); cause != nil {
		e = errcodes.FromTransport(cause)
	}
	if e != nil && (e.Code == errcodes.Canceled || e.Code == errcodes.Timeout || e.Code == errcodes.Unavailable) {
		retry := e.Retryable
		e = errcodes.Wrap(err, e.Code, "sagemaker: getting AWS credentials failed: "+e.Message)
		e.Retryable = retry
	} else {
		e = errcodes.Wrap(err, errcodes.Unauthenticated, "sagemaker: no AWS credentials: the credentials provider failed (the default chain reads the environment, the shared files, SSO, container and instance metadata)")
		e.Retryable = false
	}
	e.Provider = cloudreq.ProviderAWS
	return e
}

// transportCause returns the part of a credentials provider's error that
// tells how its service failed, without the provider's words around it:
// the call's end, a request's *url.Error (quoted without its query) or a
// network operation's error. Nil: none of those, so not a transport
// failure (an io.EOF reading a file is not one).
func transportCause(err error) error {
	var ue *url.Error
	var op *net.OpError
	switch {
	case errors.Is(err, context.Canceled):
		return context.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded
	case errors.As(err, &ue):
		return ue
	case errors.As(err, &op):
		return op
	}
	return nil
}

// mapError turns an SDK error into an *errcodes.Error: the modelled error
// types first, then the ErrorCode of other API errors, then the HTTP
// status, then transport errors. The SDK error stays wrapped.
func mapError(err error) *errcodes.Error {
	if err == nil {
		return nil
	}
	var ce *errcodes.Error
	if errors.As(err, &ce) {
		return ce
	}
	var cred *credentialsError
	if errors.As(err, &cred) {
		return credentialsFailure(err, cred)
	}
	status, reqID, header := responseOf(err)
	var api smithy.APIError
	if !errors.As(err, &api) {
		// No response, or a successful one whose body broke off (the
		// connection failed while the SDK read it): a transport failure,
		// retryable as such. (An error response's body is parsed, so its
		// unexpected EOF may be cut JSON: its status decides, below.)
		if te := errcodes.FromTransport(err); status == 0 || (status < 300 && te.Code != errcodes.Unknown) {
			te.Provider = cloudreq.ProviderAWS
			if status != 0 {
				te.HTTPStatus, te.RequestID = status, reqID
			}
			return te
		}
		// A response the SDK could not decode: the status is all there is.
		code := byStatus(status)
		e := errcodes.Wrap(err, code, "sagemaker: HTTP "+strconv.Itoa(status)+" with an unreadable error body")
		fill(e, "", status, reqID, header)
		return e
	}
	providerCode := api.ErrorCode()
	msg := redact(api.ErrorMessage())
	if msg == "" || msg == "UnknownError" {
		msg = providerCode
	}
	var code errcodes.Code
	var details map[string]string
	terminal := false
	var (
		validation  *types.ValidationError
		modelErr    *types.ModelError
		notReady    *types.ModelNotReadyException
		unavailable *types.ServiceUnavailable
		internal    *types.InternalFailure
		dependency  *types.InternalDependencyException
		streamErr   *types.ModelStreamError
		streamFail  *types.InternalStreamFailure
	)
	switch {
	case status == http.StatusRequestEntityTooLarge || tooLargeCodes[providerCode]:
		code = errcodes.PayloadTooLarge
	case errors.As(err, &validation):
		code = errcodes.InvalidParam
		if notFoundMessage.MatchString(msg) {
			code = errcodes.NotFound
		}
	case errors.As(err, &modelErr):
		code = errcodes.ModelError
		details = map[string]string{}
		if v := modelErr.OriginalStatusCode; v != nil {
			details["OriginalStatusCode"] = strconv.Itoa(int(*v))
		}
		if v := modelErr.OriginalMessage; v != nil {
			details["OriginalMessage"] = *v
		}
		if v := modelErr.LogStreamArn; v != nil {
			details["LogStreamArn"] = *v
		}
		switch {
		case invocationTimedOut(modelErr):
			code = errcodes.Timeout
		case modelErr.OriginalStatusCode != nil && *modelErr.OriginalStatusCode == http.StatusTooManyRequests:
			// The container's own back-pressure ("Model is overloaded"),
			// wrapped by SageMaker: a throttle, not a model failure.
			code = errcodes.Throttled
		case modelErr.OriginalStatusCode != nil && *modelErr.OriginalStatusCode == http.StatusServiceUnavailable:
			code = errcodes.Unavailable
		}
	case errors.As(err, &notReady):
		code = errcodes.ModelNotReady
	case errors.As(err, &unavailable):
		code = errcodes.Unavailable
	case errors.As(err, &dependency):
		// A failed dependency of the service: retrying at once adds load
		// and does not help (the AWS SDK does not retry it either).
		code = errcodes.Unavailable
		terminal = true
	case errors.As(err, &internal):
		code = errcodes.Internal
	case errors.As(err, &streamErr):
		// The code of the in-band error itself: the chunk stream reports
		// ERR_STREAM_INTERRUPTED instead once content reached the caller.
		code = errcodes.ModelError
		if c := streamErr.ErrorCode_; c != nil {
			details = map[string]string{"ErrorCode": *c}
			switch *c {
			case "ModelInvocationTimeExceeded":
				code = errcodes.Timeout
			case "StreamBroken":
				// The connection between SageMaker and the container was
				// reset or closed: a transport failure on the far side.
				code = errcodes.Unavailable
			}
		}
	case errors.As(err, &streamFail):
		code = errcodes.Internal
	case throttleCodes[providerCode]:
		code = errcodes.Throttled
	case authCodes[providerCode]:
		code = errcodes.Unauthenticated
	case deniedCodes[providerCode]:
		code = errcodes.PermissionDenied
	default:
		code = byStatus(status)
	}
	e := errcodes.Wrap(err, code, msg)
	e.Details = details
	if terminal {
		e.Retryable = false
	}
	if (code == errcodes.Unauthenticated || code == errcodes.PermissionDenied) && clockSkewed(err) {
		e.Retryable = true
	}
	fill(e, providerCode, status, reqID, header)
	return e
}

// timedOutMessage recognizes the ModelError SageMaker sends when the
// container did not answer within the invocation timeout ("Your invocation
// timed out while waiting for a response from container primary"). It
// carries no code of its own: OriginalStatusCode 0 (no answer) is the
// structured half of the evidence, the message the other.
var timedOutMessage = regexp.MustCompile(`(?i)timed out`)

func invocationTimedOut(e *types.ModelError) bool {
	if e.OriginalStatusCode != nil && *e.OriginalStatusCode != 0 {
		return false
	}
	return timedOutMessage.MatchString(e.ErrorMessage()) || (e.OriginalMessage != nil && timedOutMessage.MatchString(*e.OriginalMessage))
}

// byStatus is the code an HTTP status implies; a status that is not an
// error (none, 1xx–3xx) gives ERR_UNKNOWN.
func byStatus(status int) errcodes.Code {
	if status == http.StatusRequestEntityTooLarge {
		return errcodes.PayloadTooLarge
	}
	if c := errcodes.ForHTTPStatus(status); c != "" {
		return c
	}
	return errcodes.Unknown
}

// clockSkewed reports a signature error the SDK put down to clock skew.
// Its retry middleware, even with retries off, compares the server's Date
// with the signing time: more than 4 minutes apart, it wraps the error in
// a retryable clock-skew error and records the offset in the client, so
// that the next attempt — cloudreq's retry — signs on the server's clock.
// Signed with the correction, a refusal is no longer wrapped: the skew is
// retried once at most.
func clockSkewed(err error) bool {
	var r interface{ RetryableError() bool }
	return errors.As(err, &r) && r.RetryableError()
}

func fill(e *errcodes.Error, providerCode string, status int, reqID string, header http.Header) {
	e.Provider = cloudreq.ProviderAWS
	e.ProviderCode = providerCode
	e.HTTPStatus = status
	e.RequestID = reqID
	if header != nil {
		if d, ok := cloudreq.RetryAfter(header, time.Now()); ok {
			e.RetryAfter = d
		}
	}
}

// responseOf returns the HTTP status, request id and headers of the failed
// response in err's chain, zero values when there was none.
func responseOf(err error) (int, string, http.Header) {
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.Response != nil && re.Response.Response != nil {
		return re.Response.StatusCode, re.ServiceRequestID(), re.Response.Header
	}
	var sre *smithyhttp.ResponseError
	if errors.As(err, &sre) && sre.Response != nil && sre.Response.Response != nil {
		return sre.Response.StatusCode, sre.Response.Header.Get("X-Amzn-Requestid"), sre.Response.Header
	}
	return 0, "", nil
}

// signatureDetail starts the part of an AWS signature error message that
// echoes the canonical request and string to sign.
var (
	signatureDetail = regexp.MustCompile(`(?is)\s*(the canonical string for this request should have been|the string-to-sign should have been).*`)
	accessKeyID     = regexp.MustCompile(`\b(AKIA|ASIA|AROA|AIDA)[A-Z0-9]{12,}\b`)
)

// redact removes from a service message what could identify credentials:
// the canonical request and string to sign that signature errors echo, and
// access key ids.
func redact(msg string) string {
	msg = signatureDetail.ReplaceAllString(msg, "")
	msg = accessKeyID.ReplaceAllString(msg, "[redacted key id]")
	return strings.TrimSpace(msg)
}
