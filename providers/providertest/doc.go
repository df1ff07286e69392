// Package providertest is the one conformance suite every provider adapter
// passes, against the emulator (package emulator) on loopback:
//
//	func TestConformance(t *testing.T) {
//		providertest.RunConformance(t, providertest.Harness{
//			Provider: cloudreq.ProviderOpenAI, Service: cloudreq.ServiceOpenAICompatible,
//			NewAdapter: func(t *testing.T, srv *emulator.Server) cloudreq.Adapter { ... },
//			Target:     func(endpoint string) cloudreq.Target { return cloudreq.Target{Model: endpoint} },
//			InvokeBody: []byte(`{"model":"llama-3-8b","messages":[{"role":"user","content":"hi"}]}`),
//			Errors:     providertest.CommonErrors(),
//		})
//	}
//
// It checks invoke, generate, streaming, each error class the emulator
// injects (X-Emulator-Inject) against the expected portable code,
// cancellation mid-stream, usage, timing, and a server-reported cold start:
// that the adapter hands on each response's headers (CloudResponse.Header,
// a stream's at open), from which the client's emulator.StartReport hook
// reads the emulator's report.
//
// RunPool checks an HTTP adapter's connections on an httptest server:
// that concurrent calls reuse them, and that the adapter's Close closes the
// idle connections of its own transport only; for an adapter on the HTTP
// core (HTTPPool builds its harness), also that its own transport sends,
// with the core's pool and response header timeout.
//
// The rest are the helpers the adapters' own tests share: Serve and
// Server (an httptest server and an adapter on it), Client (one attempt
// per call), Context, GenerateRequest and InvokeRequest, WriteFlushed and
// Flushed (a streamed answer), Stream (a stream read to its end, as
// Streamed), HoldAfter and CancelMidStream (a stream canceled after its
// first chunk), Endless and RoundTrip (an error body that never ends).
package providertest
