package openaiwire

import (
	"bytes"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

// The fast path exists because encoding/json, through reflection and its
// intermediate values, cost about 2 µs and 9 allocations per streamed
// chunk, and every chunk of every measured stream goes through here.
// gjson.Valid checks the body, then a cursor reads the few members of
// wireBody straight from its bytes and skips the rest, without allocating.
// gjson's Result.ForEach is not used for the reading: it parses every
// number as a float, rescans each nested value once per level and
// unescapes strings only to have them dropped, which made it markedly
// slower here.
//
// fast must give exactly what slow gives, so it takes only the bodies whose
// outcome it is sure of and declines the rest, which slow then decodes:
//
//   - invalid JSON (gjson.Valid accepts what encoding/json accepts) and
//     JSON nested deeper than encoding/json allows, so that the error is
//     encoding/json's own;
//   - a member of wireBody of a type encoding/json would not store there (a
//     numeric "content", a fractional or out-of-range token count), for the
//     same reason;
//   - a member given twice, which encoding/json merges in ways that depend
//     on the order and on null (a null string keeps the earlier value);
//   - a key that encoding/json could match to a field after unescaping or
//     case folding ("Content", "choi\u0063es", "choiceſ"), as it matches
//     keys case-insensitively.
//
// Strings are decoded as encoding/json decodes them (appendUnquoted).

// jsonMaxDepth is encoding/json's nesting limit: deeper JSON is an error.
const jsonMaxDepth = 10000

// maxTextBuffer is the largest text buffer a decoder keeps between bodies.
const maxTextBuffer = 64 << 10

// Member indexes returned by member, besides a field's own index.
const (
	unknownMember  = -1 // a key encoding/json ignores too
	declinedMember = -2 // a key encoding/json might match to a field
)

// The fields of wireBody, wireChoice, wireDelta and wireUsage, by JSON
// name, in the order the constants below index them.
var (
	bodyMembers   = []string{"choices", "usage"}
	choiceMembers = []string{"delta", "message", "text", "finish_reason", "logprobs"}
	deltaMembers  = []string{"content", "reasoning_content", "reasoning", "tool_calls"}
	usageMembers  = []string{"prompt_tokens", "completion_tokens", "completion_tokens_details"}
)

const (
	mChoices = iota
	mUsage
)

const (
	mDelta = iota
	mMessage
	mText
	mFinishReason
	mLogprobs
)

const (
	mContent = iota
	mReasoningContent
	mReasoning
	mToolCalls
)

const (
	mPromptTokens = iota
	mCompletionTokens
	mCompletionDetails
)

// fast decodes data, a trimmed body starting with '{', as slow would,
// and its reasoning text. It reports false, having decided nothing, for a
// body it declines (see above), and extra for a body with members that
// extras reads (tool calls, logprobs, usage details, a reasoning object)
// or, for a whole answer, with more than one choice (extras lists them).
func (d *decoder) fast(data []byte) (r Result, extra, ok bool) {
	// Nesting deeper than jsonMaxDepth takes more than jsonMaxDepth
	// brackets; counting them is cheaper than tracking the depth.
	if len(data) > 2*jsonMaxDepth && bytes.Count(data, []byte{'{'})+bytes.Count(data, []byte{'['}) > jsonMaxDepth {
		return Result{}, false, false
	}
	if !gjson.ValidBytes(data) {
		return Result{}, false, false
	}
	s := fastScan{cursor: cursor{b: data}, text: d.text[:0], reasoning: d.reasoning[:0]}
	ok = s.object(bodyMembers, s.bodyMember)
	if cap(s.text) <= maxTextBuffer {
		d.text = s.text[:0]
	} else {
		d.text = nil
	}
	if cap(s.reasoning) <= maxTextBuffer {
		d.reasoning = s.reasoning[:0]
	} else {
		d.reasoning = nil
	}
	if !ok {
		return Result{}, false, false
	}
	r = Result{Content: s.content}
	if len(s.text) > 0 {
		r.Text = string(s.text)
		r.Content = true
	}
	if len(s.reasoning) > 0 {
		r.Reasoning = string(s.reasoning)
	}
	if len(s.finish) > 0 {
		r.FinishReason = unquote(s.finish)
	}
	if s.hasUsage {
		r.Usage = &cloudreq.Usage{InputTokens: s.usage.PromptTokens, OutputTokens: s.usage.CompletionTokens, Source: "server"}
	}
	return r, s.extra || (d.whole && s.choices > 1), true
}

// cursor reads a JSON document that gjson.Valid accepted: as the document
// is known to be well formed, reading it needs no checks. Each method
// starts on the first byte of a value (or of a key) and leaves the cursor
// just after it.
type cursor struct {
	b []byte
	i int
}

// ws skips JSON white space.
func (c *cursor) ws() {
	for c.i < len(c.b) {
		switch c.b[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

// str reads a string and returns its contents, still escaped.
func (c *cursor) str() []byte {
	c.i++
	start := c.i
	for {
		switch c.b[c.i] {
		case '"':
			c.i++
			return c.b[start : c.i-1]
		case '\\':
			c.i += 2
		default:
			c.i++
		}
	}
}

// skip reads a value of any type and returns it as it is in the body.
func (c *cursor) skip() []byte {
	start := c.i
	switch c.b[c.i] {
	case '"':
		c.str()
	case '{', '[':
		for depth := 0; ; {
			switch c.b[c.i] {
			case '"':
				c.str()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					c.i++
					return c.b[start:c.i]
				}
			}
			c.i++
		}
	default: // a number, true, false or null
		for c.i < len(c.b) {
			switch c.b[c.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return c.b[start:c.i]
			}
			c.i++
		}
	}
	return c.b[start:c.i]
}

// null reads a null and reports true, or reports false at any other
// value.
func (c *cursor) null() bool {
	if c.b[c.i] != 'n' {
		return false
	}
	c.i += len("null")
	return true
}

// object reads an object, calling f for each member whose key names one of
// names, with the name's index and the cursor on the member's value, which
// f reads. It reports false if the value is not an object, if f does, or
// if a member is declined or given twice.
func (c *cursor) object(names []string, f func(i int) bool) bool {
	if c.b[c.i] != '{' {
		return false
	}
	c.i++
	c.ws()
	var seen uint
	for c.b[c.i] != '}' {
		i := member(c.str(), names)
		c.ws()
		c.i++ // ':'
		c.ws()
		switch {
		case i == declinedMember, i >= 0 && seen&(1<<i) != 0:
			return false
		case i >= 0:
			seen |= 1 << i
			if !f(i) {
				return false
			}
		default:
			c.skip()
		}
		c.ws()
		if c.b[c.i] == ',' {
			c.i++
			c.ws()
		}
	}
	c.i++
	return true
}

// array reads an array, calling f with the cursor on each element, which
// f reads. It reports false if the value is not an array or if f does.
func (c *cursor) array(f func() bool) bool {
	if c.b[c.i] != '[' {
		return false
	}
	c.i++
	c.ws()
	for c.b[c.i] != ']' {
		if !f() {
			return false
		}
		c.ws()
		if c.b[c.i] == ',' {
			c.i++
			c.ws()
		}
	}
	c.i++
	return true
}

// stringValue reads a string and returns its contents, still escaped, or
// nil for null; it reports false for any other type, which encoding/json
// would not store in a string.
func (c *cursor) stringValue() ([]byte, bool) {
	switch c.b[c.i] {
	case 'n':
		c.null()
		return nil, true
	case '"':
		return c.str(), true
	}
	return nil, false
}

// intValue reads a number into an int, or null as 0. It reports false for
// any other type, and for a number that encoding/json would not store in
// an int: one with a fraction or an exponent, or out of range.
func (c *cursor) intValue() (int, bool) {
	switch c.b[c.i] {
	case 'n':
		c.null()
		return 0, true
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		n, err := strconv.Atoi(string(c.skip()))
		return n, err == nil
	}
	return 0, false
}

// member returns the index in names of the field that an object key (its
// contents, still escaped) names, unknownMember if encoding/json would
// match it to no field, or declinedMember if it takes unescaping or case
// folding to tell.
func member(key []byte, names []string) int {
	for _, c := range key {
		if c == '\\' || c >= utf8.RuneSelf {
			return declinedMember
		}
	}
	for i, n := range names {
		if string(key) == n {
			return i
		}
	}
	for _, n := range names {
		if len(key) == len(n) && bytes.EqualFold(key, []byte(n)) {
			return declinedMember
		}
	}
	return unknownMember
}

// fastScan is the state of one fast decode. Its byte slices are views of
// the body: JSON string contents, escapes and all, or raw values.
type fastScan struct {
	cursor
	text      []byte // the choices' texts, decoded and joined
	reasoning []byte // the choices' reasoning texts, decoded and joined
	content   bool   // a reasoning or tool-call delta was seen
	extra     bool   // a member extras reads was seen
	choices   int    // the elements of "choices", null ones included
	finish    []byte // the first non-empty finish_reason
	usage     wireUsage
	hasUsage  bool
}

// bodyMember reads a member of wireBody.
func (s *fastScan) bodyMember(i int) bool {
	if s.null() {
		return true
	}
	switch i {
	case mChoices:
		return s.array(s.choice)
	case mUsage:
		s.hasUsage = true
		return s.object(usageMembers, s.usageMember)
	}
	return false
}

// usageMember reads a member of wireUsage.
func (s *fastScan) usageMember(i int) bool {
	if i == mCompletionDetails {
		if !s.null() {
			s.skip()
			s.extra = true
		}
		return true
	}
	n, ok := s.intValue()
	switch i {
	case mPromptTokens:
		s.usage.PromptTokens = n
	case mCompletionTokens:
		s.usage.CompletionTokens = n
	}
	return ok
}

// rawDelta is a wireDelta as views of the body.
type rawDelta struct {
	content, reasoningContent, reasoning, toolCalls []byte
}

// choice reads one element of "choices", as slow's loop over them does.
func (s *fastScan) choice() bool {
	s.choices++
	if s.null() {
		return true
	}
	var delta, message rawDelta
	var text, finish []byte
	ok := s.object(choiceMembers, func(i int) bool {
		var ok bool
		switch i {
		case mDelta:
			ok = s.delta(&delta)
		case mMessage:
			ok = s.delta(&message)
		case mText:
			text, ok = s.stringValue()
		case mFinishReason:
			finish, ok = s.stringValue()
		case mLogprobs:
			if ok = true; !s.null() {
				s.skip()
				s.extra = true
			}
		}
		return ok
	})
	if !ok {
		return false
	}
	for _, dl := range []*rawDelta{&delta, &message} {
		s.text = appendUnquoted(s.text, dl.content)
		if len(dl.reasoningContent) > 0 || hasReasoning(dl.reasoning) || hasToolCalls(dl.toolCalls) {
			s.content = true
		}
		s.reasoning = appendUnquoted(s.reasoning, dl.reasoningContent)
		if r := dl.reasoning; len(r) > 1 && r[0] == '"' {
			s.reasoning = appendUnquoted(s.reasoning, r[1:len(r)-1])
		} else if hasReasoning(r) {
			s.extra = true
		}
		if hasToolCalls(dl.toolCalls) {
			s.extra = true
		}
	}
	s.text = appendUnquoted(s.text, text)
	if len(s.finish) == 0 {
		s.finish = finish
	}
	return true
}

// delta reads a "delta" or "message" member into dl.
func (s *fastScan) delta(dl *rawDelta) bool {
	if s.null() {
		return true
	}
	return s.object(deltaMembers, func(i int) bool {
		ok := true
		switch i {
		case mContent:
			dl.content, ok = s.stringValue()
		case mReasoningContent:
			dl.reasoningContent, ok = s.stringValue()
		case mReasoning:
			dl.reasoning = s.skip()
		case mToolCalls:
			dl.toolCalls = s.skip()
		}
		return ok
	})
}

// unquote returns the JSON string whose contents are s, decoded, in memory
// of its own.
func unquote(s []byte) string {
	if bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
		return string(s)
	}
	return string(appendUnquoted(nil, s))
}

// appendUnquoted appends the JSON string whose contents (between the
// quotes, escapes included) are s, decoded as encoding/json decodes it:
// escapes resolved, and a lone surrogate escape or a byte of invalid UTF-8
// replaced by U+FFFD. s is from a string gjson.Valid accepted, so its
// escapes are complete.
func appendUnquoted(dst, s []byte) []byte {
	if bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
		return append(dst, s...)
	}
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '\\':
			switch e := s[i+1]; e {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := hex4(s[i+2 : i+6])
				i += 6
				if utf16.IsSurrogate(r) {
					// A pair is two escapes; anything else is replaced.
					r2 := rune(-1)
					if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
						r2 = hex4(s[i+2 : i+6])
					}
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						r = dec
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default: // '"', '\\' or '/'
				dst = append(dst, e)
			}
			i += 2
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, n := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && n == 1 {
				dst = utf8.AppendRune(dst, r)
			} else {
				dst = append(dst, s[i:i+n]...)
			}
			i += n
		}
	}
	return dst
}

// hex4 returns the value of four hexadecimal digits.
func hex4(s []byte) rune {
	var r rune
	for i := range 4 {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
