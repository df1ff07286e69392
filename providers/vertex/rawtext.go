package vertex

import (
	"bytes"
	"strings"

	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
	"github.com/tidwall/gjson"
)

// rawPaths are the fields read from one streaming event, in the dialects
// model servers commonly send through streamRawPredict: OpenAI-compatible
// chat and completion chunks (vLLM, SGLang, TGI's Messages API), TGI's
// native {"token":{"text","special"}}, and Vertex's own
// GenerateContentResponse. gjson reads them in one pass without decoding
// the whole event, which keeps the per-chunk cost (it runs before the
// chunk's arrival is stamped) small.
var rawPaths = []string{
	"choices.0.delta.content",
	"choices.0.text",
	"choices.0.finish_reason",
	"token.text",
	"token.special",
	"candidates.0.content.parts.#.text",
	"candidates.0.finishReason",
	// The dialects' top-level keys: an event with one of them is read,
	// even when it carries no text (a role-only or usage-only chunk).
	"choices",
	"token",
	"candidates",
	"usage",
}

// rawText extracts, best effort, the text delta and finish reason of one
// streamRawPredict chunk. A chunk is either one JSON object or SSE-framed
// ("data: {…}" lines; "[DONE]" and non-JSON events are skipped). Bodies in
// any other form yield "" and are still passed through as chunk Data: the
// extraction is a convenience, never a reason to fail a stream. known says
// the chunk was read in one of the dialects (or is an SSE "[DONE]"), so
// that an empty text means it carries no content; otherwise nothing is
// known of its content.
func rawText(data []byte) (text, finish string, known bool) {
	b := bytes.TrimSpace(data)
	if len(b) == 0 {
		return "", "", false
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
		payload = bytes.TrimSpace(payload)
		if string(payload) == "[DONE]" {
			known = true
			continue
		}
		t, f, k := eventText(payload)
		sb.WriteString(t)
		if f != "" {
			finish = f
		}
		known = known || k
	}
	return sb.String(), finish, known
}

// eventText extracts text and finish reason from one JSON event, and
// whether it is in one of the dialects.
func eventText(b []byte) (text, finish string, known bool) {
	if len(b) == 0 || b[0] != '{' || !gjson.ValidBytes(b) {
		return "", "", false
	}
	r := gjson.GetManyBytes(b, rawPaths...)
	known = r[7].Exists() || r[8].Exists() || r[9].Exists() || r[10].Exists()
	switch {
	case r[0].Exists() || r[1].Exists() || r[2].Exists():
		text = r[0].String() + r[1].String()
		if r[2].Type == gjson.String {
			finish = r[2].String()
		}
	case r[3].Exists():
		if !r[4].Bool() {
			text = r[3].String()
		}
	case r[5].Exists():
		parts := r[5].Array()
		if len(parts) == 1 {
			text = parts[0].String()
		} else {
			var sb strings.Builder
			for _, p := range parts {
				sb.WriteString(p.String())
			}
			text = sb.String()
		}
		if f := r[6].String(); f != "" {
			if v, ok := aiplatformpb.Candidate_FinishReason_value[f]; ok {
				finish = finishReason(aiplatformpb.Candidate_FinishReason(v))
			} else {
				finish = strings.ToLower(f)
			}
		}
	}
	return text, finish, known
}
