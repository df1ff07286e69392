// Package sagemaker is the cloudreq adapter for Amazon SageMaker real-time
// endpoints: provider "aws", service "sagemaker", actions "invoke" and
// "generate", streaming included. It is built on aws-sdk-go-v2's
// sagemakerruntime client (InvokeEndpoint and
// InvokeEndpointWithResponseStream), with the SDK's own retries off:
// cloudreq's retry loop is in charge.
//
//	ad, err := sagemaker.New(ctx, sagemaker.Options{Region: "us-east-1"})
//	client, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}})
//	resp, err := client.Invoke(ctx, &cloudreq.CloudRequest{
//		Provider: "aws", Service: "sagemaker", Action: "invoke",
//		Target:  cloudreq.Target{Endpoint: "my-endpoint"},
//		Payload: cloudreq.Payload{Body: []byte(`{"inputs":"Hello"}`)},
//	})
//
// # Requests
//
// Target.Endpoint is the endpoint name, which every request needs (a request
// without one fails before it is sent: Adapter.Validate); Target.Variant the
// target production variant; Target.Model the target model of a multi-model
// endpoint (InvokeEndpoint only). Leave both empty for a plain endpoint:
// SageMaker refuses a variant the endpoint does not have, and a target model
// on an endpoint that is not multi-model, with a ValidationError
// (ERR_INVALID_PARAM). Attributes.InferenceComponent, CustomAttributes,
// SessionID, InferenceID (default: CloudRequest.RequestID, when it is a
// valid inference id — 1 to 64 printable ASCII characters, the first not a
// space — since SageMaker refuses the call otherwise),
// TargetContainerHostname, EnableExplanations (a JMESPath override of the
// endpoint's Clarify setting; InvokeEndpoint only, a stream refuses it with
// ERR_INVALID_PARAM) and PrefixAwareID (the routing hint of PREFIX_AWARE
// endpoints) become the matching SageMaker headers.
// CloudRequest.Header entries are sent as extra HTTP headers (SageMaker
// drops the ones it does not know).
//
// "invoke" sends Payload as it is, with its ContentType (default
// application/json) and Accept. "generate" writes Generate in the endpoint's
// Dialect: DialectMessages (the default), the OpenAI chat body served by the
// Messages API of LMI and TGI containers, or DialectTGI, the
// {"inputs","parameters"} body of Hugging Face TGI containers. The dialect is
// chosen by Options.Dialect, per endpoint by Options.EndpointDialects, and per
// request by Attributes.Dialect (a Dialect's string; another value is
// refused with ERR_INVALID_PARAM naming Attributes.Dialect).
//
// # Responses
//
// Generate responses are read whatever their shape: OpenAI chat JSON, TGI
// [{"generated_text":…}] or {"generated_text":…,"details":{"finish_reason",
// "generated_tokens"}}. TGI finish reasons eos_token and stop_sequence are
// reported as "stop". An "invoke" response whose body is one of those
// shapes gets Text, FinishReason and Usage the same way; any other body
// (another model's answer, an error object, CSV) is left to the caller in
// Data, with Text empty and no error. Metadata holds X-Amzn-Invoked-Production-Variant,
// X-Amzn-SageMaker-New-Session-Id, X-Amzn-SageMaker-Closed-Session-Id and
// X-Amzn-SageMaker-Custom-Attributes; RequestID is x-amzn-RequestId;
// Header is the HTTP response's headers (a stream's when it opens).
//
// Streams yield, for "invoke", each PayloadPart's bytes; for "generate", one
// chunk per event of the model's stream (lines end with LF, CRLF or CR),
// reassembled across PayloadParts: SSE "data: {…}" fields, read as soon as
// they hold a whole JSON object (one spread over several data lines is
// joined, as SSE says), or bare JSON lines, holding OpenAI chunks
// (choices[0].delta.content, finish_reason, usage: a messages dialect
// stream asks for it with stream_options.include_usage, unless
// Options.OmitStreamUsage is set) or TGI token events
// ({"token":{"text"},"generated_text","details"}). A generate stream is
// complete after a finish reason, "data: [DONE]" or TGI's final event; one
// that ends otherwise fails with ERR_STREAM_INTERRUPTED. So does a body cut
// mid-stream (which the SDK alone would report as a clean end).
//
// An error the stream itself carries — a ModelStreamError or
// InternalStreamFailure exception frame, or an error object the model
// writes into its stream — is, when no content has reached the caller,
// the whole answer: its own code (table below; an error object is
// classified by the status it states, its code or its type, as an
// OpenAI-compatible or TGI server's error body is) with that code's
// retryability. After content it is ERR_STREAM_INTERRUPTED, not retryable,
// with its own code in Details["code"]. Content is text (generate) or a
// part's bytes (invoke): a role-only chunk is none.
//
// # Errors
//
// Errors are mapped from the SDK's typed errors and smithy.APIError codes
// first, then the HTTP status, then transport errors (errcodes.FromTransport).
// Two cases have no code of their own and are told by their message, as a
// last resort: the ValidationError of a missing endpoint, and the
// ModelError of an invocation that timed out before the container answered
// (OriginalStatusCode 0). Every error is an
// *errcodes.Error with Provider "aws", ProviderCode (the AWS error code),
// HTTPStatus, RequestID and RetryAfter, and wraps the SDK error, so
// errors.As reaches *types.ModelError and the others. ModelError keeps
// OriginalStatusCode, OriginalMessage and LogStreamArn in Details;
// ModelStreamError keeps its ErrorCode. A ModelError whose
// OriginalStatusCode is 429 or 503 is the container's own back-pressure
// (TGI and LMI answer "Model is overloaded"), not a failed model: it is
// ERR_THROTTLED or ERR_UNAVAILABLE, retryable.
//
//	AWS error (HTTP status)                          code                    retryable
//	ValidationError (400)                            ERR_INVALID_PARAM       no
//	ValidationError "Endpoint … not found" (400)     ERR_NOT_FOUND           no
//	ModelError (424)                                 ERR_MODEL_ERROR         no
//	ModelError "invocation timed out" (424)          ERR_TIMEOUT             yes
//	ModelError OriginalStatusCode 429 (424)          ERR_THROTTLED           yes (the container is overloaded)
//	ModelError OriginalStatusCode 503 (424)          ERR_UNAVAILABLE         yes
//	ModelNotReadyException (429)                     ERR_MODEL_NOT_READY     yes (a cold-start signal)
//	ThrottlingException (400 or 429)                 ERR_THROTTLED           yes
//	ServiceUnavailable (503)                         ERR_UNAVAILABLE         yes
//	InternalFailure (500)                            ERR_INTERNAL            yes
//	InternalDependencyException (530)                ERR_UNAVAILABLE         no
//	ModelStreamError StreamBroken (in stream)        ERR_UNAVAILABLE         yes
//	ModelStreamError ModelInvocationTimeExceeded     ERR_TIMEOUT             yes
//	ModelStreamError, another ErrorCode              ERR_MODEL_ERROR         no
//	InternalStreamFailure (in stream)                ERR_INTERNAL            yes
//	an error object in a generate stream             by its status, code or type (rate_limit_exceeded,
//	                                                   TGI overloaded: ERR_THROTTLED; validation:
//	                                                   ERR_INVALID_PARAM; …), else ERR_MODEL_ERROR
//	a generate stream's data field that is not JSON  ERR_MODEL_ERROR         no
//	any in-stream error above, after content         ERR_STREAM_INTERRUPTED  no (its own code in Details["code"])
//	any error with HTTP 413                          ERR_PAYLOAD_TOO_LARGE   no
//	a 2xx body longer than MaxResponseBytes          ERR_PAYLOAD_TOO_LARGE   no
//	a 2xx generate body that is no generation, or    ERR_MODEL_ERROR         no
//	  an error object (its type or code in ProviderCode)
//	a plain-text 503 with no X-Amzn-ErrorType        ERR_UNAVAILABLE         yes
//	  (a fronting proxy's "upstream connect error … overflow")
//	AccessDeniedException (403)                      ERR_PERMISSION_DENIED   no
//	InvalidSignatureException, UnrecognizedClientException,
//	ExpiredTokenException, IncompleteSignature,
//	MissingAuthenticationToken (400 or 403)          ERR_UNAUTHENTICATED     no
//	the credentials provider failed (no request)     ERR_UNAUTHENTICATED     no
//	  (its service unreachable or slow: the transport's code, as below)
//	any other error code                             by HTTP status          by code
//
// Asynchronous inference (AsyncAdapter, InvokeAsync, WaitAsync) adds:
//
//	situation                                        code                    retryable
//	a body over 128000 bytes, no InputPrefix         ERR_PAYLOAD_TOO_LARGE   no
//	Target.Variant, Target.Model, InferenceComponent,
//	  SessionID, TargetContainerHostname,
//	  EnableExplanations or PrefixAwareID set        ERR_INVALID_PARAM       no (InvokeEndpointAsync has none)
//	an object at the failure location                ERR_MODEL_ERROR         no (ProviderCode AsyncInferenceFailure;
//	                                                   Details failure_location, inference_id)
//	no output before the call's deadline             ERR_TIMEOUT             no (the inference may still finish)
//	S3 NoSuchKey (404)                               not an error: polled again
//	S3 NoSuchBucket (404)                            ERR_NOT_FOUND           no
//	S3 AccessDenied (403)                            ERR_PERMISSION_DENIED   no
//	S3 InvalidAccessKeyId, SignatureDoesNotMatch,
//	  ExpiredToken (403/400)                         ERR_UNAUTHENTICATED     no
//	S3 SlowDown (503)                                ERR_THROTTLED           yes
//	any other S3 error                               as the table above, by code then status
//
// A signature or access error whose response Date is more than 4 minutes
// from the signing time is clock skew: the SDK records the server's offset
// and the error is retryable, so the retry signs on the server's clock. A
// refusal of the corrected signature is final: skew is retried once.
//
// Messages never hold credentials: the canonical request and string to sign
// that signature errors echo, and access key ids, are removed.
//
// # Asynchronous inference
//
// AsyncAdapter (NewAsync; service ServiceAsync, "sagemaker-async") serves
// an endpoint with an AsyncInferenceConfig: one cloudreq call submits the
// payload with InvokeEndpointAsync — inline up to MaxAsyncInlineBody
// bytes, a larger one first uploaded under AsyncOptions.InputPrefix and
// sent as its InputLocation — then polls the returned output and failure
// locations (WaitAsync: from WaitOptions.PollInterval, doubling up to
// MaxPollInterval) until one holds an object or the call's deadline
// passes, and answers as InvokeEndpoint would: Data is the output object,
// Text, FinishReason and Usage are read from it, Metadata holds
// X-Amzn-SageMaker-OutputLocation, -FailureLocation and -Inference-Id.
// There is no stream. Attributes.CustomAttributes and InferenceID are
// sent; the targets InvokeEndpointAsync has not are refused (table below).
// Adapter.InvokeAsync and WaitAsync are the two halves, for a service that
// submits now and collects later (or on SageMaker's SNS notification).
//
// Results are read through an ObjectStore: S3Store, the S3 SDK's
// GetObject and PutObject on the adapter's AWS configuration (the
// default), or any store (tests use an in-memory fake). What is real and
// what is faked: against AWS, everything is real — SageMaker queues and
// runs the request and writes to the endpoint's S3 paths; the credentials
// need sagemaker:InvokeEndpointAsync and s3:GetObject on those paths
// (s3:PutObject on InputPrefix). Against the emulator, InvokeEndpointAsync
// is served as the API is (202, locations, the same validation), the
// inference runs at once through the endpoint's latency and fault model,
// and its result is written to the emulator's in-memory S3 at
// /s3/BUCKET/KEY (path-style; AsyncOptions.S3Endpoint), which the S3 SDK
// reads unchanged. The emulator has no queue limits, TTL expiry, SNS or
// scaling to zero.
//
// # OpenAI-compatible route
//
// OpenAIAdapter (NewOpenAI; service ServiceOpenAI, "sagemaker-openai")
// speaks the OpenAI chat completions route AWS documents for real-time
// endpoints and inference components ("Invoke endpoints with
// OpenAI-compatible APIs", SageMaker AI developer guide):
//
//	POST https://runtime.sagemaker.REGION.amazonaws.com/endpoints/ENDPOINT/openai/v1/chat/completions
//	POST https://runtime.sagemaker.REGION.amazonaws.com/endpoints/ENDPOINT/inference-components/IC/openai/v1/chat/completions
//	Authorization: Bearer sagemaker-api-key-…
//
// with the openai adapter's wire: generate, invoke and SSE streams, the
// container's answer as it is. Target.Endpoint is the endpoint,
// Attributes.InferenceComponent the component (in the path: the route does
// not take the X-Amzn-SageMaker-Inference-Component header), Target.Model
// the body's "model" if set (SageMaker routes by the URL; vLLM refuses an
// endpoint name there).
//
// The bearer token is not fetched from an API: like the SageMaker Python
// SDK's sagemaker.core.token_generator.generate_token, MintBearerToken
// presigns (SigV4, query string, signing name "sagemaker", the endpoint's
// region) POST https://sagemaker.amazonaws.com/?Action=CallWithBearerToken
// with X-Amz-Expires the lifetime (at most 12 hours, AWS's limit, and no
// longer than the credentials'), drops "https://", appends "&Version=1",
// base64-encodes it and prefixes "sagemaker-api-key-". The signer needs
// sagemaker:CallWithBearerToken and sagemaker:InvokeEndpoint. NewOpenAI
// mints them from the AWS configuration's credentials through
// PresignedTokens, which keeps a token and mints the next before it
// expires (a fifth of its lifetime ahead, at most 15 minutes) or after the
// route refused it (401, 403); OpenAIOptions.TokenSource takes any other
// source (StaticBearerToken: one minted elsewhere). A token is a secret:
// it is never logged nor quoted in an error, and never sent over plain
// http unless AllowInsecureHTTP.
//
// What AWS documents: the path, the bearer scheme, the 12-hour limit, the
// two IAM actions, and generate_token. What is not in AWS's documentation
// and is taken from the Python SDK's generator as other implementations
// reproduce it: the token's exact construction above; from a third party's
// measurements against real endpoints, unconfirmed: the inference
// component in the path, the front end's errors in OpenAI's {"error":…}
// envelope, the container's errors quoted in its message ("Received server
// error (500) from primary with message …"), and the no-capacity 400 of an
// endpoint scaled to zero. The emulator serves the route that way.
//
// Errors are mapped as the openai adapter's (its package doc), with
// Provider "aws", then re-read for SageMaker's own:
//
//	error                                             code                   retryable
//	the credentials provider failed (no request)      ERR_UNAUTHENTICATED    no (as in the table above)
//	the token could not be made, or a static one      ERR_UNAUTHENTICATED    no
//	  expired (no request)
//	type ThrottlingException                          ERR_THROTTLED          yes
//	type UnrecognizedClientException, ExpiredToken…   ERR_UNAUTHENTICATED    no (the token is dropped)
//	  (the auth codes of the table above)
//	type AccessDeniedException (403)                  ERR_PERMISSION_DENIED  no (the token is dropped)
//	400 "Endpoint/Inference component … has no        ERR_MODEL_NOT_READY    yes (scaling from zero)
//	  capacity"
//	400 "… not found"                                 ERR_NOT_FOUND          no
//	500 "Received server error (500) from primary …"  ERR_MODEL_ERROR        no (the container failed)
//	another container status, quoted                  by its status (openai table)
//
// # Credentials and endpoints
//
// New loads the default AWS configuration (config.LoadDefaultConfig) unless
// Options.Config is given; Options.Region and Options.Credentials override
// it. Credentials are cached (aws.CredentialsCache, as LoadDefaultConfig
// does): a provider given in Options.Credentials or Options.Config that is
// not cached already is wrapped, so its Retrieve runs when the credentials
// near expiry, not on every request. Options.BaseEndpoint points the client
// elsewhere, the local emulator for instance; since requests are signed, a
// plain-http endpoint is refused unless Options.AllowInsecureHTTP is set.
//
// # Connections
//
// Without Options.HTTPClient (in Options or Options.Config) the adapter
// uses the SDK's default client with its settings, except that its
// transport keeps up to 256 idle connections per host (the SDK keeps 10,
// so concurrent calls would open and close connections) with no total
// limit, and bounds the wait for a response's headers to
// ResponseHeaderTimeout, 15 minutes (so that an endpoint that never
// answers cannot hold a call forever; a generous bound, since
// InvokeEndpoint's headers come only with the whole answer). A timeout
// waiting for headers is ERR_TIMEOUT, retryable.
// Adapter.Close closes that client's idle connections. A caller's
// HTTPClient is the caller's to tune and to close: Close leaves it alone.
package sagemaker
