package emulator

import (
	"context"
	"crypto/hmac"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// sageMakerOpenAISuffix ends the OpenAI-compatible route of a SageMaker AI
// endpoint or inference component.
const sageMakerOpenAISuffix = "/openai/v1/chat/completions"

// sageMakerOpenAIPath splits p, the OpenAI-compatible chat route of a
// SageMaker AI endpoint, /endpoints/{name}[/inference-components/{ic}]/openai/v1/chat/completions,
// into the endpoint and component names; ok is false for another path.
func sageMakerOpenAIPath(p string) (name, ic string, ok bool) {
	rest, ok := strings.CutPrefix(p, "/endpoints/")
	if !ok {
		return "", "", false
	}
	rest, ok = strings.CutSuffix(rest, sageMakerOpenAISuffix)
	if !ok {
		return "", "", false
	}
	seg := strings.Split(rest, "/")
	switch {
	case len(seg) == 1 && seg[0] != "":
		return seg[0], "", true
	case len(seg) == 3 && seg[0] != "" && seg[1] == "inference-components" && seg[2] != "":
		return seg[0], seg[2], true
	}
	return "", "", false
}

// isSageMakerOpenAIPath reports whether p is a SageMaker AI endpoint's
// OpenAI-compatible chat route.
func isSageMakerOpenAIPath(p string) bool {
	_, _, ok := sageMakerOpenAIPath(p)
	return ok
}

// serveSageMakerOpenAI serves SageMaker AI's OpenAI-compatible chat
// completions: the endpoint (and inference component) named by the path,
// the OpenAI chat wire (streams as SSE), a bearer token checked against
// the endpoint's AWS keys (verifySageMakerBearer). The front end's own
// refusals (endpoint or component not found, bad token, throttling, no
// capacity) come in the OpenAI error envelope with SageMaker's wording;
// the container's errors are quoted whole in the front end's message, as
// InvokeEndpoint's ModelError quotes them, with the container's status.
func (s *Server) serveSageMakerOpenAI(w http.ResponseWriter, r *http.Request) {
	name, ic, _ := sageMakerOpenAIPath(r.URL.Path)
	ep := s.lookup(name, SageMaker)
	if ep == nil {
		writeSageMakerOpenAIError(w, FaultNotFound, name, "")
		return
	}
	ics := ep.SageMaker.InferenceComponents
	switch {
	case ic == "" && len(ics) > 0:
		writeSageMakerFront(w, http.StatusBadRequest, "ValidationError",
			"Inference Component Name is required for endpoints to which you plan to deploy inference components: call /endpoints/"+name+"/inference-components/{name}"+sageMakerOpenAISuffix+".")
		return
	case ic != "" && !slices.Contains(ics, ic):
		writeSageMakerFront(w, http.StatusBadRequest, "ValidationError",
			fmt.Sprintf("Inference Component %s of account %s not found.", ic, sageMakerAccount))
		return
	}
	s.serveOpenAIGen(w, r, ep, SageMaker, true, writeSageMakerOpenAIError)
}

// writeSageMakerFront writes one of the front end's own refusals.
func writeSageMakerFront(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, openAIError{openAIErrorBody{Message: msg, Type: typ, Code: typ}})
}

