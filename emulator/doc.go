// Package emulator serves the wire protocols of AWS SageMaker, Azure ML,
// Google Vertex AI (REST and gRPC), Alibaba PAI-EAS and OpenAI-compatible
// servers from one local process, with a seeded latency and fault model per
// endpoint and per-request ground truth. Each cloud's official client works
// against it unchanged except for its endpoint setting.
//
//	srv, err := emulator.New(emulator.Options{TimeScale: 0.01, Seed: 1})
//	err = srv.Start("127.0.0.1:0", "127.0.0.1:0") // HTTP, gRPC ("" = no gRPC)
//	defer srv.Close()
//	srv.URL()      // http://127.0.0.1:PORT, the base of every REST route
//	srv.GRPCAddr() // 127.0.0.1:PORT, Vertex AI PredictionService
//	srv.Records()  // ground truth of every finished request
//
// # Routes
//
// One HTTP listener serves:
//
//	POST /endpoints/{name}/invocations                     SageMaker InvokeEndpoint
//	POST /endpoints/{name}/invocations-response-stream     SageMaker InvokeEndpointWithResponseStream (eventstream)
//	POST /endpoints/{name}[/inference-components/{ic}]/openai/v1/chat/completions
//	                                                       SageMaker AI OpenAI-compatible chat (SSE streams); with
//	                                                       AWS keys configured, only a bearer token presigned with
//	                                                       them (sagemaker-api-key-…, CallWithBearerToken, ≤ 12 h)
//	POST /endpoints/{name}/async-invocations               SageMaker InvokeEndpointAsync: 202 with InferenceId and
//	                                                       the S3 output and failure locations; the inference then
//	                                                       runs (as an InvokeEndpoint, with its Record) and its
//	                                                       answer, or error, is written to the emulator's S3
//	PUT, GET, HEAD, DELETE /s3/{bucket}/{key}              S3 objects, path-style, in memory (256 MiB in all; any
//	                                                       bucket; signatures not checked; NoSuchKey 404 XML):
//	                                                       async inputs and outputs (S3Object, PutS3Object)
//	POST /azureml/{endpoint}/score                         Azure ML managed online endpoint
//	POST /azureml/{endpoint}/chat/completions              Azure serverless (model inference) chat, SSE
//	GET  /azureml/{endpoint}/info                          Azure model inference API ModelInfo
//	                                                       {"model_name","model_type","model_provider_name"}
//	POST /score, /chat/completions; GET /info  with Host {endpoint}.{region}.inference.ml.azure.com
//	                                                       (the real URL shape); a Host that is an IP address
//	                                                       or localhost names no endpoint: 404 NotFound, whose
//	                                                       message gives the URL forms that do
//	POST /v1/projects/{p}/locations/{l}/endpoints/{e}:{m}  Vertex AI REST, m = predict, rawPredict,
//	POST /v1/projects/{p}/locations/{l}/publishers/{pub}/models/{e}:{m}  streamRawPredict, generateContent,
//	                                                       streamGenerateContent (?alt=sse or JSON array),
//	                                                       serverStreamingPredict (JSON array, or ?alt=sse)
//	POST /v1/projects/{p}/locations/{l}/endpoints/openapi/chat/completions  Vertex AI OpenAI-compatible chat
//	                                                       (model = endpoint name; OpenAI-form errors)
//	POST /api/predict/{service}                            PAI-EAS legacy LLM body
//	GET|POST|PUT|DELETE /api/predict/{service}[/sink]      PAI-EAS queue service of an asynchronous service (a
//	                                                       request with the queue's identity header, ?_attrs_ or
//	                                                       /sink): enqueue, fetch by index or requestId, watch
//	                                                       (websocket), commit, delete; each request runs
//	                                                       through the service's inference
//	POST /api/predict/{service}/v1/chat/completions        PAI-EAS OpenAI-compatible (also /v1/completions, GET /v1/models)
//	POST /v1/chat/completions, /v1/completions             OpenAI-compatible (vLLM); model = endpoint name
//	GET  /v1/models                                        OpenAI-compatible model list
//	POST /subscriptions/…/onlineEndpoints/{name}/token     Azure Resource Manager's AML token call: {"accessToken",
//	                                                       "expiryTimeUtc","refreshAfterTimeUtc"}; the token is one
//	                                                       of the endpoint's Azure ML keys until Options.AMLTokenTTL
//	GET  /metrics                                          vLLM's Prometheus families for every request, TGI's for TGI-form requests (label model_name): the records' queue, prefill, decode, TTFT; running, waiting and KV-cache gauges
//	GET  /emulator/requests[?endpoint=name]                ground-truth records (JSON); DELETE clears them;
//	GET  /emulator/requests?id={X-Emulator-Request-Id}     the one request's record, in a list of one (or none)
//	GET  /emulator/endpoints                               served endpoints and profiles (secrets redacted)
//
// The gRPC listener serves google.cloud.aiplatform.v1.PredictionService:
// Predict, RawPredict, StreamRawPredict, GenerateContent,
// StreamGenerateContent and ServerStreamingPredict. Any project and location are accepted; the endpoint
// (or publisher model) id is the endpoint name.
//
// # LLM payloads
//
// Each route accepts what the provider's real LLM deployments accept, and
// answers anything else with the provider's real invalid-input error:
//
//	SageMaker   TGI {"inputs":…,"parameters":{"max_new_tokens":…},"stream":…} → [{"generated_text":…}], or
//	            OpenAI chat {"messages":…} (LMI) → chat completion. Streams carry the container's own
//	            SSE bytes (TGI token events or chat chunks) in PayloadPart frames. TGI "details": true →
//	            details {finish_reason, generated_tokens, seed, prefill, tokens [{id, text, logprob,
//	            special}], top_tokens} (top_n_tokens k ≤ 5, TGI's default bound; prefill lists the prompt's
//	            tokens with decoder_input_details, refused on streams; seed is the one given, or drawn with
//	            do_sample); stream events carry token.logprob, top_tokens and, last, details {finish_reason,
//	            generated_tokens, seed, input_length}. Invalid: 424 ModelError
//	            with OriginalStatusCode 422 (the container refused the body).
//	Azure ML    /score: {"input_data":{"input_string":[messages],"parameters":{…}}} → {"output":…}, or an
//	            OpenAI chat body (streams when "stream": true). Invalid: 424 with
//	            ms-azureml-model-error-statuscode 400.
//	Vertex      predict: {"instances":[{"prompt":…,"max_tokens":…}]} (Model Garden vLLM) → one prediction
//	            (the text) per instance; rawPredict/streamRawPredict: OpenAI chat or completions bodies
//	            (streamRawPredict streams SSE), raw or as {"httpBody":{"contentType","data":base64}};
//	            generateContent: {"contents":[{"parts":[{"text":…}]}],"generationConfig":{"maxOutputTokens"}}:
//	            the same GenerateContentResponse messages over gRPC and REST (their JSON form);
//	            candidateCount n (≤ 8) candidates, each its own index; responseLogprobs with logprobs k
//	            (≤ 20) → each answer token's logprobsResult {chosenCandidates, topCandidates} and the
//	            candidate's avgLogprobs;
//	            serverStreamingPredict: {"inputs":[Tensor],"parameters":Tensor}, the tensors read as
//	            predict instances and parameters ({"structVal":{"prompt":{"stringVal":[…]}}}), one
//	            StreamingPredictResponse {"outputs":[{"structVal":{"content":{"stringVal":[token]}}}]}
//	            per token. Invalid: INVALID_ARGUMENT.
//	PAI-EAS     {"prompt":…,"use_stream_chat":"True"} → {"response":…,"history":[]}; streamed as NUL-separated
//	            JSON chunks (SSE when Accept: text/event-stream), each holding the text so far. OpenAI
//	            bodies under /v1/. Invalid: 400.
//	OpenAI      chat completions and completions; SSE with stream_options.include_usage. "n" choices
//	            (each its own index and text, in the whole body and in stream chunks, one chunk per
//	            choice per token; usage counts them all; the ground-truth headers and records count
//	            one choice); chat "logprobs": true with "top_logprobs" k → choices[i].logprobs.content
//	            [{token, logprob, bytes, top_logprobs}], completions "logprobs" k → the legacy
//	            {tokens, token_logprobs, top_logprobs, text_offset}; drawn from the seed (k ≤ 20,
//	            n ≤ 128). Invalid: 400.
//
// Tools, JSON output and reasoning are answered deterministically (every
// chat route, Vertex generateContent over gRPC and REST, TGI's JSON grammar):
// offered tools with a tool choice other than "none" (Gemini: mode other
// than NONE) get a call of the named function, or the first offered, with
// arguments made from its parameters schema, finish reason "tool_calls",
// streamed as argument fragments (Gemini: one functionCall part); JSON
// mode answers {"text": <the drawn words>}; a JSON schema (OpenAI
// json_schema, Gemini responseJsonSchema or responseSchema, TGI grammar)
// answers JSON that validates against it (first enum or const, minimum-
// and maximum-respecting numbers, strings of the drawn words, minItems
// items). Structured answers are never cut by max tokens. Image parts
// (image_url, inlineData, fileData) are accepted and add 85 prompt tokens
// each. The "reasoning" profile (Profile.ReasoningTokens) sends its
// reasoning tokens first: OpenAI delta.reasoning_content and
// usage.completion_tokens_details.reasoning_tokens, Gemini thought parts
// (only with thinkingConfig.includeThoughts: without it a stream's first
// message is the answer's) and thoughtsTokenCount (counted either way).
//
// A method other than POST (GET for /v1/models) is answered 405 with an
// Allow header on the Azure ML, PAI-EAS and OpenAI routes; SageMaker
// answers it 404 UnknownOperationException, and Vertex UNIMPLEMENTED.
//
// Prompt length is estimated as one token per 4 bytes of text (rounded up):
// a 512-token prompt is 2,048 bytes. Output text is one vocabulary word per
// token, one token per streamed chunk.
//
// # Per-request control and ground truth
//
// Request headers (gRPC: metadata with the same lower-case names):
//
//	X-Emulator-Inject: <fault>   force one outcome (see Faults)
//	X-Emulator-Cold: 1           force a cold start (the request waits a drawn setup time, or
//	                             until the model is up if it is still starting)
//	X-Emulator-Stream-Error: InternalStreamFailure
//	                             SageMaker's stream-error fault sends InternalStreamFailure, not ModelStreamError
//
// Every answer carries (gRPC: header metadata, lower-case):
//
//	X-Emulator-Request-Id        the Record's ID
//	X-Emulator-Endpoint          the endpoint's name
//	X-Emulator-Ttft-Ms           planned arrival → first token, real (scaled) ms, µs precision
//	X-Emulator-Tpot-Ms           planned time per output token, real ms
//	X-Emulator-Queue-Ms          time waited for a concurrency slot, real ms
//	X-Emulator-Cold-Start        true when the request met a cold start
//	X-Emulator-Cold-Start-Ms     setup time the request waited, real ms
//	X-Emulator-Output-Tokens     tokens in the answer (the usage it reports)
//	X-Emulator-Prompt-Tokens     the prompt-length estimate
//	X-Emulator-Time-Scale        the time scale in force
//	X-Emulator-Fault             the injected fault, if any
//
// No real cloud sends these headers, and cloudinfer's adapters do not read
// them: a client of emulator targets installs StartReport, a
// PostDeserialize hook (cloudreq.New(opts, emulator.WithStartReport())),
// which turns X-Emulator-Cold-Start and X-Emulator-Cold-Start-Ms into
// CloudResponse.ServerStart, so that starts are classified on the
// emulator's word, and keeps every X-Emulator-* header in
// CloudResponse.Metadata (X-Emulator-Request-Id is the key of the
// request's Record).
//
// Throttled, queue-full and not-ready answers carry the retry delay each
// provider documents, and no other: Azure ML retry-after-ms and
// x-ms-retry-after-ms (ms, rounded up) and Retry-After (seconds, rounded
// up); OpenAI Retry-After; SageMaker and PAI-EAS none; Vertex no header but
// a RetryInfo detail (in the REST body as in the gRPC status). A client's
// retry timing against the emulator is then what it meets in production:
// with SageMaker and PAI-EAS it backs off on its own, and a whole-second Retry-After can make it wait
// longer than the (scaled) delay.
// Requests refused before they reach an endpoint's model (unknown endpoint
// or path, bad credentials, a body the model cannot take) are answered but
// not recorded. Records (Server.Records, GET /emulator/requests) add the drawn prefill
// time, every inter-token gap, the active-request count at admission, when
// the first and last tokens were actually written, and the outcome.
//
// # Faults
//
// Error faults answer before any token, in each provider's real form:
//
//	fault             SageMaker                       Azure ML /score            Vertex (REST HTTP / gRPC)                  PAI-EAS  OpenAI (vLLM)
//	throttle          400 ThrottlingException         429 TooManyRequests        RESOURCE_EXHAUSTED RATE_LIMIT_EXCEEDED (+QuotaFailure, per minute) 429 429 RateLimitError
//	quota             400 ThrottlingException         429 QuotaExceeded          RESOURCE_EXHAUSTED QUOTA_EXCEEDED (+QuotaFailure) 429 429 insufficient_quota
//	model-not-ready   429 ModelNotReadyException      503 model_not_ready        UNAVAILABLE MODEL_NOT_READY                503      503 ServiceUnavailableError
//	model-error       424 ModelError (orig. 500)      424 + ms-azureml-model-error-* FAILED_PRECONDITION MODEL_ERROR        500      500 InternalServerError
//	invalid           400 ValidationError             400 BadRequest             INVALID_ARGUMENT INVALID_INPUT (+BadRequest) 400    400 BadRequestError
//	not-found         400 ValidationError "… not found" 404 DeploymentNotFound   NOT_FOUND ENDPOINT_NOT_FOUND               404      404 NotFoundError
//	unauthenticated   403 UnrecognizedClientException 401 Unauthorized           UNAUTHENTICATED ACCESS_TOKEN_INVALID       401      401 AuthenticationError
//	forbidden         403 AccessDeniedException       403 Forbidden              PERMISSION_DENIED IAM_PERMISSION_DENIED    401      403 PermissionDeniedError
//	internal          500 InternalFailure             500 InternalServerError    INTERNAL                                   500      500 InternalServerError
//	unavailable       503 ServiceUnavailable          503 ServiceUnavailable     UNAVAILABLE                                503      503 ServiceUnavailableError
//	timeout           424 ModelError (timed out)      408 RequestTimeout         DEADLINE_EXCEEDED                          408      504 TimeoutError
//	payload-too-large 413 ValidationError             413 PayloadTooLarge        INVALID_ARGUMENT PAYLOAD_TOO_LARGE         413      413 BadRequestError
//	queue-full        400 ThrottlingException         429 TooManyPendingRequests RESOURCE_EXHAUSTED RATE_LIMIT_EXCEEDED     450      429 RateLimitError
//
// SageMaker errors carry X-Amzn-ErrorType and x-amzn-RequestId; ModelError
// bodies carry OriginalStatusCode, OriginalMessage, LogStreamArn and
// ErrorCode. SageMaker answers model-overloaded and model-unavailable as
// the container's answer wrapped in a 424 ModelError: OriginalStatusCode
// 429 with TGI's {"error":"Model is overloaded","error_type":"overloaded"}
// (ErrorCode CLIENT_ERROR_FROM_MODEL), or 503 with TorchServe's
// {"code":503,"type":"ServiceUnavailableException",…} no-worker answer
// (SERVER_ERROR_FROM_MODEL); gateway-overflow is a fronting proxy's
// plain-text 503 with no X-Amzn-ErrorType. Azure ML bodies are
// {"error":{"code","message"}} except 424
// ({"message"} plus the ms-azureml-model-error-statuscode and -reason
// headers); serverless chat errors are flat {"status","code","message","detail"}.
// Azure ML /score answers model-overloaded and model-unavailable as the
// container's 429 or 503 wrapped in a 424 (ms-azureml-model-error-statuscode
// 429 or 503); serverless chat answers them 429 TooManyRequests and 503
// ServiceUnavailable; gateway-overflow is, on both, the fronting proxy's
// plain-text 503 "upstream connect error or disconnect/reset before
// headers. reset reason: overflow".
// Serverless chat refuses body members the model inference API does not
// define (stream_options, logit_bias, …) with 422 parameter_not_supported,
// as the API does by default, unless the extra-parameters header is "drop"
// or "pass-through".
// Vertex REST errors are google.rpc.Status JSON with ErrorInfo (domain
// aiplatform.googleapis.com) details; PAI-EAS bodies are plain text
// ("Authorization Failed", "request is discarded because the queue is full").
// Where the provider's real choice is not documented (Vertex model errors,
// SageMaker quota), the table is this package's choice. Vertex's throttle
// answer names a per-minute rate quota
// (GenerateContentRequestsPerMinutePerProjectPerBaseModel, with its
// metric and dimensions) in a QuotaFailure and in the ErrorInfo's quota
// metadata, as Google's quota system does. Vertex relays model-overloaded
// and model-unavailable, the container's 429 and 503, as
// RESOURCE_EXHAUSTED and UNAVAILABLE with no details ("The model server
// returned an error (status 429): …"); its gateway-overflow is the
// fronting proxy's plain-text 503 over REST and, over gRPC, the
// UNAVAILABLE grpc-go makes of that answer ("unexpected HTTP status code
// received from server: 503 …").
// On the OpenAI routes model-overloaded and model-unavailable are vLLM's
// 429 RateLimitError and 503 ServiceUnavailableError envelopes; PAI-EAS
// answers them in plain text, 429 and 503 ("Service Unavailable: the model
// server is unavailable": of its 503s only model-not-ready's "no ready
// instance" says that no instance is ready). On both, gateway-overflow is
// the fronting Envoy's plain-text 503 "upstream connect error or
// disconnect/reset before headers. reset reason: overflow".
//
// Transport faults: reset-before-headers (TCP RST), html-502 (an nginx-style
// HTML page), close-mid-stream (the connection closes after about half the
// tokens), stall-mid-stream (no byte for Profile.StallMs, then a close),
// malformed-body (a frame, chunk or body that does not parse), stream-error
// (the provider's in-stream error after about half the tokens: SageMaker
// ModelStreamError exception frame with ErrorCode StreamBroken, OpenAI
// data: {"error":…} then [DONE], Vertex data/array element {"error":…} or a
// gRPC INTERNAL status, PAI-EAS {"error":…} chunk). A non-streamed call
// meeting stream-error gets the model-error answer. stream-error-first
// opens a stream (200) whose first and only event is the provider's in-band
// error, sent as soon as the request is admitted (OpenAI and PAI-EAS /v1:
// data: {"error":{…"type":"RateLimitError",…,"code":429}} then [DONE];
// SageMaker: a ModelStreamError exception frame with ErrorCode
// ModelInvocationTimeExceeded, since its stream has no in-band throttle;
// Azure serverless chat: the model inference API's single event
// data: {"error":{"code":"429","message":"Rate limit is exceeded. …"}};
// Azure /score: its container's, as OpenAI's; Vertex: RESOURCE_EXHAUSTED
// RATE_LIMIT_EXCEEDED before any message over gRPC, the only data or array
// element {"error":…} over REST, the container's event on
// streamRawPredict); a
// non-streamed call, and a stream form with no error event before content
// (a PAI-EAS legacy stream: EAS refuses at its gateway), get the throttle
// answer instead. Over gRPC,
// reset-before-headers, html-502 and close-mid-stream give UNAVAILABLE;
// malformed-body sends the answer (of a stream, the message after about
// half) with bytes that do not unmarshal, which grpc-go's client reports
// as INTERNAL "grpc: failed to unmarshal the received message".
//
// # Latency model
//
// See Profile for the per-request model (lognormal TTFT and per-request
// decode speed, lognormal output length honouring max tokens, prompt-length
// and batching terms, concurrency slots and a bounded queue, cold starts,
// error rates, token-bucket throttling). Options.TimeScale multiplies every
// duration, including idle windows and token-bucket rates. Every draw comes
// from a PCG generator seeded by (Options.Seed, endpoint name) and the
// request's sequence number on its endpoint, so the set of draws is the same
// whatever order concurrent requests arrive in.
//
// Sleeps aim at absolute deadlines (arrival + planned offset), so timer
// overshoot does not accumulate over a stream. Go timers on Linux wake up to
// about 1 ms late when the process idles in the network poller, so a wait
// sleeps on a timer until 2 ms before its deadline and spins on the clock
// (yielding to other goroutines) for the rest. Spinning is for light loads,
// where each request's timing is what is measured: at most one wait per four
// CPUs spins at a time (at least one), and none while more than two waits
// per such slot are pending; other waits sleep to their deadlines on the
// timer alone, so that a loaded emulator does not burn a core beside the
// load generator (Options.SpinWaits and `cloudinfer emulate --spin-waits`
// set the bound; -1 turns spinning off). Each token's bytes are encoded before it is
// due and written when due. Record.FirstTokenMs and LastTokenMs say when the
// first and last tokens were actually written, beside the planned TTFTMs
// and E2EMs: the difference is the write itself (a loopback write that wakes
// the reader costs 0.1–0.2 ms on a small VM) plus any stall of the machine.
// Measured on a 2-vCPU VM (BenchmarkTimingAccuracy, 200 sequential
// llama-3-8b streams per scale): at scale 0.1 the client saw the first token
// a median 0.30 ms after the planned time (p99 1.2 ms), 0.19 ms after the
// server wrote it, and its TPOT was within 0.04% of the planned one; at 0.01
// TPOT was 2.5% short and at 0.001 62% short, where gaps (28 µs) are below
// what a loopback write and read take and tokens bunch up. Use scales ≥ 0.01
// for tests that compare measurements with the ground truth, and compare
// with the records rather than with the profile's nominal figures.
//
// Prefix cache: an endpoint whose profile sets PrefixCacheTokens keeps a
// prefix cache of that many tokens, in blocks of PrefixBlockTokens (16)
// tokens of the prompt's text (4 bytes a token), each block named by the
// hash of the whole prompt up to its end and evicted least recently used.
// A request's cached tokens are its leading blocks found there; they are
// left out of the prefill term of its TTFT (PrefillMsPer1K × (prompt −
// cached − RefPromptTokens) / 1000). Its Record holds CachedTokens, and
// /metrics counts vllm:prefix_cache_queries_total (prompt tokens looked
// up) and vllm:prefix_cache_hits_total (tokens found). Chat and
// completions bodies with vLLM's ignore_eos get exactly max_tokens output
// tokens (Record.IgnoreEOS).
//
// OpenTelemetry spans: with Options.OTLPWriter (cloudinfer emulate
// --otlp-file PATH) the emulator writes, for every request answered in
// full, the span vLLM sends to its --otlp-traces-endpoint: llm_request,
// kind SERVER, from arrival to the last token, with gen_ai.request.id
// (SpanRequestID: chatcmpl-<X-Request-Id> on the OpenAI chat route, as
// vLLM names it), gen_ai.latency.time_in_queue, time_to_first_token, e2e,
// time_in_model_prefill, time_in_model_decode and
// time_in_model_inference (seconds, from the record: QueueMs, FirstTokenMs,
// LastTokenMs, PrefillMs, their differences), gen_ai.usage.prompt_tokens
// and completion_tokens, and cloudinfer.emulator.request_id. Each is one
// line of OTLP JSON (a TracesData, the JSON of an
// ExportTraceServiceRequest), as an OpenTelemetry Collector's file
// exporter writes the spans it receives.
//
// KV cache: /metrics writes vllm:kv_cache_usage_perc (a share in [0, 1],
// vLLM's name since its V1 engine; V0 called it vllm:gpu_cache_usage_perc)
// per endpoint from a model of its KV cache of KVCacheTokens tokens
// (default DefaultKVCacheTokens): each running request (from its
// admission to a slot to its end) holds ⌈(prompt + generated) / 16⌉
// blocks of PrefixBlockTokens, its generated tokens being those of its
// token schedule due by the scrape; the gauge is the blocks held over the
// capacity's, at most 1. Shared prefix blocks count once per request, and
// a full cache neither preempts nor refuses (Slots bounds what runs).
//
// SageMaker stateful sessions: an InvokeEndpoint request whose
// X-Amzn-SageMaker-Session-Id is NEW_SESSION is answered, when it
// succeeds, with X-Amzn-SageMaker-New-Session-Id
// "<id>; Expires=<RFC 3339 UTC, 20 minutes on>", as a stateful model
// container answers (an error answer opens no session); other session ids
// are accepted as they come, and recorded (Record.SessionID); an
// InvokeEndpoint carrying a session id and the body
// {"requestType":"CLOSE"} closes it: 200 with
// X-Amzn-SageMaker-Closed-Session-Id and a record of route close-session. InvokeEndpointWithResponseStream cannot open a session (the
// service says so; its exact answer is not documented): NEW_SESSION there
// gets 400 ValidationError.
//
// SageMaker checks what a call targets as the service does, with a 400
// ValidationError (Endpoint.SageMaker sets the endpoint's shape): a
// TargetVariant the endpoint does not have; a TargetModel on an endpoint
// that is not multi-model ("Endpoint X is not a multi-model endpoint and
// does not support target model header.", ErrorCode
// TARGET_MODEL_HEADER_NOT_SUPPORTED; streams have no TargetModel and
// ignore one); an InferenceComponentName on an endpoint without inference
// components ("… is not allowed …"), none on one with them ("… is
// required …", INFERENCE_COMPONENT_NAME_MISSING), or one it does not have.
// The messages are the service's, except for the unknown variant and
// inference component, whose wording is not documented (this package's).
// X-Amzn-Invoked-Production-Variant names the variant that served the call.
//
// SageMaker answers no sooner than 5 ms (real) after the request body was
// read: aws-sdk-go-v2 closes the request body as soon as response headers
// arrive, and when that beats net/http's final read of the body the
// transport closes the connection under the response. No real endpoint
// answers that fast; the planned TTFT includes the wait when it matters.
//
// # Slow and hostile clients
//
// The HTTP listener bounds what one client can hold:
//
//	headers        must arrive within 30 s and fit in 64 KiB (else 431)
//	body           must arrive within Options.ReadBodyTimeout (default 30 s) of the headers, else a
//	               plain-text 408 and the connection closes; a body that breaks off or whose chunked
//	               encoding is broken gets 400 the same way
//	body size      8 MiB (SageMaker 6 MiB, Vertex REST 1.5 MiB); a bigger body gets the provider's payload-too-large
//	               answer (see Faults), at once and without 100 Continue when its Content-Length says
//	               so, else when the limit is passed; the connection closes after it
//	each write     must be taken by the client within Options.WriteStallTimeout (default 1 minute;
//	               at least ¾ of it, as the deadline moves in quarter steps to spare a timer update
//	               per token), else the request ends (its Record says canceled, its slot is freed)
//	               and the connection closes; a stream as a whole has no bound, however long it lasts
//	idle           a kept-alive connection closes after 2 minutes without a request
//
// The gRPC listener bounds its clients too:
//
//	handshake      a new connection's HTTP/2 preface and SETTINGS must arrive within 20 s, else it closes
//	dead peers     a connection that sent nothing for 2 minutes is pinged, and closed when nothing
//	               comes back within 20 s (idle connections that answer stay open)
//	client pings   at most one per 10 s, with or without calls in flight; a client that keeps pinging
//	               more often is sent GOAWAY ENHANCE_YOUR_CALM "too_many_pings" and disconnected
//	streams        at most 1,048,576 calls in flight per connection
//	metadata       a request's metadata must fit in 64 KiB (HPACK-decoded size, 32 bytes per field
//	               included), else the call is refused with RST_STREAM FRAME_SIZE_ERROR; one name
//	               or value longer than 64 KiB closes the connection
//	messages       a request message must fit in 8 MiB + 1 KiB
//	each message   of a streamed answer (StreamGenerateContent, StreamRawPredict) must be let through by
//	               the client's flow-control window within Options.WriteStallTimeout, else the call
//	               ends with DEADLINE_EXCEEDED (its Record says canceled, status 504, its slot is freed);
//	               the connection stays open for its other calls
//
// The ping bound admits every grpc-go client: grpc-go raises a shorter
// keepalive time to 10 s, and the vertex adapter pings after 5 minutes. The
// bound on streams is the bench's bound on requests in flight
// (bench.MaxWorkers): the vertex adapter sends all of a target's requests
// over one connection, and a gRPC client at the bound waits for a call to
// end before it starts the next, so a lower one would queue a benchmark's
// requests in the client and add the wait to its latencies. A stream the
// client stops reading does not block the connection's other streams
// (HTTP/2 flow control is per stream), so the stall bound ends only that
// call: the messages already queued for it, then its status, reach the
// client should it read again. The stall bound does not cover a unary
// answer, which gRPC writes after the call has ended and its slot is free;
// and a call whose request message never comes waits for it as long as its
// connection lives.
//
// A client that goes away mid-request ends it at once: waits stop, the
// slot is freed, and the Record says canceled. The two Options bounds are
// real time (TimeScale does not change them); a negative value removes one.
//
// # Built-in profiles and endpoints
//
// With Options.Endpoints nil, one endpoint per built-in profile is served
// under every provider with no credentials (any or none accepted):
//
//	llama-3-8b   TTFT 428±31 ms, TPOT 28.4±2.1 ms, 53.25±3.26 tokens → total 1912±147 ms   (vLLM 0.6.3, A10)
//	phi-3-mini   TTFT 156±12 ms, TPOT 12.7±1.3 ms, 51.55±0.5 tokens  → total 798±67 ms (table: ±64)
//	qwen2-7b     TTFT 312±24 ms, TPOT 21.9±1.8 ms, 56.16±2.69 tokens → total 1520±118 ms
//	{model}-a10, -a100, -h100   TTFT and TPOT × 18.2 : 7.9 : 3.1 (per-token decode by GPU)
//	serverless   TTFT 312±247 ms, Qwen2-7B decode; starts scaled to zero, 5 min idle window
//	dedicated    TTFT 87±3.1 ms, Qwen2-7B decode
//
// All: 512-token reference prompt, +23 ms per extra 1K prompt tokens, 256
// slots, queue 1024, cold start 2.8±0.4 s, gap jitter 0.1. Batching penalty
// per other active request: llama 27 ms (1 → 8 adds 189), phi 3.29 ms
// (adds 23), qwen 15.4 ms.
//
// # Configuration file
//
// LoadConfig reads JSON or YAML:
//
//	time_scale: 0.01            # optional; the CLI's --time-scale wins
//	seed: 42                    # optional
//	spin_waits: -1              # optional; see Options.SpinWaits (the CLI's --spin-waits wins)
//	builtin_endpoints: false    # also serve the built-ins (default: only when no endpoints are listed)
//	read_body_timeout_ms: 30000 # optional; Options.ReadBodyTimeout (negative: none; the CLI's --read-body-timeout wins)
//	write_stall_timeout_ms: 60000 # optional; Options.WriteStallTimeout (negative: none; --write-stall-timeout wins)
//	profiles:                   # optional named profiles
//	  - name: fast-llama
//	    base: llama-3-8b        # optional: start from a built-in or a profile defined above
//	    ttft_ms: {mean: 200, sd: 20}
//	    tpot_ms: {mean: 10, sd: 1}
//	    gap_jitter: 0.1
//	    output_tokens: {mean: 100, sd: 20}
//	    ref_prompt_tokens: 512
//	    prefill_ms_per_1k_tokens: 23
//	    slots: 5                # concurrency
//	    max_queue: 64           # waiting requests (0: 4 × slots; negative: none)
//	    batch_penalty_ms: 27
//	    cold_start_ms: {mean: 2800, sd: 400}
//	    error_rates: {throttle: 0.01, close-mid-stream: 0.001}   # each in [0,1], at most 1 in all
//	    throttle: {rate_per_sec: 50, burst: 10}
//	    stall_ms: 30000
//	    request_timeout_ms: 5000 # the server's own timeout, queue included (0: none)
//	endpoints:
//	  - name: my-llama          # endpoint / deployment / service / model name
//	    providers: [sagemaker, azureml, vertex, pai-eas, openai]   # default: all
//	    profile: fast-llama     # a name, or an inline profile object (with optional base);
//	                            # default: the built-in of the same name, else llama-3-8b
//	                            # (an inline object with no base, no name and no ttft_ms,
//	                            # tpot_ms or output_tokens starts from that default)
//	    credentials:
//	      aws_access_key_id: AKID...       # SageMaker: verify SigV4
//	      aws_secret_access_key: ...
//	      keys: [key1]                     # Azure ML / Vertex / OpenAI bearer, PAI-EAS token
//	    idle_window_ms: 300000  # scale to zero after this long idle (0: never)
//	    start_cold: true        # start scaled to zero
//	    cold_mode: hold         # hold (wait, then serve) or reject (not-ready answers until ready)
//	    sagemaker:              # optional; default: one variant, AllTraffic, one model
//	      variants: [blue, green]   # production variants (the first serves a call that names none)
//	      multi_model: true         # a multi-model endpoint: the only kind that accepts TargetModel
//	      inference_components: [ic-llama]  # then every call must name one of them
//
// A profile with a base starts as a copy of it and changes what it sets:
// ttft_ms: {mean: 200} keeps the base's sd, error_rates adds to or replaces
// the base's rates fault by fault (set one to 0 to drop it), throttle merges
// field by field. Setting slots without max_queue gives a queue of 4 × slots
// unless the base set a queue length of its own (the built-ins' 1024 is
// their 4 × 256). A profile object without base starts from zero figures
// (a request then takes no time and answers one token), except the inline
// endpoint profile above. The Options.Endpoints rule is the same: a Profile
// with no name and no TTFT, TPOT or output-length figures is the endpoint's
// default profile with the non-zero fields it sets.
//
// Unknown fields are errors, as are a negative time_scale, YAML's .nan and
// .inf, a base that is unknown or defined below, error rates that add up to
// more than 1, and a profile or endpoint defined twice in the file (one may
// replace a built-in of its name); errors name the key (e.g.
// profiles[1].ttft_ms.mean, or endpoints[0]: unknown field "colour").
// Credentials are redacted when endpoints are written as JSON.
//
// # Credentials
//
// SageMaker verifies SigV4 (with the SDK's own signer) when AWS keys are
// configured: signing name sagemaker, a date within 15 minutes, and the
// payload hash of the body received (X-Amz-Content-Sha256, when sent, must
// be that hash or UNSIGNED-PAYLOAD); Azure ML takes Authorization: Bearer <key> (or api-key);
// Vertex takes a bearer token (HTTP header or gRPC metadata); OpenAI takes a
// bearer key; PAI-EAS takes a raw token, Bearer, or the EAS SDK signature
// "EAS " + base64(HMAC-SHA1(token, "POST\n" + md5hex(body) + "\n" +
// Content-Type + "\n" + Date + "\n" + path)).
package emulator
