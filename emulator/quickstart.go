package emulator

import "fmt"

// Quickstart tells how to reach one provider's protocol on a started server.
type Quickstart struct {
	// Provider is the protocol.
	Provider Provider
	// Title is a human name for it.
	Title string
	// BaseURL is what the provider's client takes as its endpoint setting.
	BaseURL string
	// Note says how the official client is pointed at BaseURL.
	Note string
	// Curl is a ready-to-paste command that streams a short generation.
	Curl string
}

// Quickstarts returns, for each provider, its base URL and a curl command
// against the first endpoint it serves. Call it after Start. Configured
// keys appear as $EMULATOR_KEY and AWS credentials as $AWS_ACCESS_KEY_ID /
// $AWS_SECRET_ACCESS_KEY, never in clear.
func (s *Server) Quickstarts() []Quickstart {
	base := s.URL()
	var out []Quickstart
	for _, p := range Providers() {
		ep := s.first(p)
		if ep == nil {
			continue
		}
		n := ep.Name
		auth := ""
		if len(ep.Credentials.Keys) > 0 {
			switch p {
			case PAIEAS:
				auth = ` -H "Authorization: $EMULATOR_KEY"`
			default:
				auth = ` -H "Authorization: Bearer $EMULATOR_KEY"`
			}
		}
		q := Quickstart{Provider: p}
		switch p {
		case SageMaker:
			q.Title = "AWS SageMaker Runtime"
			q.BaseURL = base
			q.Note = "sagemakerruntime.Options.BaseEndpoint; any static credentials and region"
			if ep.Credentials.AWSAccessKeyID != "" {
				auth = ` --aws-sigv4 "aws:amz:us-east-1:sagemaker" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY"`
			}
			q.Curl = fmt.Sprintf(`curl -sN %s/endpoints/%s/invocations-response-stream%s -H 'Content-Type: application/json' -d '{"inputs":"Hello","parameters":{"max_new_tokens":16}}' --output -`, base, n, auth)
		case AzureML:
			q.Title = "Azure ML online endpoint"
			q.BaseURL = base + "/azureml/" + n
			q.Note = "scoring URI " + base + "/azureml/" + n + "/score (azcore: InsecureAllowCredentialWithHTTP for plain http)"
			q.Curl = fmt.Sprintf(`curl -s %s/azureml/%s/score%s -H 'Content-Type: application/json' -H 'azureml-model-deployment: default' -d '{"input_data":{"input_string":[{"role":"user","content":"Hello"}],"parameters":{"max_new_tokens":16}}}'`, base, n, auth)
		case Vertex:
			q.Title = "Google Vertex AI"
			q.BaseURL = base + "/v1/projects/local/locations/us-central1/endpoints/" + n
			q.Note = "REST at " + base + "; gRPC PredictionService at " + s.GRPCAddr() + " (option.WithEndpoint, option.WithoutAuthentication, insecure credentials)"
			q.Curl = fmt.Sprintf(`curl -sN '%s/v1/projects/local/locations/us-central1/endpoints/%s:streamGenerateContent?alt=sse'%s -H 'Content-Type: application/json' -d '{"contents":[{"role":"user","parts":[{"text":"Hello"}]}],"generationConfig":{"maxOutputTokens":16}}'`, base, n, auth)
		case PAIEAS:
			q.Title = "Alibaba Cloud PAI-EAS"
			q.BaseURL = base + "/api/predict/" + n
			q.Note = "service endpoint; OpenAI-compatible sub-paths under /v1/"
			q.Curl = fmt.Sprintf(`curl -sN %s/api/predict/%s/v1/chat/completions%s -H 'Content-Type: application/json' -d '{"model":"%s","messages":[{"role":"user","content":"Hello"}],"max_tokens":16,"stream":true}'`, base, n, auth, n)
		case OpenAI:
			q.Title = "OpenAI-compatible (vLLM)"
			q.BaseURL = base + "/v1"
			q.Note = "client base URL; model = endpoint name"
			q.Curl = fmt.Sprintf(`curl -sN %s/v1/chat/completions%s -H 'Content-Type: application/json' -d '{"model":"%s","messages":[{"role":"user","content":"Hello"}],"max_tokens":16,"stream":true,"stream_options":{"include_usage":true}}'`, base, auth, n)
		}
		out = append(out, q)
	}
	return out
}

// first returns the first endpoint served under p.
func (s *Server) first(p Provider) *endpoint {
	for _, n := range s.order {
		if ep := s.endpoints[n]; ep.serves(p) {
			return ep
		}
	}
	return nil
}
