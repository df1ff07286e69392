package openaiwire

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

// checkAppendChat fails t where appendChat writes r otherwise than
// json.Marshal, and returns whether appendChat wrote it.
func checkAppendChat(t *testing.T, r ChatRequest) bool {
	t.Helper()
	got, ok := appendChat([]byte("prefix"), &r)
	if !ok {
		if string(got) != "prefix" {
			t.Fatalf("declined, having appended %q", got)
		}
		return false
	}
	want, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("wrote %q for a request json.Marshal refuses: %v", got, err)
	}
	if string(got) != "prefix"+string(want) {
		t.Fatalf("wrote\n%s\njson.Marshal wrote\n%s", got[len("prefix"):], want)
	}
	return true
}

func f64(v float64) *float64 { return &v }

// TestAppendChatAsJSON checks that appendChat writes the plain requests
// itself, as json.Marshal does, and declines the rest.
func TestAppendChatAsJSON(t *testing.T) {
	seed, yes := int64(-42), true
	text := Message{Role: "user", Content: "hello"}
	for _, tc := range []struct {
		name  string
		plain bool
		r     ChatRequest
	}{
		{"bench", true, ChatRequest{Model: "m", Messages: []Message{text}, MaxTokens: 1}},
		{"no-model", true, ChatRequest{Messages: []Message{text}}},
		{"nil-messages", true, ChatRequest{Model: "m"}},
		{"empty-messages", true, ChatRequest{Model: "m", Messages: []Message{}}},
		{"every-field", true, ChatRequest{Model: "gpt-4o", Messages: []Message{
			{Role: "system", Content: "be <brief> & \"exact\"\n\t\\ \u2028\u2029 \x00\x1f\x7f é 日本 \xff\xfe"},
			{Role: "assistant", Content: nil},
			{Role: "tool", Content: "42", ToolCallID: "call_1"},
		}, MaxTokens: 7, MaxCompletionTokens: 9, Temperature: f64(0), TopP: f64(0.95), TopK: 40,
			Stop: []string{"\n\n", "</s>"}, Seed: &seed, N: 3, PresencePenalty: f64(-1.5), FrequencyPenalty: f64(2),
			Logprobs: true, TopLogprobs: 5, ParallelToolCalls: &yes, ReasoningEffort: "low", Stream: true,
			StreamOptions: &StreamOptions{IncludeUsage: true}, IgnoreEOS: true}},
		{"stream-options-false", true, ChatRequest{Messages: []Message{text}, StreamOptions: &StreamOptions{}}},
		{"floats", true, ChatRequest{Messages: []Message{text}, Temperature: f64(1e-7), TopP: f64(1e21),
			PresencePenalty: f64(123456789.125), FrequencyPenalty: f64(-0.0000012)}},
		{"tiny-float", true, ChatRequest{Messages: []Message{text}, Temperature: f64(5e-324), TopP: f64(math.MaxFloat64)}},
		{"empty-stop", true, ChatRequest{Messages: []Message{text}, Stop: []string{}}},

		{"parts", false, ChatRequest{Messages: []Message{{Role: "user", Content: []ContentPart{{Type: "text", Text: "x"}}}}}},
		{"tool-calls", false, ChatRequest{Messages: []Message{{Role: "assistant", ToolCalls: []WireToolCall{{ID: "1"}}}}}},
		{"tools", false, ChatRequest{Messages: []Message{text}, Tools: []WireTool{{Type: "function"}}}},
		{"tool-choice", false, ChatRequest{Messages: []Message{text}, ToolChoice: "auto"}},
		{"response-format", false, ChatRequest{Messages: []Message{text}, ResponseFormat: &WireResponseFormat{Type: "json_object"}}},
		{"nan", false, ChatRequest{Messages: []Message{text}, Temperature: f64(math.NaN())}},
		{"inf", false, ChatRequest{Messages: []Message{text}, TopP: f64(math.Inf(-1))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkAppendChat(t, tc.r); got != tc.plain {
				t.Fatalf("appendChat wrote it: %v, want %v", got, tc.plain)
			}
		})
	}
}

// TestEncodeChatExtra checks that EncodeChat still merges Extra into what
// appendChat writes.
func TestEncodeChatExtra(t *testing.T) {
	g := &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "hi"}}, MaxTokens: 2,
		Extra: map[string]any{"top_a": 0.5}}
	b, err := EncodeChat(g, EncodeOptions{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if got["top_a"] != 0.5 || got["model"] != "m" || got["max_tokens"] != 2.0 {
		t.Fatalf("EncodeChat wrote %s", b)
	}
}

// FuzzAppendChat checks that whatever appendChat writes, json.Marshal
// writes the same.
func FuzzAppendChat(f *testing.F) {
	f.Add("m", "user", "hello", "</s>", 1, 0.7, int64(1), true)
	f.Add("", "system", "a\u2028<b>&\"\\\x01\xff", "", 0, 1e-9, int64(-1), false)
	f.Add("model/é", "tool", "", "\n", -5, -2.5e22, int64(0), true)
	f.Fuzz(func(t *testing.T, model, role, content, stop string, n int, temp float64, seed int64, flag bool) {
		r := ChatRequest{Model: model, Messages: []Message{{Role: role, Content: content, ToolCallID: stop}},
			MaxTokens: n, Temperature: &temp, TopK: n / 2, Stream: flag, IgnoreEOS: !flag, ReasoningEffort: stop}
		if stop != "" {
			r.Stop = []string{stop, content}
		}
		if flag {
			r.Seed, r.TopP, r.Messages = &seed, &temp, append(r.Messages, Message{Role: content})
		}
		checkAppendChat(t, r)
	})
}

// BenchmarkEncodeChat is the load generator's request body (one short
// user message, one output token).
func BenchmarkEncodeChat(b *testing.B) {
	g := &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "hello"}}, MaxTokens: 1}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EncodeChat(g, EncodeOptions{Model: "m"}); err != nil {
			b.Fatal(err)
		}
	}
}
