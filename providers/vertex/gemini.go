package vertex

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"path"
	"strconv"
	"strings"

	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

// geminiDialect names Vertex's generateContent body in refusals.
const geminiDialect = "vertex gemini"

// Values of cloudreq.Attributes.Method that send the caller's own
// GenerateContentRequest JSON (its REST body) with ActionInvoke, so that
// every Gemini member (safetySettings, cachedContent, labels, …) is
// reachable: Invoke calls generateContent, Stream streamGenerateContent,
// whichever of the two is named. The answer is read as for
// ActionGenerate: Text, Reasoning, ToolCalls, Usage and the rest.
const (
	MethodGenerateContent       = "generateContent"
	MethodStreamGenerateContent = "streamGenerateContent"
)

// rawGemini reports whether req sends its own generateContent body.
func rawGemini(req *cloudreq.CloudRequest) bool {
	if req.Action != cloudreq.ActionInvoke {
		return false
	}
	m := req.Attributes.Method
	return m == MethodGenerateContent || m == MethodStreamGenerateContent
}

type blob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type fileData struct {
	MimeType string `json:"mimeType"`
	FileURI  string `json:"fileUri"`
}

type functionCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type functionResponse struct {
	Name     string         `json:"name"`
	Response map[string]any `json:"response"`
}

type functionDecl struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

type geminiTool struct {
	FunctionDeclarations []functionDecl `json:"functionDeclarations"`
}

type toolConfig struct {
	FunctionCallingConfig struct {
		Mode                 string   `json:"mode"`
		AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
	} `json:"functionCallingConfig"`
}

type thinkingConfig struct {
	IncludeThoughts *bool  `json:"includeThoughts,omitempty"`
	ThinkingBudget  *int   `json:"thinkingBudget,omitempty"`
	ThinkingLevel   string `json:"thinkingLevel,omitempty"`
}

// geminiContents converts the messages: system messages to
// systemInstruction, user and tool messages to "user" contents
// (functionResponse parts for tool results), assistant messages to
// "model" contents (functionCall parts for their calls).
func geminiContents(msgs []cloudreq.Message, gr *generateRequest) error {
	names := map[string]string{} // tool-call id → function name
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case cloudreq.RoleSystem:
			if gr.SystemInstruction == nil {
				gr.SystemInstruction = &content{}
			}
			gr.SystemInstruction.Parts = append(gr.SystemInstruction.Parts, textPart(m.Text()))
		case cloudreq.RoleUser, "":
			parts, err := userParts(i, m)
			if err != nil {
				return err
			}
			gr.Contents = append(gr.Contents, content{Role: "user", Parts: parts})
		case cloudreq.RoleAssistant:
			var parts []part
			if t := m.Text(); t != "" || len(m.ToolCalls) == 0 {
				parts = append(parts, textPart(t))
			}
			for _, tc := range m.ToolCalls {
				names[tc.ID] = tc.Name
				args := json.RawMessage(tc.Arguments)
				if len(args) == 0 {
					args = json.RawMessage("{}")
				}
				parts = append(parts, part{FunctionCall: &functionCall{Name: tc.Name, Args: args}})
			}
			gr.Contents = append(gr.Contents, content{Role: "model", Parts: parts})
		case cloudreq.RoleTool:
			name := m.Name
			if name == "" {
				name = names[m.ToolCallID]
			}
			if name == "" {
				return invalid("%s: Generate.Messages[%d], a tool result, needs Name (Gemini's functionResponse names the function): no earlier call has id %q", geminiDialect, i, m.ToolCallID)
			}
			fr := part{FunctionResponse: &functionResponse{Name: name, Response: toolOutput(m.Text())}}
			// Consecutive results answer one turn's calls: one content.
			if n := len(gr.Contents); n > 0 && gr.Contents[n-1].Role == "user" && gr.Contents[n-1].Parts[0].FunctionResponse != nil {
				gr.Contents[n-1].Parts = append(gr.Contents[n-1].Parts, fr)
			} else {
				gr.Contents = append(gr.Contents, content{Role: "user", Parts: []part{fr}})
			}
		default:
			return invalid("message %d has role %q: want system, user, assistant or tool", i, m.Role)
		}
	}
	return nil
}

func textPart(s string) part { return part{Text: &s} }

// toolOutput is a functionResponse's response: a JSON object result as it
// is, anything else as {"output": text}.
func toolOutput(s string) map[string]any {
	var obj map[string]any
	if json.Unmarshal([]byte(s), &obj) == nil && obj != nil {
		return obj
	}
	return map[string]any{"output": s}
}

