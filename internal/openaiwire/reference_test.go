package openaiwire

import (
	"bytes"
	"encoding/json"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

// refDecode is Decode as it was before the hand-written fast path: every
// body through encoding/json. FuzzDecodeMatchesReference holds Decode to
// it, result and error alike. It is kept as it was; do not change it to
// follow Decode. It decodes into the wire types that slow uses, whose
// names are part of encoding/json's error texts.
func refDecode(data []byte) (Result, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return Result{}, ErrNotJSON
	}
	if bytes.Contains(data, []byte(`"error"`)) || !bytes.Contains(data, []byte(`"choices"`)) {
		if eb, ok := refErrorObject(data); ok {
			return Result{Error: &eb}, nil
		}
	}
	var w wireBody
	if err := json.Unmarshal(data, &w); err != nil {
		return Result{}, err
	}
	var r Result
	var text joiner
	for i := range w.Choices {
		c := &w.Choices[i]
		for _, dl := range []*wireDelta{&c.Delta, &c.Message} {
			text.add(dl.Content)
			if dl.ReasoningContent != "" || refHasReasoning(dl.Reasoning) || refHasToolCalls(dl.ToolCalls) {
				r.Content = true
			}
		}
		text.add(c.Text)
		if c.FinishReason != "" && r.FinishReason == "" {
			r.FinishReason = c.FinishReason
		}
	}
	r.Text = text.String()
	if r.Text != "" {
		r.Content = true
	}
	if u := w.Usage; u != nil {
		r.Usage = &cloudreq.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, Source: "server"}
	}
	return r, nil
}

func refErrorObject(data []byte) (ErrorBody, bool) {
	var probe struct {
		Object  json.RawMessage `json:"object"`
		Error   json.RawMessage `json:"error"`
		Status  json.RawMessage `json:"status"`
		Message json.RawMessage `json:"message"`
	}
	if json.Unmarshal(data, &probe) != nil {
		return ErrorBody{}, false
	}
	present := func(r json.RawMessage) bool { return len(r) > 0 && !bytes.Equal(r, []byte("null")) }
	flat := num(probe.Status) >= 400 && present(probe.Message)
	if !present(probe.Error) && str(probe.Object) != "error" && !flat {
		return ErrorBody{}, false
	}
	return ParseError(data)
}

func refHasToolCalls(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 2 && raw[0] == '[' && len(bytes.TrimSpace(raw[1:len(raw)-1])) > 0
}

func refHasReasoning(raw json.RawMessage) bool {
	switch string(bytes.TrimSpace(raw)) {
	case "", "null", `""`, "{}":
		return false
	}
	return true
}
