package vertex

import (
	"bytes"
	"strings"

	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
	"github.com/tidwall/gjson"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

// rawPaths are the fields read from one streaming event, in the dialects
// model servers commonly send through streamRawPredict: OpenAI-compatible
// chat and completion chunks (vLLM, SGLang, TGI's Messages API), TGI's
// native {"token":{"text","special"}}, and Vertex's own
// GenerateContentResponse. gjson reads them in one pass without decoding
// the whole event, which keeps the per-chunk cost (it runs before the
// chunk's arrival is stamped) small; members read only now and then (a
// delta's reasoning, the usage of a final chunk) are read from these
// results when present, without another pass. The indexes below name them.
var rawPaths = []string{
	pDelta:           "choices.0.delta",
	pText:            "choices.0.text",
	pFinish:          "choices.0.finish_reason",
	pTokenText:       "token.text",
	pTokenSpecial:    "token.special",
	pParts:           "candidates.0.content.parts.#.text",
	pCandidateFinish: "candidates.0.finishReason",
	pChoices:         "choices",
	pToken:           "token",
	pCandidates:      "candidates",
	pUsage:           "usage",
	pUsageMetadata:   "usageMetadata",
	pDetails:         "details",
}

// Indexes into rawPaths.
const (
	pDelta = iota
	pText
	pFinish
	pTokenText
	pTokenSpecial
	pParts
	pCandidateFinish
	// The dialects' top-level keys: an event with one of them is read,
	// even when it carries no text (a role-only or usage-only chunk).
	pChoices
	pToken
	pCandidates
	pUsage
	pUsageMetadata
	// TGI's final event: its generated_tokens are the output's usage.
	pDetails
)

// rawChunk is what rawText reads of one streamRawPredict chunk.
type rawChunk struct {
	text, finish string
	// known says the chunk was read in one of the dialects (or is an SSE
	// "[DONE]"), so that its content is known: its text, or reasoning.
	known     bool
	reasoning bool
	toolCalls bool
	// usage is the server's token count, when the chunk carries one.
	usage *cloudreq.Usage
}

// content reports whether the chunk carries generated content; a chunk
// in no known dialect does when it is not empty.
func (c rawChunk) content(data []byte) bool {
	if c.known {
		return c.text != "" || c.reasoning || c.toolCalls
	}
	return len(data) > 0
}

// rawText extracts, best effort, the text delta, reasoning, finish reason
// and usage of one streamRawPredict chunk. A chunk is either one JSON
// object or SSE-framed ("data: {…}" lines; "[DONE]" and non-JSON events
// are skipped; of several events' usage the last is kept). Bodies in any
// other form yield nothing and are still passed through as chunk Data: the
// extraction is a convenience, never a reason to fail a stream.
func rawText(data []byte) rawChunk {
	b := bytes.TrimSpace(data)
	if len(b) == 0 {
		return rawChunk{}
	}
	if b[0] == '{' {
		return eventText(b)
	}
	var out rawChunk
	var sb strings.Builder
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		payload, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:"))
		if !ok {
			continue
		}
		payload = bytes.TrimSpace(payload)
		if string(payload) == "[DONE]" {
			out.known = true
			continue
		}
		ev := eventText(payload)
		sb.WriteString(ev.text)
		if ev.finish != "" {
			out.finish = ev.finish
		}
		if ev.usage != nil {
			out.usage = ev.usage
		}
		out.known = out.known || ev.known
		out.reasoning = out.reasoning || ev.reasoning
		out.toolCalls = out.toolCalls || ev.toolCalls
	}
	out.text = sb.String()
	return out
}

// eventText reads one JSON event.
func eventText(b []byte) (out rawChunk) {
	if len(b) == 0 || b[0] != '{' || !gjson.ValidBytes(b) {
		return out
	}
	r := gjson.GetManyBytes(b, rawPaths...)
	out.known = r[pChoices].Exists() || r[pToken].Exists() || r[pCandidates].Exists() || r[pUsage].Exists() || r[pUsageMetadata].Exists()
	out.usage = rawUsage(r[pUsage], r[pUsageMetadata], r[pDetails])
	switch content := r[pDelta].Get("content"); {
	case content.Exists() || r[pText].Exists() || r[pFinish].Exists():
		out.text = content.String() + r[pText].String()
		if r[pFinish].Type == gjson.String {
			out.finish = r[pFinish].String()
		}
	case r[pTokenText].Exists():
		if !r[pTokenSpecial].Bool() {
			out.text = r[pTokenText].String()
		}
	case r[pParts].Exists():
		parts := r[pParts].Array()
		if len(parts) == 1 {
			out.text = parts[0].String()
		} else {
			var sb strings.Builder
			for _, p := range parts {
				sb.WriteString(p.String())
			}
			out.text = sb.String()
		}
		if f := r[pCandidateFinish].String(); f != "" {
			if v, ok := aiplatformpb.Candidate_FinishReason_value[f]; ok {
				out.finish = finishReason(aiplatformpb.Candidate_FinishReason(v))
			} else {
				out.finish = strings.ToLower(f)
			}
		}
	}
	if d := r[pDelta]; out.text == "" && d.IsObject() {
		// Reasoning and tool-call deltas are content without text; the
		// delta is small, so reading it again costs little.
		out.reasoning = given(d.Get("reasoning_content")) || given(d.Get("reasoning"))
		out.toolCalls = given(d.Get("tool_calls"))
	}
	return out
}

