package paieas

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/providers/providertest"
)

const (
	sseRole  = `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}` + "\n\n"
	sseHello = `data: {"choices":[{"index":0,"delta":{"content":"Hello"}}]}` + "\n\n"
	sseEnd   = `data: {"choices":[{"index":0,"delta":{"content":"!"},"finish_reason":"stop"}]}` + "\n\n"
	sseUsage = `data: {"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":2}}` + "\n\n"
	sseDone  = "data: [DONE]\n\n"
)

func TestStreamOpenAISSE(t *testing.T) {
	var accept string
	a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		accept = r.Header.Get("Accept")
		writeFlushed(w, "text/event-stream", sseRole, sseHello, sseEnd, sseUsage, sseDone)
	})
	out := stream(t, a, generateReq())
	require.NoError(t, out.Err)
	assert.Equal(t, "text/event-stream", accept)
	assert.Equal(t, "Hello!", out.Text())
	assert.Equal(t, 2, out.Content())
	assert.Equal(t, cloudreq.Usage{InputTokens: 2, OutputTokens: 2, Source: "server"}, out.Resp.Usage)
}

func TestStreamOpenAITruncatedAndMidStreamError(t *testing.T) {
	a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		writeFlushed(w, "text/event-stream", sseRole, sseHello)
	})
	out := stream(t, a, generateReq())
	assert.Equal(t, errcodes.StreamInterrupted, errcodes.Of(out.Err), "%v", out.Err)

	a, _ = server(t, func(w http.ResponseWriter, r *http.Request) {
		writeFlushed(w, "text/event-stream", sseHello, `data: {"error":{"message":"boom","type":"InternalServerError","code":500}}`+"\n\n", sseDone)
	})
	out = stream(t, a, generateReq())
	var e *errcodes.Error
	require.ErrorAs(t, out.Err, &e)
	assert.Equal(t, errcodes.StreamInterrupted, e.Code)
	assert.Equal(t, "alibaba", e.Provider)
	assert.Equal(t, "InternalServerError", e.ProviderCode)
	var api *APIError
	assert.ErrorAs(t, out.Err, &api)
}

func TestStreamLegacyNUL(t *testing.T) {
	tests := []struct {
		name    string
		mode    LegacyStream
		records []string
		want    []string
		err     errcodes.Code
	}{
		{"cumulative detected", LegacyAuto, []string{`{"response":"He"}`, `{"response":"Hello"}`, `{"response":"Hello!"}`}, []string{"He", "llo", "!"}, ""},
		{"delta detected", LegacyAuto, []string{`{"response":"He"}`, `{"response":"llo"}`, `{"response":"!"}`}, []string{"He", "llo", "!"}, ""},
		{"forced delta", LegacyDelta, []string{`{"response":"a"}`, `{"response":"ab"}`}, []string{"a", "ab"}, ""},
		{"forced cumulative", LegacyCumulative, []string{`{"response":"a"}`, `{"response":"ab"}`, `{"response":"abc"}`}, []string{"a", "b", "c"}, ""},
		{"history ignored", LegacyAuto, []string{`{"response":"x","history":[["q","x"]]}`}, []string{"x"}, ""},
		{"in-stream error", LegacyAuto, []string{`{"response":"a"}`, `{"error":"processor exception: generation failed"}`}, []string{"a"}, errcodes.StreamInterrupted},
		{"truncated record", LegacyAuto, []string{`{"response":"a"}`, `{"respo`}, []string{"a"}, errcodes.StreamInterrupted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var path string
			a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
				path = r.URL.Path
				parts := make([]string, len(tt.records))
				for i, rec := range tt.records {
					parts[i] = rec
					if i < len(tt.records)-1 || tt.err == "" {
						parts[i] += "\x00"
					}
				}
				writeFlushed(w, "application/json", parts...)
			}, func(o *Options) { o.LegacyStream = tt.mode })
			out := stream(t, a, legacyReq())
			assert.Equal(t, "/api/predict/llm-svc", path)
			assert.Equal(t, tt.want, out.Texts())
			if tt.err == "" {
				assert.NoError(t, out.Err)
				assert.Equal(t, "counted", out.Resp.Usage.Source)
			} else {
				assert.Equal(t, tt.err, errcodes.Of(out.Err), "%v", out.Err)
			}
		})
	}
}

func TestStreamPlainAndForcedFormats(t *testing.T) {
	a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		writeFlushed(w, "text/plain", "part one, ", "part two")
	})
	out := stream(t, a, invokeReq(`{"stream":true}`))
	require.NoError(t, out.Err)
	assert.Equal(t, "part one, part two", out.Text())

	// An invoke stream forced to NUL framing passes non-legacy records on.
	a, _ = server(t, func(w http.ResponseWriter, r *http.Request) {
		writeFlushed(w, "application/octet-stream", "rec1\x00", `{"response":"r2"}`+"\x00")
	}, func(o *Options) { o.StreamFormat = StreamNUL })
	out = stream(t, a, invokeReq(`{}`))
	require.NoError(t, out.Err)
	assert.Equal(t, []string{"rec1", "r2"}, out.Texts())

	// Generic SSE on a custom processor: each event's data is a chunk.
	a, _ = server(t, func(w http.ResponseWriter, r *http.Request) {
		writeFlushed(w, "text/event-stream", "data: a\n\n", "data: b\n\n")
	})
	out = stream(t, a, invokeReq(`{}`))
	require.NoError(t, out.Err)
	assert.Equal(t, []string{"a", "b"}, out.Texts())
}

func TestStreamCancel(t *testing.T) {
	h, released := providertest.HoldAfter("text/event-stream", sseHello)
	a, _ := server(t, h)
	providertest.CancelMidStream(t, client(t, a), generateReq(), released)
}

func TestStreamOpenError(t *testing.T) {
	a, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(450)
	})
	out := stream(t, a, generateReq())
	assert.Equal(t, errcodes.Throttled, errcodes.Of(out.Err))
}
