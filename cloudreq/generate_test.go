package cloudreq_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

func msgs(m ...cloudreq.Message) []cloudreq.Message { return m }

func TestCheckGenerate(t *testing.T) {
	user := cloudreq.Message{Role: "user", Content: "hi"}
	ok := func() *cloudreq.GenerateInput { return &cloudreq.GenerateInput{Messages: msgs(user)} }
	bad := map[string]struct {
		f    func(g *cloudreq.GenerateInput)
		want string
	}{
		"role":          {func(g *cloudreq.GenerateInput) { g.Messages[0].Role = "robot" }, `Role "robot"`},
		"content+parts": {func(g *cloudreq.GenerateInput) { g.Messages[0].Parts = []cloudreq.Part{{Type: "text", Text: "x"}} }, "both Content and Parts"},
		"image no data": {func(g *cloudreq.GenerateInput) {
			g.Messages[0] = cloudreq.Message{Role: "user", Parts: []cloudreq.Part{{Type: "image"}}}
		}, "ImageURL or Data"},
		"image no type": {func(g *cloudreq.GenerateInput) {
			g.Messages[0] = cloudreq.Message{Role: "user", Parts: []cloudreq.Part{{Type: "image", Data: []byte{1}}}}
		}, "MediaType"},
		"image url": {func(g *cloudreq.GenerateInput) {
			g.Messages[0] = cloudreq.Message{Role: "user", Parts: []cloudreq.Part{{Type: "image", ImageURL: "ftp://x"}}}
		}, "ImageURL"},
		"system image": {func(g *cloudreq.GenerateInput) {
			g.Messages[0] = cloudreq.Message{Role: "system", Parts: []cloudreq.Part{{Type: "image", ImageURL: "https://x"}}}
		}, "user messages"},
		"tool name":  {func(g *cloudreq.GenerateInput) { g.Tools = []cloudreq.Tool{{Name: "a b"}} }, "Tools[0].Name"},
		"tool twice": {func(g *cloudreq.GenerateInput) { g.Tools = []cloudreq.Tool{{Name: "a"}, {Name: "a"}} }, "twice"},
		"tool params": {func(g *cloudreq.GenerateInput) {
			g.Tools = []cloudreq.Tool{{Name: "a", Parameters: json.RawMessage(`[1]`)}}
		}, "JSON Schema object"},
		"choice unknown": {func(g *cloudreq.GenerateInput) {
			g.Tools = []cloudreq.Tool{{Name: "a"}}
			g.ToolChoice = &cloudreq.ToolChoice{Mode: "function", Name: "b"}
		}, `names "b"`},
		"choice no tool": {func(g *cloudreq.GenerateInput) { g.ToolChoice = &cloudreq.ToolChoice{Mode: "required"} }, "needs Generate.Tools"},
		"choice mode": {func(g *cloudreq.GenerateInput) {
			g.Tools = []cloudreq.Tool{{Name: "a"}}
			g.ToolChoice = &cloudreq.ToolChoice{Mode: "any"}
		}, "Mode"},
		"schema missing": {func(g *cloudreq.GenerateInput) { g.ResponseFormat = &cloudreq.ResponseFormat{Type: "json_schema"} }, "needs Schema"},
		"format type":    {func(g *cloudreq.GenerateInput) { g.ResponseFormat = &cloudreq.ResponseFormat{Type: "xml"} }, "Type"},
		"top logprobs":   {func(g *cloudreq.GenerateInput) { g.TopLogprobs = 3 }, "needs Generate.Logprobs"},
		"token limit":    {func(g *cloudreq.GenerateInput) { g.TokenLimit = "max" }, "TokenLimit"},
		"effort":         {func(g *cloudreq.GenerateInput) { g.Reasoning = &cloudreq.Reasoning{Effort: "max"} }, "Effort"},
		"tool result": {func(g *cloudreq.GenerateInput) {
			g.Messages = append(g.Messages, cloudreq.Message{Role: "tool", Content: "1"})
		}, "ToolCallID"},
		"call args": {func(g *cloudreq.GenerateInput) {
			g.Messages = append(g.Messages, cloudreq.Message{Role: "assistant", ToolCalls: []cloudreq.ToolCall{{ID: "1", Name: "f", Arguments: "[]"}}})
		}, "Arguments"},
		"user calls": {func(g *cloudreq.GenerateInput) { g.Messages[0].ToolCalls = []cloudreq.ToolCall{{ID: "1", Name: "f"}} }, "only assistant"},
		"extra":      {func(g *cloudreq.GenerateInput) { g.Extra = map[string]any{"x": make(chan int)} }, "not JSON"},
		"n":          {func(g *cloudreq.GenerateInput) { g.N = -1 }, "N"},
	}
	for name, c := range bad {
		g := ok()
		c.f(g)
		err := cloudreq.CheckGenerate(g)
		if assert.Error(t, err, name) {
			assert.Contains(t, err.Error(), c.want, name)
		}
	}
	g := ok()
	g.Messages = append(g.Messages,
		cloudreq.Message{Role: "user", Parts: []cloudreq.Part{{Type: "text", Text: "see"}, {Type: "image", Data: []byte{1}, MediaType: "image/png"}, {Type: "image", ImageURL: "data:image/png;base64,AQ=="}}},
		cloudreq.Message{Role: "assistant", ToolCalls: []cloudreq.ToolCall{{ID: "c1", Name: "f", Arguments: `{"a":1}`}}},
		cloudreq.Message{Role: "tool", ToolCallID: "c1", Content: "ok"})
	g.Tools = []cloudreq.Tool{{Name: "f", Parameters: json.RawMessage(`{"type":"object"}`)}}
	g.ToolChoice = &cloudreq.ToolChoice{Mode: "function", Name: "f"}
	g.ResponseFormat = &cloudreq.ResponseFormat{Type: "json_schema", Schema: json.RawMessage(`{"type":"object"}`)}
	g.Logprobs, g.TopLogprobs = true, 5
	g.Reasoning = &cloudreq.Reasoning{Effort: "low"}
	require.NoError(t, cloudreq.CheckGenerate(g))
	assert.True(t, g.HasImages())
	assert.True(t, g.HasToolTurns())
	assert.Equal(t, "see", g.Messages[1].Text())
}

