package vertex

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
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

// unreadableMessage is grpc-go's message for a response message it could
// not unmarshal ("grpc: failed to unmarshal the received message: …").
const unreadableMessage = "failed to unmarshal the received message"

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
	var q quotaInfo // read for RESOURCE_EXHAUSTED
	switch c {
	case codes.InvalidArgument:
		if strings.Contains(reason, "TOO_LARGE") {
			code = errcodes.PayloadTooLarge
		}
	case codes.FailedPrecondition, codes.Internal, codes.Unknown:
		if strings.Contains(reason, "MODEL_ERROR") {
			code = errcodes.ModelError
		}
		if c == codes.Internal && len(st.Details()) == 0 && strings.Contains(st.Message(), unreadableMessage) {
			// grpc-go's own status for a response message that does not
			// unmarshal: the answer came, and it cannot be read (a
			// documented last-resort string match: grpc-go exposes no
			// other signal). The same request would get the same answer.
			code = errcodes.ModelError
		}
	case codes.ResourceExhausted:
		q = readQuota(d.QuotaFailure, d.ErrorInfo)
		switch {
		case q.period == periodLong:
			// A per-day (or longer) quota is spent: a retry within the
			// client's patience cannot succeed.
			code = errcodes.QuotaExceeded
		case q.period == periodRate:
			// Every quota named is a rate (per second, per minute): it
			// refills, so the request is throttled, not out of quota.
		case reason == "RATE_LIMIT_EXCEEDED":
			// Google's reason for a rate quota, whatever else it says.
		case q.named || strings.Contains(reason, "QUOTA"):
			// A quota that names no period: the server's RetryInfo says
			// whether it refills soon enough to wait for.
			if dl := retryDelay(d); dl <= 0 || dl > quotaRetryBound {
				code = errcodes.QuotaExceeded
			}
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
	q.keep(e)
	if dl := retryDelay(d); dl > 0 {
		e.RetryAfter = dl
	}
	if rq := d.RequestInfo; rq != nil {
		e.RequestID = rq.GetRequestId()
	}
	return e
}

// retryDelay is the RetryInfo delay of an error's details, 0 without one.
func retryDelay(d apierror.ErrDetails) time.Duration {
	if ri := d.RetryInfo; ri != nil && ri.GetRetryDelay() != nil {
		return ri.GetRetryDelay().AsDuration()
	}
	return 0
}

// quotaRetryBound is the longest RetryInfo delay for which a quota refusal
// that names no period is ERR_THROTTLED rather than ERR_QUOTA_EXCEEDED:
// cloudreq.DefaultMaxRetryAfter, the longest delay the client waits by
// default (the adapter does not see the call's RetryOptions).
const quotaRetryBound = cloudreq.DefaultMaxRetryAfter

// quotaPeriod is what a quota's names say of its refill period.
type quotaPeriod int

const (
	periodUnknown quotaPeriod = iota // no period named: an allocation, or unsaid
	periodRate                       // per second, per minute, per 100 seconds
	periodLong                       // per hour, per day or longer
)

// Fragments of quota ids, metrics and descriptions, lower-cased with
// everything but letters and digits removed ("PerMinute", "per_minute"
// and "per minute" all read "perminute").
var (
	rateFragments = []string{"persecond", "perminute", "per100seconds", "perhundredseconds"}
	longFragments = []string{"perhour", "hourly", "perday", "daily", "perweek", "weekly", "permonth", "monthly", "peryear", "yearly"}
)

// periodOf reads the period of one quota from its names.
func periodOf(names ...string) quotaPeriod {
	var b strings.Builder
	for _, n := range names {
		for _, r := range n {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				b.WriteRune(unicode.ToLower(r))
			}
		}
		b.WriteByte(' ')
	}
	s := b.String()
	for _, f := range longFragments {
		if strings.Contains(s, f) {
			return periodLong
		}
	}
	for _, f := range rateFragments {
		if strings.Contains(s, f) {
			return periodRate
		}
	}
	return periodUnknown
}

