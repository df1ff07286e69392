package sagemaker

import (
	"bytes"
	"errors"
	"net/http"
	"regexp"
	"testing"
	"unicode/utf8"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// The seed corpora live in testdata/fuzz/<FuzzName>/.

// FuzzLineSplitter checks that lines reassembled from parts of any size are
// the lines of the whole input.
func FuzzLineSplitter(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, size uint8) {
		n := int(size%31) + 1
		var s lineSplitter
		var got [][]byte
		longest := 0
		for rest := data; len(rest) > 0; {
			k := min(n, len(rest))
			s.push(rest[:k])
			rest = rest[k:]
			for {
				l, ok := s.next()
				if !ok {
					break
				}
				got = append(got, bytes.Clone(l))
			}
			longest = max(longest, s.pending())
		}
		if l, ok := s.flush(); ok {
			got = append(got, bytes.Clone(l))
		}
		if _, ok := s.next(); ok {
			t.Fatal("lines after flush")
		}

		// The lines of the whole input: ends are "\n", "\r\n" and "\r".
		var want [][]byte
		start := 0
		for i := 0; i < len(data); i++ {
			switch data[i] {
			case '\r':
				want = append(want, data[start:i])
				if i+1 < len(data) && data[i+1] == '\n' {
					i++
				}
				start = i + 1
			case '\n':
				want = append(want, data[start:i])
				start = i + 1
			}
		}
		if start < len(data) {
			want = append(want, data[start:])
		}
		parts := bytes.Split(data, []byte{'\n'})
		if len(got) != len(want) {
			t.Fatalf("got %d lines, want %d", len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("line %d: got %q, want %q", i, got[i], want[i])
			}
		}
		maxLen := 0
		for _, p := range parts {
			maxLen = max(maxLen, len(p))
		}
		if longest > maxLen {
			t.Fatalf("held %d bytes of an unfinished line; the longest line is %d", longest, maxLen)
		}
	})
}

// FuzzParseLine checks that parsing never panics and that nothing it
// returns, apart from data, aliases the input buffer.
func FuzzParseLine(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		buf := bytes.Clone(in)
		l := parseLine(buf)
		text, finish := l.text, l.finish
		var errMsg string
		if l.err != nil {
			errMsg = l.err.Message
		}
		for i := range buf {
			buf[i] = 'x'
		}
		if l.text != text || l.finish != finish {
			t.Fatal("result changed with the input buffer")
		}
		again := parseLine(in)
		if again.text != text || again.finish != finish || again.kind != l.kind || again.tokens != l.tokens ||
			again.hasUsage != l.hasUsage || again.output != l.output || again.input != l.input || again.final != l.final {
			t.Fatalf("parse is not deterministic: %+v vs %+v", again, l)
		}
		if l.err != nil && errMsg == "" {
			t.Fatal("in-band error without a message")
		}
		switch l.kind {
		case lineSkip, lineDone, linePartial:
			if text != "" || finish != "" || l.hasUsage {
				t.Fatalf("a %d line carries content", l.kind)
			}
		case lineError:
			if l.err == nil {
				t.Fatal("error line without error")
			}
		case lineChunk:
		default:
			t.Fatalf("unknown kind %d", l.kind)
		}
		if !bytes.Contains(in, again.data) {
			t.Fatal("data is not part of the line")
		}
	})
}

// FuzzParseGeneration checks that any response body parses or fails
// cleanly, and that a parsed TGI body's text is its generated_text.
func FuzzParseGeneration(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		g, err := parseGeneration(body)
		if err != nil {
			if g != (generation{}) {
				t.Fatal("a failed parse returned a result")
			}
			return
		}
		if g.Usage.Source != "" && g.Usage.Source != "server" {
			t.Fatalf("usage source %q", g.Usage.Source)
		}
		if g.Finish != "" && g.Finish != normalizeFinish(g.Finish) {
			t.Fatalf("finish reason %q is not normalized", g.Finish)
		}
	})
}

// FuzzParseInbandError checks the error-body parser never panics and always
// yields a message for what it accepts.
func FuzzParseInbandError(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		ie, ok := parseInbandError(body)
		if ok != (ie != nil) {
			t.Fatal("ok and result disagree")
		}
		if ok && (ie.Message == "" || ie.Error() == "") {
			t.Fatal("accepted error without a message")
		}
		if ok && !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
			t.Fatal("accepted a non-object")
		}
	})
}

var keyID = regexp.MustCompile(`\b(AKIA|ASIA)[A-Z0-9]{16}\b`)

// FuzzMapError checks that any API error code, message and status maps to
// a valid code, keeps its native error and never leaks a key id.
func FuzzMapError(f *testing.F) {
	f.Fuzz(func(t *testing.T, code, msg string, status int) {
		if !utf8.ValidString(msg) {
			return
		}
		status = 100 + abs(status)%500
		api := &smithy.GenericAPIError{Code: code, Message: msg}
		err := &smithy.OperationError{ServiceID: "SageMaker Runtime", OperationName: "InvokeEndpoint", Err: &awshttp.ResponseError{
			ResponseError: &smithyhttp.ResponseError{
				Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status, Header: http.Header{}}},
				Err:      api,
			},
			RequestID: "rid",
		}}
		e := mapError(err)
		if !e.Code.Valid() {
			t.Fatalf("invalid code %q", e.Code)
		}
		if e.Provider != "aws" || e.HTTPStatus != status || e.RequestID != "rid" || e.ProviderCode != code {
			t.Fatalf("fields not filled: %+v", e)
		}
		var back smithy.APIError
		if !errors.As(e, &back) {
			t.Fatal("native error lost")
		}
		if keyID.MatchString(e.Message) {
			t.Fatalf("key id in message %q", e.Message)
		}
		if e.Retryable != e.Code.Retryable() {
			t.Fatalf("retryable %v for %s", e.Retryable, e.Code)
		}
		if status == 413 && e.Code != errcodes.PayloadTooLarge {
			t.Fatalf("413 mapped to %s", e.Code)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		if n == -n {
			return 0
		}
		return -n
	}
	return n
}
