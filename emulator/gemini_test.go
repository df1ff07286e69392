package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
)

// geminiRoutes answers one GenerateContentRequest over each of the
// emulator's four generateContent routes (gRPC unary and stream, REST
// whole, REST SSE stream and REST JSON-array stream), each as the list of
// messages a client reads.
type geminiRoutes struct {
	t   *testing.T
	s   *Server
	ctx context.Context
}

func newGeminiRoutes(t *testing.T) *geminiRoutes {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return &geminiRoutes{t: t, s: start(t, Options{TimeScale: 0.001, Seed: 5}), ctx: ctx}
}

// all returns the route names and each route's messages.
func (g *geminiRoutes) all(model string, req *aiplatformpb.GenerateContentRequest) map[string][]*aiplatformpb.GenerateContentResponse {
	t := g.t
	t.Helper()
	req.Model = "projects/demo/locations/us-central1/endpoints/" + model
	out := map[string][]*aiplatformpb.GenerateContentResponse{}
	pc := predictionClient(g.ctx, t, g.s)
	whole, err := pc.GenerateContent(g.ctx, req)
	require.NoError(t, err)
	out["grpc"] = []*aiplatformpb.GenerateContentResponse{whole}
	st, err := pc.StreamGenerateContent(g.ctx, req)
	require.NoError(t, err)
	for {
		m, err := st.Recv()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		out["grpc-stream"] = append(out["grpc-stream"], m)
	}
	body, err := protojson.Marshal(req)
	require.NoError(t, err)
	for _, route := range []string{":generateContent", ":streamGenerateContent?alt=sse", ":streamGenerateContent"} {
		raw := g.post(req.Model+route, body, http.StatusOK)
		var els [][]byte
		switch route {
		case ":generateContent":
			els = [][]byte{raw}
		case ":streamGenerateContent?alt=sse":
			for _, ev := range readSSE(t, bytes.NewReader(raw)) {
				els = append(els, []byte(ev))
			}
		default:
			var arr []json.RawMessage
			require.NoError(t, json.Unmarshal(raw, &arr), "%s", raw)
			for _, el := range arr {
				els = append(els, el)
			}
		}
		for _, el := range els {
			var m aiplatformpb.GenerateContentResponse
			require.NoError(t, protojson.Unmarshal(el, &m), "REST %s: a GenerateContentResponse: %s", route, el)
			out["rest"+route] = append(out["rest"+route], &m)
		}
	}
	return out
}

// post sends a REST body and returns the answer's bytes, which must have
// status want.
func (g *geminiRoutes) post(path string, body []byte, want int) []byte {
	t := g.t
	req, err := http.NewRequestWithContext(g.ctx, http.MethodPost, g.s.URL()+"/v1/"+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, want, resp.StatusCode, "%s", b)
	return b
}

func geminiRequest(text string, gc *aiplatformpb.GenerationConfig) *aiplatformpb.GenerateContentRequest {
	return &aiplatformpb.GenerateContentRequest{
		Contents:         []*aiplatformpb.Content{{Role: "user", Parts: []*aiplatformpb.Part{{Data: &aiplatformpb.Part_Text{Text: text}}}}},
		GenerationConfig: gc,
	}
}

// candidateParts gathers, per candidate index, the text, thought text and
// function calls of a route's messages, and its chosen logprobs.
type candidateParts struct {
	text, thoughts strings.Builder
	calls          []*aiplatformpb.FunctionCall
	chosen         []*aiplatformpb.LogprobsResult_Candidate
	top            []*aiplatformpb.LogprobsResult_TopCandidates
	avg            float64
	finish         aiplatformpb.Candidate_FinishReason
}

func gather(msgs []*aiplatformpb.GenerateContentResponse) map[int32]*candidateParts {
	out := map[int32]*candidateParts{}
	for _, m := range msgs {
		for _, c := range m.GetCandidates() {
			p := out[c.GetIndex()]
			if p == nil {
				p = &candidateParts{}
				out[c.GetIndex()] = p
			}
			for _, pt := range c.GetContent().GetParts() {
				switch {
				case pt.GetFunctionCall() != nil:
					p.calls = append(p.calls, pt.GetFunctionCall())
				case pt.GetThought():
					p.thoughts.WriteString(pt.GetText())
				default:
					p.text.WriteString(pt.GetText())
				}
			}
			p.chosen = append(p.chosen, c.GetLogprobsResult().GetChosenCandidates()...)
			p.top = append(p.top, c.GetLogprobsResult().GetTopCandidates()...)
			if c.GetAvgLogprobs() != 0 {
				p.avg = c.GetAvgLogprobs()
			}
			if c.GetFinishReason() != aiplatformpb.Candidate_FINISH_REASON_UNSPECIFIED {
				p.finish = c.GetFinishReason()
			}
		}
	}
	return out
}