// userParts converts a user message's content: text, inline images
// (inlineData, also from data: URLs) and image URLs (fileData, whose
// media type is Part.MediaType or the URL's extension).
func userParts(i int, m *cloudreq.Message) ([]part, error) {
	if len(m.Parts) == 0 {
		return []part{textPart(m.Content)}, nil
	}
	parts := make([]part, 0, len(m.Parts))
	for j, p := range m.Parts {
		if p.Type != cloudreq.PartImage {
			parts = append(parts, textPart(p.Text))
			continue
		}
		switch u := p.ImageURL; {
		case u == "":
			parts = append(parts, part{InlineData: &blob{MimeType: p.MediaType, Data: base64.StdEncoding.EncodeToString(p.Data)}})
		case strings.HasPrefix(u, "data:"):
			meta, data, ok := strings.Cut(strings.TrimPrefix(u, "data:"), ",")
			mt, isB64 := strings.CutSuffix(meta, ";base64")
			if !ok || !isB64 {
				return nil, invalid("%s: Generate.Messages[%d].Parts[%d]: a data: URL must be base64 (data:image/…;base64,…)", geminiDialect, i, j)
			}
			parts = append(parts, part{InlineData: &blob{MimeType: mt, Data: data}})
		default:
			mt := p.MediaType
			if mt == "" {
				mt = imageType(u)
			}
			if mt == "" {
				return nil, invalid("%s: Generate.Messages[%d].Parts[%d]: an image URL needs MediaType (fileData.mimeType) when its extension does not tell it", geminiDialect, i, j)
			}
			parts = append(parts, part{FileData: &fileData{MimeType: mt, FileURI: u}})
		}
	}
	return parts, nil
}

// imageType guesses an image's media type from its URL's extension.
func imageType(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	switch strings.ToLower(path.Ext(u)) {
	case ".png":
		return "image/png"
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".webp":
		return "image/webp"
	case ".gif":
		return "image/gif"
	case ".heic":
		return "image/heic"
	}
	return ""
}

// geminiConfig sets tools, toolConfig and generationConfig from g, or
// refuses what Gemini cannot express.
func geminiConfig(g *cloudreq.GenerateInput, gr *generateRequest) error {
	refuse := func(f, hint string) error { return invalid("%s cannot express %s: %s", geminiDialect, f, hint) }
	if len(g.Tools) > 0 {
		t := geminiTool{}
		for _, tl := range g.Tools {
			t.FunctionDeclarations = append(t.FunctionDeclarations, functionDecl{Name: tl.Name, Description: tl.Description, ParametersJSONSchema: tl.Parameters})
		}
		gr.Tools = []geminiTool{t}
	}
	if p := g.ParallelToolCalls; p != nil && !*p {
		return refuse("ParallelToolCalls false", "Gemini has no switch for it")
	}
	if tc := g.ToolChoice; tc != nil {
		c := &toolConfig{}
		switch tc.Mode {
		case cloudreq.ToolChoiceAuto:
			c.FunctionCallingConfig.Mode = "AUTO"
		case cloudreq.ToolChoiceNone:
			c.FunctionCallingConfig.Mode = "NONE"
		case cloudreq.ToolChoiceRequired:
			c.FunctionCallingConfig.Mode = "ANY"
		case cloudreq.ToolChoiceFunction:
			c.FunctionCallingConfig.Mode = "ANY"
			c.FunctionCallingConfig.AllowedFunctionNames = []string{tc.Name}
		}
		gr.ToolConfig = c
	}
	if g.TokenLimit == cloudreq.TokenLimitMaxCompletionTokens {
		return refuse("TokenLimit max_completion_tokens", "Gemini takes maxOutputTokens")
	}
	gc := generationConfig{MaxOutputTokens: g.MaxTokens, Temperature: g.Temperature, TopP: g.TopP, StopSequences: g.Stop,
		PresencePenalty: g.PresencePenalty, FrequencyPenalty: g.FrequencyPenalty}
	if g.TopK > 0 {
		k := float64(g.TopK)
		gc.TopK = &k
	}
	if s := g.Seed; s != nil {
		if *s < math.MinInt32 || *s > math.MaxInt32 {
			return refuse("Seed "+strconv.FormatInt(*s, 10), "Gemini's seed is a 32-bit integer")
		}
		v := int(*s)
		gc.Seed = &v
	}
	if g.N > 1 {
		gc.CandidateCount = g.N
	}
	if g.Logprobs {
		t := true
		gc.ResponseLogprobs = &t
		if g.TopLogprobs > 0 {
			k := g.TopLogprobs
			gc.Logprobs = &k
		}
	}
	if rf := g.ResponseFormat; rf != nil {
		switch rf.Type {
		case cloudreq.FormatJSON:
			gc.ResponseMimeType = "application/json"
		case cloudreq.FormatJSONSchema:
			gc.ResponseMimeType = "application/json"
			gc.ResponseJSONSchema = rf.Schema
		}
	}
	if r := g.Reasoning; r != nil {
		tc := &thinkingConfig{ThinkingLevel: strings.ToUpper(r.Effort)}
		if r.BudgetTokens > 0 {
			b := r.BudgetTokens
			tc.ThinkingBudget = &b
		}
		if r.IncludeThoughts {
			t := true
			tc.IncludeThoughts = &t
		}
		if tc.ThinkingLevel != "" && tc.ThinkingBudget != nil {
			return refuse("Reasoning.Effort with BudgetTokens", "Gemini takes a thinking level or a budget, not both")
		}
		gc.ThinkingConfig = tc
	}
	if b, _ := json.Marshal(gc); string(b) != "{}" {
		gr.GenerationConfig = &gc
	}
	return nil
}

