package latency

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// t0 is the hand-built timelines' origin; at(ms) is a point after it.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func at(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// stream builds a streamed timeline: one attempt sent at 0 on a reused
// connection, request written at 1 ms, first byte at 50 ms, and the given
// chunks; the call started and was intended at 0, and ended after the last
// chunk.
func stream(chunks ...Chunk) *Timeline {
	tl := &Timeline{IntendedSend: at(0), Start: at(0), Streamed: true, Chunks: chunks}
	end := at(0)
	for _, c := range chunks {
		end = c.At
	}
	tl.End = end.Add(time.Millisecond)
	tl.Attempts = []Attempt{{Number: 1, Send: at(0), GotConn: at(0), ConnReused: true, WroteRequest: at(1), FirstByte: at(50), End: tl.End, Status: 200}}
	return tl
}

func content(msAt float64, tokens int) Chunk {
	return Chunk{At: at(msAt), Tokens: tokens, Content: true}
}
func empty(msAt float64) Chunk { return Chunk{At: at(msAt)} }

func durs(v ...float64) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = ms(x)
	}
	return out
}

func TestMeasureGolden(t *testing.T) {
	warm := Start{Kind: Warm, Reason: ReasonNoEvidence}
	tests := []struct {
		name string
		tl   *Timeline
		o    Outcome
		// want: single-valued metrics present, with values; absent ones listed.
		want    map[Metric]time.Duration
		absent  []Metric
		nOut    int
		source  TokenSource
		itl     []time.Duration
		itlTok  []time.Duration
		clock   Clock
		checkFn func(t *testing.T, s Sample)
	}{
		{
			name: "role-only first chunk is not the first token",
			tl:   stream(empty(100), content(150, 1), content(170, 1), content(190, 1)),
			o:    Outcome{Start: warm},
			want: map[Metric]time.Duration{TTFT: ms(150), E2E: ms(190), TPOT: ms(20), TTFTIntended: ms(150), E2EIntended: ms(190),
				ScheduleLag: 0, Queue: 0, Write: ms(1), ServerWait: ms(49), FirstToken: ms(100), Decode: ms(40)},
			absent: []Metric{ColdStart, DNS, Connect, TLS},
			nOut:   3, source: TokensCounted,
			itl: durs(20, 20), itlTok: durs(20, 20), clock: ClockSend,
		},
		{
			name: "usage-only last chunk is not the last token",
			tl:   stream(content(150, 1), content(170, 1), content(190, 1), empty(300)),
			o:    Outcome{Start: warm, OutputTokens: 3, TokenSource: TokensFromServer},
			want: map[Metric]time.Duration{TTFT: ms(150), E2E: ms(190), TPOT: ms(20), Decode: ms(40)},
			nOut: 3, source: TokensFromServer,
			itl: durs(20, 20), itlTok: durs(20, 20), clock: ClockSend,
		},
		{
			name: "multi-token chunks, N_out counted",
			tl:   stream(content(150, 2), content(190, 4), content(250, 2)),
			o:    Outcome{Start: warm},
			// TPOT = (250 − 150) / (8 − 1) ms, rounded to the nanosecond.
			want: map[Metric]time.Duration{TTFT: ms(150), E2E: ms(250), TPOT: 14285714},
			nOut: 8, source: TokensCounted,
			itl: durs(40, 60), itlTok: durs(10, 30), clock: ClockSend,
		},
		{
			name: "multi-token chunks, N_out from the server wins",
			tl:   stream(content(150, 2), content(190, 4), content(250, 2)),
			o:    Outcome{Start: warm, OutputTokens: 10},
			want: map[Metric]time.Duration{TPOT: 11111111},
			nOut: 10, source: TokensFromServer,
			itl: durs(40, 60), itlTok: durs(10, 30), clock: ClockSend,
		},
		{
			name:   "N_out = 1 has no TPOT and no ITL",
			tl:     stream(empty(90), content(150, 1), empty(160)),
			o:      Outcome{Start: warm, OutputTokens: 1},
			want:   map[Metric]time.Duration{TTFT: ms(150), E2E: ms(150), Decode: 0},
			absent: []Metric{TPOT},
			nOut:   1, source: TokensFromServer, clock: ClockSend,
		},
		{
			name: "retried attempts: metrics from the final send, phases per attempt",
			tl: func() *Timeline {
				tl := &Timeline{IntendedSend: at(-20), Start: at(-5), Streamed: true, End: at(271), ModelReady: at(150)}
				tl.Attempts = []Attempt{
					{Number: 1, Send: at(0), GotConn: at(0), ConnReused: true, WroteRequest: at(1), FirstByte: at(40), End: at(50), Status: 503, Code: "ERR_MODEL_NOT_READY"},
					{Number: 2, Backoff: ms(100), Send: at(150), GotConn: at(150), ConnReused: true, WroteRequest: at(152), FirstByte: at(200), End: at(271), Status: 200},
				}
				tl.Chunks = []Chunk{content(250, 1), content(270, 1)}
				return tl
			}(),
			o: Outcome{Start: Start{Kind: Cold, Reason: ReasonNotReadyThenReady, Overhead: ms(150)}},
			want: map[Metric]time.Duration{TTFT: ms(100), E2E: ms(120), TPOT: ms(20), TTFTIntended: ms(270), E2EIntended: ms(290),
				ScheduleLag: ms(20), ColdStart: ms(150), Queue: ms(155), Write: ms(2), ServerWait: ms(48), FirstToken: ms(50), Decode: ms(20)},
			nOut: 2, source: TokensCounted, itl: durs(20), itlTok: durs(20), clock: ClockModelReady,
			checkFn: func(t *testing.T, s Sample) {
				require.Len(t, s.AttemptPhases, 2)
				assert.Equal(t, Phases{Attempt: 1, Queue: ms(5), Write: ms(1), ServerWait: ms(39), Status: 503, Code: "ERR_MODEL_NOT_READY"}, s.AttemptPhases[0])
				assert.Equal(t, Phases{Attempt: 2, Queue: ms(100), Write: ms(2), ServerWait: ms(48), FirstToken: ms(50), Decode: ms(20), Status: 200}, s.AttemptPhases[1])
				assert.Equal(t, 2, s.Attempts)
				assert.Equal(t, ms(100), s.TTFTFromSend)
			},
		},
		{
			name: "request reported written after the response began (HTTP/2): no wait, write up to the first byte",
			tl: func() *Timeline {
				tl := &Timeline{IntendedSend: at(0), Start: at(0), End: at(60)}
				tl.Attempts = []Attempt{{Number: 1, Send: at(0), GotConn: at(1), ConnReused: true, WroteRequest: at(45), FirstByte: at(40), End: at(60), Status: 200}}
				tl.Chunks = []Chunk{content(60, 0)}
				return tl
			}(),
			o:      Outcome{Start: warm},
			want:   map[Metric]time.Duration{E2E: ms(60), Write: ms(40), ServerWait: 0, FirstToken: ms(20)},
			absent: []Metric{TTFT, TTFTIntended},
			clock:  ClockSend,
		},
		{
			name: "a stream cut mid-way keeps what arrived",
			tl: func() *Timeline {
				tl := stream(empty(100), content(150, 1), content(170, 1))
				tl.End = at(400)
				tl.Attempts[0].End, tl.Attempts[0].Code = at(400), "ERR_STREAM_INTERRUPTED"
				return tl
			}(),
			o:    Outcome{Err: "ERR_STREAM_INTERRUPTED"},
			want: map[Metric]time.Duration{TTFT: ms(150), E2E: ms(170), TPOT: ms(20)},
			nOut: 2, source: TokensCounted, itl: durs(20), itlTok: durs(20), clock: ClockSend,
			checkFn: func(t *testing.T, s Sample) {
				assert.Equal(t, "ERR_STREAM_INTERRUPTED", s.Err)
				assert.Empty(t, s.Start, "a failed call has no start verdict")
			},
		},
		{
			name: "server-reported cold start: SLA clock at model-ready",
			tl: func() *Timeline {
				tl := stream(content(1100, 1), content(1150, 1), content(1200, 1))
				tl.ModelReady = at(1000)
				return tl
			}(),
			o: Outcome{Start: Start{Kind: Cold, Reason: ReasonServerReported, Overhead: ms(1000)}},
			want: map[Metric]time.Duration{TTFT: ms(100), E2E: ms(200), TPOT: ms(50), ColdStart: ms(1000),
				TTFTIntended: ms(1100), E2EIntended: ms(1200)},
			nOut: 3, source: TokensCounted, itl: durs(50, 50), itlTok: durs(50, 50), clock: ClockModelReady,
			checkFn: func(t *testing.T, s Sample) {
				assert.Equal(t, ms(1100), s.TTFTFromSend)
				assert.Equal(t, ms(1200), s.E2EFromSend)
			},
		},
		{
			name: "cold by first request: no ready time, clock stays at send",
			tl: func() *Timeline {
				tl := stream(content(900, 1), content(950, 1))
				tl.Attempts[0].ConnReused, tl.Attempts[0].GotConn = false, at(0)
				return tl
			}(),
			o:      Outcome{Start: Start{Kind: Cold, Reason: ReasonFirstRequest, ConnectionCold: true}},
			want:   map[Metric]time.Duration{TTFT: ms(900), E2E: ms(950)},
			absent: []Metric{ColdStart},
			nOut:   2, source: TokensCounted, itl: durs(50), itlTok: durs(50), clock: ClockSend,
			checkFn: func(t *testing.T, s Sample) { assert.True(t, s.ConnectionCold) },
		},
		{
			name: "non-streamed call on a new TLS connection",
			tl: &Timeline{IntendedSend: at(0), Start: at(0), End: at(320),
				Attempts: []Attempt{{Number: 1, Send: at(0), DNSStart: at(0), DNSDone: at(2), ConnectStart: at(2), ConnectDone: at(5),
					TLSStart: at(5), TLSDone: at(15), GotConn: at(15), WroteRequest: at(17), FirstByte: at(100), End: at(320), Status: 200}},
				Chunks: []Chunk{content(320, 50)}},
			o: Outcome{Start: warm, OutputTokens: 50},
			want: map[Metric]time.Duration{E2E: ms(320), E2EIntended: ms(320), DNS: ms(2), Connect: ms(3), TLS: ms(10), Write: ms(2),
				ServerWait: ms(83), FirstToken: ms(220)},
			// A whole body has no first token: no TTFT beside the E2E.
			absent: []Metric{TPOT, Decode, TTFT, TTFTIntended},
			nOut:   50, source: TokensFromServer, clock: ClockSend,
			checkFn: func(t *testing.T, s Sample) { assert.True(t, s.ConnectionCold) },
		},
		{
			name: "open-loop lag: intended send before the actual one",
			tl: func() *Timeline {
				tl := stream(content(150, 1), content(170, 1))
				tl.IntendedSend = at(-300)
				return tl
			}(),
			o:    Outcome{Start: warm},
			want: map[Metric]time.Duration{TTFT: ms(150), TTFTIntended: ms(450), E2EIntended: ms(470), ScheduleLag: ms(300)},
			nOut: 2, source: TokensCounted, itl: durs(20), itlTok: durs(20), clock: ClockSend,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Measure(tc.tl, tc.o)
			for m, want := range tc.want {
				got, ok := s.Value(m)
				if assert.True(t, ok, "metric %s missing", m) {
					assert.Equal(t, want, time.Duration(got), "metric %s", m)
				}
			}
			for _, m := range tc.absent {
				_, ok := s.Value(m)
				assert.False(t, ok, "metric %s should be absent", m)
			}
			assert.Equal(t, tc.nOut, s.OutputTokens)
			assert.Equal(t, tc.source, s.TokenSource)
			assert.Equal(t, tc.itl, s.ITL)
			assert.Equal(t, tc.itlTok, s.ITLPerToken)
			assert.Equal(t, tc.clock, s.Clock)
			if tc.checkFn != nil {
				tc.checkFn(t, s)
			}
		})
	}
}

