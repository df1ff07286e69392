package sagemaker

import (
	"bytes"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/openaiwire"
)

// maxLine bounds one line of a model's stream (and so the splitter's
// buffer). A longer line fails the stream with ERR_PAYLOAD_TOO_LARGE.
const maxLine = 8 << 20

// lineSplitter reassembles a model's stream lines from PayloadParts, which
// may cut a line anywhere. bufio.Scanner does not fit: it pulls from a
// reader, while the parts are pushed from an event channel. Lines returned
// by next alias the buffer and are valid until the next push.
type lineSplitter struct {
	buf []byte
	pos int // start of the unconsumed bytes
}

// push appends a part. It compacts the consumed prefix first, so the buffer
// only grows to the longest line plus one part.
func (s *lineSplitter) push(p []byte) {
	if s.pos > 0 {
		n := copy(s.buf, s.buf[s.pos:])
		s.buf = s.buf[:n]
		s.pos = 0
	}
	s.buf = append(s.buf, p...)
}

// next returns the next complete line, without its end: "\n", "\r\n" or a
// bare "\r", as SSE allows. A "\r" that ends what arrived so far waits for
// the next part, which may begin with its "\n".
func (s *lineSplitter) next() ([]byte, bool) {
	rest := s.buf[s.pos:]
	lf := bytes.IndexByte(rest, '\n')
	seg := rest
	if lf >= 0 {
		seg = rest[:lf]
	}
	if cr := bytes.IndexByte(seg, '\r'); cr >= 0 {
		switch {
		case cr < len(seg)-1: // a bare CR
			s.pos += cr + 1
		case lf >= 0: // CRLF
			s.pos += lf + 1
		default: // the last byte so far
			return nil, false
		}
		return seg[:cr], true
	}
	if lf < 0 {
		return nil, false
	}
	s.pos += lf + 1
	return seg, true
}

// flush returns what is left after the last line end (the stream ended
// without one) and empties the splitter.
func (s *lineSplitter) flush() ([]byte, bool) {
	rest := s.buf[s.pos:]
	s.pos = len(s.buf)
	return bytes.TrimSuffix(rest, []byte{'\r'}), len(rest) > 0
}

// pending is the length of the incomplete line held.
func (s *lineSplitter) pending() int { return len(s.buf) - s.pos }

// lineKind says what one stream line was.
type lineKind uint8

const (
	lineSkip  lineKind = iota // blank, SSE comment or field, unrecognized JSON
	lineChunk                 // an OpenAI or TGI chunk
	lineDone                  // "data: [DONE]"
	lineError                 // an in-band error object
	// linePartial is a data field that is not a JSON object by itself:
	// the first of several lines that one field is spread over (SSE joins
	// them with "\n"), or a cut one.
	linePartial
)

// line is one parsed stream line.
type line struct {
	kind lineKind
	// data is the JSON payload (an SSE data field's value, or the bare
	// line); it aliases the input.
	data   []byte
	text   string
	tokens int
	finish string
	// final is true for a TGI event that carries the whole generated_text:
	// the stream's last.
	final    bool
	hasUsage bool
	input    int
	output   int
	err      *inbandError
}

var (
	dataPrefix = []byte("data:")
	utf8BOM    = []byte{0xEF, 0xBB, 0xBF}
)

// parseLine parses one line of a model's stream: an SSE line ("data: {…}",
// as TGI and LMI send) or a bare JSON line (LMI's jsonlines). It knows
// OpenAI chat and completions chunks (choices[0].delta.content or .text,
// finish_reason, usage), TGI token events ({"token":{"text","special"},
// "generated_text","details":{"finish_reason","generated_tokens"}}) and
// in-band error objects. Only the returned text and an unknown finish
// reason are copied out of in; nothing else allocates.
func parseLine(in []byte) line {
	// A UTF-8 byte order mark may start the stream (SSE says to skip it).
	b := bytes.TrimSpace(bytes.TrimPrefix(in, utf8BOM))
	if len(b) == 0 || b[0] == ':' {
		return line{}
	}
	isData := bytes.HasPrefix(b, dataPrefix)
	if isData {
		b = bytes.TrimSpace(b[len(dataPrefix):])
	} else if b[0] != '{' && b[0] != '[' {
		return line{} // another SSE field (event:, id:, retry:) or noise
	}
	return parseEvent(b, isData)
}

// malformedData is the error of a data field that does not hold a JSON
// object, even joined with the data lines after it: skipping it would lose
// text silently.
func malformedData(b []byte) line {
	return line{kind: lineError, data: b, err: &inbandError{Code: "MalformedLine",
		Message: "a stream data field that is not a JSON object (truncated, or not JSON)", Portable: errcodes.ModelError}}
}

