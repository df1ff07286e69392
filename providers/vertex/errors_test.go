package vertex

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/googleapis/gax-go/v2/apierror"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

type mappingRow struct {
	name    string
	code    codes.Code
	details []protoadapt.MessageV1
	want    errcodes.Code
	http    int
	// optional expectations
	retryAfter time.Duration
	reqID      string
	details2   map[string]string
}

func errorInfo(reason string) *errdetails.ErrorInfo {
	return &errdetails.ErrorInfo{Reason: reason, Domain: "aiplatform.googleapis.com"}
}

// mappingRows holds the package doc's mapping table, one row per gRPC
// status, then the rows that details refine.
var mappingRows = []mappingRow{
	{name: "INVALID_ARGUMENT", code: codes.InvalidArgument, want: errcodes.InvalidParam, http: 400},
	{name: "FAILED_PRECONDITION", code: codes.FailedPrecondition, want: errcodes.InvalidParam, http: 400},
	{name: "OUT_OF_RANGE", code: codes.OutOfRange, want: errcodes.InvalidParam, http: 400},
	{name: "UNAUTHENTICATED", code: codes.Unauthenticated, want: errcodes.Unauthenticated, http: 401},
	{name: "PERMISSION_DENIED", code: codes.PermissionDenied, want: errcodes.PermissionDenied, http: 403},
	{name: "NOT_FOUND", code: codes.NotFound, want: errcodes.NotFound, http: 404},
	{name: "ALREADY_EXISTS", code: codes.AlreadyExists, want: errcodes.InvalidParam, http: 409},
	{name: "ABORTED", code: codes.Aborted, want: errcodes.Unavailable, http: 409},
	{name: "RESOURCE_EXHAUSTED", code: codes.ResourceExhausted, want: errcodes.Throttled, http: 429},
	{name: "CANCELLED", code: codes.Canceled, want: errcodes.Canceled, http: 499},
	{name: "UNKNOWN", code: codes.Unknown, want: errcodes.Internal, http: 500},
	{name: "INTERNAL", code: codes.Internal, want: errcodes.Internal, http: 500},
	{name: "DATA_LOSS", code: codes.DataLoss, want: errcodes.Internal, http: 500},
	{name: "UNIMPLEMENTED", code: codes.Unimplemented, want: errcodes.InvalidParam, http: 501},
	{name: "UNAVAILABLE", code: codes.Unavailable, want: errcodes.Unavailable, http: 503},
	{name: "DEADLINE_EXCEEDED", code: codes.DeadlineExceeded, want: errcodes.Timeout, http: 504},

	// Rows refined by details.
	{name: "RESOURCE_EXHAUSTED", code: codes.ResourceExhausted, want: errcodes.Throttled, http: 429,
		details:    []protoadapt.MessageV1{errorInfo("RATE_LIMIT_EXCEEDED"), &errdetails.RetryInfo{RetryDelay: durationpb.New(1500 * time.Millisecond)}},
		retryAfter: 1500 * time.Millisecond, details2: map[string]string{"reason": "RATE_LIMIT_EXCEEDED", "domain": "aiplatform.googleapis.com"}},
	{name: "RESOURCE_EXHAUSTED", code: codes.ResourceExhausted, want: errcodes.Throttled, http: 429,
		details:  []protoadapt.MessageV1{&errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{Subject: "project:p", Description: "online prediction requests per minute"}}}},
		details2: map[string]string{"quota_subject": "project:p", "quota_description": "online prediction requests per minute"}},
	{name: "RESOURCE_EXHAUSTED", code: codes.ResourceExhausted, want: errcodes.QuotaExceeded, http: 429,
		details: []protoadapt.MessageV1{&errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{Subject: "project:p",
			QuotaMetric: "aiplatform.googleapis.com/generate_content_requests_per_day", QuotaId: "GenerateContentRequestsPerDayPerProject"}}}},
		details2: map[string]string{"quota_id": "GenerateContentRequestsPerDayPerProject"}},
	{name: "RESOURCE_EXHAUSTED", code: codes.ResourceExhausted, want: errcodes.QuotaExceeded, http: 429,
		details: []protoadapt.MessageV1{&errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{Subject: "project:p", Description: "Quota exceeded."}}}}},
	{name: "RESOURCE_EXHAUSTED", code: codes.ResourceExhausted, want: errcodes.Throttled, http: 429,
		details: []protoadapt.MessageV1{&errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{Subject: "project:p", Description: "Quota exceeded."}}},
			&errdetails.RetryInfo{RetryDelay: durationpb.New(3 * time.Second)}},
		retryAfter: 3 * time.Second},
	{name: "RESOURCE_EXHAUSTED", code: codes.ResourceExhausted, want: errcodes.Throttled, http: 429,
		details: []protoadapt.MessageV1{errorInfo("RATE_LIMIT_EXCEEDED"), &errdetails.RetryInfo{RetryDelay: durationpb.New(30 * time.Second)},
			&errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{Subject: "project:p", Description: "requests per minute"}}}},
		retryAfter: 30 * time.Second, details2: map[string]string{"reason": "RATE_LIMIT_EXCEEDED", "domain": "aiplatform.googleapis.com",
			"quota_subject": "project:p", "quota_description": "requests per minute"}},
	{name: "RESOURCE_EXHAUSTED", code: codes.ResourceExhausted, want: errcodes.QuotaExceeded, http: 429,
		details: []protoadapt.MessageV1{errorInfo("QUOTA_EXCEEDED")}},
	{name: "RESOURCE_EXHAUSTED", code: codes.ResourceExhausted, want: errcodes.QuotaExceeded, http: 429,
		details: []protoadapt.MessageV1{errorInfo("RESOURCE_QUOTA_EXCEEDED"), &errdetails.QuotaFailure{}}},
	{name: "RESOURCE_EXHAUSTED", code: codes.ResourceExhausted, want: errcodes.QuotaExceeded, http: 429,
		details: []protoadapt.MessageV1{errorInfo("RATE_LIMIT_EXCEEDED_QUOTA_LIMIT")}},
	{name: "UNAVAILABLE", code: codes.Unavailable, want: errcodes.ModelNotReady, http: 503,
		details: []protoadapt.MessageV1{errorInfo("MODEL_NOT_READY"), &errdetails.RequestInfo{RequestId: "rq-1"}}, reqID: "rq-1"},
	{name: "UNAVAILABLE", code: codes.Unavailable, want: errcodes.ModelNotReady, http: 503,
		details: []protoadapt.MessageV1{errorInfo("DEPLOYMENT_SCALING_UP")}},
	{name: "UNAVAILABLE", code: codes.Unavailable, want: errcodes.ModelNotReady, http: 503,
		details: []protoadapt.MessageV1{errorInfo("model_loading")}},
	{name: "UNAVAILABLE", code: codes.Unavailable, want: errcodes.Unavailable, http: 503,
		details: []protoadapt.MessageV1{errorInfo("BACKEND_OVERLOADED")}},
	{name: "INVALID_ARGUMENT", code: codes.InvalidArgument, want: errcodes.PayloadTooLarge, http: 400,
		details: []protoadapt.MessageV1{errorInfo("PAYLOAD_TOO_LARGE")}},
	{name: "INVALID_ARGUMENT", code: codes.InvalidArgument, want: errcodes.InvalidParam, http: 400,
		details: []protoadapt.MessageV1{errorInfo("INVALID_INPUT"), &errdetails.BadRequest{}}},
	{name: "FAILED_PRECONDITION", code: codes.FailedPrecondition, want: errcodes.ModelError, http: 400,
		details: []protoadapt.MessageV1{errorInfo("MODEL_ERROR")}},
	{name: "INTERNAL", code: codes.Internal, want: errcodes.ModelError, http: 500,
		details: []protoadapt.MessageV1{errorInfo("MODEL_ERROR")}},
	{name: "UNKNOWN", code: codes.Unknown, want: errcodes.ModelError, http: 500,
		details: []protoadapt.MessageV1{errorInfo("MODEL_ERROR")}},
}

