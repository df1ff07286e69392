package openaiwire

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// deep nests depth arrays in an object member: depth+1 levels in all.
func deep(depth int) string {
	return `{"choices":[{"text":"a"}],"x":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`
}

// realisticBodies are chunks and bodies as servers send them.
var realisticBodies = []string{
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1730000000,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1730000000,"model":"m","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" world"},"logprobs":null,"finish_reason":"stop"}]}`,
	`{"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}}`,
	`{"id":"c","object":"chat.completion.chunk","usage":{"prompt_tokens":1,"completion_tokens":2}}`,
	`{"choices":[{"delta":{"reasoning_content":"hm","content":null}}]}`,
	`{"choices":[{"delta":{"reasoning":"hm"}}]}`,
	`{"choices":[{"delta":{"reasoning":{"text":"hm"}}}]}`,
	`{"choices":[{"delta":{"reasoning":{ }}}]}`,
	`{"choices":[{"delta":{"reasoning":[]}}]}`,
	`{"choices":[{"delta":{"reasoning":0}}]}`,
	`{"choices":[{"delta":{"role":"assistant","reasoning":null,"reasoning_content":""}}]}`,
	`{"choices":[{"delta":{"reasoning":""}}]}`,
	`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]}}]}`,
	`{"choices":[{"delta":{"tool_calls":[ ]}}]}`,
	"{\"choices\":[{\"delta\":{\"tool_calls\":[\n\t]}}]}",
	`{"choices":[{"delta":{"tool_calls":null}}]}`,
	`{"choices":[{"delta":{"tool_calls":"[1]"}}]}`,
	`{"choices":[{"delta":{"tool_calls":{}}}]}`,
	`{"choices":[{"delta":{},"finish_reason":"length"}]}`,
	`{"choices":[{"message":{"role":"assistant","content":"yo"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":9,"total_tokens":12}}`,
	`{"choices":[{"text":"a"},{"text":"b","finish_reason":"stop"}]}`,
	`{"choices":[{"index":1,"delta":{"content":"B"},"finish_reason":"length"},{"index":0,"delta":{"content":"A"},"finish_reason":"stop"}]}`,
	`{"choices":[{"text":"t","delta":{"content":"d"},"message":{"content":"m"}}]}`,
	`{"choices":[{"finish_reason":""},{"finish_reason":"stop"},{"finish_reason":"length"}]}`,
	`{"choices":[{"delta":{"content":"x"},"finish_reason":"error"}]}`,
	`{"error":null,"choices":[{"delta":{"content":"x"}}]}`,
}

