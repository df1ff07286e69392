package sagemaker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

func as[T error](err error) bool {
	var target T
	return errors.As(err, &target)
}

// TestErrorMapping holds the rows of the package doc's mapping table, sent
// on the wire and read back through the SDK.
func TestErrorMapping(t *testing.T) {
	cases := []struct {
		row        string
		status     int
		errType    string // X-Amzn-ErrorType; "" sends none
		body       string
		exception  *frame // in-stream exception instead of an error response
		code       errcodes.Code
		provider   string
		retryable  bool
		details    map[string]string
		typed      func(error) bool
		retryAfter time.Duration
		message    string
	}{
		{row: "ValidationError", status: 400, errType: "ValidationError", body: `{"message":"1 validation error detected"}`,
			code: errcodes.InvalidParam, provider: "ValidationError", typed: as[*types.ValidationError]},
		{row: "ValidationError endpoint not found", status: 400, errType: "ValidationError",
			body: `{"message":"Endpoint my-ep of account 123456789012 not found."}`,
			code: errcodes.NotFound, provider: "ValidationError", typed: as[*types.ValidationError]},
		{row: "ModelError", status: 424, errType: "ModelError",
			body: `{"ErrorCode":"CLIENT_ERROR_FROM_MODEL","LogStreamArn":"arn:aws:logs:us-east-1:123:log-group:/aws/sagemaker/Endpoints/my-ep","Message":"Received client error (400) from primary","OriginalMessage":"{\"error\":\"bad input\"}","OriginalStatusCode":400}`,
			code: errcodes.ModelError, provider: "ModelError", typed: as[*types.ModelError],
			details: map[string]string{
				"OriginalStatusCode": "400", "OriginalMessage": `{"error":"bad input"}`,
				"LogStreamArn": "arn:aws:logs:us-east-1:123:log-group:/aws/sagemaker/Endpoints/my-ep",
			}},
		{row: "ModelError invocation timed out", status: 424, errType: "ModelError",
			body: `{"ErrorCode":"SERVER_ERROR_FROM_MODEL","Message":"Received server error (0) from primary with message \"Your invocation timed out while waiting for a response from container primary.\"","OriginalMessage":"Your invocation timed out while waiting for a response from container primary.","OriginalStatusCode":0}`,
			code: errcodes.Timeout, provider: "ModelError", retryable: true, typed: as[*types.ModelError],
			details: map[string]string{
				"OriginalStatusCode": "0", "OriginalMessage": "Your invocation timed out while waiting for a response from container primary.",
			}},
		{row: "ModelError OriginalStatusCode 429 (the container is overloaded)", status: 424, errType: "ModelError",
			body: `{"ErrorCode":"CLIENT_ERROR_FROM_MODEL","LogStreamArn":"arn:aws:logs:us-east-1:123:log-group:/aws/sagemaker/Endpoints/my-ep","Message":"Received client error (429) from primary with message \"{\"error\":\"Model is overloaded\",\"error_type\":\"overloaded\"}\".","OriginalMessage":"{\"error\":\"Model is overloaded\",\"error_type\":\"overloaded\"}","OriginalStatusCode":429}`,
			code: errcodes.Throttled, provider: "ModelError", retryable: true, typed: as[*types.ModelError],
			details: map[string]string{
				"OriginalStatusCode": "429", "OriginalMessage": `{"error":"Model is overloaded","error_type":"overloaded"}`,
				"LogStreamArn": "arn:aws:logs:us-east-1:123:log-group:/aws/sagemaker/Endpoints/my-ep",
			}},
		{row: "ModelError OriginalStatusCode 503", status: 424, errType: "ModelError",
			body: `{"ErrorCode":"SERVER_ERROR_FROM_MODEL","Message":"Received server error (503) from primary","OriginalMessage":"{\"code\":503,\"type\":\"ServiceUnavailableException\",\"message\":\"no worker\"}","OriginalStatusCode":503}`,
			code: errcodes.Unavailable, provider: "ModelError", retryable: true, typed: as[*types.ModelError],
			details: map[string]string{
				"OriginalStatusCode": "503", "OriginalMessage": `{"code":503,"type":"ServiceUnavailableException","message":"no worker"}`,
			}},
		{row: "ModelNotReadyException", status: 429, errType: "ModelNotReadyException", body: `{"message":"Model is not ready"}`,
			code: errcodes.ModelNotReady, provider: "ModelNotReadyException", retryable: true, typed: as[*types.ModelNotReadyException],
			retryAfter: 3 * time.Second},
		{row: "ThrottlingException 400", status: 400, errType: "ThrottlingException", body: `{"message":"Rate exceeded"}`,
			code: errcodes.Throttled, provider: "ThrottlingException", retryable: true, typed: as[smithy.APIError]},
		{row: "ThrottlingException 429 (body __type)", status: 429, body: `{"__type":"com.amazon.coral#ThrottlingException","message":"Rate exceeded"}`,
			code: errcodes.Throttled, provider: "ThrottlingException", retryable: true, typed: as[smithy.APIError]},
		{row: "ServiceUnavailable", status: 503, errType: "ServiceUnavailable", body: `{"message":"try later"}`,
			code: errcodes.Unavailable, provider: "ServiceUnavailable", retryable: true, typed: as[*types.ServiceUnavailable]},
		{row: "InternalFailure", status: 500, errType: "InternalFailure", body: `{"message":"oops"}`,
			code: errcodes.Internal, provider: "InternalFailure", retryable: true, typed: as[*types.InternalFailure]},
		{row: "InternalDependencyException", status: 530, errType: "InternalDependencyException", body: `{"message":"dependency"}`,
			code: errcodes.Unavailable, provider: "InternalDependencyException", retryable: false, typed: as[*types.InternalDependencyException]},
		{row: "ModelStreamError StreamBroken", status: 200, exception: &frame{kind: "exception", name: "ModelStreamError", payload: []byte(`{"Message":"broken","ErrorCode":"StreamBroken"}`)},
			code: errcodes.Unavailable, provider: "ModelStreamError", retryable: true, typed: as[*types.ModelStreamError],
			details: map[string]string{"ErrorCode": "StreamBroken"}},
		{row: "ModelStreamError, another ErrorCode", status: 200, exception: &frame{kind: "exception", name: "ModelStreamError", payload: []byte(`{"Message":"odd","ErrorCode":"SomethingElse"}`)},
			code: errcodes.ModelError, provider: "ModelStreamError", typed: as[*types.ModelStreamError],
			details: map[string]string{"ErrorCode": "SomethingElse"}},
		{row: "ModelStreamError ModelInvocationTimeExceeded", status: 200, exception: &frame{kind: "exception", name: "ModelStreamError", payload: []byte(`{"Message":"slow","ErrorCode":"ModelInvocationTimeExceeded"}`)},
			code: errcodes.Timeout, provider: "ModelStreamError", retryable: true, typed: as[*types.ModelStreamError],
			details: map[string]string{"ErrorCode": "ModelInvocationTimeExceeded"}},
		{row: "InternalStreamFailure", status: 200, exception: &frame{kind: "exception", name: "InternalStreamFailure", payload: []byte(`{"Message":"internal"}`)},
			code: errcodes.Internal, provider: "InternalStreamFailure", retryable: true, typed: as[*types.InternalStreamFailure]},
		{row: "HTTP 413 with an error type", status: 413, errType: "ValidationError", body: `{"message":"Request body too large"}`,
			code: errcodes.PayloadTooLarge, provider: "ValidationError", typed: as[*types.ValidationError]},
		{row: "HTTP 413 with a plain-text body", status: 413, body: `Request Entity Too Large`,
			code: errcodes.PayloadTooLarge, typed: func(err error) bool { return err != nil }},
		{row: "AccessDeniedException", status: 403, errType: "AccessDeniedException", body: `{"Message":"User is not authorized to perform: sagemaker:InvokeEndpoint"}`,
			code: errcodes.PermissionDenied, provider: "AccessDeniedException", typed: as[smithy.APIError]},
		{row: "InvalidSignatureException", status: 403, errType: "InvalidSignatureException",
			body: `{"message":"The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.\n\nThe Canonical String for this request should have been\n'POST\n/endpoints/x/invocations\n\nhost:runtime\nx-amz-security-token:SESSIONTOKEN\n'\n\nThe String-to-Sign should have been\n'AWS4-HMAC-SHA256\n20240101T000000Z\n'\n"}`,
			code: errcodes.Unauthenticated, provider: "InvalidSignatureException", typed: as[smithy.APIError],
			message: "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method."},
		{row: "UnrecognizedClientException", status: 403, errType: "UnrecognizedClientException",
			body: `{"message":"The security token included in the request is invalid for AKIAABCDEFGHIJKLMNOP."}`,
			code: errcodes.Unauthenticated, provider: "UnrecognizedClientException", typed: as[smithy.APIError],
			message: "The security token included in the request is invalid for [redacted key id]."},
		{row: "ExpiredTokenException", status: 400, errType: "ExpiredTokenException", body: `{"message":"The security token included in the request is expired"}`,
			code: errcodes.Unauthenticated, provider: "ExpiredTokenException", typed: as[smithy.APIError]},
		{row: "IncompleteSignature", status: 400, errType: "IncompleteSignature", body: `{"message":"Authorization header requires 'Credential' parameter."}`,
			code: errcodes.Unauthenticated, provider: "IncompleteSignature", typed: as[smithy.APIError]},
		{row: "MissingAuthenticationToken", status: 403, errType: "MissingAuthenticationTokenException", body: `{"message":"Missing Authentication Token"}`,
			code: errcodes.Unauthenticated, provider: "MissingAuthenticationTokenException", typed: as[smithy.APIError]},
		{row: "other code, by HTTP status", status: 502, errType: "BadGatewayException", body: `{"message":"upstream"}`,
			code: errcodes.Unavailable, provider: "BadGatewayException", retryable: true, typed: as[smithy.APIError]},
		{row: "other code, by HTTP status (no type)", status: 404, body: `{"message":"no route"}`,
			code: errcodes.NotFound, provider: "UnknownError", typed: as[smithy.APIError]},
		{row: "plain-text 503 without X-Amzn-ErrorType (a fronting proxy)", status: 503,
			body: `upstream connect error or disconnect/reset before headers. reset reason: overflow`,
			code: errcodes.Unavailable, retryable: true, typed: func(err error) bool { return err != nil }},
		{row: "HTML error page", status: 502, body: `<html><body>502 Bad Gateway</body></html>`,
			code: errcodes.Unavailable, retryable: true, typed: func(err error) bool { return err != nil }},
	}
	for _, tc := range cases {
		t.Run(tc.row, func(t *testing.T) {
			ad, _ := testAdapter(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				if tc.exception != nil {
					writeStreamHead(w, http.Header{"X-Amzn-Requestid": {"rid-1"}})
					_, _ = w.Write(encodeFrames(t, *tc.exception))
					return
				}
				w.Header().Set("X-Amzn-RequestId", "rid-1")
				if tc.errType != "" {
					w.Header().Set("X-Amzn-ErrorType", tc.errType+":http://internal.amazon.com/coral/com.amazon.sagemaker/")
				}
				if tc.retryAfter > 0 {
					w.Header().Set("Retry-After", fmt.Sprint(int(tc.retryAfter.Seconds())))
				}
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			var err error
			if tc.exception != nil {
				cs, serr := ad.Stream(context.Background(), invokeCall("my-ep", `{}`))
				require.NoError(t, serr)
				defer cs.Close()
				_, err = cs.Next()
			} else {
				_, err = ad.Invoke(context.Background(), invokeCall("my-ep", `{}`))
			}
			var e *errcodes.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tc.code, e.Code, "%v", err)
			assert.Equal(t, "aws", e.Provider)
			assert.Equal(t, tc.provider, e.ProviderCode)
			assert.Equal(t, tc.retryable, e.Retryable)
			assert.Equal(t, tc.details, e.Details)
			assert.Equal(t, tc.retryAfter, e.RetryAfter)
			assert.Equal(t, "rid-1", e.RequestID)
			if tc.exception == nil {
				assert.Equal(t, tc.status, e.HTTPStatus)
			}
			if tc.message != "" {
				assert.Equal(t, tc.message, e.Message)
			}
			assert.NotContains(t, e.Error(), "SESSIONTOKEN")
			assert.NotContains(t, e.Error(), "AKIAABCDEFGHIJKLMNOP")
			assert.NotContains(t, e.Error(), "secret")
			assert.True(t, tc.typed(err), "errors.As must reach the SDK error, got %T", e.Err)
			assert.True(t, errors.Is(err, tc.code))
		})
	}
}

func TestMapErrorPassesThrough(t *testing.T) {
	assert.Nil(t, mapError(nil))
	ce := errcodes.New(errcodes.Throttled, "x")
	assert.Same(t, ce, mapError(fmt.Errorf("wrapped: %w", ce)))
	e := mapError(context.DeadlineExceeded)
	assert.Equal(t, errcodes.Timeout, e.Code)
	assert.Equal(t, "aws", e.Provider)
	e = mapError(&smithy.GenericAPIError{Code: "SomethingNew", Message: "?"})
	assert.Equal(t, errcodes.Unknown, e.Code)
	assert.Equal(t, "SomethingNew", e.ProviderCode)
}

func TestRedact(t *testing.T) {
	cases := map[string]string{
		"plain message":                   "plain message",
		"key AKIAIOSFODNN7EXAMPLE leaked": "key [redacted key id] leaked",
		"bad sig.\nThe Canonical String for this request should have been\n'POST\n/x\nx-amz-security-token:TOKEN'": "bad sig.",
		"bad sig. The String-to-Sign should have been 'AWS4-HMAC-SHA256'":                                          "bad sig.",
	}
	for in, want := range cases {
		assert.Equal(t, want, redact(in), in)
	}
}
