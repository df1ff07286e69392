package vertex

import (
	"bytes"
	"encoding/json"
	"strings"

	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
)

// rawEvent is the union of the streaming dialects model servers commonly
// send through streamRawPredict: OpenAI-compatible chat and completion
// chunks (vLLM, SGLang, TGI's Messages API), TGI's native
// {"token":{"text"}}, and Vertex's own GenerateContentResponse.
type rawEvent struct {
	Choices []struct {
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
		Text         string  `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Token *struct {
		Text    string `json:"text"`
		Special bool   `json:"special"`
	} `json:"token"`
	Candidates []struct {
		Content struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
}

// rawText extracts, best effort, the text delta and finish reason of one
// streamRawPredict chunk. A chunk is either one JSON object or SSE-framed
// ("data: {…}" lines; "[DONE]" and non-JSON events are skipped). Bodies in
// any other form yield "" and are still passed through as chunk Data: the
// extraction is a convenience, never a reason to fail a stream.
func rawText(data []byte) (text, finish string) {
	b := bytes.TrimSpace(data)
	if len(b) == 0 {
		return "", ""
	}
	if b[0] == '{' {
		return eventText(b)
	}
	var sb strings.Builder
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		payload, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:"))
		if !ok {
			continue
		}
		t, f := eventText(bytes.TrimSpace(payload))
		sb.WriteString(t)
		if f != "" {
			finish = f
		}
	}
	return sb.String(), finish
}

// eventText extracts text and finish reason from one JSON event.
func eventText(b []byte) (text, finish string) {
	if len(b) == 0 || b[0] != '{' {
		return "", ""
	}
	var ev rawEvent
	if json.Unmarshal(b, &ev) != nil {
		return "", ""
	}
	switch {
	case len(ev.Choices) > 0:
		c := ev.Choices[0]
		text = c.Delta.Content + c.Text
		if c.FinishReason != nil {
			finish = *c.FinishReason
		}
	case ev.Token != nil:
		if !ev.Token.Special {
			text = ev.Token.Text
		}
	case len(ev.Candidates) > 0:
		c := ev.Candidates[0]
		var sb strings.Builder
		for _, p := range c.Content.Parts {
			sb.WriteString(p.Text)
		}
		text = sb.String()
		if v, ok := aiplatformpb.Candidate_FinishReason_value[c.FinishReason]; ok {
			finish = finishReason(aiplatformpb.Candidate_FinishReason(v))
		} else {
			finish = strings.ToLower(c.FinishReason)
		}
	}
	return text, finish
}
