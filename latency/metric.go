package latency

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// Metric names one per-request measurement. The set is closed; each
// metric's definition is in the package documentation and in MetricInfo.
type Metric uint8

// The metrics, in report order.
const (
	// TTFT is time to first token on the SLA clock: first content chunk −
	// send time, or − model-ready for a cold request whose ready time is
	// known. A chunk of reasoning only is not the answer's first token
	// (see TTFR) unless the answer has no other content.
	TTFT Metric = iota
	// TPOT is time per output token: (E2E − TTFT) / (N_out − 1), streamed
	// requests with N_out ≥ 2 only (from the first content chunk, reasoning
	// included, for reasoning streams).
	TPOT
	// ITL is the inter-chunk latency: each gap between consecutive content
	// chunks, pooled over requests.
	ITL
	// ITLToken is ITL per token: each gap divided by the tokens of the chunk
	// that closed it.
	ITLToken
	// E2E is end-to-end latency on the SLA clock: last content chunk (or the
	// whole body) − send time (or model-ready).
	E2E
	// TTFTIntended is TTFT measured from the intended send time
	// (coordinated-omission corrected).
	TTFTIntended
	// E2EIntended is E2E measured from the intended send time.
	E2EIntended
	// ScheduleLag is the first attempt's send time − the intended send time.
	ScheduleLag
	// ColdStart is the cold-start overhead of a cold request: the time
	// before its model became ready. Only cold requests have one.
	ColdStart
	// Queue is the time from the call's start to its final attempt's send:
	// hooks, client-side queueing, earlier attempts and retry backoff.
	Queue
	// DNS is the final attempt's name resolution (only when it resolved).
	DNS
	// Connect is the final attempt's TCP connect (only on a new connection).
	Connect
	// TLS is the final attempt's TLS handshake (only on a new connection).
	TLS
	// Write is signing and request write: from send to request written,
	// less DNS, connect and TLS.
	Write
	// ServerWait is from request written to the first response byte.
	ServerWait
	// FirstToken is from the first response byte to the first content chunk.
	FirstToken
	// Decode is from the first to the last content chunk (streamed requests).
	Decode
	// OutputTokens is N_out, the request's output tokens (a count, not a time).
	OutputTokens
	// TTFR is time to first reasoning chunk on the SLA clock, beside TTFT
	// (the first answer chunk): streamed requests whose model sent
	// reasoning before or instead of its answer.
	TTFR

	numMetrics
)

// NumMetrics is how many metrics there are: the valid metrics are those
// below it, so that an array indexed by Metric can be [NumMetrics]T.
const NumMetrics = numMetrics

// Unit is what a metric's values count.
type Unit string

// Units.
const (
	// Nanoseconds: values are time.Duration; reports print milliseconds.
	Nanoseconds Unit = "ns"
	// Tokens: values are token counts.
	Tokens Unit = "tokens"
)

// MetricInfo describes a metric.
type MetricInfo struct {
	// Name is the metric's name in specs, JSON, CSV and tables.
	Name string
	// Unit is what its values count.
	Unit Unit
	// PerRequest is true when a request has at most one value (ITL metrics
	// have one per gap). Only per-request metrics gate goodput.
	PerRequest bool
	// Doc is a one-line definition.
	Doc string
}