// writeSageMakerOpenAIError is the errorWriter of the OpenAI-compatible
// route. Faults of the front end are its own answers; the container's are
// vLLM's body quoted in the front end's message.
func writeSageMakerOpenAIError(w http.ResponseWriter, f Fault, name, msg string) {
	front := func(status int, typ, m string) {
		if msg != "" {
			m = msg
		}
		writeSageMakerFront(w, status, typ, m)
	}
	switch f {
	case FaultNotFound:
		front(http.StatusBadRequest, "ValidationError", fmt.Sprintf("Endpoint %s of account %s not found.", name, sageMakerAccount))
		return
	case FaultUnauthenticated:
		front(http.StatusForbidden, "UnrecognizedClientException", "The security token included in the request is invalid.")
		return
	case FaultForbidden:
		front(http.StatusForbidden, "AccessDeniedException", fmt.Sprintf("User is not authorized to perform: sagemaker:InvokeEndpoint on resource: arn:aws:sagemaker:us-east-1:%s:endpoint/%s", sageMakerAccount, name))
		return
	case FaultThrottle, FaultQuota:
		front(http.StatusBadRequest, "ThrottlingException", "Rate exceeded")
		return
	case FaultModelNotReady:
		front(http.StatusBadRequest, "ValidationError", fmt.Sprintf("Endpoint %s has no capacity to process this request: it is scaling up from zero instances. Retry the request later.", name))
		return
	case FaultUnavailable:
		front(http.StatusServiceUnavailable, "ServiceUnavailable", "Service Unavailable")
		return
	case FaultPayloadTooLarge:
		front(http.StatusRequestEntityTooLarge, "ValidationError", fmt.Sprintf("Request payload size exceeds the maximum allowed size of %d bytes", sageMakerMaxBody))
		return
	case FaultGatewayOverflow:
		writeGatewayOverflow(w)
		return
	}
	status, body := openAIErrorFor(f, name)
	if msg != "" {
		body.Error.Message = msg
	}
	inner, _ := json.Marshal(body)
	kind := "server"
	if status < 500 {
		kind = "client"
	}
	writeJSON(w, status, openAIError{openAIErrorBody{
		Message: fmt.Sprintf("Received %s error (%d) from primary with message %q. See https://us-east-1.console.aws.amazon.com/cloudwatch/home?region=us-east-1#logEventViewer:group=/aws/sagemaker/Endpoints/%s in account %s for more information.", kind, status, inner, name, sageMakerAccount),
		Type:    body.Error.Type, Code: status,
	}})
}

// SageMaker AI bearer tokens: "sagemaker-api-key-" + base64 of a SigV4
// presigned "sagemaker.amazonaws.com/?Action=CallWithBearerToken&…" URL
// (no scheme) followed by "&Version=1".
const (
	sageMakerBearerPrefix  = "sagemaker-api-key-"
	sageMakerBearerHost    = "sagemaker.amazonaws.com"
	sageMakerBearerVersion = "&Version=1"
	sageMakerBearerMaxLife = 12 * time.Hour
)

// verifySageMakerBearer checks a bearer token of the OpenAI-compatible
// route as SageMaker does: the prefix, the presigned URL's action, host,
// algorithm and credential scope (the access key id given, service
// sagemaker, any region), its signing time and lifetime (at most 12 hours,
// not yet over), and its signature, recomputed with the SDK's own signer
// from the secret key (the session token it carries included).
func verifySageMakerBearer(tok, akid, secret string, now time.Time) bool {
	enc, ok := strings.CutPrefix(tok, sageMakerBearerPrefix)
	if !ok {
		return false
	}
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return false
	}
	presigned, ok := strings.CutSuffix(string(raw), sageMakerBearerVersion)
	if !ok {
		return false
	}
	u, err := url.Parse("https://" + presigned)
	if err != nil || u.Host != sageMakerBearerHost || (u.Path != "/" && u.Path != "") {
		return false
	}
	q := u.Query()
	cred := strings.Split(q.Get("X-Amz-Credential"), "/")
	if q.Get("Action") != "CallWithBearerToken" || q.Get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256" ||
		len(cred) != 5 || cred[3] != sigV4Service || cred[4] != "aws4_request" ||
		subtle.ConstantTimeCompare([]byte(cred[0]), []byte(akid)) != 1 {
		return false
	}
	signedAt, err := time.Parse("20060102T150405Z", q.Get("X-Amz-Date"))
	if err != nil || signedAt.Format("20060102") != cred[1] || signedAt.After(now.Add(5*time.Minute)) {
		return false
	}
	secs, err := strconv.Atoi(q.Get("X-Amz-Expires"))
	if err != nil || secs < 1 || time.Duration(secs)*time.Second > sageMakerBearerMaxLife || !now.Before(signedAt.Add(time.Duration(secs)*time.Second)) {
		return false
	}
	want := url.Values{"Action": {"CallWithBearerToken"}, "X-Amz-Expires": {q.Get("X-Amz-Expires")}}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "https://"+sageMakerBearerHost+"/?"+want.Encode(), nil)
	if err != nil {
		return false
	}
	creds := aws.Credentials{AccessKeyID: akid, SecretAccessKey: secret, SessionToken: q.Get("X-Amz-Security-Token")}
	signed, _, err := v4.NewSigner().PresignHTTP(context.Background(), creds, req, "UNSIGNED-PAYLOAD", sigV4Service, cred[2], signedAt)
	if err != nil {
		return false
	}
	su, err := url.Parse(signed)
	if err != nil {
		return false
	}
	return hmac.Equal([]byte(su.Query().Get("X-Amz-Signature")), []byte(q.Get("X-Amz-Signature")))
}
