// Package paieas is the cloudreq adapter for Alibaba Cloud PAI-EAS
// services (provider "alibaba", service "pai-eas", actions invoke and
// generate, streaming).
//
// It speaks net/http: POST {Endpoint}/api/predict/{service}{Target.Path},
// where Target.Endpoint is the service name (or the service's full URL).
// Every request needs it, and a name needs Options.Endpoint: a request
// without them fails before it is sent (Adapter.Validate).
// Three ways to authenticate, chosen by Options.Auth:
//
//	AuthAuto (default)  "Authorization: <token>"; "Authorization: Bearer <token>"
//	                    on OpenAI-compatible sub-paths (/v1/…)
//	AuthToken           "Authorization: <token>" everywhere
//	AuthBearer          "Authorization: Bearer <token>" everywhere
//	AuthSignature       the EAS SDK's signature: Content-MD5 (hex MD5 of the body),
//	                    Date, Content-Type application/octet-stream and
//	                    "Authorization: EAS " + base64(HMAC-SHA1(token,
//	                    "POST\n<md5hex>\napplication/octet-stream\n<Date>\n/api/predict/<service><path>"))
//
// The signature covers the Content-Type, and the EAS SDKs sign
// application/octet-stream, so AuthSignature sends every body so labelled,
// JSON included. An OpenAI-compatible image behind EAS may refuse a JSON
// body labelled so (FastAPI-based servers answer 422); use AuthAuto or
// AuthBearer for their /v1/… routes.
//
// Action invoke sends the caller's bytes as they are. Action generate
// writes one of two dialects (Options.Dialect, or per request
// Attributes.Dialect, a Dialect's string: another value is refused with
// ERR_INVALID_PARAM naming Attributes.Dialect):
//
//   - DialectOpenAI (default): OpenAI chat JSON on /v1/chat/completions (the
//     vLLM, SGLang and BladeLLM images); streams are SSE with usage.
//   - DialectLegacy: the EAS LLM template's
//     {"prompt":…,"system_prompt":…,"history":[[user,assistant],…],
//     "max_new_tokens":…,"temperature":…,"top_p":…,"use_stream_chat":"True"|"False"}
//     answered by {"response":…} — streamed as NUL-separated JSON objects,
//     whose "response" is the text so far or the new text only (detected,
//     or set with Options.LegacyStream).
//
// Streams are read as SSE when the server says text/event-stream, as
// NUL-delimited records for the legacy dialect (or Options.StreamFormat
// StreamNUL), and otherwise as plain bytes in the order they arrive.
//
// # Errors
//
// Every error is an *errcodes.Error with Provider "alibaba" wrapping an
// *APIError (errors.As; the type openai.APIError names too, its Provider
// "alibaba") for HTTP and in-stream errors. EAS gateway bodies are plain
// text ("Authorization Failed", "request is discarded because the queue
// is full"), which becomes the message (cut to 512 bytes; at most
// Options.Limits.MaxErrorBytes of a body, 64 KiB by default, are read).
// An OpenAI-style JSON body from the model server behind an /v1 sub-path
// is parsed first and its specific codes (insufficient_quota,
// rate_limit_exceeded, model_not_ready, …) win. Then the status decides:
//
//	HTTP  meaning                                  code                   retryable
//	400   bad request / processor exception        ERR_INVALID_PARAM      no
//	401   authorization failed                     ERR_UNAUTHENTICATED    no
//	403   forbidden                                ERR_PERMISSION_DENIED  no
//	404   service or path not found                ERR_NOT_FOUND          no
//	405   method not allowed                       ERR_INVALID_PARAM      no
//	408   request timeout (queue time included)    ERR_TIMEOUT            yes
//	413   request too large                        ERR_PAYLOAD_TOO_LARGE  no
//	429   rate limited                             ERR_THROTTLED          yes
//	450   queue full, request discarded            ERR_THROTTLED          yes (back-pressure)
//	499   client closed the request                ERR_CANCELED           no
//	500   internal error                           ERR_INTERNAL           yes
//	502   bad gateway                              ERR_UNAVAILABLE        yes
//	503   "no ready instance", "no available
//	      instance" (no instance Ready: scaling
//	      from zero), a model "is loading"         ERR_MODEL_NOT_READY    yes
//	503   any other: "Service Unavailable", a
//	      gateway's "upstream connect error …
//	      reset reason: overflow" or "no healthy
//	      upstream", a model server's own 503      ERR_UNAVAILABLE        yes
//	504   gateway timeout                          ERR_TIMEOUT            yes
//	other by errcodes.ForHTTPStatus
//	error object in a 2xx body: its specific code, else the status it states, else its type
//	2xx generate body that is no completion / {"response":…}   ERR_MODEL_ERROR        no
//	response body over MaxResponseBytes                        ERR_PAYLOAD_TOO_LARGE  no
//
// Only the not-ready 503s are evidence of a cold start (a call that met one
// and then succeeded is classified cold): a transient 503 from the gateway
// in front of the service must not make a warm request cold.
//
// In a stream, an in-band error (an OpenAI data:{"error":…} event, a
// legacy {"error":…} record) before any content is the whole answer: it
// gets its own code, as the same body over HTTP, and that code's
// retryability; after content it is ERR_STREAM_INTERRUPTED, not retryable,
// its own code in Details["code"] (as in providers/openai). A role-only
// chunk is not content. A stream that ends without [DONE] or a finish
// reason is ERR_STREAM_INTERRUPTED; a legacy stream ends at the body's end.
// A first chunk or record that does not parse is ERR_MODEL_ERROR, one after
// content ERR_STREAM_INTERRUPTED. Transport failures map with
// errcodes.FromTransport. Retry-After headers fill RetryAfter; X-Request-Id
// is the request id; the response headers are CloudResponse.Header.
//
// New refuses to send a token over plain http unless
// Options.AllowInsecureHTTP (for the local emulator only). Tokens and
// signatures never appear in errors.
//
// # Queue service (asynchronous inference)
//
// An asynchronous EAS service has two queues, as Alibaba's "Access queue
// service" and "Asynchronous inference" pages describe: the input queue at
// {Endpoint}/api/predict/{service} and the output (sink) queue at
// …/{service}/sink. QueueClient (NewQueueClient) speaks them as the EAS
// SDKs do, the token in "Authorization" and a user (and group) id in the
// identity headers the queue names in its attributes:
//
//	Attributes  GET  ?_attrs_=true                         the queue's attributes (JSON)
//	Put         POST input, tags as the query               the index (text) and X-Eas-Queueservice-Request-Id
//	Get         GET  sink ?_index_&_length_&_timeout_&_auto_delete_&requestId=…
//	Watch       GET  sink ?_watch_=true&_index_&_window_&_index_only_&_auto_commit_, a websocket
//	Commit      PUT  sink ?_indexes_=1,2
//	Delete      DELETE sink ?_indexes_=1,2
//
// Wait waits for one request's result with Gets that wait on the server
// (WaitOptions.Poll, default 5 s) until the context ends, and deletes it
// once read unless WaitOptions.Keep. QueueAdapter (NewQueueAdapter;
// service ServiceQueue, "pai-eas-queue") makes a cloudreq call of it:
// Encode as the synchronous adapter (dialect included), Put, Wait, and the
// result read as the synchronous answer; no stream.
//
// Frames are asked for and read as JSON (Accept: application/json, data
// base64), one of the codecs the EAS SDKs carry; the SDKs' default,
// protobuf, is not used. Not confirmed by the documentation this was built
// from, and so marked: the names of the identity headers (read from the
// attributes, never assumed), the result's index being the request's own,
// the result tag lastCode (the inference's HTTP status; a result without
// one is a success), and priority: PutOptions.Priority is sent as the
// reserved tag _priority_, which EAS's pages did not show. The official
// Go SDK (github.com/pai-eas/eas-golang-sdk) is not served by the module
// proxy here, so no test drives the emulator with it. The emulator serves
// these routes (its package doc) and runs each request through the
// service's synchronous inference.
//
// Errors: a queue's non-2xx answer is mapped by the table above (404 an
// unknown service, 401 a refused token, 450 a full queue, …), with
// "paieas queue:" before its message; a result whose lastCode is not 2xx
// is the inference's error, its data mapped as the synchronous answer; in
// addition:
//
//	situation                                        code                    retryable
//	a tag key starting with "_" (reserved)           ERR_INVALID_PARAM       no
//	attributes without the user identity header      ERR_INTERNAL            no
//	an enqueue answer that is not an index           ERR_INTERNAL            no
//	frames that are not a JSON list, data not base64 ERR_INTERNAL            no
//	no result before the context's deadline (Wait)   ERR_TIMEOUT             no (the request may still run; a retry
//	                                                                          would enqueue it again)
//	a watch that ends (connection closed)            ERR_STREAM_INTERRUPTED  no
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
package paieas