// geminiAnswer is what a GenerateContentResponse says in portable terms.
type geminiAnswer struct {
	text, reasoning string
	finish          string
	calls           []cloudreq.ToolCall
	logprobs        []cloudreq.TokenLogprob
	choices         []cloudreq.Choice
}

// readCandidate reads one candidate: text parts into text, thought parts
// into reasoning, functionCall parts into calls numbered from first.
func readCandidate(c *aiplatformpb.Candidate, text, reasoning *strings.Builder, first int) []cloudreq.ToolCall {
	var calls []cloudreq.ToolCall
	for _, p := range c.GetContent().GetParts() {
		switch {
		case p.GetFunctionCall() != nil:
			fc := p.GetFunctionCall()
			args := "{}"
			if fc.GetArgs() != nil {
				if b, err := protojson.Marshal(fc.GetArgs()); err == nil {
					args = string(b)
				}
			}
			n := first + len(calls)
			calls = append(calls, cloudreq.ToolCall{Index: n, ID: "call_" + strconv.Itoa(n), Name: fc.GetName(), Arguments: args})
		case p.GetThought():
			reasoning.WriteString(p.GetText())
		default:
			text.WriteString(p.GetText())
		}
	}
	return calls
}

// candidateLogprobs reads a candidate's logprobs result.
func candidateLogprobs(c *aiplatformpb.Candidate) []cloudreq.TokenLogprob {
	lr := c.GetLogprobsResult()
	if lr == nil {
		return nil
	}
	top := lr.GetTopCandidates()
	var out []cloudreq.TokenLogprob
	for i, ch := range lr.GetChosenCandidates() {
		t := cloudreq.TokenLogprob{Token: ch.GetToken(), Logprob: float64(ch.GetLogProbability())}
		if i < len(top) {
			for _, a := range top[i].GetCandidates() {
				t.Top = append(t.Top, cloudreq.TopLogprob{Token: a.GetToken(), Logprob: float64(a.GetLogProbability())})
			}
		}
		out = append(out, t)
	}
	return out
}

// answerOf reads a whole answer (or one stream message, whose calls are
// numbered from firstCall).
func answerOf(r *aiplatformpb.GenerateContentResponse, firstCall int) geminiAnswer {
	var a geminiAnswer
	var text, reasoning strings.Builder
	a.finish = candidateText(nil, r)
	cands := r.GetCandidates()
	for i, c := range cands {
		var t, rs strings.Builder
		calls := readCandidate(c, &t, &rs, firstCall)
		lps := candidateLogprobs(c)
		// Text and Reasoning join the candidates' own; calls and logprobs
		// are the first candidate's (each Choice has its own).
		text.WriteString(t.String())
		reasoning.WriteString(rs.String())
		if i == 0 {
			a.calls, a.logprobs = calls, lps
		}
		if len(cands) > 1 {
			a.choices = append(a.choices, cloudreq.Choice{Index: int(c.GetIndex()), Text: t.String(), Reasoning: rs.String(),
				ToolCalls: calls, FinishReason: finishReason(c.GetFinishReason()), Logprobs: lps})
		}
	}
	if len(a.calls) > 0 && a.finish == "stop" {
		a.finish = "tool_calls"
	}
	a.text, a.reasoning = text.String(), reasoning.String()
	return a
}

// fill sets a whole answer's fields on resp.
func (a *geminiAnswer) fill(resp *cloudreq.CloudResponse) {
	resp.Text, resp.Reasoning, resp.FinishReason = a.text, a.reasoning, a.finish
	resp.ToolCalls, resp.Logprobs, resp.Choices = a.calls, a.logprobs, a.choices
}

// richParts reports whether a candidate has more than text parts: a
// thought, a function call or logprobs (a text chunk is read by
// candidateText alone, without allocating more).
func richParts(c *aiplatformpb.Candidate) bool {
	if c.GetLogprobsResult() != nil {
		return true
	}
	for _, p := range c.GetContent().GetParts() {
		if p.GetThought() || p.GetFunctionCall() != nil {
			return true
		}
	}
	return false
}
