package vertex

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
	"google.golang.org/grpc/metadata"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

// Keys of CloudResponse.Metadata the adapter fills. Response header
// metadata whose name starts with "x-vertex-ai-" is kept too, under its
// lower-case name.
const (
	// MetaDeployedModelID is the id of the deployed model that served a
	// predict call (PredictResponse.deployedModelId, or the
	// x-vertex-ai-deployed-model-id header of raw calls).
	MetaDeployedModelID = "deployedModelId"
	// MetaModelVersionID is the model version that served the call
	// (PredictResponse.modelVersionId, GenerateContentResponse.modelVersion).
	MetaModelVersionID = "modelVersionId"
	// MetaModel is the resource name of the model behind the deployed model.
	MetaModel = "model"
)

// Header metadata names the adapter reads (gRPC metadata keys are lower-case).
const (
	mdColdStart   = "x-emulator-cold-start"
	mdColdStartMS = "x-emulator-cold-start-ms"
	mdDeployedID  = "x-vertex-ai-deployed-model-id"
	mdVertexPfx   = "x-vertex-ai-"
)

// newResponse starts a response from the RPC's header and trailer
// metadata: kept Vertex headers, the deployed model id and the server's
// cold-start report.
func newResponse(hdr, trl metadata.MD) *cloudreq.CloudResponse {
	resp := &cloudreq.CloudResponse{StatusCode: http.StatusOK}
	for _, md := range []metadata.MD{hdr, trl} {
		for k, vs := range md {
			if len(vs) > 0 && strings.HasPrefix(k, mdVertexPfx) {
				setMeta(resp, k, vs[0])
			}
		}
	}
	if v := first(hdr, trl, mdDeployedID); v != "" {
		setMeta(resp, MetaDeployedModelID, v)
	}
	resp.ServerStart = serverStart(first(hdr, trl, mdColdStart), first(hdr, trl, mdColdStartMS))
	return resp
}

// first returns the first value of key in hdr, else in trl.
func first(hdr, trl metadata.MD, key string) string {
	if vs := hdr.Get(key); len(vs) > 0 {
		return vs[0]
	}
	if vs := trl.Get(key); len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// serverStart parses the emulator's cold-start headers: "true"/"false" and
// the setup time in (possibly fractional) milliseconds. It returns nil when
// the flag is absent or unreadable.
func serverStart(flag, ms string) *cloudreq.ServerStart {
	cold, err := strconv.ParseBool(strings.TrimSpace(flag))
	if err != nil {
		return nil
	}
	ss := &cloudreq.ServerStart{Cold: cold}
	if f, err := strconv.ParseFloat(strings.TrimSpace(ms), 64); err == nil && f > 0 && !math.IsInf(f, 0) &&
		f < float64(math.MaxInt64/int64(time.Millisecond)) {
		ss.Setup = time.Duration(f * float64(time.Millisecond))
	}
	return ss
}

func setMeta(resp *cloudreq.CloudResponse, k, v string) {
	if v == "" {
		return
	}
	if resp.Metadata == nil {
		resp.Metadata = map[string]string{}
	}
	resp.Metadata[k] = v
}

// candidateText appends the text parts of the first candidate to sb and
// returns its portable finish reason ("" while generation goes on). A
// response without candidates whose prompt feedback has a block reason (a
// blocked prompt: Vertex generates nothing) finishes with
// "content_filter".
func candidateText(sb *strings.Builder, r *aiplatformpb.GenerateContentResponse) string {
	cands := r.GetCandidates()
	if len(cands) == 0 {
		if r.GetPromptFeedback().GetBlockReason() != aiplatformpb.GenerateContentResponse_PromptFeedback_BLOCKED_REASON_UNSPECIFIED {
			return "content_filter"
		}
		return ""
	}
	c := cands[0]
	for _, p := range c.GetContent().GetParts() {
		sb.WriteString(p.GetText())
	}
	return finishReason(c.GetFinishReason())
}

// finishReason maps a Vertex finish reason to the portable vocabulary:
// STOP "stop", MAX_TOKENS "length", safety-type blocks "content_filter",
// anything else its lower-case name; unspecified is "".
func finishReason(f aiplatformpb.Candidate_FinishReason) string {
	switch f {
	case aiplatformpb.Candidate_FINISH_REASON_UNSPECIFIED:
		return ""
	case aiplatformpb.Candidate_STOP:
		return "stop"
	case aiplatformpb.Candidate_MAX_TOKENS:
		return "length"
	case aiplatformpb.Candidate_SAFETY, aiplatformpb.Candidate_RECITATION, aiplatformpb.Candidate_BLOCKLIST,
		aiplatformpb.Candidate_PROHIBITED_CONTENT, aiplatformpb.Candidate_SPII, aiplatformpb.Candidate_MODEL_ARMOR:
		return "content_filter"
	}
	return strings.ToLower(f.String())
}

// usageOf returns the response's token usage, nil when it has none.
func usageOf(r *aiplatformpb.GenerateContentResponse) *cloudreq.Usage {
	u := r.GetUsageMetadata()
	if u == nil || (u.GetPromptTokenCount() == 0 && u.GetCandidatesTokenCount() == 0) {
		return nil
	}
	return &cloudreq.Usage{
		InputTokens:  int(u.GetPromptTokenCount()),
		OutputTokens: int(u.GetCandidatesTokenCount()),
		Source:       "server",
	}
}
