package openaiwire

import (
	"testing"
	"unicode/utf8"
)

func FuzzParseError(f *testing.F) {
	for _, s := range []string{
		`{"error":{"message":"m","type":"BadRequestError","param":null,"code":400}}`,
		`{"object":"error","message":"m","type":"x","code":400}`,
		`{"error":{"message":"m","type":"invalid_request_error","param":"p","code":"c"}}`,
		`{"status":422,"code":"parameter_not_supported","detail":{"a":[1]},"message":"m"}`,
		`{"error":"loading","estimated_time":1}`,
		`{"detail":"Not Found"}`,
		`<html><title>502</title></html>`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		e, ok := ParseError(body)
		if !ok {
			if e != (ErrorBody{}) {
				t.Fatalf("not ok but %+v", e)
			}
			return
		}
		if len(e.Message) > MaxMessage+len("…") || len(e.Detail) > MaxMessage+len("…") {
			t.Fatalf("message of %d bytes, detail of %d", len(e.Message), len(e.Detail))
		}
		if utf8.ValidString(string(body)) && !utf8.ValidString(e.Message) {
			t.Fatalf("cutting broke UTF-8: %q", e.Message)
		}
		if e.Status != 0 && (e.Status < 100 || e.Status > 599) {
			t.Fatalf("status %d", e.Status)
		}
		_ = Classify(0, e)
		_ = e.ProviderCode()
	})
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{"choices":[{"delta":{"content":"hi","tool_calls":[{"index":0}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
		`{"choices":[{"text":"a"}]}`,
		`{"error":{"message":"x","code":500}}`,
		`{"object":"error","message":"x"}`,
		`[DONE]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Decode(data)
		if err != nil {
			return
		}
		if r.Text != "" && !r.Content {
			t.Fatal("text without content")
		}
		if r.Error != nil && (r.Text != "" || r.Usage != nil) {
			t.Fatal("an error result carries content")
		}
		d := &StreamDecoder{Provider: "p"}
		_, _, _ = d.Decode(data)
		_ = d.Complete()
	})
}
