// Package cloudreq is cloudinfer's portable inference API: CloudRequest in,
// CloudResponse (or a Stream) out, on any registered provider adapter.
//
// Every call takes the same path:
//
//	Client.Invoke / Client.Stream
//	  adapter Validate                 the provider's required fields (Validator); final
//	  validation + PreValidate hooks   read-only; an error is final, never retried
//	  PreSerialize hooks               may rewrite (a copy of) the request; runs once
//	  adapter Encode                   the provider's LLM dialect, for ActionGenerate
//	  retry loop                       backoff with full jitter, Retry-After, budget, deadlines,
//	                                   cold-start wait for not-ready answers
//	    adapter Invoke / Stream        one attempt, timed through httptrace
//	    PostDeserialize hooks          see the normalized outcome; may enrich or veto
//	  CloudResponse                    Data, Usage, Timing (latency.Timeline), Start (cold|warm)
//
// Requests speak in Provider / Service / Action:
//
//	Provider  Service            Actions
//	aws       sagemaker          invoke, generate
//	azure     azureml            invoke, generate
//	gcp       vertex             invoke (predict/rawPredict), generate (generateContent)
//	alibaba   pai-eas            invoke, generate
//	openai    openai-compatible  invoke, generate
//
// Each provider has one service, so Service may be left empty: the client
// fills it from the adapter registered for the Provider. Whether a call
// streams is the method (Invoke or Stream), not the action. A
// combination no registered adapter supports fails with ERR_INVALID_PARAM and
// a message listing what is supported.
//
// GenerateInput is one typed model of what LLM applications send: message
// parts (text, images), tool calls and results, tools and tool choice,
// JSON mode and JSON schemas, seed, n, penalties, top-k, logprobs, the
// token-limit member, reasoning effort and budget, and Extra members
// merged into the body. Each adapter writes its dialect and refuses, with
// ERR_INVALID_PARAM naming the dialect, what the dialect cannot express;
// docs/generate.md has the feature × dialect table. Answers carry
// ToolCalls, Reasoning (apart from Text), Logprobs, Choices and
// Usage.ReasoningTokens; streams carry the same per chunk, with tool-call
// fragments assembled by the client (ToolCallAssembler) and the whole
// call set on the chunk that completes it.
//
// Every error is an *errcodes.Error. Retries follow RetryOptions: by default
// 3 attempts, full-jitter exponential backoff from 100 ms capped at 20 s,
// server Retry-After honoured up to 20 s (and never past the call's
// deadline), and a client-wide 500-token retry budget. A Stream is retried
// only until its first chunk reached the caller. Cancellation during a
// backoff returns at once with ERR_CANCELED.
//
// Answers that say the model is not ready (ERR_MODEL_NOT_READY: an
// endpoint scaling from zero, a model loading) are retried apart, so that
// a cold start is waited out rather than turned into an error: for up to
// RetryOptions.ColdStartWait (5 min by default) from the first such
// answer, at the server's Retry-After or with full-jitter backoff capped
// at ColdStartMaxDelay (5 s), taking neither attempts from MaxAttempts
// nor tokens from the budget, within the call's Timeout and context. The
// call that then succeeds is cold (latency.ReasonNotReadyThenReady): its
// model-ready time, where its SLA clock starts, is the send that found the
// model up, and its cold-start overhead the time from its first send to
// it. When the wait is spent the call fails with ERR_MODEL_NOT_READY. A
// negative ColdStartWait retries not-ready answers like any other
// retryable error.
//
// No panic crosses the API: one in a hook or adapter fails the call with
// ERR_INTERNAL, one in an Observer is dropped. A typed nil error (a nil
// *T in the error interface) from a hook, adapter or stream is read as no
// error.
//
// A credential a server quotes back in an error is redacted from it: the
// values of the request's credential headers (CredentialHeaders, the one
// list of them), and those of the adapter. An adapter that knows its
// credentials says so (CredentialSource); for any other, the client
// records the credential headers the HTTP transport writes, which costs
// each request a few allocations.
//
// Observers (CallOptions.Observers) see each call start and end, and each
// attempt's request and outcome (AttemptInfo, and AttemptStarter for its
// start); AttemptInfo.Scrub replaces the same credentials in whatever an
// observer copies out. Package telemetry's spans, metrics and logs are
// observers.
//
// One options style everywhere: New(Options, ...func(*Options)), and per
// call ...func(*CallOptions) applied to a copy. Options holds what only
// the client has (Adapters; ScaleToZeroWindow, which its start classifier
// shares across calls) and embeds CallOptions, the defaults of every call:
// hooks, retries, timeouts, observers, logger. A call's option functions
// reach only those, so none is silently ignored; PerCall turns a client
// option function that sets only CallOptions (such as
// telemetry.WithObserver) into a call's, and fails the call if it sets a
// client-only one.
package cloudreq