func TestMergeExtra(t *testing.T) {
	b, err := cloudreq.MergeExtra([]byte(`{"a":1}`), map[string]any{"b": []int{2}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"a":1,"b":[2]}`, string(b))
	_, err = cloudreq.MergeExtra([]byte(`{"a":1}`), map[string]any{"a": 2})
	assert.ErrorContains(t, err, "clashes")
	b, err = cloudreq.MergeExtra([]byte(`{"a":1}`), nil)
	require.NoError(t, err)
	assert.Equal(t, `{"a":1}`, string(b))
}

// TestToolCallAssembler: fragments assemble into calls; a call completes
// when the next one starts, the rest at Flush, each once.
func TestToolCallAssembler(t *testing.T) {
	var a cloudreq.ToolCallAssembler
	assert.Empty(t, a.Add([]cloudreq.ToolCall{{Index: 0, ID: "c0", Name: "f", Arguments: `{"x"`}}))
	assert.Empty(t, a.Add([]cloudreq.ToolCall{{Index: 0, Arguments: `:1}`}}))
	done := a.Add([]cloudreq.ToolCall{{Index: 1, ID: "c1", Name: "g"}})
	assert.Equal(t, []cloudreq.ToolCall{{Index: 0, ID: "c0", Name: "f", Arguments: `{"x":1}`}}, done)
	assert.Equal(t, []cloudreq.ToolCall{{Index: 1, ID: "c1", Name: "g", Arguments: "{}"}}, a.Flush())
	assert.Empty(t, a.Flush(), "a call completes once")
	assert.Len(t, a.Calls(), 2)
}

// FuzzToolCallAssembly splits known calls into fragments at the cut
// points the input gives and checks that they assemble back, each call
// completed exactly once; then feeds the input as raw fragments, which
// must never panic nor complete a call twice.
func FuzzToolCallAssembly(f *testing.F) {
	f.Add([]byte{3, 1, 4, 1, 5}, `{"city":"Oslo","days":3}`)
	f.Add([]byte{}, `{}`)
	f.Add([]byte{0, 0, 255, 7}, `{"a":"\u00e9"}`)
	f.Fuzz(func(t *testing.T, cuts []byte, args string) {
		calls := []cloudreq.ToolCall{
			{Index: 0, ID: "call_0", Name: "weather", Arguments: args},
			{Index: 1, ID: "call_1", Name: "time", Arguments: strings.Repeat(args, 2)},
		}
		var a cloudreq.ToolCallAssembler
		var completed []cloudreq.ToolCall
		k := 0
		for _, c := range calls {
			rest := c.Arguments
			first := true
			for first || rest != "" {
				n := len(rest)
				if k < len(cuts) {
					n = min(int(cuts[k]), len(rest))
					k++
				}
				fr := cloudreq.ToolCall{Index: c.Index, Arguments: rest[:n]}
				if first {
					fr.ID, fr.Name = c.ID, c.Name
					first = false
				}
				rest = rest[n:]
				completed = append(completed, a.Add([]cloudreq.ToolCall{fr})...)
				if n == 0 && rest != "" {
					fr = cloudreq.ToolCall{Index: c.Index, Arguments: rest}
					rest = ""
					completed = append(completed, a.Add([]cloudreq.ToolCall{fr})...)
				}
			}
		}
		completed = append(completed, a.Flush()...)
		want := calls
		for i := range want {
			if want[i].Arguments == "" {
				want[i].Arguments = "{}"
			}
		}
		if len(completed) != len(want) {
			t.Fatalf("completed %d calls, want %d: %+v", len(completed), len(want), completed)
		}
		for i := range want {
			if completed[i] != want[i] {
				t.Fatalf("call %d: got %+v, want %+v", i, completed[i], want[i])
			}
		}

		// Arbitrary fragments: indexes from the cuts, in any order.
		var b cloudreq.ToolCallAssembler
		seen := map[int]bool{}
		for i, c := range cuts {
			idx := int(c%5) - 1
			for _, d := range b.Add([]cloudreq.ToolCall{{Index: idx, Arguments: args[:min(i, len(args))]}}) {
				if seen[d.Index] {
					t.Fatalf("call %d completed twice", d.Index)
				}
				seen[d.Index] = true
			}
		}
		for _, d := range b.Flush() {
			if seen[d.Index] {
				t.Fatalf("call %d completed twice", d.Index)
			}
			seen[d.Index] = true
		}
		if len(seen) != len(b.Calls()) {
			t.Fatalf("%d calls, %d completed", len(b.Calls()), len(seen))
		}
	})
}
