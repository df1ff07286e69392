// Package openaiwire is the OpenAI chat and completions JSON dialect that
// several adapters speak: providers/openai (vLLM, SGLang, TGI, OpenAI),
// providers/paieas on OpenAI-compatible sub-paths, and providers/azureml for
// serverless chat and chat-style /score bodies.
//
// It encodes cloudreq.GenerateInput as a request body, decodes whole
// responses and streamed chunks into text, finish reason and usage, and
// parses the error envelopes those servers send:
//
//	current vLLM  {"error":{"message":…,"type":"BadRequestError","param":null,"code":400}}
//	older vLLM    {"object":"error","message":…,"type":…,"code":400}
//	OpenAI        {"error":{"message":…,"type":"invalid_request_error","param":…,"code":"…"|null}}
//	Azure flat    {"status":422,"code":"parameter_not_supported","detail":{…},"message":…}
//	Hugging Face  {"error":"Model … is currently loading","estimated_time":20.0}
//	TGI           {"error":"Input validation error: …","error_type":"validation"}
//	FastAPI       {"detail":"Not Found"}
//
// Classifying an error into an errcodes.Code is left to each adapter, which
// knows its provider's statuses; Classify gives the OpenAI-compatible
// defaults they build on.
package openaiwire