func (r mappingRow) status(t testing.TB) *status.Status {
	st := status.New(r.code, "vertex says "+r.name)
	if len(r.details) > 0 {
		var err error
		st, err = st.WithDetails(r.details...)
		require.NoError(t, err)
	}
	return st
}

func (r mappingRow) check(t *testing.T, err error) {
	t.Helper()
	var e *errcodes.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, r.want, e.Code)
	assert.Equal(t, "gcp", e.Provider)
	assert.Equal(t, r.name, e.ProviderCode)
	assert.Equal(t, r.http, e.HTTPStatus)
	assert.Equal(t, "vertex says "+r.name, e.Message)
	assert.Equal(t, r.want.Retryable(), e.Retryable)
	assert.Equal(t, r.retryAfter, e.RetryAfter)
	assert.Equal(t, r.reqID, e.RequestID)
	for k, v := range r.details2 {
		assert.Equal(t, v, e.Details[k], k)
	}
	var ae *apierror.APIError
	require.ErrorAs(t, err, &ae, "errors.As must reach *apierror.APIError")
	assert.Equal(t, r.code, ae.GRPCStatus().Code())
}

// TestMappingTable runs every row through the three paths an error can
// take: a unary call (the GAPIC *apierror.APIError), a stream that fails
// before its first message, and a bare status as a stream read returns it.
func TestMappingTable(t *testing.T) {
	f, addr := startFake(t)
	a := newFakeAdapter(t, addr)
	for _, r := range mappingRows {
		t.Run(r.name+"/"+string(r.want), func(t *testing.T) {
			st := r.status(t)
			r.check(t, mapError(st.Err()))

			f.set(func(f *fakeServer) { f.errs = []error{st.Err()} })
			req := invokeReq("x", "text/plain")
			_, err := a.Invoke(context.Background(), &cloudreq.Call{Request: req, Payload: req.Payload, Attempt: 1})
			r.check(t, err)

			f.set(func(f *fakeServer) { f.errs = []error{st.Err()} })
			_, err = a.Stream(context.Background(), &cloudreq.Call{Request: req, Payload: req.Payload, Attempt: 1})
			r.check(t, err)
		})
	}
}

