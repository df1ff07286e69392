package vertex

import (
	"net/http"
	"strings"

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
	mdDeployedID = "x-vertex-ai-deployed-model-id"
	mdVertexPfx  = "x-vertex-ai-"
)

// newResponse starts a response from the RPC's header and trailer
// metadata: kept Vertex headers, the deployed model id, and the metadata
// itself as Header.
func newResponse(hdr, trl metadata.MD) *cloudreq.CloudResponse {
	resp := &cloudreq.CloudResponse{StatusCode: http.StatusOK, Header: header(hdr, trl)}
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
	return resp
}

// header returns the header metadata, then the trailer metadata, as an
// http.Header with canonical keys (binary "-bin" values as gRPC decoded
// them); nil when both are empty.
func header(hdr, trl metadata.MD) http.Header {
	if len(hdr)+len(trl) == 0 {
		return nil
	}
	h := make(http.Header, len(hdr)+len(trl))
	for _, md := range []metadata.MD{hdr, trl} {
		for k, vs := range md {
			ck := http.CanonicalHeaderKey(k)
			h[ck] = append(h[ck], vs...)
		}
	}
	return h
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

func setMeta(resp *cloudreq.CloudResponse, k, v string) {
	if v == "" {
		return
	}
	if resp.Metadata == nil {
		resp.Metadata = map[string]string{}
	}
	resp.Metadata[k] = v
}

// candidateText appends the text parts of the candidates to sb (if not
// nil), in order, thought parts left out, and returns the first
// candidate's portable finish reason ("" while generation goes on). A
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
	if sb != nil {
		for _, c := range cands {
			for _, p := range c.GetContent().GetParts() {
				if !p.GetThought() {
					sb.WriteString(p.GetText())
				}
			}
		}
	}
	return finishReason(cands[0].GetFinishReason())
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
	if u == nil || (u.GetPromptTokenCount() == 0 && u.GetCandidatesTokenCount() == 0 && u.GetThoughtsTokenCount() == 0) {
		return nil
	}
	// Gemini counts thinking tokens apart from the candidates' tokens; both
	// are output.
	return &cloudreq.Usage{
		InputTokens:     int(u.GetPromptTokenCount()),
		OutputTokens:    int(u.GetCandidatesTokenCount()) + int(u.GetThoughtsTokenCount()),
		ReasoningTokens: int(u.GetThoughtsTokenCount()),
		Source:          "server",
	}
}
