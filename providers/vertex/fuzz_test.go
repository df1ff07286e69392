package vertex

import (
	"strings"
	"testing"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

// The seed corpora live in testdata/fuzz/FuzzXxx; f.Add adds a few more.

func FuzzResolveTarget(f *testing.F) {
	f.Add("projects/p/locations/us-central1/endpoints/123", "")
	f.Add("", "gemini-2.0-flash@001")
	f.Add("", "publishers/meta/models/llama")
	f.Fuzz(func(t *testing.T, endpoint, model string) {
		r, err := resolveTarget(cloudreq.Target{Endpoint: endpoint, Model: model}, "p", "us-central1")
		if err != nil {
			if err.Code != "ERR_INVALID_PARAM" || err.Provider != "gcp" {
				t.Fatalf("error %v has the wrong code or provider", err)
			}
			return
		}
		name := r.String()
		back, ok := parseResource(name)
		if !ok || back != r {
			t.Fatalf("resolved %q, which does not parse back (%+v vs %+v)", name, back, r)
		}
		if strings.HasPrefix(endpoint, "projects/") && name != endpoint {
			t.Fatalf("full name %q came back as %q", endpoint, name)
		}
		if (r.Endpoint == "") == (r.Model == "") {
			t.Fatalf("resource %+v is neither an endpoint nor a model", r)
		}
	})
}

func FuzzRawText(f *testing.F) {
	f.Add([]byte(`{"choices":[{"delta":{"content":"hi"}}]}`))
	f.Add([]byte("data: {\"token\":{\"text\":\"a\"}}\n\ndata: [DONE]\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, c2 := rawText(data), rawText(data)
		if c.text != c2.text || c.finish != c2.finish || c.known != c2.known || c.reasoning != c2.reasoning || (c.usage == nil) != (c2.usage == nil) {
			t.Fatal("rawText is not deterministic")
		}
		if len(strings.TrimSpace(string(data))) == 0 && (c.text != "" || c.finish != "" || c.usage != nil) {
			t.Fatalf("empty input gave %+v", c)
		}
	})
}

func FuzzInvokeMethod(f *testing.F) {
	f.Add([]byte(`{"instances":[{"x":1}],"parameters":{"k":2}}`), "", "")
	f.Add([]byte(`{"instances":[1]}`), "text/csv", "predict")
	f.Add([]byte(`a,b`), "text/csv", "rawPredict")
	f.Fuzz(func(t *testing.T, body []byte, ct, forced string) {
		req := &cloudreq.CloudRequest{Attributes: cloudreq.Attributes{Method: forced}}
		m, pr, err := invokeMethod(req, cloudreq.Payload{Body: body, ContentType: ct})
		if err != nil {
			if forced != MethodPredict && forced != MethodRawPredict && forced != "" {
				return
			}
			if forced != MethodPredict {
				t.Fatalf("only a forced predict may fail on a body: %v", err)
			}
			return
		}
		switch m {
		case MethodPredict:
			if pr == nil {
				t.Fatal("predict without a request")
			}
			if forced == "" && !isPredictBody(body, ct) {
				t.Fatal("chose predict for a body the rule does not call a predict body")
			}
		case MethodRawPredict:
			if pr != nil {
				t.Fatal("rawPredict with a predict request")
			}
		default:
			t.Fatalf("unknown method %q", m)
		}
	})
}
