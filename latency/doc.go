// Package latency holds cloudinfer's measurement model: the per-call Timeline
// (filled from net/http/httptrace and the stream reader, never guessed) and
// the cold/warm start classification. Definitions follow MEASUREMENT.md:
// TTFT, TPOT, ITL and E2E are measured from the final attempt's send time; a
// cold request's SLA clock starts at model-ready.
package latency
