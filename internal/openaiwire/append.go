package openaiwire

import (
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// appendChat appends r as json.Marshal writes it, byte for byte, for the
// requests most calls send: messages of text (or no content) without tool
// calls, no tools, tool choice or response format, finite numbers. It
// reports false, having appended nothing, for any other request, which
// json.Marshal then writes.
//
// It exists because json.Marshal reaches each field through reflection
// and each interface value (a message's content) through its type:
// EncodeChat cost 0.95 µs per request with it on the 2-core machine the
// load generator is measured on, and 0.42 µs with appendChat
// (BenchmarkEncodeChat), and every request of a run goes through it.
// FuzzAppendChat holds the two equal.
func appendChat(dst []byte, r *ChatRequest) ([]byte, bool) {
	if len(r.Tools) > 0 || r.ToolChoice != nil || r.ResponseFormat != nil {
		return dst, false
	}
	size := 128 + len(r.Model) // a first guess at the body's length, for one allocation
	for i := range r.Messages {
		m := &r.Messages[i]
		if len(m.ToolCalls) > 0 {
			return dst, false
		}
		s, ok := m.Content.(string)
		if !ok && m.Content != nil {
			return dst, false
		}
		size += 32 + len(m.Role) + len(s) + len(s)/16
	}
	for _, f := range [...]*float64{r.Temperature, r.TopP, r.PresencePenalty, r.FrequencyPenalty} {
		if f != nil && (math.IsNaN(*f) || math.IsInf(*f, 0)) {
			return dst, false // json.Marshal's error
		}
	}
	b := append(slices.Grow(dst, size), '{')
	if r.Model != "" {
		b = appendJSONString(append(b, `"model":`...), r.Model)
		b = append(b, ',')
	}
	b = append(b, `"messages":`...)
	if r.Messages == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range r.Messages {
			m := &r.Messages[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(append(b, `{"role":`...), m.Role)
			b = append(b, `,"content":`...)
			if s, ok := m.Content.(string); ok {
				b = appendJSONString(b, s)
			} else {
				b = append(b, "null"...)
			}
			if m.ToolCallID != "" {
				b = appendJSONString(append(b, `,"tool_call_id":`...), m.ToolCallID)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = appendInt(b, `,"max_tokens":`, int64(r.MaxTokens))
	b = appendInt(b, `,"max_completion_tokens":`, int64(r.MaxCompletionTokens))
	b = appendFloat(b, `,"temperature":`, r.Temperature)
	b = appendFloat(b, `,"top_p":`, r.TopP)
	b = appendInt(b, `,"top_k":`, int64(r.TopK))
	if len(r.Stop) > 0 {
		b = append(b, `,"stop":[`...)
		for i, s := range r.Stop {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, s)
		}
		b = append(b, ']')
	}
	if r.Seed != nil {
		b = strconv.AppendInt(append(b, `,"seed":`...), *r.Seed, 10)
	}
	b = appendInt(b, `,"n":`, int64(r.N))
	b = appendFloat(b, `,"presence_penalty":`, r.PresencePenalty)
	b = appendFloat(b, `,"frequency_penalty":`, r.FrequencyPenalty)
	b = appendBool(b, `,"logprobs":`, r.Logprobs)
	b = appendInt(b, `,"top_logprobs":`, int64(r.TopLogprobs))
	if r.ParallelToolCalls != nil {
		b = strconv.AppendBool(append(b, `,"parallel_tool_calls":`...), *r.ParallelToolCalls)
	}
	if r.ReasoningEffort != "" {
		b = appendJSONString(append(b, `,"reasoning_effort":`...), r.ReasoningEffort)
	}
	b = appendBool(b, `,"stream":`, r.Stream)
	if r.StreamOptions != nil {
		b = strconv.AppendBool(append(b, `,"stream_options":{"include_usage":`...), r.StreamOptions.IncludeUsage)
		b = append(b, '}')
	}
	b = appendBool(b, `,"ignore_eos":`, r.IgnoreEOS)
	return append(b, '}'), true
}

// appendInt appends the member key (with its leading comma) and v, unless
// v is 0 (omitempty).
func appendInt(b []byte, key string, v int64) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), v, 10)
}

// appendBool appends the member key and true when v is (omitempty).
func appendBool(b []byte, key string, v bool) []byte {
	if !v {
		return b
	}
	return append(append(b, key...), "true"...)
}

// appendFloat appends the member key and *f unless f is nil
// (omitempty), formatted as encoding/json formats a float64: the
// shortest decimal that reads back the same, in exponent form below
// 1e-6 and from 1e21, with the exponent unpadded. f is finite.
func appendFloat(b []byte, key string, f *float64) []byte {
	if f == nil {
		return b
	}
	b = append(b, key...)
	v := *f
	format := byte('f')
	if abs := math.Abs(v); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, v, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendJSONString appends s as a JSON string as encoding/json writes it
// (with its default HTML escaping): '"' and '\\' escaped, control
// characters as \b, \f, \n, \r, \t or \u00XX, '<', '>' and '&' as
// \u003c, \u003e and \u0026, U+2028 and U+2029 as \u2028 and \u2029, and
// each byte of invalid UTF-8 as \ufffd.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= ' ' && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