func TestMeasureDegenerate(t *testing.T) {
	s := Measure(nil, Outcome{Endpoint: "e", Err: "ERR_TIMEOUT"})
	assert.Equal(t, "e", s.Endpoint)
	assert.Zero(t, s.Has)

	// No attempt made (failed before sending): no metric but N_out.
	s = Measure(&Timeline{Start: at(0), IntendedSend: at(0), End: at(1)}, Outcome{Err: "ERR_INVALID_PARAM"})
	assert.Zero(t, s.Has)

	// No content at all: no TTFT, E2E, TPOT, but the phases before it.
	s = Measure(stream(empty(100), empty(120)), Outcome{Start: Start{Kind: Warm}})
	for _, m := range []Metric{TTFT, E2E, TPOT, TTFTIntended, FirstToken, Decode} {
		_, ok := s.Value(m)
		assert.False(t, ok, m.String())
	}
	_, ok := s.Value(ServerWait)
	assert.True(t, ok)
	assert.Equal(t, 0, s.OutputTokens)
	_, ok = s.Value(ITL)
	assert.False(t, ok, "ITL is never a single value")
}

func TestModelReadyAfterFirstTokenIsClamped(t *testing.T) {
	tl := stream(content(100, 1), content(120, 1))
	tl.ModelReady = at(500) // a server setup time longer than the wait itself
	s := Measure(tl, Outcome{Start: Start{Kind: Cold, Reason: ReasonServerReported, Overhead: ms(500)}})
	assert.Equal(t, time.Duration(0), s.TTFT)
	assert.Equal(t, ms(20), s.E2E)
}

