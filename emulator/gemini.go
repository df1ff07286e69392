package emulator

import (
	"strings"

	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// maxCandidates bounds Gemini's candidateCount (Vertex AI's bound); its
// logprobs k is bounded by maxLogprobs.
const maxCandidates = 8

// geminiAnswer makes the GenerateContentResponse messages of one call, the
// same over gRPC and REST (which renders them with protojson, the REST
// API's JSON form):
//
//   - one candidate per candidateCount, each its own index (candidate 0
//     has the call's own words, the others words of their own unless
//     the answer is structured or reasons);
//   - per token: a thought part for a reasoning token, sent only when
//     thinkingConfig.includeThoughts is true (thoughtsTokenCount counts
//     them either way); a functionCall part for a tool call (whole, one
//     message); else a text part;
//   - with responseLogprobs, each answer token's logprobsResult
//     (chosenCandidates, and topCandidates of logprobs k), and the
//     candidate's avgLogprobs on the whole answer and the last message;
//   - the last message carries the finish reasons and usageMetadata
//     (candidatesTokenCount and thoughtsTokenCount of every candidate).
type geminiAnswer struct {
	draws *choiceDraws // drawn at first use
}

func (g *geminiAnswer) choices(c *call) *choiceDraws {
	if g.draws == nil {
		g.draws = drawChoices(c)
	}
	return g.draws
}

// hidden reports whether token i is a thought the answer leaves out.
func geminiHidden(c *call, i int) bool { return c.isReasoning(i) && !c.gen.includeThoughts }

// message returns the response of token i, or with i < 0 the whole
// answer; nil for a hidden thought that is not the last token.
func (g *geminiAnswer) message(c *call, i int) *aiplatformpb.GenerateContentResponse {
	last := i < 0 || i == c.n-1
	if i >= 0 && geminiHidden(c, i) && !last {
		return nil
	}
	d := g.choices(c)
	r := &aiplatformpb.GenerateContentResponse{
		Candidates:   make([]*aiplatformpb.Candidate, len(d.words)),
		ModelVersion: c.ep.Name,
		CreateTime:   timestamppb.New(c.rec.Arrival),
		ResponseId:   c.rec.ID,
	}
	for j, words := range d.words {
		cand := &aiplatformpb.Candidate{Index: int32(j), Content: &aiplatformpb.Content{Role: "model"}}
		var lps []tokenLogprob
		if d.logprobs != nil {
			lps = d.logprobs[j]
		}
		from, to := c.reasoningN, len(words) // the answer tokens this message carries
		switch {
		case i < 0:
			if c.reasoningN > 0 && c.gen.includeThoughts {
				cand.Content.Parts = append(cand.Content.Parts, thoughtPart(strings.Join(words[:c.reasoningN], "")))
			}
			cand.Content.Parts = append(cand.Content.Parts, geminiAnswerPart(c, strings.Join(words[c.reasoningN:], "")))
		case c.isReasoning(i):
			from, to = 0, 0
			if c.gen.includeThoughts {
				cand.Content.Parts = append(cand.Content.Parts, thoughtPart(words[i]))
			}
		default:
			from, to = i, i+1
			cand.Content.Parts = append(cand.Content.Parts, geminiAnswerPart(c, words[i]))
		}
		if lps != nil {
			if to > from {
				cand.LogprobsResult = logprobsResult(words, lps, from, to, c.gen.topLogprobs)
			}
			if last {
				cand.AvgLogprobs = avgLogprob(lps[c.reasoningN:])
			}
		}
		if last {
			cand.FinishReason = aiplatformpb.Candidate_STOP
			if c.finish == "length" {
				cand.FinishReason = aiplatformpb.Candidate_MAX_TOKENS
			}
		}
		r.Candidates[j] = cand
	}
	if last {
		k := len(d.words)
		out := c.n - c.reasoningN
		r.UsageMetadata = &aiplatformpb.GenerateContentResponse_UsageMetadata{
			PromptTokenCount:     clamp32(c.gen.promptTokens),
			CandidatesTokenCount: clamp32(out * k),
			ThoughtsTokenCount:   clamp32(c.reasoningN * k),
			TotalTokenCount:      clamp32(c.gen.promptTokens + c.n*k),
		}
	}
	return r
}

func clamp32(n int) int32 { return int32(min(n, 1<<30)) }

func thoughtPart(s string) *aiplatformpb.Part {
	return &aiplatformpb.Part{Data: &aiplatformpb.Part_Text{Text: s}, Thought: true}
}

// geminiAnswerPart is answer text: a functionCall part (its arguments'
// JSON) when the call answers with a tool call, else a text part.
func geminiAnswerPart(c *call, text string) *aiplatformpb.Part {
	if c.tool != nil {
		args := &structpb.Struct{}
		_ = protojson.Unmarshal([]byte(text), args)
		return &aiplatformpb.Part{Data: &aiplatformpb.Part_FunctionCall{FunctionCall: &aiplatformpb.FunctionCall{Name: c.tool.name, Args: args}}}
	}
	return &aiplatformpb.Part{Data: &aiplatformpb.Part_Text{Text: text}}
}

// logprobsResult is the logprobs of tokens words[from:to]: the chosen
// token at each step and, with k > 0, the k most likely (the chosen one
// first).
func logprobsResult(words []string, lps []tokenLogprob, from, to, k int) *aiplatformpb.LogprobsResult {
	lr := &aiplatformpb.LogprobsResult{ChosenCandidates: make([]*aiplatformpb.LogprobsResult_Candidate, 0, to-from)}
	for i := from; i < to; i++ {
		lr.ChosenCandidates = append(lr.ChosenCandidates, lpCandidate(words[i], lps[i].logprob))
		if k == 0 {
			continue
		}
		top := &aiplatformpb.LogprobsResult_TopCandidates{Candidates: make([]*aiplatformpb.LogprobsResult_Candidate, 0, len(lps[i].top))}
		for _, a := range lps[i].top {
			top.Candidates = append(top.Candidates, lpCandidate(a.token, a.logprob))
		}
		lr.TopCandidates = append(lr.TopCandidates, top)
	}
	return lr
}

func lpCandidate(token string, lp float64) *aiplatformpb.LogprobsResult_Candidate {
	p := float32(lp)
	return &aiplatformpb.LogprobsResult_Candidate{Token: &token, LogProbability: &p}
}

func avgLogprob(lps []tokenLogprob) float64 {
	if len(lps) == 0 {
		return 0
	}
	s := 0.0
	for _, l := range lps {
		s += l.logprob
	}
	return round4(s / float64(len(lps)))
}

// geminiJSON is the REST form of a response message.
func geminiJSON(m *aiplatformpb.GenerateContentResponse) ([]byte, error) {
	return protojson.Marshal(m)
}
