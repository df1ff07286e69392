// Package vertex is the cloudreq adapter for Google Vertex AI online
// prediction (provider "gcp", service "vertex"), built on the official
// gRPC client cloud.google.com/go/aiplatform/apiv1 PredictionClient, or
// on Vertex AI's REST API (Options.Transport, below).
//
//	ad, err := vertex.New(ctx, vertex.Options{Project: "my-project", Location: "us-central1"})
//	if err != nil { … }
//	client, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}})
//	defer client.Close() // closes the adapter too
//
// # Targets
//
// Target.Endpoint is a full resource name
// ("projects/P/locations/L/endpoints/E" or
// "projects/P/locations/L/publishers/google/models/M") or a bare endpoint id,
// completed with Options.Project and Options.Location. With no endpoint,
// Target.Model names a publisher model: a full resource name,
// "publishers/PUB/models/M", or a bare Google model id such as
// "gemini-2.0-flash". A request with neither, or with a name that is not a
// full resource name while Options.Project or Options.Location is unset,
// fails before it is sent (Adapter.Validate). Without Options.Endpoint the
// adapter talks to {Location}-aiplatform.googleapis.com:443 with
// Application Default Credentials, and refuses resources of another
// location (use one adapter per location).
//
// # Methods
//
//	Action    Invoke                          Stream
//	invoke    predict or rawPredict (below)   streamRawPredict, or serverStreamingPredict (below)
//	generate  generateContent                 streamGenerateContent
//
// Attributes.Method MethodServerStreamingPredict sends an invoke stream to
// serverStreamingPredict: the body is a StreamingPredictRequest's JSON,
// {"inputs":[Tensor…],"parameters":Tensor} (Vertex's LLM streaming:
// inputs [{"structVal":{"prompt":{"stringVal":["…"]}}}], parameters
// {"structVal":{"maxOutputTokens":{"intVal":[256]}}}), the endpoint from
// the target. Each StreamingPredictResponse is a chunk whose Text is the
// first output's content (structVal.content.stringVal, else its
// stringVal); the stream has no finish marker, its end is the RPC's.
// Invoke refuses the method (ERR_INVALID_PARAM); a body that is not a
// StreamingPredictRequest with inputs is ERR_INVALID_PARAM before
// anything is sent.
//
// An invoke call sends the caller's bytes. Its RPC is chosen by this rule:
// a body that is a JSON object whose only members are "instances" (an array)
// and, optionally, "parameters", sent with a JSON content type (or none),
// goes to Predict; anything else goes to RawPredict as a google.api.HttpBody
// of Payload.ContentType (default application/json). Set
// CloudRequest.Attributes.Method to MethodPredict or MethodRawPredict to
// force one; another value, or forcing predict with a body that is not a
// predict request, is ERR_INVALID_PARAM naming Attributes.Method.
//
// A generate call's body is written by Encode: the JSON form of a
// GenerateContentRequest, as the REST API takes it — user and assistant
// messages as contents (roles "user" and "model"), system messages as
// systemInstruction, and generationConfig{maxOutputTokens, temperature,
// topP, stopSequences}. The GAPIC call sends protos, so each attempt decodes
// those bytes with protojson and adds the model; the bytes themselves are
// written once, with encoding/json, and replayed byte-identical on every
// attempt.
//
// Responses: Data is the response in JSON for predict and generateContent
// (protojson), the HttpBody's bytes for rawPredict. A generate response also
// has Text (the first candidate's text parts), FinishReason ("stop",
// "length", "content_filter", or the lower-case Vertex reason; a blocked
// prompt, answered with prompt feedback and no candidates, is
// "content_filter") and Usage
// (promptTokenCount, candidatesTokenCount). Metadata holds
// MetaDeployedModelID, MetaModelVersionID, MetaModel where the service said
// them, and any x-vertex-ai-* response header. Header holds the RPC's header
// metadata (a stream's as it opened) and then a unary call's trailer
// metadata, under canonical HTTP header names. CloudRequest.Header entries
// are sent as gRPC metadata (lower-case keys). Vertex takes no client
// request id, so CloudRequest.RequestID is not sent; RequestID of a generate
// response, streamed or not, is its responseId.
//
// An invoke response has Text (and, where the body says them,
// FinishReason and Usage) when its body is recognisably a generation, as
// the HTTP adapters fill it: a JSON body in the form of an OpenAI chat or
// completions answer (vLLM, SGLang, TGI's Messages API), TGI's
// {"generated_text",…} (or an array of them), predictions whose first item
// is a string or has content, text or generated_text (Model Garden
// containers), or a GenerateContentResponse. Any other body (scores,
// embeddings, bytes that are not JSON) leaves them empty.
//
// # Streams
//
// Each streamGenerateContent message is one chunk: Text is the first
// candidate's text parts, FinishReason and Usage as above, and Data the
// message's protobuf encoding (proto.Unmarshal it into an
// aiplatformpb.GenerateContentResponse). Data is not JSON on purpose: the
// chunk's arrival is stamped after the adapter returns it, and protojson
// would cost about 25 times the rest of the chunk's handling. A stream that
// ends without a finish reason is ERR_STREAM_INTERRUPTED.
//
// Each streamRawPredict message is one chunk of the HttpBody's bytes; Text
// is extracted best effort from OpenAI-compatible, TGI and Vertex JSON or
// SSE framing. A chunk read in one of those is content when it carries text,
// reasoning ("reasoning", "reasoning_content") or a tool-call delta (a
// role-only or usage-only
// event is not, so TTFT skips it); a non-empty chunk in any other form is
// content. The server's token usage is read from OpenAI "usage", Vertex
// "usageMetadata" and TGI "details.generated_tokens"; without one, output
// tokens are counted. A raw stream's clean end is the end of the RPC.
//
// A status that ends a stream before its first message is the whole
// answer: it is mapped as below, with that code's retryability (a
// RESOURCE_EXHAUSTED rate limit is a retryable ERR_THROTTLED). After the
// first message any status, the server's or grpc-go's (a broken
// connection, a message it could not read), is ERR_STREAM_INTERRUPTED and
// not retryable, since the caller has consumed part of the answer: the
// status's own portable code is kept in Details["code"], its name in
// ProviderCode, its details as below, and it carries no RetryAfter. Two
// keep their own codes: the caller's end of the RPC (its context, or the
// CANCELLED of a call whose client was closed) and a message over
// Options.MaxResponseBytes. A generate stream that ends without a finish
// reason is ERR_STREAM_INTERRUPTED too, retryable only when it delivered
// nothing. Closing a stream cancels the RPC.
//
// # Errors
//
// Errors arrive as *apierror.APIError (unary calls) or bare gRPC status
// errors (stream reads); the adapter reads the status and its details
// (ErrorInfo, QuotaFailure, RetryInfo, RequestInfo) and returns an
// *errcodes.Error of provider "gcp" that wraps the *apierror.APIError, so
// errors.As reaches it. ProviderCode is the canonical status name,
// HTTPStatus its HTTP equivalent, Details["reason"] and Details["domain"]
// the ErrorInfo's, RetryAfter the RetryInfo delay, RequestID the
// RequestInfo id.
//
//	gRPC status           HTTP  code                 refined by details
//	INVALID_ARGUMENT      400   ERR_INVALID_PARAM    ERR_PAYLOAD_TOO_LARGE with an ErrorInfo reason containing TOO_LARGE
//	FAILED_PRECONDITION   400   ERR_INVALID_PARAM    ERR_MODEL_ERROR with an ErrorInfo reason containing MODEL_ERROR (the container failed)
//	OUT_OF_RANGE          400   ERR_INVALID_PARAM
//	UNAUTHENTICATED       401   ERR_UNAUTHENTICATED
//	PERMISSION_DENIED     403   ERR_PERMISSION_DENIED
//	NOT_FOUND             404   ERR_NOT_FOUND
//	ALREADY_EXISTS        409   ERR_INVALID_PARAM    (a conflict: retrying the same request cannot help)
//	ABORTED               409   ERR_UNAVAILABLE      (a concurrency conflict: a retry may succeed)
//	RESOURCE_EXHAUSTED    429   ERR_THROTTLED        ERR_QUOTA_EXCEEDED when a violated quota is per hour, per day or longer, or
//	                                                 names no period (a QuotaFailure, an ErrorInfo reason containing QUOTA
//	                                                 but not RATE_LIMIT_EXCEEDED) without a RetryInfo of at most 20 s;
//	                                                 per-second and per-minute quotas stay throttled (see Quotas);
//	                                                 ERR_PAYLOAD_TOO_LARGE for grpc-go's "… larger than max" (no details)
//	CANCELLED             499   ERR_CANCELED
//	UNKNOWN               500   ERR_INTERNAL         ERR_MODEL_ERROR with an ErrorInfo reason containing MODEL_ERROR
//	INTERNAL              500   ERR_INTERNAL         ERR_MODEL_ERROR with an ErrorInfo reason containing MODEL_ERROR, or for grpc-go's
//	                                                 "failed to unmarshal the received message" (no details: the answer came
//	                                                 and cannot be read)
//	DATA_LOSS             500   ERR_INTERNAL
//	UNIMPLEMENTED         501   ERR_INVALID_PARAM
//	UNAVAILABLE           503   ERR_UNAVAILABLE      ERR_MODEL_NOT_READY with an ErrorInfo reason containing NOT_READY, SCALING, SCALE_UP, LOADING or COLD_START;
//	                                                 not retryable for grpc-go's "authentication handshake failed" (no details),
//	                                                 ERR_UNAUTHENTICATED when the certificate was refused
//	DEADLINE_EXCEEDED     504   ERR_TIMEOUT
//
// Errors without a gRPC status (context and transport errors) are left to
// cloudreq's own classification.
//
// New fails with ERR_UNAUTHENTICATED, not retryable, when Application
// Default Credentials find none (off Google Cloud with no credentials
// file: "could not find default credentials") or cannot read them (a
// GOOGLE_APPLICATION_CREDENTIALS file that is missing or not a credentials
// file); other New errors, conflicting options, are ERR_INVALID_PARAM. On a
// machine whose metadata server has no service account New succeeds and
// each call fails at once with UNAUTHENTICATED (grpc-go's status for
// credentials that give no token), ERR_UNAUTHENTICATED, before any
// request is sent.
//
// # Quotas
//
// RESOURCE_EXHAUSTED is a rate limit (ERR_THROTTLED, retryable) or a spent
// quota (ERR_QUOTA_EXCEEDED, not retryable) by what the error says of its
// quotas: the QuotaFailure violations' quota_id, quota_metric, subject
// and description, and the quota_limit, quota_id and quota_metric
// metadata of the ErrorInfo. A quota named per second, per minute or per
// 100 seconds ("GenerateContentInputTokensPerModelPerMinute",
// "…_per_minute_per_project_…", "requests per minute") refills: throttled.
// One named per hour, per day, week, month or year ("…PerDay…", "Daily
// Limit …") is spent: quota exceeded, whatever else is violated beside
// it. A quota that names no period (an allocation such as
// CPUS-PER-VM-FAMILY, or no id at all) is throttled when a RetryInfo
// asks for a retry within 20 s (cloudreq's default
// RetryOptions.MaxRetryAfter: the adapter does not see the call's
// options), else quota exceeded; without QuotaFailure or quota metadata,
// the ErrorInfo reason decides (RATE_LIMIT_EXCEEDED throttled, one
// containing QUOTA quota exceeded). RetryAfter is the RetryInfo delay in
// either case. Details keep the deciding violation (the first per-day one,
// else the first): quota_subject, quota_description, quota_api_service,
// quota_metric, quota_id, quota_dimensions ("k=v,…", sorted), quota_value
// and future_quota_value; quota_ids lists the ids of all violations when
// there are several, and the ErrorInfo's quota_* metadata (quota_limit,
// quota_location, …) fills the keys still empty.
//
// # Timing
//
// gRPC does not go through net/http/httptrace. The client carries the
// stats handler of package latency/grpctrace, and each RPC's context
// carries its attempt's latency.AttemptTrace (latency.ContextWithTrace),
// so gRPC's stats events fill the attempt: GotConn when the stream got
// its connection, WroteRequest when the request message was written,
// FirstByte when the response headers (or the trailers, or a message)
// arrived, and for an attempt that waited for a new connection
// ConnReused=false with the wait as ConnectStart..ConnectDone.
//
// # Cold starts
//
// Vertex reports no cold start of its own, so the adapter leaves
// CloudResponse.ServerStart nil; its scale-from-zero refusals map to
// ERR_MODEL_NOT_READY, which cloudreq's classifier reads as
// not-ready-then-ready evidence.
//
// # REST transport
//
// Options.Transport TransportREST sends every call over Vertex AI's REST
// API instead of gRPC, for networks that let no gRPC through: POST
// https://HOST/v1/RESOURCE:METHOD, HOST the regional host, the dedicated
// endpoint's DNS name (Options.DedicatedEndpoint; no endpoint-id header
// is needed there) or Options.Endpoint (a URL, or host[:port]: https,
// http with Insecure). The methods and the request model are the gRPC
// path's: predict and generateContent send the JSON body as it is,
// rawPredict and streamRawPredict the raw body with its Content-Type,
// streamGenerateContent asks for ?alt=sse (data: events of
// GenerateContentResponse), serverStreamingPredict reads Google's
// JSON-array stream ([{…},{…}], each element read as it is complete;
// Google's reference says only "a stream of StreamingPredictResponse"),
// and a stream that comes in the other framing is read as it came. The
// answers fill the same fields: Data is the response's JSON (a stream
// chunk's, its event or element), Metadata the x-vertex-ai-* headers, and
// a chunk's arrival is its timeline's (TTFT at the first content chunk).
// The requests go through the HTTP adapters' transport (or
// Options.HTTPClient) and are timed by httptrace. Tokens come from the
// credentials Options.ClientOptions name (option.WithCredentialsFile,
// option.WithTokenSource, …; their gRPC dial options are ignored), else
// Application Default Credentials, scope cloud-platform, cached and
// refreshed; over plain http they go to this machine only. Client returns
// nil.
//
// A REST error is Google's JSON object,
// {"error":{"code","message","status","details":[…]}}: it is read back
// into the google.rpc.Status it stands for (its details resolved by
// @type: ErrorInfo, RetryInfo, QuotaFailure, BadRequest, RequestInfo) and
// mapped by the gRPC table above, with the answer's HTTP status. An error
// object that arrives as a stream's event or element is the stream's
// error (before any message) or ERR_STREAM_INTERRUPTED, not retryable
// (after one), as a gRPC status ending a stream. Rows of its own:
//
//	REST answer                                        code                     retryable
//	429 RESOURCE_EXHAUSTED, RATE_LIMIT_EXCEEDED         ERR_THROTTLED            yes (RetryInfo → RetryAfter)
//	429 RESOURCE_EXHAUSTED, QuotaFailure per day        ERR_QUOTA_EXCEEDED       no
//	503 UNAVAILABLE, ErrorInfo MODEL_NOT_READY          ERR_MODEL_NOT_READY      yes
//	400 FAILED_PRECONDITION, ErrorInfo MODEL_ERROR      ERR_MODEL_ERROR          no
//	400 INVALID_ARGUMENT, ErrorInfo PAYLOAD_TOO_LARGE   ERR_PAYLOAD_TOO_LARGE    no
//	{"error":{"code":N}} without status                 the gRPC code of N's mapping
//	a body that is not Google's (proxy text, HTML)     by HTTP status (503 ERR_UNAVAILABLE, 502 ERR_UNAVAILABLE, …)
//	a container's OpenAI-style error body              its class (openai adapter's rules)
//	a 2xx body that is not the method's answer         ERR_MODEL_ERROR          no
//	a stream element that does not parse, after one    ERR_STREAM_INTERRUPTED   no
//	a stream cut short (no "]", no finish reason)      ERR_STREAM_INTERRUPTED   before content only
//	the token source failed                            ERR_UNAUTHENTICATED      no
//	a token over plain http to another machine (New)   ERR_INVALID_PARAM        no
//	an unknown Options.Transport (New)                 ERR_INVALID_PARAM        no
//
// # OpenAI-compatible chat
//
// OpenAPIAdapter (NewOpenAPI; service ServiceOpenAPI, "vertex-openai")
// speaks Vertex AI's OpenAI-compatible chat completions,
// POST https://LOCATION-aiplatform.googleapis.com/v1/projects/P/locations/L/endpoints/openapi/chat/completions
// (aiplatform.googleapis.com for "global"), with the openai adapter's
// wire: generate, invoke and SSE streams. Target.Model (or
// Target.Endpoint) is the model as Vertex names it. Tokens come from
// OpenAPIOptions.TokenSource or Application Default Credentials (scope
// cloud-platform), cached and refreshed before expiry; they are never sent
// over plain http unless AllowInsecureHTTP. Errors are mapped as the
// openai adapter's (its package doc), with Provider "gcp", plus:
//
//	error                                             code                   retryable
//	no Application Default Credentials (NewOpenAPI)   ERR_UNAUTHENTICATED    no
//	the token source failed                           ERR_UNAUTHENTICATED    no
//
// # Dedicated endpoints
//
// An endpoint created with a dedicated public endpoint is served at its own
// DNS name (dedicatedEndpointDns: ENDPOINT_ID.REGION-PROJECT_NUMBER.prediction.vertexai.goog),
// not the shared regional host. Options.DedicatedEndpoint names it: the
// adapter dials it on port 443 and adds to every call the
// x-vertex-ai-endpoint-id metadata (HeaderDedicatedEndpointID, the target's
// endpoint id) that gRPC calls to a dedicated endpoint need; requests keep
// the full resource name. A publisher-model target is refused with
// ERR_INVALID_PARAM (only endpoints are dedicated). With Options.Endpoint
// also set, that address is dialled (a proxy, the emulator) and the
// metadata still sent. cloudinfer bench and invoke reach a dedicated
// endpoint by its DNS name as --grpc-addr NAME:443 (plan grpc_addr): a
// name under prediction.vertexai.goog sets this option.
//
//	error                                             code                   retryable
//	a publisher model with DedicatedEndpoint          ERR_INVALID_PARAM      no
//	DedicatedEndpoint not a DNS name (New)            ERR_INVALID_PARAM      no
//
// # Transport options
//
// The client has no gax retries and no default timeouts (cloudreq's retry
// loop and deadlines are in charge), gRPC retries are disabled, and the
// SDK's default OpenTelemetry handler is off (cloudreq observers trace
// calls). Options.Insecure dials Options.Endpoint in plain text with
// authentication off, for the emulator; credentials never travel in plain
// text.
//
// A response message is bounded by Options.MaxResponseBytes (default
// DefaultMaxResponseBytes, 64 MiB, the HTTP adapters' bound on a body;
// the aiplatform client alone accepts 2 GiB, read whole into memory): a
// larger unary response, or a larger message of a stream, fails with
// ERR_PAYLOAD_TOO_LARGE, not retried.
//
// Connections with calls in flight send keepalive pings: one that
// received nothing for 5 minutes is pinged, and closed when no answer
// comes within 20 s, failing its calls with ERR_UNAVAILABLE (retryable)
// or, for a stream that delivered a chunk, ERR_STREAM_INTERRUPTED. A dead
// server, or a connection a NAT or load balancer dropped silently, is so
// found within about 5 minutes instead of after the operating system's
// TCP timeouts, which may take far longer. Idle connections are not
// pinged. Five minutes is the most often a gRPC server accepts pings by
// default (grpc-go's enforcement policy): a shorter time would make such a
// server answer a long call's pings with GOAWAY too_many_pings and fail
// the call. Against a server that permits more, pass a shorter one.
//
// Both are dial options placed before Options.ClientOptions, which may
// override them: option.WithGRPCDialOption with
// grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(n)) or
// grpc.WithKeepaliveParams(…).
package vertex
