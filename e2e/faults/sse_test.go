package faults

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sseAnswer streams pieces of an SSE body, each in its own write and
// flush (so that the client meets them in separate reads): as the body
// itself for SSE providers, as one eventstream PayloadPart each for
// SageMaker, whose model containers write SSE inside the parts.
func sseAnswer(b backend, pieces []string) answer {
	return answer{raw: func(w http.ResponseWriter, _ *http.Request) {
		if b.name == "sagemaker" {
			sagemakerWire{}.streamHead(w)
		} else {
			openAIWire{}.streamHead(w)
		}
		flush(w)
		for _, p := range pieces {
			var err error
			if b.name == "sagemaker" {
				err = payloadPart(w, []byte(p))
			} else {
				_, err = w.Write([]byte(p))
			}
			if err != nil {
				return
			}
			flush(w)
			time.Sleep(2 * time.Millisecond) // a separate read on the client
		}
	}}
}

// chunkJSON is the OpenAI chat chunk with content text.
func chunkJSON(text string) string {
	return `{"choices":[{"index":0,"delta":{"content":"` + text + `"}}]}`
}

const finishJSON = `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`

// sseBody is a complete two-token stream with line ending eol.
func sseBody(eol string) string {
	ev := func(d string) string { return "data: " + d + eol + eol }
	return ev(chunkJSON("tok0 ")) + ev(chunkJSON("tok1 ")) + ev(finishJSON) + ev("[DONE]")
}

// splitEvery cuts s into pieces of n bytes.
func splitEvery(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

// TestSSEEdgeCases: every provider that reads SSE (the OpenAI-compatible
// servers, Azure ML, PAI-EAS, and SageMaker's model containers inside
// eventstream parts) reads the same two tokens and finish reason from
// each legal spelling of the stream.
func TestSSEEdgeCases(t *testing.T) {
	crlf := sseBody("\r\n")
	i := strings.Index(crlf, "\r\n")
	long := strings.Repeat("x", 256<<10)
	cases := []struct {
		name   string
		pieces []string
		texts  []string
	}{
		{"lf", []string{sseBody("\n")}, nil},
		{"crlf", []string{crlf}, nil},
		{"cr", []string{sseBody("\r")}, nil},
		{"cr-every-byte-its-own-read", splitEvery(sseBody("\r"), 1), nil},
		{"crlf-split-across-reads", []string{crlf[:i+1], crlf[i+1:]}, nil},
		{"every-byte-its-own-read", splitEvery(sseBody("\r\n"), 7), nil},
		{"bom", []string{"\xEF\xBB\xBF" + sseBody("\n")}, nil},
		{"bom-split-across-reads", []string{"\xEF\xBB", "\xBF" + sseBody("\n")}, nil},
		{"comments", []string{": keep-alive\n\n" + strings.ReplaceAll(sseBody("\n"), "data: [DONE]", ": ping\ndata: [DONE]")}, nil},
		{"other-fields", []string{"retry: 1000\n" + strings.ReplaceAll(sseBody("\n"), "data: ", "id: 7\nevent: message\ndata: ")}, nil},
		{"missing-space-after-colon", []string{strings.ReplaceAll(sseBody("\n"), "data: ", "data:")}, nil},
		{"multi-line-data", []string{ // joined with "\n" into one JSON object
			"data: {\"choices\":[{\"index\":0,\ndata: \"delta\":{\"content\":\"tok0 \"}}]}\n\n" +
				"data: " + chunkJSON("tok1 ") + "\n\n" +
				"data: {\"choices\":[{\"index\":0,\"delta\":{},\ndata: \"finish_reason\":\"stop\"}]}\n\n" +
				"data: [DONE]\n\n"}, nil},
		{"very-long-line", []string{"data: " + chunkJSON(long) + "\n\n", "data: " + chunkJSON("tok1 ") + "\n\n", "data: " + finishJSON + "\n\ndata: [DONE]\n\n"},
			[]string{long, "tok1 "}},
	}
	for _, b := range backends() {
		if b.grpc {
			continue // Vertex's gRPC streams carry no SSE
		}
		for _, c := range cases {
			t.Run(b.name+"/"+c.name, func(t *testing.T) {
				r := newRig(t, b, []answer{sseAnswer(b, c.pieces)})
				texts, resp, err := r.stream(context.Background())
				require.NoError(t, err)
				want := c.texts
				if want == nil {
					want = []string{"tok0 ", "tok1 "}
				}
				assert.Equal(t, want, texts)
				require.NotNil(t, resp)
				assert.Equal(t, "stop", resp.FinishReason)
				assert.Equal(t, 1, r.rec.count())
			})
		}
	}
}
