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
// idle connections of its own transport only.
package providertest
