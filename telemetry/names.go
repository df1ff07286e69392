package telemetry

import (
	"net"
	"net/url"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/internal/openaiwire"
)

// ScopeName is the instrumentation scope of cloudinfer's tracer and meter.
const ScopeName = "github.com/cloudinfer/cloudinfer/telemetry"

// Custom gen_ai.provider.name values, for platforms the GenAI semantic
// conventions do not name. They follow the conventions' "vendor.product"
// spelling.
const (
	// ProviderAWSSageMaker is Amazon SageMaker real-time endpoints.
	ProviderAWSSageMaker = "aws.sagemaker"
	// ProviderAzureML is Azure Machine Learning online endpoints.
	ProviderAzureML = "azure.ml"
	// ProviderAlibabaPAIEAS is Alibaba Cloud PAI-EAS services.
	ProviderAlibabaPAIEAS = "alibaba.pai_eas"
)

// OperationInvoke is the custom gen_ai.operation.name of ActionInvoke:
// the caller's payload is sent as it is, to a model of any kind, so no
// predefined operation applies.
const OperationInvoke = "invoke"

// Metric names. The first four are the GenAI semantic conventions'; the
// others are cloudinfer's, named in the same style.
const (
	MetricOperationDuration  = "gen_ai.client.operation.duration"
	MetricTokenUsage         = "gen_ai.client.token.usage"
	MetricTimeToFirstChunk   = "gen_ai.client.operation.time_to_first_chunk"
	MetricTimePerOutputChunk = "gen_ai.client.operation.time_per_output_chunk"
	MetricColdStartOverhead  = "cloudinfer.client.operation.cold_start.overhead"
	MetricRetries            = "cloudinfer.client.operation.retries"
	MetricThrottles          = "cloudinfer.client.operation.throttles"
)

// Bucket boundaries, as the GenAI semantic conventions specify them.
var (
	// DurationBuckets are the explicit bucket boundaries (seconds) of
	// gen_ai.client.operation.duration, time_to_first_chunk and
	// time_per_output_chunk; cloudinfer's cold-start overhead uses them too.
	DurationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	// TokenBuckets are the explicit bucket boundaries of gen_ai.client.token.usage.
	TokenBuckets = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
)

// cloudinfer's own attribute keys (see the package doc).
const (
	attrService          = "cloudinfer.service"
	attrAction           = "cloudinfer.action"
	attrEndpoint         = "cloudinfer.endpoint"
	attrVariant          = "cloudinfer.variant"
	attrClass            = "cloudinfer.request.class"
	attrRequestID        = "cloudinfer.request.id"
	attrResponseReqID    = "cloudinfer.response.request_id"
	attrAttempts         = "cloudinfer.attempts"
	attrAttemptNumber    = "cloudinfer.attempt.number"
	attrAttemptBackoff   = "cloudinfer.attempt.backoff"
	attrConnReused       = "cloudinfer.connection.reused"
	attrStartKind        = "cloudinfer.start.kind"
	attrStartReason      = "cloudinfer.start.reason"
	attrConnectionCold   = "cloudinfer.start.connection_cold"
	attrColdOverhead     = "cloudinfer.start.overhead"
	attrUsageSource      = "cloudinfer.usage.source"
	attrE2E              = "cloudinfer.e2e"
	attrTTFT             = "cloudinfer.ttft"
	attrTPOT             = "cloudinfer.tpot"
	attrClock            = "cloudinfer.sla_clock"
	attrQueue            = "cloudinfer.phase.queue"
	attrProviderCode     = "cloudinfer.error.provider_code"
	attrRetryable        = "cloudinfer.error.retryable"
	attrPhaseDNS         = "cloudinfer.phase.dns"
	attrPhaseConnect     = "cloudinfer.phase.connect"
	attrPhaseTLS         = "cloudinfer.phase.tls"
	attrPhaseServerWait  = "cloudinfer.phase.server_wait"
	attrPhaseTimeToFirst = "cloudinfer.phase.time_to_first_byte"
)

// ProviderName returns the gen_ai.provider.name of a request's provider and
// service: a predefined value where the conventions have one, a documented
// custom value otherwise, and the provider string itself for adapters
// cloudinfer does not know.
func ProviderName(provider, service string) string {
	switch provider {
	case cloudreq.ProviderAWS:
		return ProviderAWSSageMaker
	case cloudreq.ProviderAzure:
		return ProviderAzureML
	case cloudreq.ProviderGCP:
		return string(genaiconv.ProviderNameGCPVertexAI)
	case cloudreq.ProviderAlibaba:
		return ProviderAlibabaPAIEAS
	case cloudreq.ProviderOpenAI:
		return string(genaiconv.ProviderNameOpenAI)
	}
	if provider == "" {
		return service
	}
	return provider
}

// OperationName returns the gen_ai.operation.name of a request: "chat" for
// portable generation ("generate_content" on Vertex, whose generate action
// is generateContent) and the custom "invoke" for raw invocations.
func OperationName(provider, action string) string {
	switch action {
	case cloudreq.ActionGenerate:
		if provider == cloudreq.ProviderGCP {
			return string(genaiconv.OperationNameGenerateContent)
		}
		return string(genaiconv.OperationNameChat)
	case cloudreq.ActionInvoke:
		return OperationInvoke
	}
	if action == "" {
		return OperationInvoke
	}
	return action
}

// requestOperation is OperationName for req, "text_completion" for a
// generate request sent to a (legacy) completions route.
func requestOperation(req *cloudreq.CloudRequest) string {
	op := OperationName(req.Provider, req.Action)
	if op == string(genaiconv.OperationNameChat) && openaiwire.IsCompletionsPath(req.Target.Path) {
		return string(genaiconv.OperationNameTextCompletion)
	}
	return op
}

// SpanName returns the span name the conventions give a GenAI client span:
// "{gen_ai.operation.name} {gen_ai.request.model}", or the operation alone
// when the model is not known.
func SpanName(operation, model string) string {
	if model == "" {
		return operation
	}
	return operation + " " + model
}

// server is where a request goes, as far as telemetry may say it.
type server struct {
	// address and port are server.address and server.port; set only when
	// the endpoint is a URL.
	address string
	port    int
	// endpoint is the endpoint's name, or its URL without user info, query
	// and fragment (which may carry credentials).
	endpoint string
}

// serverOf derives the server attributes from a target endpoint. A URL
// yields its host and port; a bare name yields only the endpoint.
func serverOf(endpoint string) server {
	if !strings.Contains(endpoint, "://") {
		return server{endpoint: endpoint}
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return server{endpoint: "[unparsable endpoint URL]"}
	}
	s := server{address: u.Hostname(), endpoint: u.Scheme + "://" + u.Host + u.EscapedPath()}
	if p := u.Port(); p != "" {
		s.port, _ = strconv.Atoi(p)
	} else {
		switch strings.ToLower(u.Scheme) {
		case "https", "grpcs", "wss":
			s.port = 443
		case "http", "ws":
			s.port = 80
		}
	}
	if ip := net.ParseIP(s.address); ip != nil {
		s.address = ip.String()
	}
	return s
}
