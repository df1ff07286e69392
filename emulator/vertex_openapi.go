package emulator

import (
	"net/http"
	"strings"
)

// isVertexOpenAPIPath reports whether p is Vertex AI's OpenAI-compatible
// chat route: /v1[beta1]/projects/{p}/locations/{l}/endpoints/openapi/chat/completions.
func isVertexOpenAPIPath(p string) bool {
	rest, ok := strings.CutPrefix(p, "/v1/projects/")
	if !ok {
		rest, ok = strings.CutPrefix(p, "/v1beta1/projects/")
	}
	if !ok {
		return false
	}
	seg := strings.Split(rest, "/")
	return len(seg) == 7 && seg[0] != "" && seg[1] == "locations" && seg[2] != "" &&
		seg[3] == "endpoints" && seg[4] == "openapi" && seg[5] == "chat" && seg[6] == "completions"
}

// serveVertexOpenAPI serves Vertex AI's OpenAI-compatible chat
// completions: the OpenAI chat wire (streams as SSE), the model member
// naming the endpoint, bearer tokens checked as the other routes check
// keys. Errors are in the OpenAI-compatible servers' form, not Google's.
func (s *Server) serveVertexOpenAPI(w http.ResponseWriter, r *http.Request) {
	s.serveOpenAIGen(w, r, nil, OpenAI, true, writeOpenAIError)
}