// TestMappingTableMatchesDoc checks that the package doc's table and
// mappingRows say the same thing.
func TestMappingTableMatchesDoc(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	type docRow struct {
		http   int
		code   string
		refine string
	}
	doc := map[string]docRow{}
	in, last := false, ""
	for _, line := range strings.Split(string(src), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(line, "//"))
		if strings.HasPrefix(line, "gRPC status") {
			in = true
			continue
		}
		if !in {
			continue
		}
		if line == "" {
			break
		}
		fs := strings.Fields(line)
		require.GreaterOrEqual(t, len(fs), 2, line)
		h, err := strconv.Atoi(fs[1])
		if err != nil { // a continuation of the previous row's refinements
			require.NotEmpty(t, last, line)
			r := doc[last]
			r.refine += " " + line
			doc[last] = r
			continue
		}
		require.GreaterOrEqual(t, len(fs), 3, line)
		last = fs[0]
		doc[last] = docRow{http: h, code: fs[2], refine: strings.Join(fs[3:], " ")}
	}
	base := map[string]bool{}
	for _, r := range mappingRows {
		d, ok := doc[r.name]
		require.True(t, ok, "row %s missing from the doc table", r.name)
		assert.Equal(t, d.http, r.http, r.name)
		if len(r.details) == 0 {
			base[r.name] = true
			assert.Equal(t, d.code, string(r.want), r.name)
		} else if string(r.want) != d.code {
			assert.Contains(t, d.refine, string(r.want), "doc row %s does not mention %s", r.name, r.want)
		}
	}
	for name := range doc {
		assert.True(t, base[name], "doc row %s has no detail-free test row", name)
	}
	assert.Len(t, doc, len(statusNames)-1, "every status but OK is documented")
}

func TestMessageTooLarge(t *testing.T) {
	for _, msg := range []string{
		"grpc: received message larger than max (9 vs. 4)",
		"grpc: message after decompression larger than max (9 vs. 4)",
		"grpc: received message after decompression larger than max 4",
		"trying to send message larger than max (9 vs. 4)",
	} {
		err := mapError(status.Error(codes.ResourceExhausted, msg))
		assert.ErrorIs(t, err, errcodes.PayloadTooLarge, msg)
		assert.False(t, errcodes.From(err).Retryable, msg)
		assert.Equal(t, 429, errcodes.From(err).HTTPStatus, msg)
	}
	err := mapError(status.Error(codes.ResourceExhausted, "slow down"))
	assert.ErrorIs(t, err, errcodes.Throttled)
}

func TestMapErrorPassesOthersThrough(t *testing.T) {
	assert.Nil(t, mapError(nil))
	plain := errors.New("boom")
	assert.Same(t, plain, mapError(plain))
	assert.ErrorIs(t, mapError(context.Canceled), context.Canceled)
}

func TestTransportBreak(t *testing.T) {
	withInfo, err := status.New(codes.Unavailable, "x").WithDetails(errorInfo("MODEL_NOT_READY"))
	require.NoError(t, err)
	tests := []struct {
		err  error
		want bool
	}{
		{status.Error(codes.Unavailable, "error reading from server: EOF"), true},
		{status.Error(codes.Internal, "stream terminated by RST_STREAM with error code: INTERNAL_ERROR"), true},
		{status.Error(codes.Internal, "server closed the stream without sending trailers"), true},
		{status.Error(codes.Internal, "model crashed"), false},
		{status.Error(codes.ResourceExhausted, "slow down"), false},
		{withInfo.Err(), false},
		{errors.New("plain"), false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, transportBreak(tt.err), "%v", tt.err)
	}
}

// TestUnreadableMessage: a response message grpc-go could not unmarshal
// (a 2xx answer the client cannot parse) is ERR_MODEL_ERROR, not
// retryable; other INTERNAL statuses stay ERR_INTERNAL.
func TestUnreadableMessage(t *testing.T) {
	err := mapError(status.Error(codes.Internal, "grpc: failed to unmarshal the received message: proto: cannot parse invalid wire-format data"))
	require.ErrorIs(t, err, errcodes.ModelError)
	e := errcodes.From(err)
	assert.False(t, e.Retryable)
	assert.Equal(t, "INTERNAL", e.ProviderCode)
	assert.Equal(t, 500, e.HTTPStatus)

	err = mapError(status.Error(codes.Internal, "model crashed"))
	assert.ErrorIs(t, err, errcodes.Internal)
	withInfo, serr := status.New(codes.Internal, "failed to unmarshal the received message").WithDetails(errorInfo("BACKEND_ERROR"))
	require.NoError(t, serr)
	assert.ErrorIs(t, mapError(withInfo.Err()), errcodes.Internal, "a server's status with details is the server's word")
}