// differentialSeeds are bodies on which Decode must agree with refDecode:
// realistic ones, and the corners where a hand-written reading could part
// from encoding/json's.
var differentialSeeds = append(realisticBodies[:len(realisticBodies):len(realisticBodies)],
	// Null against missing.
	`{"choices":null}`,
	`{"choices":[null]}`,
	`{"choices":[null,{"text":"a"},null]}`,
	`{"choices":[{"delta":null,"message":null,"text":null,"finish_reason":null}]}`,
	`{"choices":[],"usage":null}`,
	`{"choices":[],"usage":{}}`,
	`{"choices":[],"usage":{"prompt_tokens":null,"completion_tokens":null}}`,
	`{}`,
	// Members of other types.
	`{"choices":[{"delta":{"content":5}}]}`,
	`{"choices":[{"delta":{"content":true}}]}`,
	`{"choices":[{"delta":{"content":{"text":"x"}}}]}`,
	`{"choices":[{"delta":{"content":["x"]}}]}`,
	`{"choices":[{"delta":{"reasoning_content":1}}]}`,
	`{"choices":[{"delta":"x"}]}`,
	`{"choices":[{"message":[]}]}`,
	`{"choices":[{"text":1}]}`,
	`{"choices":[{"finish_reason":0}]}`,
	`{"choices":[1]}`,
	`{"choices":["x"]}`,
	`{"choices":{}}`,
	`{"choices":"x"}`,
	`{"choices":[],"usage":[]}`,
	`{"choices":[],"usage":3}`,
	// Token counts.
	`{"choices":[],"usage":{"prompt_tokens":-5,"completion_tokens":-0}}`,
	`{"choices":[],"usage":{"prompt_tokens":1.0,"completion_tokens":2}}`,
	`{"choices":[],"usage":{"prompt_tokens":1e3,"completion_tokens":2}}`,
	`{"choices":[],"usage":{"prompt_tokens":1E2}}`,
	`{"choices":[],"usage":{"prompt_tokens":0.5}}`,
	`{"choices":[],"usage":{"prompt_tokens":9223372036854775807,"completion_tokens":-9223372036854775808}}`,
	`{"choices":[],"usage":{"prompt_tokens":9223372036854775808}}`,
	`{"choices":[],"usage":{"prompt_tokens":1e400}}`,
	`{"choices":[],"usage":{"prompt_tokens":"12"}}`,
	`{"choices":[],"usage":{"prompt_tokens":true}}`,
	`{"choices":[],"usage":{"completion_tokens":[1]}}`,
	`{"choices":[],"usage":{"prompt_tokens":12,"total_tokens":1.5,"details":{"x":1e999}}}`,
	// Escapes and UTF-8.
	`{"choices":[{"delta":{"content":"caf\u00e9 \u00E9"}}]}`,
	`{"choices":[{"delta":{"content":"a\nb\tc\rd\be\ff\/g\\h\"i"}}]}`,
	`{"choices":[{"delta":{"content":"\ud83d\ude00"}}]}`,
	`{"choices":[{"delta":{"content":"\ud83d"}}]}`,
	`{"choices":[{"delta":{"content":"\ud83dx"}}]}`,
	`{"choices":[{"delta":{"content":"\udc00\ud83d"}}]}`,
	`{"choices":[{"delta":{"content":"\ud83d\u0041"}}]}`,
	`{"choices":[{"delta":{"content":"\ud83d\ud83d\ude00"}}]}`,
	`{"choices":[{"delta":{"content":"\ud83d\n"}}]}`,
	`{"choices":[{"delta":{"content":"\u0000\u001f\uffff\ufffd"}}]}`,
	`{"choices":[{"delta":{"content":"é😀"}}]}`,
	"{\"choices\":[{\"delta\":{\"content\":\"\xff\xfe a \xed\xa0\x80 \xf0\x9f\x98\"}}]}",
	"{\"choices\":[{\"delta\":{\"content\":\"\xc3\"}}]}",
	"{\"choices\":[{\"delta\":{\"content\":\"\\u00e9\xe9\"}}]}",
	`{"choices":[{"finish_reason":"st\u006fp"}]}`,
	"{\"choices\":[{\"finish_reason\":\"\xff\"}]}",
	`{"choices":[{"delta":{"content":"\\"}}]}`,
	`{"choices":[{"delta":{"content":"\\\""}}]}`,
	`{"choices":[{"delta":{"content":"\"\\\\"}}]}`,
	// Duplicate members.
	`{"choices":[{"text":"a"}],"choices":[{"finish_reason":"stop"}]}`,
	`{"choices":[{"text":"a"},{"text":"b"}],"choices":[{"finish_reason":"stop"}]}`,
	`{"choices":[{"text":"a"}],"choices":null}`,
	`{"choices":null,"choices":[{"text":"a"}]}`,
	`{"choices":[{"delta":{"content":"a","content":null}}]}`,
	`{"choices":[{"delta":{"content":"a","content":"b"}}]}`,
	`{"choices":[{"delta":{"reasoning":"a","reasoning":null}}]}`,
	`{"choices":[{"delta":{"content":"a"},"delta":{"reasoning":"x"}}]}`,
	`{"choices":[],"usage":{"prompt_tokens":1},"usage":{"completion_tokens":2}}`,
	`{"choices":[],"usage":{"prompt_tokens":1},"usage":null}`,
	`{"choices":[],"usage":null,"usage":{}}`,
	`{"choices":[],"usage":{"prompt_tokens":1,"prompt_tokens":null}}`,
	`{"choices":[{"text":"a"}],"x":1,"x":2}`,
	// Keys encoding/json matches case-insensitively or after unescaping.
	`{"Choices":[{"Delta":{"Content":"a"},"FINISH_REASON":"stop"}],"USAGE":{"Prompt_Tokens":1}}`,
	`{"choices":[{"delta":{"CONTENT":"a"}}]}`,
	`{"choices":[{"text":"a"}],"Choices":[{"text":"b"}]}`,
	`{"choiceſ":[{"text":"a"}]}`,
	`{"choices":[{"text":"a"}],"choiceſ":null}`,
	`{"ch\u006fices":[{"text":"a"}]}`,
	`{"choices":[{"te\u0078t":"a"}]}`,
	`{"choices":[],"usage":{"prompt_to\u212aens":7}}`,
	"{\"choices\":[],\"usage\":{\"prompt_to\u212aens\":7}}",
	"{\"choices\":[{\"fınish_reason\":\"stop\"}]}",
	"{\"choices\":[{\"text\":\"a\"}],\"\xff\":1}",
	`{"choices":[{"text":"a","textx":"b","tex":"c"}]}`,
	// Invalid JSON.
	`{"choices":`,
	`{"choices":[}`,
	`{"choices":[{"text":"a"},]}`,
	`{"choices":[],}`,
	`{"choices":[]} x`,
	`{"choices":[]}}`,
	`{"choices":[],"n":01}`,
	`{"choices":[],"n":-}`,
	`{"choices":[],"n":1.}`,
	`{"choices":[],"n":.5}`,
	`{"choices":[],"n":+1}`,
	`{"choices":[],"n":1e}`,
	`{"choices":[],"n":NaN}`,
	`{"choices":[],"n":nul}`,
	`{"choices":[],"n":True}`,
	`{"choices":[{"text":"a\x"}]}`,
	`{"choices":[{"text":"\u12"}]}`,
	`{"choices":[{"text":"\u12G4"}]}`,
	`{"choices":[{"text":'a'}]}`,
	"{\"choices\":[{\"text\":\"a\tb\"}]}",
	"{\"choices\":[{\"text\":\"a\x00b\"}]}",
	"{\"choices\":[]\x00}",
	"{\"choices\":[]\v}",
	"{\"choices\"\f:[]}",
	`{"choices":[{"delta":{"content":5}}],"x":}`,
	`{choices:[]}`,
	`{"choices":[] "usage":null}`,
	`{"choices" []}`,
	`{"error":`,
	`[DONE]`,
	``,
	` `,
	`[1]`,
	`"x"`,
	`{`,
	// Whitespace.
	" \t\r\n{\"choices\":[{\"text\":\"a\"}]}\n\n",
	"\v{\"choices\":[{\"text\":\"a\"}]}\u00a0",
	"{ \"choices\" : [ { \"delta\" : { \"content\" : \"a\" } , \"finish_reason\" : \"stop\" } ] , \"usage\" : { \"prompt_tokens\" : 1 } }",
	// Error objects.
	`{"error":{"message":"boom","type":"InternalServerError","code":500}}`,
	`{"error":"Model is currently loading","estimated_time":20.0}`,
	`{"object":"error","message":"m","type":"BadRequestError","param":null,"code":400}`,
	`{"status":422,"code":"parameter_not_supported","detail":{"p":"x"},"message":"m"}`,
	`{"error":{"message":"boom","code":500},"status":"failed","choices":[]}`,
	`{"choices":[{"delta":{"content":"the \"error\" is"}}]}`,
	`{"choices":[{"delta":{"content":"error"}}]}`,
)

