package emulator

import (
	"strings"
	"testing"
)

var bodyParsers = map[string]func([]byte) (genRequest, error){
	"chat":       parseChat,
	"completion": parseCompletion,
	"sagemaker":  parseSageMakerLLM,
	"instances":  parseInstances,
	"contents":   parseContents,
	"eas":        parseEASPrompt,
	"azureml":    parseAMLScore,
	"raw":        parseRawPredict,
}

// FuzzParseLLMBody runs every LLM body parser on the same input: none may
// panic, and an accepted body must yield sane values.
func FuzzParseLLMBody(f *testing.F) {
	for _, s := range []string{
		`{"model":"llama-3-8b","messages":[{"role":"user","content":"hi"}],"max_tokens":16,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_completion_tokens":3}`,
		`{"model":"m","prompt":["a","b"],"max_tokens":2}`,
		`{"model":"m","prompt":[1,2,3]}`,
		`{"inputs":"hello","parameters":{"max_new_tokens":64},"stream":true}`,
		`{"instances":[{"prompt":"hi","max_tokens":8}],"parameters":{"maxOutputTokens":4}}`,
		`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":6}}`,
		`{"prompt":"hi","use_stream_chat":"True","history":[]}`,
		`{"input_data":{"input_string":[{"role":"user","content":"hi"}],"parameters":{"max_new_tokens":12}}}`,
		`{"httpBody":{"contentType":"application/json","data":"eyJtZXNzYWdlcyI6W3sicm9sZSI6InVzZXIiLCJjb250ZW50IjoiaGkifV19"}}`,
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"n":3,"logprobs":true,"top_logprobs":5}`,
		`{"model":"m","prompt":"hi","n":2,"logprobs":3}`,
		`{"max_tokens":-1}`, `[]`, `null`, `{"messages":null}`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for name, parse := range bodyParsers {
			g, err := parse(body)
			if err != nil {
				continue
			}
			if g.dialect == 0 || g.promptTokens < 0 || g.maxTokens < 0 || g.instances < 0 ||
				g.choices < 0 || g.choices > maxChoices || g.topLogprobs < 0 || g.topLogprobs > maxLogprobs {
				t.Fatalf("%s accepted %q with %+v", name, body, g)
			}
		}
	})
}

// FuzzParseConfig checks that any accepted configuration makes a valid server.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(yamlConfig))
	f.Add([]byte(`{"builtin_endpoints": true, "endpoints": [{"name": "x", "profile": "qwen2-7b-h100"}]}`))
	f.Add([]byte("endpoints:\n  - name: x\n    profile: {base: phi-3-mini, slots: 2, throttle: {rate_per_sec: 1, burst: 1}}\n"))
	f.Add([]byte("time_scale: 0.5\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		opts, err := ParseConfig(data)
		if err != nil {
			return
		}
		if opts.TimeScale < 0 {
			return // New refuses it, as documented
		}
		s, err := New(opts)
		if err != nil {
			// Duplicate names across builtin_endpoints and endpoints are merged, so New must accept.
			t.Fatalf("ParseConfig accepted %q but New refused it: %v", data, err)
		}
		_ = s.Close()
	})
}

// FuzzParseSigV4 checks the Authorization parser never panics and that an
// accepted header has every part.
func FuzzParseSigV4(f *testing.F) {
	f.Add("AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/sagemaker/aws4_request, SignedHeaders=host;x-amz-date, Signature=abcd")
	f.Add("AWS4-HMAC-SHA256 Credential=a/b/c/d/e")
	f.Add("Bearer x")
	f.Fuzz(func(t *testing.T, h string) {
		v, ok := parseSigV4(h)
		if ok && (v.akid == "" || v.signature == "" || len(v.signed) == 0) {
			t.Fatalf("accepted %q as %+v", h, v)
		}
	})
}

// FuzzParseVertexResource checks that an accepted resource name renders back to itself.
func FuzzParseVertexResource(f *testing.F) {
	f.Add("projects/p/locations/us-central1/endpoints/llama-3-8b:predict")
	f.Add("projects/p/locations/l/publishers/google/models/m:streamGenerateContent")
	f.Add("projects//locations/l/endpoints/e")
	f.Fuzz(func(t *testing.T, path string) {
		tg, ok := parseVertexResource(path)
		if !ok {
			return
		}
		back, ok := parseVertexResource(tg.resource())
		if !ok || back.resource() != tg.resource() {
			t.Fatalf("%q parsed to %+v, which does not round-trip", path, tg)
		}
	})
}

func BenchmarkParseChat(b *testing.B) {
	body := []byte(`{"model":"llama-3-8b","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"` + strings.Repeat("x", 2048) + `"}],"max_tokens":16,"stream":true,"stream_options":{"include_usage":true}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseChat(body); err != nil {
			b.Fatal(err)
		}
	}
}