// rawUsage reads the server's token usage, in whichever dialect the event
// reports it: OpenAI "usage", Vertex "usageMetadata" or TGI's final
// "details"; nil when it reports none.
func rawUsage(usage, metadata, details gjson.Result) *cloudreq.Usage {
	switch {
	case usage.IsObject():
		in, outTok := usage.Get("prompt_tokens"), usage.Get("completion_tokens")
		if in.Exists() || outTok.Exists() {
			return &cloudreq.Usage{InputTokens: int(in.Int()), OutputTokens: int(outTok.Int())}
		}
	case metadata.IsObject():
		in, outTok := metadata.Get("promptTokenCount"), metadata.Get("candidatesTokenCount")
		if in.Exists() || outTok.Exists() {
			return &cloudreq.Usage{InputTokens: int(in.Int()), OutputTokens: int(outTok.Int())}
		}
	case details.IsObject():
		if n := details.Get("generated_tokens"); n.Exists() {
			return &cloudreq.Usage{OutputTokens: int(n.Int())}
		}
	}
	return nil
}

// given reports whether a reasoning or tool-call member carries anything:
// not absent, null, "", an empty object (some servers send an object for
// reasoning) or an empty array.
func given(r gjson.Result) bool {
	if r.IsObject() || r.IsArray() {
		some := false
		r.ForEach(func(_, _ gjson.Result) bool { some = true; return false })
		return some
	}
	return r.String() != ""
}

// invokePaths are the fields invokeText reads of a whole answer, in the
// dialects of the containers behind predict and rawPredict: OpenAI chat
// and completions (vLLM, SGLang, TGI's Messages API), TGI's native
// {"generated_text"} (or an array of them), predictions (strings, or
// objects with content, text or generated_text, as Model Garden
// containers answer) and Vertex's own GenerateContentResponse.
var invokePaths = []string{
	iChoices:         "choices",
	iMessage:         "choices.0.message.content",
	iText:            "choices.0.text",
	iFinish:          "choices.0.finish_reason",
	iUsage:           "usage",
	iGenerated:       "generated_text",
	iDetails:         "details",
	iGeneratedArr:    "0.generated_text",
	iDetailsArr:      "0.details",
	iPrediction:      "predictions.0",
	iParts:           "candidates.0.content.parts.#.text",
	iCandidateFinish: "candidates.0.finishReason",
	iUsageMetadata:   "usageMetadata",
}

// Indexes into invokePaths.
const (
	iChoices = iota
	iMessage
	iText
	iFinish
	iUsage
	iGenerated
	iDetails
	iGeneratedArr
	iDetailsArr
	iPrediction
	iParts
	iCandidateFinish
	iUsageMetadata
)

// invokeText reads the generated text, portable finish reason and server
// usage of a non-streamed invoke answer (predict or rawPredict) when it is
// recognisably a generation in one of the dialects of invokePaths; any
// other answer (not JSON, or JSON of another form: embeddings, scores)
// yields nothing. Of several choices, predictions or candidates the first
// is read.
func invokeText(data []byte, contentType string) (text, finish string, usage *cloudreq.Usage) {
	b := bytes.TrimSpace(data)
	if !isJSONType(contentType) || len(b) == 0 || (b[0] != '{' && b[0] != '[') || !gjson.ValidBytes(b) {
		return "", "", nil
	}
	r := gjson.GetManyBytes(b, invokePaths...)
	switch {
	case r[iChoices].IsArray():
		if m := r[iMessage]; m.Type == gjson.String {
			text = m.String()
		} else if r[iText].Type == gjson.String {
			text = r[iText].String()
		}
		if r[iFinish].Type == gjson.String {
			finish = r[iFinish].String()
		}
		usage = rawUsage(r[iUsage], gjson.Result{}, gjson.Result{})
	case r[iGenerated].Type == gjson.String:
		text, finish, usage = r[iGenerated].String(), tgiFinish(r[iDetails]), rawUsage(gjson.Result{}, gjson.Result{}, r[iDetails])
	case r[iGeneratedArr].Type == gjson.String:
		text, finish, usage = r[iGeneratedArr].String(), tgiFinish(r[iDetailsArr]), rawUsage(gjson.Result{}, gjson.Result{}, r[iDetailsArr])
	case r[iPrediction].Exists():
		p := r[iPrediction]
		if p.Type == gjson.String {
			return p.String(), "", nil
		}
		for _, k := range []string{"content", "text", "generated_text"} {
			if v := p.Get(k); v.Type == gjson.String {
				return v.String(), "", nil
			}
		}
		return "", "", nil
	case r[iParts].Exists():
		for _, part := range r[iParts].Array() {
			text += part.String()
		}
		if f := r[iCandidateFinish].String(); f != "" {
			if v, ok := aiplatformpb.Candidate_FinishReason_value[f]; ok {
				finish = finishReason(aiplatformpb.Candidate_FinishReason(v))
			} else {
				finish = strings.ToLower(f)
			}
		}
		usage = rawUsage(gjson.Result{}, r[iUsageMetadata], gjson.Result{})
	default:
		return "", "", nil
	}
	if usage != nil {
		usage.Source = "server"
	}
	return text, finish, usage
}

// tgiFinish maps TGI's details.finish_reason to the portable vocabulary:
// "length" stays, "eos_token" and "stop_sequence" are "stop".
func tgiFinish(details gjson.Result) string {
	switch f := details.Get("finish_reason").String(); f {
	case "eos_token", "stop_sequence":
		return "stop"
	default:
		return f
	}
}
