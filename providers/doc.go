// Package providers holds cloudinfer's provider adapters, one package per
// cloud, each implementing cloudreq.Adapter (and cloudreq.Streamer and
// cloudreq.Encoder where the provider streams and generates):
// providers/sagemaker (AWS SageMaker real-time endpoints, on aws-sdk-go-v2
// sagemakerruntime), providers/azureml (Azure ML managed online endpoints,
// on azcore), providers/vertex (Google Vertex AI, on
// cloud.google.com/go/aiplatform), providers/paieas (Alibaba Cloud PAI-EAS,
// on net/http) and providers/openai (OpenAI-compatible servers such as vLLM,
// SGLang and TGI). providers/providertest holds the conformance suite every
// adapter passes against the emulator.
package providers