// TestGeminiCandidatesAndLogprobs: candidateCount 2 and responseLogprobs
// with logprobs 3 give two candidates, each with one chosen candidate per
// answer token (its text) and three top candidates (the chosen first,
// each less likely), and their average, on every route.
func TestGeminiCandidatesAndLogprobs(t *testing.T) {
	g := newGeminiRoutes(t)
	n, k := int32(2), int32(3)
	on := true
	routes := g.all("llama-3-8b", geminiRequest("Hello", &aiplatformpb.GenerationConfig{
		MaxOutputTokens: ptr(int32(6)), CandidateCount: &n, ResponseLogprobs: &on, Logprobs: &k,
	}))
	require.Len(t, routes, 5)
	for route, msgs := range routes {
		cands := gather(msgs)
		require.Len(t, cands, 2, route)
		for idx, p := range cands {
			require.Len(t, p.chosen, 6, "%s candidate %d: a chosen candidate per token", route, idx)
			require.Len(t, p.top, 6, route)
			var joined strings.Builder
			sum := 0.0
			for i, ch := range p.chosen {
				joined.WriteString(ch.GetToken())
				assert.LessOrEqual(t, ch.GetLogProbability(), float32(0))
				sum += float64(ch.GetLogProbability())
				top := p.top[i].GetCandidates()
				require.Len(t, top, 3)
				assert.Equal(t, ch.GetToken(), top[0].GetToken(), "the chosen token leads its top candidates")
				assert.Greater(t, top[0].GetLogProbability(), top[1].GetLogProbability())
				assert.Greater(t, top[1].GetLogProbability(), top[2].GetLogProbability())
			}
			assert.Equal(t, p.text.String(), joined.String(), "%s: the chosen tokens are the text", route)
			assert.InDelta(t, sum/6, p.avg, 1e-3, "%s: avgLogprobs", route)
			assert.Equal(t, aiplatformpb.Candidate_MAX_TOKENS, p.finish)
		}
		assert.NotEqual(t, cands[0].text.String(), cands[1].text.String(), "%s: candidates differ", route)
		u := msgs[len(msgs)-1].GetUsageMetadata()
		assert.EqualValues(t, 12, u.GetCandidatesTokenCount(), "%s: both candidates' tokens", route)
	}

	// Without top logprobs: chosen candidates only.
	routes = g.all("llama-3-8b", geminiRequest("Hello", &aiplatformpb.GenerationConfig{MaxOutputTokens: ptr(int32(4)), ResponseLogprobs: &on}))
	for route, msgs := range routes {
		p := gather(msgs)[0]
		assert.Len(t, p.chosen, 4, route)
		assert.Empty(t, p.top, route)
	}
	// Out of range or without responseLogprobs: INVALID_ARGUMENT.
	for _, body := range []string{
		`{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"candidateCount":9}}`,
		`{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"logprobs":2}}`,
		`{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"responseLogprobs":true,"logprobs":21}}`,
	} {
		b := g.post(vertexEndpoint+":generateContent", []byte(body), http.StatusBadRequest)
		assert.Contains(t, string(b), "INVALID_ARGUMENT")
	}
}

// TestGeminiThoughts: on the reasoning profile, thought parts come only
// with includeThoughts; thoughtsTokenCount counts the thinking both ways,
// and without thoughts a stream's first message is the answer's.
func TestGeminiThoughts(t *testing.T) {
	g := newGeminiRoutes(t)
	for _, include := range []bool{false, true} {
		gc := &aiplatformpb.GenerationConfig{MaxOutputTokens: ptr(int32(8)),
			ThinkingConfig: &aiplatformpb.GenerationConfig_ThinkingConfig{IncludeThoughts: &include}}
		for route, msgs := range g.all("reasoning", geminiRequest("Think", gc)) {
			p := gather(msgs)[0]
			u := msgs[len(msgs)-1].GetUsageMetadata()
			assert.Positive(t, u.GetThoughtsTokenCount(), "%s: thinking is counted", route)
			assert.NotEmpty(t, p.text.String(), route)
			if !include {
				assert.Empty(t, p.thoughts.String(), "%s: no thought parts without includeThoughts", route)
				if strings.Contains(route, "stream") {
					assert.Len(t, msgs, int(u.GetCandidatesTokenCount()), "%s: one message per answer token", route)
				}
				continue
			}
			assert.NotEmpty(t, p.thoughts.String(), "%s: thought parts with includeThoughts", route)
			if strings.Contains(route, "stream") {
				assert.True(t, msgs[0].GetCandidates()[0].GetContent().GetParts()[0].GetThought(), "%s: the thoughts come first", route)
				assert.Len(t, msgs, int(u.GetCandidatesTokenCount()+u.GetThoughtsTokenCount()), route)
			}
		}
	}
	recs := waitRecords(t, g.s, 10)
	for _, r := range recs {
		if r.Stream && r.Endpoint == "reasoning" {
			assert.Positive(t, r.FirstTokenMs, "a stream's first token is timed")
		}
	}
}

// TestGeminiToolCallsEveryRoute: offered functions with mode ANY get a
// functionCall of the allowed one, whole, with arguments valid for its
// schema, on REST as on gRPC.
func TestGeminiToolCallsEveryRoute(t *testing.T) {
	g := newGeminiRoutes(t)
	body := `{"contents":[{"role":"user","parts":[{"text":"Weather?"}]}],
		"tools":[{"functionDeclarations":[{"name":"time"},{"name":"weather","parametersJsonSchema":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":2}},"required":["city","days"]}}]}],
		"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["weather"]}}}`
	var req aiplatformpb.GenerateContentRequest
	require.NoError(t, protojson.Unmarshal([]byte(body), &req))
	for route, msgs := range g.all("llama-3-8b", &req) {
		p := gather(msgs)[0]
		require.Len(t, p.calls, 1, "%s: one whole call", route)
		fc := p.calls[0]
		assert.Equal(t, "weather", fc.GetName(), route)
		assert.EqualValues(t, 2, fc.GetArgs().GetFields()["days"].GetNumberValue(), route)
		assert.NotEmpty(t, fc.GetArgs().GetFields()["city"].GetStringValue(), route)
		assert.Empty(t, p.text.String(), route)
		assert.Equal(t, aiplatformpb.Candidate_STOP, p.finish, route)
	}
}
