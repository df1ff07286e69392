// Package vertex is the cloudreq adapter for Google Vertex AI online
// prediction (provider "gcp", service "vertex"), built on the official
// gRPC client cloud.google.com/go/aiplatform/apiv1 PredictionClient.
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
// "gemini-2.0-flash". Without Options.Endpoint the adapter talks to
// {Location}-aiplatform.googleapis.com:443 with Application Default
// Credentials, and refuses resources of another location (use one adapter
// per location).
//
// # Methods
//
//	Action    Invoke                          Stream
//	invoke    predict or rawPredict (below)   streamRawPredict
//	generate  generateContent                 streamGenerateContent
//
// An invoke call sends the caller's bytes. Its RPC is chosen by this rule:
// a body that is a JSON object whose only members are "instances" (an array)
// and, optionally, "parameters", sent with a JSON content type (or none),
// goes to Predict; anything else goes to RawPredict as a google.api.HttpBody
// of Payload.ContentType (default application/json). Set
// CloudRequest.Attributes.Extra[AttrMethod] ("vertex.method") to
// MethodPredict or MethodRawPredict to force one; forcing predict with a
// body that is not a predict request is ERR_INVALID_PARAM.
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
// them, and any x-vertex-ai-* response header. CloudRequest.Header entries
// are sent as gRPC metadata (lower-case keys). Vertex takes no client
// request id, so CloudRequest.RequestID is not sent; RequestID of a generate
// response is its responseId.
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
// A status that arrives mid-stream is mapped as below, except that a
// transport break after the first message (UNAVAILABLE with no details, or
// grpc-go's RST_STREAM / missing-trailers / connection messages) is
// ERR_STREAM_INTERRUPTED. An interruption before the first message is
// retryable (no chunk reached the caller), later ones are not. Closing a
// stream cancels the RPC.
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
//	RESOURCE_EXHAUSTED    429   ERR_THROTTLED        ERR_QUOTA_EXCEEDED with a QuotaFailure detail or an ErrorInfo reason containing QUOTA,
//	                                                 unless the reason is RATE_LIMIT_EXCEEDED (a per-minute rate quota: throttled);
//	                                                 ERR_PAYLOAD_TOO_LARGE for grpc-go's "… larger than max" (no details)
//	CANCELLED             499   ERR_CANCELED
//	UNKNOWN               500   ERR_INTERNAL         ERR_MODEL_ERROR with an ErrorInfo reason containing MODEL_ERROR
//	INTERNAL              500   ERR_INTERNAL         ERR_MODEL_ERROR with an ErrorInfo reason containing MODEL_ERROR
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
// # Timing
//
// gRPC does not go through net/http/httptrace. The client carries
// latency.NewGRPCStatsHandler, and each RPC's context carries its attempt's
// latency.AttemptTrace (latency.ContextWithTrace), so gRPC's stats events
// fill the attempt: GotConn when the stream got its connection,
// WroteRequest when the request message was written, FirstByte when the
// response headers (or the trailers, or a message) arrived, and for an
// attempt that waited for a new connection ConnReused=false with the wait
// as ConnectStart..ConnectDone.
//
// # Cold starts
//
// The emulator's x-emulator-cold-start and x-emulator-cold-start-ms header
// metadata become CloudResponse.ServerStart (the server-reported cold-start
// evidence). Vertex itself reports no such thing; its scale-from-zero
// refusals map to ERR_MODEL_NOT_READY, which cloudreq's classifier reads as
// not-ready-then-ready evidence.
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