func TestDivRound(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		n    int
		want time.Duration
	}{{10, 3, 3}, {11, 3, 4}, {-11, 3, -4}, {5, 2, 3}, {7, 1, 7}, {7, 0, 7}} {
		assert.Equal(t, tc.want, divRound(tc.d, tc.n), "%d/%d", tc.d, tc.n)
	}
}

// TestSampleString: the attempts and the metrics the sample has, rounded to
// the microsecond; a metric it lacks is left out even if its field is set.
func TestSampleString(t *testing.T) {
	s := Sample{Attempts: 2, TTFT: 212_400_400 * time.Nanosecond, TPOT: 5 * time.Millisecond, E2E: 1200 * time.Millisecond}
	s.Has = s.Has.With(TTFT).With(E2E)
	assert.Equal(t, "attempts=2 ttft=212.4ms e2e=1.2s", s.String())
	s.Has = s.Has.With(TPOT)
	assert.Equal(t, "attempts=2 ttft=212.4ms tpot=5ms e2e=1.2s", s.String())
	assert.Equal(t, "attempts=0", (&Sample{}).String())
}

// TestMeasureReasoning: a reasoning-only chunk is TTFR, not TTFT; it
// counts as output, and TPOT runs from it.
func TestMeasureReasoning(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tl := &Timeline{Start: t0, IntendedSend: t0, Streamed: true, End: t0.Add(400 * time.Millisecond),
		Attempts: []Attempt{{Number: 1, Send: t0, FirstByte: t0.Add(50 * time.Millisecond), End: t0.Add(400 * time.Millisecond)}}}
	tl.AddReasoningChunk(t0.Add(100*time.Millisecond), 1)
	tl.AddReasoningChunk(t0.Add(200*time.Millisecond), 1)
	tl.AddChunk(t0.Add(300*time.Millisecond), 1, true)
	tl.AddChunk(t0.Add(400*time.Millisecond), 1, true)
	s := Measure(tl, Outcome{})
	require.True(t, s.Has.Has(TTFR))
	assert.Equal(t, 100*time.Millisecond, s.TTFR)
	assert.Equal(t, 300*time.Millisecond, s.TTFT, "the answer's first chunk")
	assert.Equal(t, 4, s.OutputTokens)
	assert.Equal(t, 100*time.Millisecond, s.TPOT, "(400 − 100) / 3")
	v, ok := s.Value(TTFR)
	assert.True(t, ok)
	assert.Equal(t, int64(100*time.Millisecond), v)
	assert.Equal(t, "ttfr", TTFR.String())

	// Reasoning only (cut by the limit): TTFT falls back to the first chunk.
	tl.Chunks = tl.Chunks[:2]
	s = Measure(tl, Outcome{})
	assert.Equal(t, 100*time.Millisecond, s.TTFT)
	// No reasoning: no TTFR.
	tl.Chunks = nil
	tl.AddChunk(t0.Add(100*time.Millisecond), 1, true)
	assert.False(t, Measure(tl, Outcome{}).Has.Has(TTFR))
}
