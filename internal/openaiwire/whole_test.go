package openaiwire

import (
	"bytes"
	"reflect"
	"testing"
)

// decodeWithExtras is Decode as it was before whole answers could skip
// extras: every whole answer the fast path reads is read by extras too.
func decodeWithExtras(data []byte) (Result, error) {
	d := decoder{whole: true}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return Result{}, ErrNotJSON
	}
	if bytes.Contains(data, errorKey) || !bytes.Contains(data, choicesKey) {
		if eb, ok := errorObject(data); ok {
			return Result{Error: &eb}, nil
		}
	}
	r, _, ok := d.fast(data)
	if !ok {
		var err error
		if r, err = d.slow(data); err != nil {
			return r, err
		}
	}
	extras(data, &r, !ok, true)
	return r, nil
}

// wholeSeeds are whole answers: one choice with nothing for extras (the
// usual answer, which skips it), and answers with what extras reads.
var wholeSeeds = []string{
	loopAnswer,
	`{"choices":[{"index":0,"message":{"role":"assistant","content":"a"},"finish_reason":"stop"},{"index":1,"message":{"content":"b"}}]}`,
	`{"choices":[null,{"text":"b"}]}`,
	`{"choices":[{"text":"a","index":7}]}`,
	`{"choices":[{"message":{"content":"a","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"}}]}}]}`,
	`{"choices":[{"message":{"content":"a","tool_calls":[]}}]}`,
	`{"choices":[{"message":{"content":"a"},"logprobs":{"content":[{"token":"a","logprob":-0.1}]}}]}`,
	`{"choices":[{"message":{"content":"a"},"logprobs":null}]}`,
	`{"choices":[{"message":{"content":"a","reasoning":{"text":"r"}}}]}`,
	`{"choices":[{"message":{"content":"a","reasoning_content":"r"}}],"usage":{"completion_tokens_details":{"reasoning_tokens":3}}}`,
	`{"choices":[{"message":{"content":"a"}}],"usage":{"prompt_tokens":1,"completion_tokens":2,"completion_tokens_details":null}}`,
	`{"choices":[{"message":{"content":"a"}}],"Choices":[{"text":"b"}]}`,
	`{"choices":[{"message":{"content":"a","Tool_calls":[{"id":"c"}]}}]}`,
	`{"choices":[{"message":{"content":"a"},"index":"x"}]}`,
	`{"choices":[]}`,
}

// loopAnswer is scripts/loopserver's answer.
const loopAnswer = `{"id":"cmpl-loop","object":"chat.completion","created":0,"model":"m",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`

// FuzzWholeDecodeMatchesExtras holds Decode of a whole answer to
// decodeWithExtras in every field, extras' included: skipping extras
// changes nothing.
func FuzzWholeDecodeMatchesExtras(f *testing.F) {
	for _, s := range wholeSeeds {
		f.Add([]byte(s))
	}
	for _, s := range differentialSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, w := range fuzzWrappers {
			data := append(append([]byte(w[0]), in...), w[1]...)
			want, wantErr := decodeWithExtras(data)
			got, gotErr := Decode(data)
			if (gotErr == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
				t.Fatalf("body %q:\nresult %+v, %v\nwith extras %+v, %v", data, got, gotErr, want, wantErr)
			}
		}
	})
}

// TestWholeAnswerDecodesOnce: the usual whole answer (one choice, no tool
// calls, logprobs or usage details) is read by the fast path alone, in
// few allocations (the text's buffer and string, the finish reason, the
// usage, the decoder); the second decode by encoding/json took 20 more.
func TestWholeAnswerDecodesOnce(t *testing.T) {
	data := []byte(loopAnswer)
	r, err := Decode(data)
	if err != nil || r.Text != "ok" || r.FinishReason != "stop" || r.Usage == nil || r.Usage.OutputTokens != 1 {
		t.Fatalf("Decode = %+v, %v", r, err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = Decode(data) }); n > 5 {
		t.Fatalf("%v allocations per whole answer, want at most 5", n)
	}
}
