// Package telemetry plugs cloudinfer into the observability stack an
// operator already runs: OpenTelemetry spans and metrics that follow the
// GenAI semantic conventions (pinned to semconv v1.41.0 and its genaiconv
// package), a Prometheus endpoint and OTLP export for them, and log/slog
// logging with credentials redacted.
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
// ServePrometheus serves a MeterProvider's metrics at /metrics (what
// "cloudinfer bench --metrics-addr :9464" uses); OTLP returns providers that
// export over OTLP/HTTP (--otlp ENDPOINT). Prompts and completions are never
// recorded unless Options.CaptureContent (spans) or LogOptions.CaptureContent
// (logs) is set.
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
//	gen_ai.request.stop_sequences   generate, CaptureContent only
//	gen_ai.input.messages           generate, CaptureContent only (JSON, the conventions' schema)
//	gen_ai.output.messages          non-streaming generate, CaptureContent only
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
//	cloudinfer.request.id           the client request id (after the PreSerialize hooks)
//	cloudinfer.response.request_id  the provider's request id (redacted)
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
//	cloudinfer.error.provider_code  failed calls, the provider's native code (redacted)
//
// A failed call's span has status Error with the description "CODE: message"
// built from the error's portable fields, with credentials hidden as in the
// logs (RedactAttr); the native error it wraps, which may quote what a
// server or transport saw, is never recorded.
//
// Each attempt is a child span of kind INTERNAL named "cloudinfer.attempt"
// (off with Options.NoAttemptSpans), timed from the attempt's send to its
// end, with cloudinfer.attempt.number, cloudinfer.attempt.backoff (s),
// cloudinfer.connection.reused, http.response.status_code, error.type and
// cloudinfer.error.provider_code of a failed attempt, the phase durations
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
// # Logs and redaction
//
// LogHook (or WithLogging) logs each request before it is serialized and
// each attempt's outcome; see LogHook for what a record holds. Header values
// go through hooks.RedactHeaders (Authorization — bearer tokens, keys and
// EAS signatures —, x-api-key, api-key, X-Amz-Security-Token and the other
// hooks.SensitiveHeaders), endpoint URLs and request paths through
// hooks.RedactURL (credential query parameters such as key, sig, token and
// code, and user info). RedactHandler and RedactAttr are a second line of
// defence for any slog handler: they hide the values of credential-named
// keys (SensitiveKey, which compares whole words whatever the spelling:
// api_key, apiKey, clientSecret, admin_token, primaryKey, …; token counts
// such as output_tokens and max_new_tokens stay visible, and so do names
// such as secretary or cache_key), and in free text authorization schemes,
// header lines "Name: value" with a credential's name (to the end of the
// line), credential query parameters, key=value and "key: value" pairs,
// and JSON members, escaped JSON members and Python dict members with a
// credential's name. Maps, structs and other composite values are encoded
// as JSON and redacted as a tree (a credential-named member's value
// hidden, every string redacted as free text), or walked with reflect when
// encoding/json cannot encode them, never printed with fmt; *errcodes.Error
// values are written from their portable fields only; a nil pointer is
// written "<nil>", and a String, Error or MarshalJSON method that panics
// does not crash the program.
package telemetry
