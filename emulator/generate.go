package emulator

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// answerPlan is what a request asks of the answer's form: tools offered
// and the tool choice, JSON mode or a JSON schema. The emulator answers
// deterministically (see the package doc):
//
//   - tools offered and a choice other than "none": a call of the named
//     function, or the first offered, with arguments made from its
//     parameters schema (exampleOf); finish reason "tool_calls";
//   - JSON mode: {"text": <the drawn words>}; a JSON schema: exampleOf
//     the schema, so the answer validates against it;
//   - otherwise the drawn words.
//
// Structured answers are streamed in pieces of the JSON text, as many as
// the drawn output length (at least one byte each), and are never cut by
// max tokens.
type answerPlan struct {
	tools      []toolSpec
	toolChoice string // "", "auto", "none", "required", or "fn:NAME"
	jsonMode   bool
	schema     json.RawMessage
	images     int // image parts in the prompt
}

type toolSpec struct {
	name   string
	params json.RawMessage
}

// toolCallAnswer is the call an answer makes.
type toolCallAnswer struct {
	id, name string
}

// chatPlan reads the OpenAI chat members of the plan.
type chatPlanBody struct {
	Tools []struct {
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	ToolChoice     json.RawMessage `json:"tool_choice"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
	Messages []struct {
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// parseChatPlan reads tools, tool_choice and response_format.
func parseChatPlan(body []byte) (answerPlan, error) {
	var b chatPlanBody
	if err := json.Unmarshal(body, &b); err != nil {
		return answerPlan{}, fmt.Errorf("tools, tool_choice or response_format: %s", jsonErrText(err))
	}
	var p answerPlan
	for i, t := range b.Tools {
		if t.Function.Name == "" {
			return answerPlan{}, fmt.Errorf("tools[%d].function.name is required", i)
		}
		p.tools = append(p.tools, toolSpec{t.Function.Name, t.Function.Parameters})
	}
	if len(b.ToolChoice) > 0 && string(b.ToolChoice) != "null" {
		var mode string
		if json.Unmarshal(b.ToolChoice, &mode) == nil {
			switch mode {
			case "auto", "none", "required":
				p.toolChoice = mode
			default:
				return answerPlan{}, fmt.Errorf("tool_choice %q: want auto, none, required or a function", mode)
			}
		} else {
			var named struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			}
			if json.Unmarshal(b.ToolChoice, &named) != nil || named.Function.Name == "" {
				return answerPlan{}, fmt.Errorf("tool_choice must be a mode or {\"type\":\"function\",\"function\":{\"name\":…}}")
			}
			p.toolChoice = "fn:" + named.Function.Name
		}
		if p.toolChoice != "none" && p.toolChoice != "auto" && len(p.tools) == 0 {
			return answerPlan{}, fmt.Errorf("tool_choice %s needs tools", b.ToolChoice)
		}
	}
	if rf := b.ResponseFormat; rf != nil {
		switch rf.Type {
		case "text", "":
		case "json_object":
			p.jsonMode = true
		case "json_schema":
			if rf.JSONSchema == nil || len(rf.JSONSchema.Schema) == 0 {
				return answerPlan{}, fmt.Errorf("response_format json_schema needs json_schema.schema")
			}
			p.schema = rf.JSONSchema.Schema
		default:
			return answerPlan{}, fmt.Errorf("response_format.type %q: want text, json_object or json_schema", rf.Type)
		}
	}
	for _, m := range b.Messages {
		var parts []struct {
			Type     string `json:"type"`
			ImageURL *struct {
				URL string `json:"url"`
			} `json:"image_url"`
		}
		if json.Unmarshal(m.Content, &parts) != nil {
			continue
		}
		for _, pt := range parts {
			if pt.Type == "image_url" {
				if pt.ImageURL == nil || pt.ImageURL.URL == "" {
					return answerPlan{}, fmt.Errorf("an image_url part needs image_url.url")
				}
				p.images++
			}
		}
	}
	return p, nil
}

// imageTokens is what one image adds to the prompt (OpenAI's low-detail
// cost).
const imageTokens = 85

// callTool returns the function the answer calls, or "" for none.
func (p *answerPlan) callTool() (toolSpec, bool) {
	if len(p.tools) == 0 || p.toolChoice == "none" {
		return toolSpec{}, false
	}
	if name, ok := strings.CutPrefix(p.toolChoice, "fn:"); ok {
		i := slices.IndexFunc(p.tools, func(t toolSpec) bool { return t.name == name })
		if i < 0 {
			return toolSpec{}, false
		}
		return p.tools[i], true
	}
	return p.tools[0], true
}

// shape applies the plan and the profile's reasoning to c, once its
// values are drawn: the answer's words become the structured answer's
// pieces, and the reasoning words come first.
func (c *call) shape() {
	p := &c.gen.plan
	var text string
	switch t, ok := p.callTool(); {
	case ok:
		c.tool = &toolCallAnswer{id: "call_" + c.rec.ID, name: t.name}
		text = string(exampleOf(t.params, "", 0))
		c.finish = "tool_calls"
	case len(p.schema) > 0:
		text = string(exampleOf(p.schema, c.text(), 0))
		c.finish = "stop"
	case p.jsonMode:
		b, _ := json.Marshal(map[string]string{"text": c.text()})
		text = string(b)
		c.finish = "stop"
	}
	if text != "" {
		c.structured = true
		pieces := c.n
		if c.tool != nil && c.gen.dialect == dialectContents {
			pieces = 1 // Gemini sends a function call whole
		}
		c.words = split(text, pieces)
	}
	if k := c.reasoningTokens(); k > 0 {
		r := rand.New(rand.NewPCG(c.ep.seed^0x5EA5, c.rec.Seq))
		words := make([]string, k, k+len(c.words))
		for i := range words {
			words[i] = vocabulary[r.IntN(len(vocabulary))]
		}
		c.reasoningN = k
		c.words = append(words, c.words...)
	}
	if len(c.words) != c.n {
		c.resize(len(c.words))
	}
}

// reasoningTokens draws the reasoning length of the profile, on the
// dialects that carry reasoning apart (OpenAI chat, Gemini).
func (c *call) reasoningTokens() int {
	d := c.ep.prof.ReasoningTokens
	if d.Mean <= 0 || (c.gen.dialect != dialectChat && c.gen.dialect != dialectContents) {
		return 0
	}
	r := rand.New(rand.NewPCG(c.ep.seed^0x7EA5, c.rec.Seq))
	return max(1, sampleLength(d, r))
}

// resize sets the output length to n tokens: gaps cut, or added at the
// call's decode speed.
func (c *call) resize(n int) {
	gaps := max(n-1, 0)
	if gaps <= len(c.gapsRaw) {
		c.gapsRaw = c.gapsRaw[:gaps]
	} else {
		for len(c.gapsRaw) < gaps {
			c.gapsRaw = append(c.gapsRaw, c.tpot)
		}
	}
	c.n = n
	c.rec.OutputTokens = n
	c.breakAt = max(1, (n+1)/2)
}

// split cuts s into n pieces (at most len(s)), on UTF-8 boundaries.
func split(s string, n int) []string {
	n = max(1, min(n, len(s)))
	out := make([]string, 0, n)
	for i := range n {
		end := len(s) * (i + 1) / n
		start := 0
		if len(out) > 0 {
			start = len(strings.Join(out, ""))
		}
		for end < len(s) && end > start && !utf8Start(s[end]) {
			end++
		}
		if end <= start {
			continue
		}
		out = append(out, s[start:end])
	}
	if rest := len(strings.Join(out, "")); rest < len(s) {
		out[len(out)-1] += s[rest:]
	}
	return out
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// isReasoning reports whether token i is reasoning.
func (c *call) isReasoning(i int) bool { return i < c.reasoningN }

// exampleOf returns a JSON value that validates against schema (the
// common JSON Schema keywords: type, properties, required, items,
// enum, const, anyOf/oneOf/allOf, minimum/maximum, minLength,
// minItems); text fills strings. An empty schema gives {"text": text}.
func exampleOf(schema json.RawMessage, text string, depth int) json.RawMessage {
	var s map[string]json.RawMessage
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil || len(s) == 0 {
		if depth == 0 {
			b, _ := json.Marshal(map[string]string{"text": text})
			return b
		}
		return json.RawMessage(`"` + "emulated" + `"`)
	}
	if depth > 16 {
		return json.RawMessage("null")
	}
	if v, ok := s["const"]; ok {
		return v
	}
	if v, ok := s["enum"]; ok {
		var e []json.RawMessage
		if json.Unmarshal(v, &e) == nil && len(e) > 0 {
			return e[0]
		}
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		var alts []json.RawMessage
		if json.Unmarshal(s[k], &alts) == nil && len(alts) > 0 {
			return exampleOf(alts[0], text, depth+1)
		}
	}
	var typ string
	if json.Unmarshal(s["type"], &typ) != nil {
		var types []string
		if json.Unmarshal(s["type"], &types) == nil {
			for _, t := range types {
				if t != "null" {
					typ = t
					break
				}
			}
		}
	}
	if typ == "" {
		if _, ok := s["properties"]; ok {
			typ = "object"
		}
	}
	num := func(k string) (float64, bool) {
		var f float64
		return f, json.Unmarshal(s[k], &f) == nil
	}
	switch typ {
	case "object":
		var props map[string]json.RawMessage
		_ = json.Unmarshal(s["properties"], &props)
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var b strings.Builder
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteByte(':')
			b.Write(exampleOf(props[k], text, depth+1))
		}
		b.WriteByte('}')
		return json.RawMessage(b.String())
	case "array":
		n := 1
		if v, ok := num("minItems"); ok && v > 1 {
			n = int(min(v, 16))
		}
		items := make([]json.RawMessage, n)
		for i := range items {
			items[i] = exampleOf(s["items"], text, depth+1)
		}
		b, _ := json.Marshal(items)
		return b
	case "integer", "number":
		v := 1.0
		if lo, ok := num("minimum"); ok && lo > v {
			v = lo
		}
		if lo, ok := num("exclusiveMinimum"); ok && lo >= v {
			v = lo + 1
		}
		if hi, ok := num("maximum"); ok && hi < v {
			v = hi
		}
		if typ == "integer" {
			return json.RawMessage(fmt.Sprint(int64(v)))
		}
		b, _ := json.Marshal(v)
		return b
	case "boolean":
		return json.RawMessage("true")
	case "null":
		return json.RawMessage("null")
	}
	str := strings.TrimSpace(text)
	if str == "" {
		str = "emulated"
	}
	if v, ok := num("minLength"); ok {
		for len([]rune(str)) < int(v) {
			str += " emulated"
		}
	}
	if v, ok := num("maxLength"); ok && int(v) < len([]rune(str)) {
		str = string([]rune(str)[:int(v)])
	}
	b, _ := json.Marshal(str)
	return b
}