var metricInfo = [numMetrics]MetricInfo{
	TTFT:         {"ttft", Nanoseconds, true, "first content chunk − send time (model-ready for cold requests with a known ready time)"},
	TPOT:         {"tpot", Nanoseconds, true, "(E2E − TTFT) / (N_out − 1), streamed requests with N_out ≥ 2"},
	ITL:          {"itl", Nanoseconds, false, "gap between consecutive content chunks, first chunk excluded, pooled"},
	ITLToken:     {"itl-token", Nanoseconds, false, "ITL gap / tokens in the chunk that closed it, pooled"},
	E2E:          {"e2e", Nanoseconds, true, "last content chunk (whole body if not streamed) − send time (or model-ready)"},
	TTFTIntended: {"ttft-co", Nanoseconds, true, "first content chunk − intended send time (coordinated-omission corrected)"},
	E2EIntended:  {"e2e-co", Nanoseconds, true, "last content chunk − intended send time (coordinated-omission corrected)"},
	ScheduleLag:  {"schedule-lag", Nanoseconds, true, "first attempt's send − intended send time"},
	ColdStart:    {"cold-start", Nanoseconds, true, "cold-start overhead: time before the model became ready (cold requests)"},
	Queue:        {"queue", Nanoseconds, true, "call start → final attempt's send (hooks, queueing, earlier attempts, backoff)"},
	DNS:          {"dns", Nanoseconds, true, "name resolution of the final attempt, when it resolved"},
	Connect:      {"connect", Nanoseconds, true, "TCP connect of the final attempt, on a new connection"},
	TLS:          {"tls", Nanoseconds, true, "TLS handshake of the final attempt, on a new connection"},
	Write:        {"write", Nanoseconds, true, "signing and request write: send → request written, less DNS, connect, TLS"},
	ServerWait:   {"server-wait", Nanoseconds, true, "request written → first response byte"},
	FirstToken:   {"first-token", Nanoseconds, true, "first response byte → first content chunk"},
	Decode:       {"decode", Nanoseconds, true, "first content chunk → last content chunk (streamed requests)"},
	OutputTokens: {"output-tokens", Tokens, true, "N_out: server-reported usage when present, else counted from the stream"},
	TTFR:         {"ttfr", Nanoseconds, true, "first reasoning chunk − send time (or model-ready), streamed reasoning requests"},
}

// Metrics returns every metric, in report order.
func Metrics() []Metric {
	ms := make([]Metric, numMetrics)
	for i := range ms {
		ms[i] = Metric(i)
	}
	return ms
}

// Info returns the metric's description; the zero MetricInfo for an
// unknown metric.
func (m Metric) Info() MetricInfo {
	if m >= numMetrics {
		return MetricInfo{}
	}
	return metricInfo[m]
}

// Valid reports whether m is one of the defined metrics.
func (m Metric) Valid() bool { return m < numMetrics }

// String returns the metric's name.
func (m Metric) String() string {
	if !m.Valid() {
		return "metric(" + strconv.Itoa(int(m)) + ")"
	}
	return metricInfo[m].Name
}

// ParseMetric returns the metric with the given name (case-insensitive;
// "ttft_co", "itl_token" and such underscore spellings are accepted).
func ParseMetric(s string) (Metric, error) {
	n := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "_", "-")
	for i, mi := range metricInfo {
		if mi.Name == n {
			return Metric(i), nil
		}
	}
	names := make([]string, 0, numMetrics)
	for _, mi := range metricInfo {
		names = append(names, mi.Name)
	}
	return 0, errcodes.Errorf(errcodes.InvalidParam, "latency: unknown metric %q; known: %s", s, strings.Join(names, ", "))
}

// MarshalText implements encoding.TextMarshaler.
func (m Metric) MarshalText() ([]byte, error) {
	if !m.Valid() {
		return nil, errcodes.Errorf(errcodes.InvalidParam, "latency: unknown metric %d", int(m))
	}
	return []byte(m.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (m *Metric) UnmarshalText(b []byte) error {
	v, err := ParseMetric(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// MetricSet is a set of metrics.
type MetricSet uint32

// Has reports whether m is in the set.
func (s MetricSet) Has(m Metric) bool { return m < numMetrics && s&(1<<m) != 0 }

// With returns the set with m added.
func (s MetricSet) With(m Metric) MetricSet { return s | 1<<m }

// Metrics lists the set's metrics in report order.
func (s MetricSet) Metrics() []Metric {
	var out []Metric
	for m := Metric(0); m < numMetrics; m++ {
		if s.Has(m) {
			out = append(out, m)
		}
	}
	return out
}

// MarshalJSON encodes the set as a list of metric names.
func (s MetricSet) MarshalJSON() ([]byte, error) {
	ms := s.Metrics()
	if ms == nil {
		ms = []Metric{}
	}
	return json.Marshal(ms)
}

// UnmarshalJSON decodes a list of metric names.
func (s *MetricSet) UnmarshalJSON(b []byte) error {
	var ms []Metric
	if err := json.Unmarshal(b, &ms); err != nil {
		return err
	}
	*s = 0
	for _, m := range ms {
		*s = s.With(m)
	}
	return nil
}
