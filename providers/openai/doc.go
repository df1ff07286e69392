// Package openai is the cloudreq adapter for OpenAI-compatible servers:
// vLLM, SGLang, TGI's Messages API, PAI-EAS and Azure serverless endpoints
// that speak the OpenAI API, and OpenAI itself (provider "openai", service
// "openai-compatible", actions invoke and generate, streaming).
//
// It speaks net/http directly: POST {BaseURL}{Target.Path}, where the path
// defaults to /v1/chat/completions (/v1/completions works too), with
// "Authorization: Bearer <APIKey>" when a key is set. Action invoke sends
// the caller's bytes as they are; action generate writes OpenAI chat JSON
// (or a completions body on a completions path) with the model from
// Target.Model (else Target.Endpoint, unless it is a URL, when the body
// names no model). A request needs Target.Model or Target.Endpoint; one
// with neither fails before it is sent (Adapter.Validate). Streams are
// SSE; generate streams ask for stream_options.include_usage, so the last
// chunk carries usage.
//
// Invoke fills CloudResponse.Text, FinishReason and Usage, for invoke as
// for generate, when the answer is recognisably a generation: a JSON chat
// completion or completion. Any other invoke answer (not JSON, or JSON of
// another shape) is left in Data alone, with Text empty; an error object
// in it is an error, as for generate. A streamed invoke whose answer is SSE
// is read as OpenAI chunks, so its chunks say what is content just as a
// generate stream's do; any other streamed answer is passed on as raw
// text.
//
// A stream ends cleanly at "data: [DONE]" or, without it, once a choice
// reported a finish_reason. The role-only first chunk and the usage-only
// last chunk are yielded with Content false: they are never content,
// never the first token. A stream that ends otherwise fails with
// ERR_STREAM_INTERRUPTED. An in-stream data:{"error":…} before any content
// is the whole answer: it gets the code the same body would get over HTTP
// (below), and that code's retryability. After content it is
// ERR_STREAM_INTERRUPTED, not retryable, its portable code in
// Details["code"]. Either way its native code is kept in ProviderCode.
//
// Bodies are read with the bounds of Options.Limits: a response up to
// MaxResponseBytes (64 MiB), an error body up to MaxErrorBytes (64 KiB;
// the rest is never read), an SSE line or event up to MaxEventBytes
// (1 MiB).
//
// # Errors
//
// Every error is an *errcodes.Error with Provider "openai"; the native error
// is an *APIError (errors.As; the type paieas.APIError names too, its
// Provider "openai") for HTTP and in-stream errors. The error body
// is parsed in any of the OpenAI-compatible envelopes (current vLLM
// {"error":{…,"code":400}}, older vLLM {"object":"error",…}, OpenAI
// {"error":{…,"code":"…"}}, TGI {"error":"…","error_type":"…"}, whose
// error_type is the native code); HTML and plain-text bodies become the
// message.
// The code comes from, in order:
//
//	signal                                           code                   retryable
//	code/type insufficient_quota                     ERR_QUOTA_EXCEEDED     no
//	code rate_limit_exceeded                         ERR_THROTTLED          yes
//	code invalid_api_key                             ERR_UNAUTHENTICATED    no
//	code model_not_found                             ERR_NOT_FOUND          no
//	code context_length_exceeded                     ERR_INVALID_PARAM      no
//	code model_not_ready                             ERR_MODEL_NOT_READY    yes
//	503 with estimated_time, or "is loading" /
//	  "not ready" in the message (last resort)       ERR_MODEL_NOT_READY    yes
//	HTTP 400, 405, 409, 422                          ERR_INVALID_PARAM      no
//	HTTP 401                                         ERR_UNAUTHENTICATED    no
//	HTTP 403                                         ERR_PERMISSION_DENIED  no
//	HTTP 404                                         ERR_NOT_FOUND          no
//	HTTP 408, 504                                    ERR_TIMEOUT            yes
//	HTTP 413                                         ERR_PAYLOAD_TOO_LARGE  no
//	HTTP 429                                         ERR_THROTTLED          yes
//	HTTP 499                                         ERR_CANCELED           no
//	HTTP 500                                         ERR_INTERNAL           yes
//	HTTP 501                                         ERR_INVALID_PARAM      no
//	HTTP 502, 503 (other 5xx; a proxy's plain-text
//	  503, Envoy's "… reset reason: overflow")        ERR_UNAVAILABLE        yes
//	error object in a 2xx body                       as above, with the status the body states
//	                                                   (else its type) for the HTTP status
//	in-stream data:{"error":…} before any content    its own code, retryable as that code: the
//	                                                   code/type rows above, the status the body
//	                                                   states, else its type (rate_limit_error,
//	                                                   RateLimitError ERR_THROTTLED; server_error
//	                                                   ERR_INTERNAL; content_filter
//	                                                   ERR_INVALID_PARAM), TGI's included
//	                                                   (validation ERR_INVALID_PARAM, overloaded
//	                                                   ERR_THROTTLED, generation ERR_MODEL_ERROR,
//	                                                   incomplete_generation ERR_INTERNAL)
//	in-stream data:{"error":…} after content         ERR_STREAM_INTERRUPTED no, its own code (as
//	                                                   above) in Details["code"]
//	stream without [DONE] or finish_reason           ERR_STREAM_INTERRUPTED yes (before the first chunk)
//	generate answered 2xx with no completion JSON,
//	  or a stream whose first chunk does not parse   ERR_MODEL_ERROR        no
//	a chunk that does not parse, after content       ERR_STREAM_INTERRUPTED no
//	response body over MaxResponseBytes              ERR_PAYLOAD_TOO_LARGE  no
//	connection refused/reset, EOF                    ERR_UNAVAILABLE        yes
//	TLS certificate failure                          ERR_UNAUTHENTICATED    no
//
// Retry-After, retry-after-ms and x-ms-retry-after-ms fill RetryAfter. The
// request id comes from X-Request-Id; the response headers are
// CloudResponse.Header.
//
// Credentials: New refuses an API key over plain http unless
// Options.AllowInsecureHTTP is set (for the local emulator only). Keys never
// appear in errors.
//
// # Connections
//
// Without Options.HTTPClient the adapter builds its own transport: a clone
// of http.DefaultTransport (proxy from the environment, HTTP/2) that keeps
// up to 256 idle connections per host with no total limit (net/http's
// default keeps 2, so concurrent calls would open and close a connection
// each), closes them after 90 s idle, and bounds the wait for a response's
// headers, once the request is written, to 10 minutes. That bound is
// generous on purpose: a server that does not stream sends its headers
// only when the whole generation is done. It only keeps a server that
// never answers from holding a call forever; bound calls more tightly with
// cloudreq's Timeout, AttemptTimeout and FirstChunkTimeout. A timeout
// waiting for headers is ERR_TIMEOUT, retryable. Adapter.Close closes that
// transport's idle connections. A caller's HTTPClient is the caller's to
// tune and to close: Close leaves it alone.
package openai
