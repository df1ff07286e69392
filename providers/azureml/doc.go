// Package azureml is the cloudreq adapter for Azure Machine Learning online
// endpoints (provider "azure", service "azureml", actions invoke and
// generate, streaming), built on an azcore pipeline
// (github.com/Azure/azure-sdk-for-go/sdk/azcore runtime.NewPipeline) whose
// own retry policy is off: cloudreq's retry loop is in charge.
//
// # Requests
//
// The endpoint root is Options.EndpointURL with "{endpoint}" replaced by
// Target.Endpoint (and "{region}" by Options.Region); by default
// https://{endpoint}.{region}.inference.ml.azure.com. A Target.Endpoint that
// is an http(s) URL is the root itself (a trailing /score or
// /chat/completions is dropped). Every request carries Target.Variant as
// azureml-model-deployment (when set) and CloudRequest.RequestID as
// x-ms-client-request-id. A request without Target.Endpoint, or with an
// endpoint name while the template holds "{region}" and Options.Region is
// unset, fails before it is sent (Adapter.Validate).
//
// Options.API picks the route:
//
//   - APIScore (default): POST {root}/score. Action invoke sends the
//     caller's bytes as they are. Action generate writes, per
//     Options.ScoreDialect:
//     ScoreMessages (default), OpenAI chat JSON —
//     {"model":<Target.Model, if set>,"messages":[{"role","content"},…],
//     "max_tokens":…,"temperature":…,"top_p":…,"stop":[…],"stream":true,
//     "stream_options":{"include_usage":true}};
//     or ScoreInputData, the model catalog's shape —
//     {"input_data":{"input_string":[{"role","content"},…],
//     "parameters":{"max_new_tokens":…,"temperature":…,"top_p":…,
//     "do_sample":…}}} — do_sample true with a positive temperature or a
//     top_p; a temperature of 0 is greedy decoding, do_sample false (the
//     containers' Hugging Face generation refuses a zero temperature when
//     sampling).
//     The response is read as an OpenAI completion, {"output":"…"},
//     [{"0":"…"}] or a JSON string. An invoke's response keeps its bytes
//     in Data, as they came; when it is JSON in one of those shapes, Text,
//     FinishReason and Usage are filled too (any other body leaves them
//     empty, without an error).
//   - APIChat: serverless / model-inference deployments, POST
//     {root}/chat/completions?api-version=<Options.APIVersion>, OpenAI chat
//     JSON, SSE when streaming. The URL always carries exactly one
//     api-version, last in its query: Target.Path's if its query has one,
//     else the endpoint URL's, else Options.APIVersion (default
//     DefaultAPIVersion); an empty one counts as none, and of several the
//     last is kept. A generate stream's stream_options (unless
//     Options.OmitStreamUsage) goes with the header "extra-parameters:
//     drop": the model inference API defines no stream_options and, by
//     default, refuses a body member it does not define with a 422. A
//     caller's own extra-parameters header is kept.
//
// Target.Path, when set, replaces /score (or /chat/completions); a Path
// that is only a query ("?a=b") leaves the root's path alone. The query of
// the endpoint URL (an absolute Target.Endpoint or Options.EndpointURL) and
// that of Target.Path are both sent, in that order, as written; /score gets
// no api-version of its own (managed online endpoints take none).
//
// Streams are read as SSE when the server says text/event-stream: OpenAI
// chunks for generate and for any request to a chat completions route
// (APIChat, or a Target.Path ending in /chat/completions), and each event's
// data as text for an invoke of /score, whose scoring script may stream
// anything. A JSON generate response is one chunk; other bodies are plain
// bytes in the order they arrive.
//
// # Credentials
//
// Authorization is always "Bearer <credential>": Options.Key (an endpoint
// key), Options.Token (an AML token, sent as it is until it expires),
// Options.Credential (any azcore.TokenCredential), or, when none is set, a
// default credential created on the first request, so New makes no network
// call. A Credential's token is kept and fetched again before it expires
// (azcore's bearer-token policy: at its RefreshOn, or 5 minutes before
// ExpiresOn), so tokens refresh by themselves.
//
// The Entra scope is chosen by route unless Options.Scope sets it:
//
//	route                                             scope
//	APIScore: managed online endpoints (/score)       https://ml.azure.com/.default (ScopeManagedOnline)
//	APIChat: serverless endpoints, AI Foundry         https://cognitiveservices.azure.com/.default (ScopeFoundry)
//	  model inference (/chat/completions)
//
// Foundry's keyless-authentication guide grants inference through the
// Cognitive Services User role on the Foundry resource (data action
// Microsoft.CognitiveServices/accounts/MaaS/*), and the cognitiveservices
// scope is accepted by every Foundry endpoint shape (Azure OpenAI, Foundry
// Models, serverless MaaS). Foundry projects also document
// https://ai.azure.com/.default; a deployment that asks for it is reached
// with Options.Scope.
//
// AML tokens (auth_mode aml_token) expire too: NewAMLTokenCredential turns
// any fetch function into a refreshing Credential, and
// NewEndpointTokenCredential is one that asks Azure Resource Manager
// (POST …/onlineEndpoints/E/token with an Entra token for
// ScopeManagement, the call behind `az ml online-endpoint get-credentials`;
// permission Microsoft.MachineLearningServices/workspaces/onlineEndpoints/token/action)
// and refreshes at the answer's refreshAfterTimeUtc. A failed fetch is
// ERR_UNAUTHENTICATED, not retryable, as any credential's failure. The
// emulator serves that ARM call and accepts the tokens it issued until
// they expire (emulator.Options.AMLTokenTTL). Options.Anonymous sends none. A credential over
// plain http is refused unless Options.AllowInsecureHTTP (the local
// emulator; it sets azcore's InsecureAllowCredentialWithHTTP).
//
// The default credential is azidentity.DefaultAzureCredential's chain
// (environment, workload identity, managed identity, Azure CLI, Azure
// Developer CLI, Azure PowerShell) with one difference: managed identity
// is tried only where the host announces its endpoint (IDENTITY_ENDPOINT
// or MSI_ENDPOINT: App Service, Functions, Container Apps, Service
// Fabric, Arc, Cloud Shell), never found by probing IMDS. So a machine
// with no credential fails at once, with no network call, ERR_UNAUTHENTICATED
// whose message says what to set. On an Azure VM (or AKS node) whose
// identity only IMDS knows, choose it: AZURE_TOKEN_CREDENTIALS=ManagedIdentityCredential
// (or "prod"), or Options.Credential = azidentity.NewManagedIdentityCredential.
// With AZURE_TOKEN_CREDENTIALS set, the default credential is
// azidentity.DefaultAzureCredential itself, honouring that choice.
//
// # Errors
//
// Every error is an *errcodes.Error with Provider "azure"; for HTTP errors
// the native error is an *azcore.ResponseError (errors.As), built from at
// most Options.Limits.MaxErrorBytes of the body (64 KiB by default). The
// error code comes from the x-ms-error-code header or the body's code —
// {"error":{"code","message"}}, the serverless
// {"status":422,"code":…,"detail":…,"message":…}, OpenAI envelopes,
// {"message":…} or plain text — first, then from the status:
//
//	signal                                            code                   retryable
//	code model_not_ready / ModelNotReady /            ERR_MODEL_NOT_READY    yes
//	  DeploymentNotReady / deployment_not_ready
//	  (503 with "not ready"/"loading" text, last resort)
//	code insufficient_quota / QuotaExceeded /         ERR_QUOTA_EXCEEDED     no
//	  quota_exceeded
//	code rate_limit_exceeded / TooManyRequests /      ERR_THROTTLED          yes
//	  RateLimitReached
//	code invalid_api_key                              ERR_UNAUTHENTICATED    no
//	code model_not_found / DeploymentNotFound         ERR_NOT_FOUND          no
//	code context_length_exceeded                      ERR_INVALID_PARAM      no
//	HTTP 400                                          ERR_INVALID_PARAM      no
//	HTTP 401                                          ERR_UNAUTHENTICATED    no
//	HTTP 403                                          ERR_PERMISSION_DENIED  no
//	HTTP 404 (no deployment / wrong URL)              ERR_NOT_FOUND          no
//	HTTP 408 (request_timeout_ms exceeded)            ERR_TIMEOUT            yes
//	HTTP 409                                          ERR_INVALID_PARAM      no
//	HTTP 413                                          ERR_PAYLOAD_TOO_LARGE  no
//	HTTP 422 (serverless parameter errors)            ERR_INVALID_PARAM      no
//	HTTP 424 (model container failed)                 ERR_MODEL_ERROR        no; Details keep
//	                                                  ms-azureml-model-error-statuscode and -reason
//	HTTP 424, ms-azureml-model-error-statuscode 429   ERR_THROTTLED          yes; Details as above
//	  (the container's own back-pressure)
//	HTTP 424, ms-azureml-model-error-statuscode 503   ERR_UNAVAILABLE        yes; Details as above
//	HTTP 429 (too many pending requests, rate limit)  ERR_THROTTLED          yes
//	HTTP 500                                          ERR_INTERNAL           yes
//	HTTP 502, 503 (also a fronting proxy's plain-text ERR_UNAVAILABLE        yes
//	  "upstream connect error … reset reason: overflow")
//	HTTP 504                                          ERR_TIMEOUT            yes
//	other                                             errcodes.ForHTTPStatus
//	token acquisition failed, or no credential found  ERR_UNAUTHENTICATED    no
//	in-stream data:{"error":…} before any content     the error object's class, by the codes above, else
//	  (the stream's whole answer)                     the status it states ("code":"429" is ERR_THROTTLED),
//	                                                  with that class's retryability
//	in-stream data:{"error":…} after content,         ERR_STREAM_INTERRUPTED no; the error object's class
//	  truncated stream, a chunk that does not parse   is in Details["code"] (see providers/openai)
//	  after content
//	a first stream chunk that does not parse          ERR_MODEL_ERROR        no
//	transport failures                                errcodes.FromTransport
//	2xx generate body that does not parse or holds    ERR_MODEL_ERROR        no
//	  no generated text
//	response body over MaxResponseBytes               ERR_PAYLOAD_TOO_LARGE  no
//
// Retry-After, retry-after-ms and x-ms-retry-after-ms fill RetryAfter. The
// request id is x-request-id (else x-ms-request-id); the deployment that
// served is kept in Metadata["Azureml-Model-Deployment"]; the response
// headers are CloudResponse.Header. Keys and tokens never appear in errors.
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
package azureml