// largeBodies are bodies on which Decode must agree with refDecode, too
// large to seed a fuzz test with (minimizing the inputs they beget takes up
// the fuzzing time): nesting at and past encoding/json's limit, long texts
// and many choices.
var largeBodies = []string{
	deep(jsonMaxDepth - 2),
	deep(jsonMaxDepth - 1),
	deep(jsonMaxDepth),
	`{"choices":[{"text":"a"}],"x":[` + strings.Repeat(`[],`, jsonMaxDepth) + `[]]}`,
	`{"choices":[{"text":"` + strings.Repeat("[", 3*jsonMaxDepth) + `"}]}`,
	`{"choices":[{"text":"a"}],"x":` + strings.Repeat("[", jsonMaxDepth+5),
	`{"choices":[` + strings.Repeat(`{"text":"ab"},`, 5000) + `{"text":"\u00e9"}]}`,
	`{"choices":[{"delta":{"content":"` + strings.Repeat(`x\n`, 30000) + `"}}]}`,
	`{"choices":[{"delta":{"content":"` + strings.Repeat("é", 40000) + `"}}]}`,
}

// TestLargeBodiesMatchReference holds Decode to refDecode on largeBodies.
func TestLargeBodiesMatchReference(t *testing.T) {
	for _, b := range largeBodies {
		data := []byte(b)
		want, wantErr := refDecode(data)
		got, gotErr := Decode(data)
		sameDecode(t, data, got, want, gotErr, wantErr)
		var d decoder
		got, gotErr = d.decode(data)
		sameDecode(t, data, got, want, gotErr, wantErr)
	}
}

// sameDecode fails t unless got and want are the same outcome: equal
// results, and errors of the same type and text.
func sameDecode(t *testing.T, data []byte, got, want Result, gotErr, wantErr error) {
	t.Helper()
	if (gotErr == nil) != (wantErr == nil) ||
		gotErr != nil && fmt.Sprintf("%T %v", gotErr, gotErr) != fmt.Sprintf("%T %v", wantErr, wantErr) {
		t.Fatalf("body %q:\nerror    %T %v\nreference %T %v", data, gotErr, gotErr, wantErr, wantErr)
	}
	// The reference reads text, finish reason and usage counts; what it
	// does not read has tests of its own (extras_test.go).
	got.Reasoning, got.ToolCalls, got.Logprobs, got.Choices = "", nil, nil, nil
	if got.Usage != nil {
		u := *got.Usage
		u.ReasoningTokens = 0
		got.Usage = &u
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("body %q:\nresult    %s\nreference %s", data, show(got), show(want))
	}
}