// quotaInfo is what a RESOURCE_EXHAUSTED error says of its quotas: the
// QuotaFailure violations (subject, description and the newer api_service,
// quota_metric, quota_id, quota_dimensions, quota_value,
// future_quota_value) and the quota_* metadata Google's quota system puts
// in the ErrorInfo.
type quotaInfo struct {
	// named says a QuotaFailure or quota metadata came.
	named bool
	// period is the verdict over every quota named: periodLong when one is
	// per day or longer, periodRate when all are rates, else unknown.
	period quotaPeriod
	// decisive is the violation the verdict rests on (the first per-day one,
	// else the first); nil without violations.
	decisive *errdetails.QuotaFailure_Violation
	ids      []string
	meta     map[string]string
}

// readQuota reads the quota details of an error.
func readQuota(qf *errdetails.QuotaFailure, ei *errdetails.ErrorInfo) quotaInfo {
	q := quotaInfo{named: qf != nil}
	var periods []quotaPeriod
	for _, v := range qf.GetViolations() {
		p := periodOf(v.GetQuotaId(), v.GetQuotaMetric(), v.GetSubject(), v.GetDescription())
		periods = append(periods, p)
		if q.decisive == nil || p == periodLong && !slices.Contains(periods[:len(periods)-1], periodLong) {
			q.decisive = v
		}
		if id := v.GetQuotaId(); id != "" && !slices.Contains(q.ids, id) {
			q.ids = append(q.ids, id)
		}
	}
	for k, v := range ei.GetMetadata() {
		if strings.HasPrefix(k, "quota_") {
			if q.meta == nil {
				q.meta = map[string]string{}
			}
			q.meta[k] = v
		}
	}
	if m := q.meta; m != nil {
		q.named = true
		periods = append(periods, periodOf(m["quota_limit"], m["quota_id"], m["quota_metric"]))
	}
	switch {
	case slices.Contains(periods, periodLong):
		q.period = periodLong
	case len(periods) > 0 && !slices.Contains(periods, periodUnknown):
		q.period = periodRate
	}
	return q
}

// keep puts the quota details into e.Details: the decisive violation's
// fields as quota_subject, quota_description, quota_api_service,
// quota_metric, quota_id, quota_dimensions ("k=v,…", sorted),
// quota_value and future_quota_value; quota_ids lists every violated
// quota's id when there are several; the ErrorInfo's quota_* metadata
// (quota_limit, quota_location, …) fills the keys still empty.
func (q quotaInfo) keep(e *errcodes.Error) {
	set := func(k, v string) {
		if v == "" {
			return
		}
		if e.Details == nil {
			e.Details = map[string]string{}
		}
		if _, ok := e.Details[k]; !ok {
			e.Details[k] = v
		}
	}
	if v := q.decisive; v != nil {
		set("quota_subject", v.GetSubject())
		set("quota_description", v.GetDescription())
		set("quota_api_service", v.GetApiService())
		set("quota_metric", v.GetQuotaMetric())
		set("quota_id", v.GetQuotaId())
		if dims := v.GetQuotaDimensions(); len(dims) > 0 {
			kv := make([]string, 0, len(dims))
			for k, val := range dims {
				kv = append(kv, k+"="+val)
			}
			slices.Sort(kv)
			set("quota_dimensions", strings.Join(kv, ","))
		}
		if n := v.GetQuotaValue(); n != 0 {
			set("quota_value", strconv.FormatInt(n, 10))
		}
		if v.FutureQuotaValue != nil {
			set("future_quota_value", strconv.FormatInt(v.GetFutureQuotaValue(), 10))
		}
	}
	if len(q.ids) > 1 {
		set("quota_ids", strings.Join(q.ids, ","))
	}
	for k, v := range q.meta {
		set(k, v)
	}
}
