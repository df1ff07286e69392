package openaiwire

import "testing"

// benchChunks are streamed chunks as vLLM and OpenAI send them.
var benchChunks = []struct{ name, body string }{
	{"content", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1730000000,"model":"m","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}]}`},
	{"escaped", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1730000000,"model":"m","choices":[{"index":0,"delta":{"content":"caf\u00e9\n\"ok\""},"logprobs":null,"finish_reason":null}]}`},
	{"reasoning", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1730000000,"model":"m","choices":[{"index":0,"delta":{"reasoning_content":"Let me think","content":null},"logprobs":null,"finish_reason":null}]}`},
	{"tool_call", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1730000000,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]},"logprobs":null,"finish_reason":null}]}`},
	{"finish", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1730000000,"model":"m","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop","stop_reason":null}]}`},
	{"usage", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1730000000,"model":"m","choices":[],"usage":{"prompt_tokens":12,"total_tokens":140,"completion_tokens":128}}`},
}

// BenchmarkStreamDecoder measures one chunk's decode per op, through the
// StreamDecoder that the adapters use.
func BenchmarkStreamDecoder(b *testing.B) {
	for _, c := range benchChunks {
		b.Run(c.name, func(b *testing.B) {
			d := &StreamDecoder{Provider: "p"}
			frame := []byte(c.body)
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := d.Decode(frame); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
