// Package telemetry plugs cloudinfer into the observability stack an
// operator already runs: OpenTelemetry spans and metrics that follow the
// GenAI semantic conventions (pinned to semconv v1.41.0 and its genaiconv
// package), a Prometheus endpoint and OTLP export for them, and log/slog
// logging. All three are cloudreq observers that write a fixed set of
// fields (see "What leaves the process").
//
// # Enabling it
//
// An Observer is a cloudreq.Observer. Give it a TracerProvider and a
// MeterProvider, or leave them nil for otel.GetTracerProvider() and
// otel.GetMeterProvider():
//
//	obs, err := telemetry.New(telemetry.Options{TracerProvider: tp, MeterProvider: mp})
//	client, err := cloudreq.New(opts, telemetry.WithObserver(obs),
//		telemetry.WithLogging(slog.Default(), telemetry.LogOptions{}))
//
// WithLogging adds a LogObserver; it does not touch the hooks.
//
// ServePrometheus serves a MeterProvider's metrics at /metrics (what
// "cloudinfer bench --metrics-addr :9464" uses); OTLP returns providers that
// export over OTLP/HTTP (--otlp ENDPOINT). Prompts, completions and error
// messages are never recorded unless Options.CaptureContent (spans) or
// LogOptions.CaptureContent (logs) is set.
//
// # Names
//
// gen_ai.provider.name is a predefined value where the conventions have one
// and a custom value, in the conventions' spelling, where they have none:
//
//	provider   service             gen_ai.provider.name
//	aws        sagemaker           aws.sagemaker        (custom)
//	azure      azureml             azure.ml             (custom; Azure ML online endpoints)
//	gcp        vertex              gcp.vertex_ai
//	alibaba    pai-eas             alibaba.pai_eas      (custom)
//	openai     openai-compatible   openai
//	other      any                 the provider string
//
// gen_ai.operation.name is "chat" for the generate action (portable chat
// messages), "text_completion" for generate sent to a legacy completions
// route (Target.Path ending in /completions, not /chat/completions),
// "generate_content" for generate on Vertex (generateContent), and the
// custom "invoke" for the invoke action, whose payload is opaque.
//
// # Spans
//
// Each call is one span of kind CLIENT named "{gen_ai.operation.name}
// {gen_ai.request.model}" ("invoke" or "chat" alone when the request names
// no model), from the call's start to its end (for a Stream, until it is
// drained or closed). The span starts before the PreSerialize hooks run;
// when they change Target.Endpoint, Target.Model or Target.Variant, the
// span's name and target attributes (and every metric's) are those of the
// request the attempts sent, and so are the gen_ai.request.* attributes of
// generation and the captured input messages. Its attributes:
//
//	gen_ai.operation.name           always
//	gen_ai.provider.name            always
//	gen_ai.request.stream           always: Stream (true) or Invoke (false)
//	gen_ai.request.model            Target.Model, when set (after the PreSerialize hooks)
//	gen_ai.request.max_tokens       generate, when set
//	gen_ai.request.temperature      generate, when set
//	gen_ai.request.top_p            generate, when set
//	gen_ai.request.stop_sequences   generate, CaptureContent only (scrubbed)
//	gen_ai.input.messages           generate, CaptureContent only (JSON, the conventions' schema; scrubbed)
//	gen_ai.output.messages          non-streaming generate, CaptureContent only (scrubbed)
//	gen_ai.response.finish_reasons  when the response gave one
//	gen_ai.usage.input_tokens       when known
//	gen_ai.usage.output_tokens      when known: server usage, or counted from a stream's chunks (never a counted 0)
//	gen_ai.response.time_to_first_chunk  streams: first content chunk − final attempt's send (s)
//	server.address, server.port     when Target.Endpoint is a URL (host and port only; after the hooks)
//	http.response.status_code       the final status, success or failure
//	error.type                      failed calls: the errcodes code (ERR_THROTTLED, …; _OTHER for a code outside the set)
//	cloudinfer.service              CloudRequest.Service
//	cloudinfer.action               CloudRequest.Action
//	cloudinfer.endpoint             the endpoint name, or its URL without user info, query and fragment
//	cloudinfer.variant              Target.Variant, when set
//	cloudinfer.request.class        CloudRequest.Class, when set
//	cloudinfer.request.id           the client request id (after the PreSerialize hooks), when it is an id
//	cloudinfer.response.request_id  the provider's request id (scrubbed), when it is an id
//	cloudinfer.attempts             number of attempts made
//	cloudinfer.e2e                  call duration, start to end (s)
//	cloudinfer.phase.queue          call start → final attempt's send, backoff included (s)
//	cloudinfer.usage.source         with gen_ai.usage.output_tokens: "server" or "counted"
//	cloudinfer.start.kind           warm, cold or suspected-cold
//	cloudinfer.start.reason         the evidence (server-reported, not-ready-then-ready, …)
//	cloudinfer.start.connection_cold  the final attempt opened a new connection
//	cloudinfer.start.overhead       cold-start overhead (s), when known
//	cloudinfer.ttft                 streams: TTFT on the SLA clock (model-ready for known cold starts) (s)
//	cloudinfer.sla_clock            streams: "send" or "model-ready"
//	cloudinfer.tpot                 streams with ≥ 2 output tokens: (E2E − TTFT)/(N_out − 1) (s)
//	cloudinfer.error.retryable      failed calls
//	cloudinfer.error.provider_code  failed calls, the provider's native code, when it is a code
//
// A failed call's span has status Error with its code as the description
// ("ERR_THROTTLED"), and with CaptureContent its message too ("CODE:
// message", scrubbed); the native error it wraps, which may quote what a
// server or transport saw, is never recorded.
//
// Each attempt is a child span of kind INTERNAL named "cloudinfer.attempt"
// (off with Options.NoAttemptSpans), timed from the attempt's send to its
// end, with cloudinfer.attempt.number, cloudinfer.attempt.backoff (s),
// cloudinfer.connection.reused, http.response.status_code, error.type and
// cloudinfer.error.provider_code of a failed attempt (when it is a code),
// the phase durations
// cloudinfer.phase.dns, .connect, .tls, .server_wait (request written → first
// byte) and .time_to_first_byte (send → first byte), in seconds, and one
// event per phase timestamp: dns.start, dns.done, connect.start,
// connect.done, tls.start, tls.done, got_conn, request.written, first_byte.
//
// # Metrics
//
// The meter's scope is ScopeName; names, units and bucket boundaries are the
// conventions' where they define them:
//
//	name                                             instrument         unit        buckets
//	gen_ai.client.operation.duration                 float histogram    s           DurationBuckets
//	gen_ai.client.token.usage                        int histogram      {token}     TokenBuckets
//	gen_ai.client.operation.time_to_first_chunk      float histogram    s           DurationBuckets
//	gen_ai.client.operation.time_per_output_chunk    float histogram    s           DurationBuckets
//	cloudinfer.client.operation.cold_start.overhead  float histogram    s           DurationBuckets
//	cloudinfer.client.operation.retries             int counter        {retry}
//	cloudinfer.client.operation.throttles            int counter        {throttle}
//
//	DurationBuckets = 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92
//	TokenBuckets    = 1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864
//
// Every metric carries gen_ai.operation.name, gen_ai.provider.name and,
// when known, gen_ai.request.model, server.address, server.port and
// cloudinfer.endpoint (bounded by the endpoints a client is configured
// with). Besides:
//
//   - operation.duration: every call, start to end; error.type on failure,
//     cloudinfer.start.kind on success.
//   - token.usage: successful calls whose usage is known, one value per
//     gen_ai.token.type (input, output). The output value is recorded only
//     when the count is known: reported by the server (zero included), or
//     counted from a stream's chunks and more than zero (an invoke
//     stream's opaque chunks count nothing, which is not zero tokens). It
//     carries cloudinfer.usage.source, "server" or "counted", so that
//     server-reported and counted values can be told apart.
//   - time_to_first_chunk: successful streams, first content chunk − final
//     attempt's send (package latency's TTFT from send), with
//     cloudinfer.start.kind so that cold starts can be told apart.
//   - time_per_output_chunk: successful streams, each gap between
//     consecutive content chunks (package latency's ITL per chunk).
//   - cold_start.overhead: cold calls with a known overhead (model ready −
//     first send), with cloudinfer.start.reason.
//   - retries: one per attempt after the first, with the error.type of the
//     attempt that was retried.
//   - throttles: one per attempt refused with ERR_THROTTLED.
//
// The per-request numbers come from latency.Measure, the one implementation
// of package latency's formulas. Through the Prometheus exporter the names
// become gen_ai_client_operation_duration_seconds,
// gen_ai_client_token_usage, gen_ai_client_operation_time_to_first_chunk_seconds,
// gen_ai_client_operation_time_per_output_chunk_seconds,
// cloudinfer_client_operation_cold_start_overhead_seconds,
// cloudinfer_client_operation_retries_total and
// cloudinfer_client_operation_throttles_total.
//
// # Logs
//
// A LogObserver (WithLogging) logs each request before its first attempt
// and each attempt's outcome when it ends; see LogObserver for the fields
// of a record. The client's own retry records (Options.Logger) go to the
// same logger.
//
// # What leaves the process
//
// Spans, metrics and logs hold a fixed, allow-listed set of fields, as
// azcore's and openai-go's logging do, rather than arbitrary values searched
// for secrets: codes, counts, sizes and timings; the names the program chose
// (provider, service, action, model, variant, endpoint name, class); ids and
// codes a server sent (request ids, provider codes) only when they are one
// run of letters, digits and . _ : / - of at most 128 bytes; a URL as its
// scheme, host and path, never its user info, query or fragment; a request
// header's value only for the allow-listed headers (Accept, Content-Type,
// Content-Length, Content-Encoding, User-Agent, the request-id and trace
// headers of the providers — X-Request-Id, X-Client-Request-Id,
// X-Ms-Client-Request-Id, X-Ms-Request-Id, Apim-Request-Id,
// X-Amzn-Requestid, X-Amzn-Trace-Id, X-Amz-Request-Id, Traceparent —,
// Retry-After, Retry-After-Ms, X-Ms-Retry-After-Ms, Api-Version, and
// SageMaker's and Azure ML's routing headers), any other header by its name
// alone. None of these can hold a credential the request carried. Content
// (payloads, messages, generated text, error messages) is written only with
// CaptureContent, and then with the credentials the attempt sent replaced
// wherever they occur (cloudreq.AttemptInfo.Scrub: the values of the
// request's credential headers, cloudreq.CredentialHeaders, those the
// adapter names and those the HTTP transport wrote). A credential in a
// URL is not among them: URLs are never written whole.
package telemetry
