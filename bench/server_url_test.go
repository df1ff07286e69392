package bench

import (
	"testing"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

// TestServerMetricsURLFoundByItself: an OpenAI-compatible base and a
// loopback server root are scraped unasked; a cloud endpoint's root, a
// path that is not a base and a templated URL are not.
func TestServerMetricsURLFoundByItself(t *testing.T) {
	for _, c := range []struct {
		t    Target
		want string
	}{
		{Target{Provider: cloudreq.ProviderOpenAI, URL: "http://127.0.0.1:8000/v1"}, "http://127.0.0.1:8000/metrics"},
		{Target{Provider: cloudreq.ProviderOpenAI, URL: "https://vllm.example.internal/v1/"}, "https://vllm.example.internal/metrics"},
		{Target{Provider: cloudreq.ProviderAWS, URL: "http://127.0.0.1:9000"}, "http://127.0.0.1:9000/metrics"},
		{Target{Provider: cloudreq.ProviderAzure, URL: "http://localhost:9000/"}, "http://localhost:9000/metrics"},
		{Target{Provider: cloudreq.ProviderAWS, URL: "https://runtime.sagemaker.us-east-1.amazonaws.com"}, ""},
		{Target{Provider: cloudreq.ProviderAzure, Endpoint: "https://my-ep.eastus.inference.ml.azure.com"}, ""},
		{Target{Provider: cloudreq.ProviderAzure, URL: "http://127.0.0.1:9000/score"}, ""},
		{Target{Provider: cloudreq.ProviderOpenAI, URL: "http://127.0.0.1:8000/{model}/v1"}, ""},
		{Target{Provider: cloudreq.ProviderAWS, Endpoint: "my-endpoint"}, ""},
	} {
		if got := ServerMetricsURL(&c.t); got != c.want {
			t.Errorf("ServerMetricsURL(%s %q %q) = %q, want %q", c.t.Provider, c.t.URL, c.t.Endpoint, got, c.want)
		}
	}
}