// parseEvent parses one event's payload: an SSE data field's value (isData)
// or a bare line.
func parseEvent(b []byte, isData bool) line {
	if string(b) == "[DONE]" {
		return line{kind: lineDone, data: b}
	}
	if len(b) == 0 || b[0] != '{' || !gjson.ValidBytes(b) {
		if isData && len(b) > 0 {
			return line{kind: linePartial, data: b}
		}
		return line{}
	}
	// gjson reads a string view of the buffer; results that outlive the
	// buffer are cloned below.
	s := unsafe.String(unsafe.SliceData(b), len(b))
	l := line{kind: lineChunk, data: b}
	if ch := gjson.Get(s, "choices"); ch.Exists() {
		first := ch.Get("0")
		t := first.Get("delta.content")
		if !t.Exists() {
			t = first.Get("text")
		}
		l.text = ownString(t)
		if f := first.Get("finish_reason"); f.Type == gjson.String {
			l.finish = ownFinish(f.Str)
		}
		if u := gjson.Get(s, "usage"); u.IsObject() {
			l.hasUsage = true
			l.input = int(u.Get("prompt_tokens").Int())
			l.output = int(u.Get("completion_tokens").Int())
		}
		return l
	}
	tok := gjson.Get(s, "token")
	gen := gjson.Get(s, "generated_text")
	if tok.IsObject() || gen.Type == gjson.String {
		if tok.IsObject() {
			l.tokens = 1
			if !tok.Get("special").Bool() {
				l.text = ownString(tok.Get("text"))
			}
		} else {
			// A whole generation in one event (a container that does not
			// stream token by token).
			l.text = ownString(gen)
		}
		l.final = gen.Type == gjson.String
		if d := gjson.Get(s, "details"); d.IsObject() {
			if f := d.Get("finish_reason"); f.Type == gjson.String {
				l.finish = ownFinish(f.Str)
			}
			if n := d.Get("generated_tokens").Int(); n > 0 {
				l.hasUsage = true
				l.output = int(n)
				l.input = int(d.Get("input_length").Int())
			}
		}
		return l
	}
	if ie, ok := parseInbandError(b); ok {
		return line{kind: lineError, data: b, err: ie}
	}
	return line{data: b}
}

// ownString returns a string result that does not alias gjson's input: a
// plain string is a substring of the input and is cloned, an escaped one
// was already unescaped into new memory.
func ownString(r gjson.Result) string {
	if r.Type != gjson.String || r.Str == "" {
		return ""
	}
	if strings.IndexByte(r.Raw, '\\') >= 0 {
		return r.Str
	}
	return strings.Clone(r.Str)
}

// ownFinish normalizes a finish reason without allocating for known ones.
func ownFinish(s string) string {
	if n, known := knownFinish(s); known {
		return n
	}
	return strings.Clone(s)
}

// inbandError is an error a model container reported inside its response
// (a 200 body or a stream line) rather than through a SageMaker error.
type inbandError struct {
	// Code is the error's own code or type, if it has one (as
	// openaiwire.ErrorBody.ProviderCode reads it).
	Code    string
	Message string
	// Portable is the code the same error body gets from an
	// OpenAI-compatible or TGI server (openaiwire.Classify, by the status
	// the body states, its code or its type); ERR_MODEL_ERROR when the body
	// says nothing a code can be told from.
	Portable errcodes.Code
}

// Error implements error.
func (e *inbandError) Error() string {
	if e.Code == "" {
		return "model error: " + e.Message
	}
	return "model error " + e.Code + ": " + e.Message
}

// parseInbandError reads an error object of the shapes model servers send:
// TGI {"error":"…","error_type":"…"}, OpenAI and current vLLM
// {"error":{"message":…,"type":…,"code":…}}, older vLLM
// {"object":"error","message":…,"type":…,"code":…}.
func parseInbandError(b []byte) (*inbandError, bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' || !gjson.ValidBytes(b) {
		return nil, false
	}
	root := gjson.ParseBytes(b)
	var code, msg gjson.Result
	switch e := root.Get("error"); {
	case e.IsObject():
		msg = e.Get("message")
		if code = e.Get("type"); code.Type != gjson.String || code.Str == "" {
			code = e.Get("code")
		}
	case e.Type == gjson.String:
		msg, code = e, root.Get("error_type")
	case root.Get("object").String() == "error":
		msg = root.Get("message")
		if code = root.Get("type"); code.Type != gjson.String || code.Str == "" {
			code = root.Get("code")
		}
	default:
		return nil, false
	}
	ie := &inbandError{Message: msg.String(), Portable: errcodes.ModelError}
	if code.Type == gjson.String || code.Type == gjson.Number {
		ie.Code = code.String()
	}
	if eb, ok := openaiwire.ParseError(b); ok {
		if c := eb.ProviderCode(); c != "" {
			ie.Code = c
		}
		if c := openaiwire.Classify(0, eb); c != errcodes.Unknown {
			ie.Portable = c
		}
	}
	if ie.Message == "" {
		ie.Message = "(no message)"
	}
	return ie, true
}
