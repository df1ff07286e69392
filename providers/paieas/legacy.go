package paieas

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
	"github.com/cloudinfer/cloudinfer/internal/openaiwire"
)

// legacyRequest is the EAS LLM template's request body.
type legacyRequest struct {
	Prompt        string      `json:"prompt"`
	SystemPrompt  string      `json:"system_prompt,omitempty"`
	History       [][2]string `json:"history,omitempty"`
	MaxNewTokens  int         `json:"max_new_tokens,omitempty"`
	Temperature   *float64    `json:"temperature,omitempty"`
	TopP          *float64    `json:"top_p,omitempty"`
	UseStreamChat string      `json:"use_stream_chat"`
}

// encodeLegacy writes the legacy body: system messages joined into
// system_prompt, the last user message as prompt, and the turns before it
// as [user, assistant] pairs in history. Stop sequences have no field and
// are refused.
func encodeLegacy(g *cloudreq.GenerateInput, stream bool) ([]byte, error) {
	if err := refuseLegacy(g); err != nil {
		return nil, err
	}
	var sys []string
	var turns []cloudreq.Message
	for _, m := range g.Messages {
		if m.Role == "system" {
			sys = append(sys, m.Text())
			continue
		}
		turns = append(turns, m)
	}
	r := legacyRequest{
		SystemPrompt: strings.Join(sys, "\n"), MaxNewTokens: g.MaxTokens,
		Temperature: g.Temperature, TopP: g.TopP, UseStreamChat: "False",
	}
	if stream {
		r.UseStreamChat = "True"
	}
	last := len(turns) - 1
	for last >= 0 && turns[last].Role != "user" {
		last--
	}
	if last >= 0 {
		r.Prompt = turns[last].Text()
	}
	var pair [2]string
	open := false
	for _, m := range turns[:max(last, 0)] {
		if m.Role == "user" {
			if open {
				r.History = append(r.History, pair)
			}
			pair, open = [2]string{m.Text(), ""}, true
			continue
		}
		pair[1] += m.Text()
		r.History = append(r.History, pair)
		pair, open = [2]string{}, false
	}
	if open {
		r.History = append(r.History, pair)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return cloudreq.MergeExtra(b, g.Extra)
}

// legacyDialect names the legacy template in refusals.
const legacyDialect = "pai-eas legacy"

// refuseLegacy refuses what the EAS LLM template's body cannot carry: it
// is a prompt, a history and three sampling fields.
func refuseLegacy(g *cloudreq.GenerateInput) error {
	return openaiwire.RefuseFixedFields(g, legacyDialect, "use DialectOpenAI on an OpenAI-compatible service", false)
}

type legacyResponse struct {
	Response *string `json:"response"`
}

// errNoResponse is returned for a body without a "response" string.
var errNoResponse = errors.New(`no "response" member`)

// decodeLegacy reads {"response":…}.
func decodeLegacy(body []byte) (string, error) {
	var r legacyResponse
	if err := json.Unmarshal(bytes.TrimSpace(body), &r); err != nil {
		return "", err
	}
	if r.Response == nil {
		return "", errNoResponse
	}
	return *r.Response, nil
}

// legacyDecoder decodes the records of a legacy stream. With raw set (an
// invoke stream), a record that is not {"response":…} is passed on as it
// is instead of failing.
type legacyDecoder struct {
	mode    LegacyStream
	raw     bool
	seen    int
	content bool   // a record with text was yielded
	last    string // the previous record's response (cumulative detection)
}

var _ httpadapter.Decoder = (*legacyDecoder)(nil)

// Decode implements httpadapter.Decoder.
func (d *legacyDecoder) Decode(frame []byte) (cloudreq.StreamChunk, bool, error) {
	frame = bytes.TrimSpace(frame)
	if len(frame) == 0 {
		return cloudreq.StreamChunk{}, false, nil
	}
	text, err := decodeLegacy(frame)
	if err != nil {
		if eb, ok := openaiwire.ParseError(frame); ok && !d.raw {
			return cloudreq.StreamChunk{}, false, inStreamError(eb, d.content)
		}
		if d.raw {
			d.content = true
			return cloudreq.StreamChunk{Text: string(frame), Content: true}, false, nil
		}
		if !d.content {
			return cloudreq.StreamChunk{}, false, httpadapter.Malformed(cloudreq.ProviderAlibaba, "paieas: the first stream record is not {\"response\":…}", err)
		}
		e := httpadapter.Interrupted(cloudreq.ProviderAlibaba, "malformed legacy stream record: "+err.Error(), err)
		e.Retryable = false
		return cloudreq.StreamChunk{}, false, e
	}
	d.seen++
	delta := text
	switch d.mode {
	case LegacyCumulative:
		delta = strings.TrimPrefix(text, d.last)
	case LegacyAuto:
		if d.seen == 2 {
			if len(text) > len(d.last) && strings.HasPrefix(text, d.last) {
				d.mode = LegacyCumulative
				delta = text[len(d.last):]
			} else {
				d.mode = LegacyDelta
			}
		}
	}
	d.last = text
	if delta != "" {
		d.content = true
	}
	return cloudreq.StreamChunk{Text: delta, Content: delta != ""}, false, nil
}

// inStreamError is the error a legacy stream reported in a record such as
// {"error":"processor exception: …"}. Before any content it is the whole
// answer, with its own class; after content it interrupts the stream,
// not retryable, its class in Details["code"].
func inStreamError(eb openaiwire.ErrorBody, afterContent bool) *errcodes.Error {
	msg := eb.Message
	if msg == "" {
		msg = "the service reported an error mid-stream"
	}
	native := apiError(0, eb)
	class := openaiwire.Classify(0, eb)
	if !afterContent {
		e := errcodes.Wrap(native, class, msg)
		e.Provider, e.ProviderCode = cloudreq.ProviderAlibaba, eb.ProviderCode()
		return e
	}
	e := httpadapter.Interrupted(cloudreq.ProviderAlibaba, msg, native)
	e.ProviderCode = eb.ProviderCode()
	e.Details = map[string]string{"code": string(class)}
	e.Retryable = false
	return e
}

// Complete implements httpadapter.Decoder: a legacy stream has no end
// marker, so its body's clean end is the stream's.
func (d *legacyDecoder) Complete() error { return nil }
