package faults

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/providers/sagemaker"
)

// SageMaker test credentials. The secret and session token are sentinels:
// they must never appear in an error or a log.
const (
	awsKeyID        = "AKIDFAULTSUITE0001"
	awsSecret       = "sentinel-aws-secret-Zq8x1VwT"
	awsSessionToken = "sentinel-aws-session-Hf3k9LpR"
)

func sagemakerBackend() backend {
	return backend{
		name: "sagemaker",
		applies: func(a answer) bool {
			return a.status != 450 // SageMaker has no queue-full status
		},
		start: func(t testing.TB, env startEnv) cloudreq.Adapter {
			base, hc := serveEnv(t, sagemakerWire{}, env)
			return newSageMaker(t, base, hc)
		},
		newAdapter: func(t testing.TB, base string, hc *http.Client) cloudreq.Adapter {
			return newSageMaker(t, base, hc)
		},
		request: func(stream bool) *cloudreq.CloudRequest {
			if stream {
				return &cloudreq.CloudRequest{
					Provider: cloudreq.ProviderAWS, Service: cloudreq.ServiceSageMaker, Action: cloudreq.ActionGenerate,
					Target:   cloudreq.Target{Endpoint: "ep"},
					Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "hello"}}, MaxTokens: 8},
				}
			}
			return &cloudreq.CloudRequest{
				Provider: cloudreq.ProviderAWS, Service: cloudreq.ServiceSageMaker, Action: cloudreq.ActionInvoke,
				Target:  cloudreq.Target{Endpoint: "ep"},
				Payload: cloudreq.Payload{Body: []byte(`{"inputs":"hello"}`)},
			}
		},
	}
}

// newSageMaker returns a SageMaker adapter for base with the sentinel
// credentials.
func newSageMaker(t testing.TB, base string, hc *http.Client, fns ...func(*sagemaker.Options)) *sagemaker.Adapter {
	t.Helper()
	ad, err := sagemaker.New(context.Background(), sagemaker.Options{
		Region:            "us-east-1",
		Credentials:       credentials.NewStaticCredentialsProvider(awsKeyID, awsSecret, awsSessionToken),
		BaseEndpoint:      base,
		HTTPClient:        hc,
		AllowInsecureHTTP: strings.HasPrefix(base, "http:"),
	}, fns...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ad.Close() })
	return ad
}

// sagemakerWire answers as SageMaker Runtime does: restJson1 errors named
// by X-Amzn-ErrorType, eventstream PayloadParts carrying the model's
// OpenAI-style SSE lines.
type sagemakerWire struct{}

func (sagemakerWire) isStream(r *http.Request, _ []byte) bool {
	return strings.HasSuffix(r.URL.Path, "/invocations-response-stream")
}

// sagemakerErrorType is the X-Amzn-ErrorType SageMaker sends for a status;
// "" for statuses it sends with no modelled error (the front end's).
func sagemakerErrorType(a answer) string {
	switch a.status {
	case 400:
		return "ValidationError"
	case 401:
		return "UnrecognizedClientException"
	case 403:
		return "AccessDeniedException"
	case 424:
		return "ModelError"
	case 429:
		if a.kind == kindNotReady {
			return "ModelNotReadyException"
		}
		return "ThrottlingException"
	case 500:
		return "InternalFailure"
	case 503:
		return "ServiceUnavailable"
	case 530:
		return "InternalDependencyException"
	}
	return ""
}

func (sagemakerWire) writeError(w http.ResponseWriter, a answer) {
	status := a.status
	if a.kind == kindNotReady {
		status = 429
	}
	typ := sagemakerErrorType(answer{status: status, kind: a.kind})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-RequestId", "req-fault-1")
	if typ != "" {
		w.Header().Set("X-Amzn-ErrorType", typ+":http://internal.amazon.com/coral/com.amazonaws.sagemaker/")
	}
	w.WriteHeader(status)
	if typ == "ModelError" {
		_, _ = io.WriteString(w, `{"Message":"Received server error (500) from primary","OriginalStatusCode":500,"OriginalMessage":"boom","LogStreamArn":"arn:aws:logs:us-east-1:1:log-group:/aws/sagemaker/Endpoints/ep"}`)
		return
	}
	_, _ = fmt.Fprintf(w, `{"message":"injected %d"}`, status)
}

func (sagemakerWire) writeOK(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Invoked-Production-Variant", "AllTraffic")
	_, _ = io.WriteString(w, `{"generated_text":"ok"}`)
}

func (sagemakerWire) streamHead(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.Header().Set("X-Amzn-SageMaker-Content-Type", "text/event-stream")
	w.Header().Set("X-Amzn-Invoked-Production-Variant", "AllTraffic")
	w.WriteHeader(http.StatusOK)
}

// payloadPart encodes one PayloadPart event.
func payloadPart(w io.Writer, payload []byte) error {
	var m eventstream.Message
	m.Headers.Set(":message-type", eventstream.StringValue("event"))
	m.Headers.Set(":event-type", eventstream.StringValue("PayloadPart"))
	m.Headers.Set(":content-type", eventstream.StringValue("application/octet-stream"))
	m.Payload = payload
	return eventstream.NewEncoder().Encode(w, m)
}

// sseChunk is an OpenAI chat chunk as an SSE event.
func sseChunk(i int) string {
	return fmt.Sprintf("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok%d \"}}]}\n\n", i)
}

const sseFinish = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"

func (sagemakerWire) chunk(w io.Writer, i int) error { return payloadPart(w, []byte(sseChunk(i))) }

func (sagemakerWire) finish(w io.Writer) error { return payloadPart(w, []byte(sseFinish)) }

func (sagemakerWire) streamError(w io.Writer) error {
	var m eventstream.Message
	m.Headers.Set(":message-type", eventstream.StringValue("exception"))
	m.Headers.Set(":exception-type", eventstream.StringValue("ModelStreamError"))
	m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
	m.Payload = []byte(`{"Message":"the model stream broke","ErrorCode":"StreamBroken"}`)
	return eventstream.NewEncoder().Encode(w, m)
}
