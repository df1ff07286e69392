package emulator

import (
	"net"
	"net/http"
	"slices"
	"time"
)

// Fault is one outcome the emulator can inject, by request header
// (X-Emulator-Inject) or at random (Profile.ErrorRates).
type Fault string

// Error faults: answered before any token, in the provider's wire form.
const (
	FaultThrottle        Fault = "throttle"
	FaultQuota           Fault = "quota"
	FaultModelNotReady   Fault = "model-not-ready"
	FaultModelError      Fault = "model-error"
	FaultInvalid         Fault = "invalid"
	FaultNotFound        Fault = "not-found"
	FaultUnauthenticated Fault = "unauthenticated"
	FaultForbidden       Fault = "forbidden"
	FaultInternal        Fault = "internal"
	FaultUnavailable     Fault = "unavailable"
	FaultTimeout         Fault = "timeout"
	FaultPayloadTooLarge Fault = "payload-too-large"
	// FaultModelOverloaded is the model container's own back-pressure: it
	// answered 429 ("Model is overloaded", as TGI and LMI do). A provider
	// that wraps container answers says so (SageMaker ModelError with
	// OriginalStatusCode 429, Azure 424 with ms-azureml-model-error-statuscode
	// 429); the others answer as their server does to a 429.
	FaultModelOverloaded Fault = "model-overloaded"
	// FaultModelUnavailable is FaultModelOverloaded with the container's 503.
	FaultModelUnavailable Fault = "model-unavailable"
	// FaultGatewayOverflow is a fronting proxy's transient 503 (Envoy's
	// "upstream connect error or disconnect/reset before headers. reset
	// reason: overflow"), in plain text: not the service's own answer.
	FaultGatewayOverflow Fault = "gateway-overflow"
	FaultQueueFull       Fault = "queue-full"
)

// Transport faults: the connection or the body misbehaves.
const (
	// FaultResetBeforeHeaders resets the TCP connection before any response byte.
	FaultResetBeforeHeaders Fault = "reset-before-headers"
	// FaultHTML502 answers 502 with an HTML page, as a load balancer does.
	FaultHTML502 Fault = "html-502"
	// FaultCloseMidStream closes the connection after about half the tokens.
	FaultCloseMidStream Fault = "close-mid-stream"
	// FaultStallMidStream stops sending after about half the tokens, for
	// Profile.StallMs, then closes the connection.
	FaultStallMidStream Fault = "stall-mid-stream"
	// FaultMalformedBody sends a 200 whose body is not valid for the protocol.
	FaultMalformedBody Fault = "malformed-body"
	// FaultStreamError sends the provider's in-stream error after about
	// half the tokens (SageMaker ModelStreamError, OpenAI data:{"error":…},
	// Vertex mid-stream error); a non-streaming call gets the model-error answer.
	FaultStreamError Fault = "stream-error"
	// FaultStreamErrorFirst opens a stream (200) whose first and only event
	// is the provider's in-band error, before any content: a rate-limit
	// error where the wire form can say so (OpenAI data:{"error":…}, Azure
	// serverless's single error event, Vertex RESOURCE_EXHAUSTED before any
	// message), SageMaker's ModelStreamError frame. A non-streaming call
	// gets the throttle answer.
	FaultStreamErrorFirst Fault = "stream-error-first"
)

var allFaults = []Fault{
	FaultThrottle, FaultQuota, FaultModelNotReady, FaultModelError, FaultInvalid, FaultNotFound,
	FaultUnauthenticated, FaultForbidden, FaultInternal, FaultUnavailable, FaultTimeout,
	FaultPayloadTooLarge, FaultModelOverloaded, FaultModelUnavailable, FaultGatewayOverflow, FaultQueueFull,
	FaultResetBeforeHeaders, FaultHTML502, FaultCloseMidStream, FaultStallMidStream,
	FaultMalformedBody, FaultStreamError, FaultStreamErrorFirst,
}

// Faults lists every fault name, in a stable order.
func Faults() []Fault { return slices.Clone(allFaults) }

func isFault(s string) bool { return slices.Contains(allFaults, Fault(s)) }

// isError reports whether f is answered with an error response before any token.
func (f Fault) isError() bool {
	i := slices.Index(allFaults, f)
	return i >= 0 && i <= slices.Index(allFaults, FaultQueueFull)
}

// midStream reports whether f happens after some tokens were sent.
func (f Fault) midStream() bool {
	switch f {
	case FaultCloseMidStream, FaultStallMidStream, FaultMalformedBody, FaultStreamError:
		return true
	}
	return false
}

// html502 is the page a fronting load balancer answers with.
const html502 = `<html>
<head><title>502 Bad Gateway</title></head>
<body>
<center><h1>502 Bad Gateway</h1></center>
<hr><center>nginx</center>
</body>
</html>
`

func writeHTML502(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(http.StatusBadGateway)
	_, _ = w.Write([]byte(html502))
}

// abortConn cuts the connection under w: with reset, by a TCP RST (linger
// 0), else by a plain close. Data already flushed stays sent; a chunked body
// is left unterminated, so the client sees an unexpected EOF.
func abortConn(w http.ResponseWriter, reset bool) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Not hijackable (e.g. HTTP/2): net/http's documented way to abort.
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok && reset {
		_ = tc.SetLinger(0)
	}
	_ = conn.SetDeadline(time.Now())
	_ = conn.Close()
}

// retryAfterHeaders sets the retry-delay headers provider p documents on
// its throttled, queue-full and not-ready answers, for a delay d:
//
//	Azure ML    retry-after-ms and x-ms-retry-after-ms (milliseconds, rounded
//	            up), Retry-After (whole seconds, rounded up, at least 1)
//	OpenAI      Retry-After (whole seconds, rounded up, at least 1)
//	SageMaker   none
//	PAI-EAS     none
//	Vertex      none (its REST bodies and gRPC statuses carry a RetryInfo
//	            detail instead)
func retryAfterHeaders(h http.Header, p Provider, d time.Duration) {
	if d <= 0 {
		return
	}
	secs := itoa(int64((d + time.Second - 1) / time.Second))
	ms := itoa(int64((d + time.Millisecond - 1) / time.Millisecond))
	switch p {
	case AzureML:
		h.Set("retry-after-ms", ms)
		h.Set("x-ms-retry-after-ms", ms)
		h.Set("Retry-After", secs)
	case OpenAI:
		h.Set("Retry-After", secs)
	}
}