func show(r Result) string {
	s := fmt.Sprintf("%+q content=%v finish=%q", r.Text, r.Content, r.FinishReason)
	if r.Usage != nil {
		s += fmt.Sprintf(" usage=%+v", *r.Usage)
	}
	if r.Error != nil {
		s += fmt.Sprintf(" error=%+v", *r.Error)
	}
	return s
}

// warmChunk leaves state in a decoder: choices, usage and text buffered.
var warmChunk = []byte(`{"choices":[{"delta":{"content":"warm","tool_calls":[1]},"finish_reason":"stop"},{"text":"up"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`)

// FuzzDecodeMatchesReference holds Decode to refDecode, the encoding/json
// decoding it replaced: the same result, or an error of the same type and
// text, for any body; also through a decoder reused across bodies, as a
// StreamDecoder reuses it.
func FuzzDecodeMatchesReference(f *testing.F) {
	for _, s := range differentialSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		// in as the body, and set in bodies that are mostly valid, to
		// reach the fast path more often than random bytes do.
		for _, w := range fuzzWrappers {
			data := append(append([]byte(w[0]), in...), w[1]...)
			want, wantErr := refDecode(data)
			got, gotErr := Decode(data)
			sameDecode(t, data, got, want, gotErr, wantErr)

			var d decoder
			for range 2 {
				if _, err := d.decode(warmChunk); err != nil {
					t.Fatal(err)
				}
				got, gotErr = d.decode(data)
				sameDecode(t, data, got, want, gotErr, wantErr)
			}
		}
	})
}

// fuzzWrappers are the prefixes and suffixes FuzzDecodeMatchesReference
// sets its input between.
var fuzzWrappers = [][2]string{
	{"", ""},
	{`{"choices":[{"delta":{"content":"`, `"},"finish_reason":null}]}`},
	{`{"choices":[`, `]}`},
	{`{"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":`, `}}`},
}

// FuzzUnquoteMatchesEncodingJSON holds unquote to encoding/json's decoding
// of a string, escapes, surrogates and invalid UTF-8 included.
func FuzzUnquoteMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`plain`, `caf\u00e9`, `\ud83d\ude00`, `\ud83d`, `\ud83dx`, `\udc00\ud83d`, `\ud83d\u0041`,
		`\ud83d\ud83d\ude00`, `\ud83d\n`, `\u0000`, `\"\\\/\b\f\n\r\t`, "\xff\xed\xa0\x80\xf0\x9f\x98", "é😀",
		`\uD83D\uDE00`, `\uDBFF\uDFFF`, `\uD800\uDC00`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		quoted := []byte(`"` + s + `"`)
		var want string
		if json.Unmarshal(quoted, &want) != nil {
			return
		}
		if got := unquote([]byte(s)); got != want {
			t.Fatalf("unquote(%q) = %q, encoding/json %q", s, got, want)
		}
		if got := string(appendUnquoted([]byte("x"), []byte(s))); got != "x"+want {
			t.Fatalf("appendUnquoted(%q) = %q, encoding/json %q", s, got, "x"+want)
		}
		if !utf8.ValidString(want) {
			t.Fatalf("encoding/json gave invalid UTF-8 for %q", s)
		}
	})
}

// TestFastTakesRealisticChunks: the chunks servers send take the fast
// path, not encoding/json.
func TestFastTakesRealisticChunks(t *testing.T) {
	bodies := realisticBodies
	for _, c := range benchChunks {
		bodies = append(bodies, c.body)
	}
	for _, b := range bodies {
		var d decoder
		if _, _, ok := d.fast([]byte(b)); !ok {
			t.Errorf("declined: %s", b)
		}
	}
}

// TestStreamChunkAllocations: a content chunk costs one allocation, its
// text.
func TestStreamChunkAllocations(t *testing.T) {
	d := &StreamDecoder{Provider: "p"}
	frame := []byte(benchChunks[0].body)
	n := testing.AllocsPerRun(100, func() {
		if _, _, err := d.Decode(frame); err != nil {
			t.Fatal(err)
		}
	})
	if n > 1 {
		t.Errorf("%v allocations per content chunk, want 1", n)
	}
}
