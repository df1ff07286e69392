package latency

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// call builds a finished non-streamed call: sent at sendMs, first byte
// fbMs later, ended endMs after the send.
func call(sendMs, fbMs, endMs float64, reused bool) *Timeline {
	send := at(sendMs)
	return &Timeline{IntendedSend: send, Start: send, End: send.Add(ms(endMs)),
		Attempts: []Attempt{{Number: 1, Send: send, GotConn: send, ConnReused: reused, FirstByte: send.Add(ms(fbMs)), End: send.Add(ms(endMs))}},
		Chunks:   []Chunk{{At: send.Add(ms(endMs)), Content: true}}}
}

func TestClassifierEvidenceOrder(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name   string
		ev     func(tl *Timeline) Evidence
		kind   StartKind
		reason StartReason
		ready  func(tl *Timeline) time.Time
		over   time.Duration
	}{
		{
			name: "1. server says cold, with its setup time",
			ev: func(tl *Timeline) Evidence {
				return Evidence{Endpoint: "e", ServerCold: &yes, ServerSetup: 2 * time.Second, NotReadyThenReady: true, Timeline: tl}
			},
			kind: Cold, reason: ReasonServerReported, over: 2 * time.Second,
			ready: func(tl *Timeline) time.Time { return tl.Send().Add(2 * time.Second) },
		},
		{
			name: "1. server says warm: no first-request evidence",
			ev: func(tl *Timeline) Evidence {
				return Evidence{Endpoint: "e", ServerCold: &no, Timeline: tl}
			},
			kind: Warm, reason: ReasonServerReported,
			ready: func(*Timeline) time.Time { return time.Time{} },
		},
		{
			name: "2. a warm final attempt does not undo a not-ready refusal",
			ev: func(tl *Timeline) Evidence {
				tl.Attempts = append([]Attempt{{Number: 1, Send: tl.Send().Add(-ms(300)), End: tl.Send().Add(-ms(290)), Code: "ERR_MODEL_NOT_READY"}}, tl.Attempts...)
				return Evidence{Endpoint: "e", ServerCold: &no, NotReadyThenReady: true, Timeline: tl}
			},
			kind: Cold, reason: ReasonNotReadyThenReady, over: ms(300),
			ready: func(tl *Timeline) time.Time { return tl.Send() },
		},
		{
			name: "2. not ready, then ready",
			ev: func(tl *Timeline) Evidence {
				tl.Attempts = append([]Attempt{{Number: 1, Send: tl.Send().Add(-ms(700)), End: tl.Send().Add(-ms(690)), Code: "ERR_MODEL_NOT_READY"}}, tl.Attempts...)
				return Evidence{Endpoint: "e", NotReadyThenReady: true, Timeline: tl}
			},
			kind: Cold, reason: ReasonNotReadyThenReady, over: ms(700),
			ready: func(tl *Timeline) time.Time { return tl.Send() },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewClassifier(time.Minute, true)
			tl := call(1000, 100, 120, true)
			st := c.Classify(tc.ev(tl))
			assert.Equal(t, tc.kind, st.Kind)
			assert.Equal(t, tc.reason, st.Reason)
			assert.Equal(t, tc.over, st.Overhead)
			assert.Equal(t, tc.ready(tl), tl.ModelReady)
		})
	}
}

func TestClassifierFirstRequestAndIdleGap(t *testing.T) {
	c := NewClassifier(time.Minute, true)
	classify := func(tl *Timeline) Start { return c.Classify(Evidence{Endpoint: "e", Timeline: tl}) }

	st := classify(call(0, 100, 120, false))
	assert.Equal(t, Start{Kind: Cold, Reason: ReasonFirstRequest, ConnectionCold: true}, st)
	assert.Equal(t, Start{Kind: Warm, Reason: ReasonNoEvidence}, classify(call(200, 100, 120, true)))
	// Another endpoint has its own state.
	assert.Equal(t, ReasonFirstRequest, c.Classify(Evidence{Endpoint: "other", Timeline: call(300, 10, 20, true)}).Reason)
	// 59 s idle: warm; then 61 s after the last end: idle gap.
	assert.Equal(t, Warm, classify(call(320+59_000, 100, 120, true)).Kind)
	st = classify(call(320+59_000+120+61_000, 100, 120, true))
	assert.Equal(t, Start{Kind: Cold, Reason: ReasonIdleGap}, st)

	// Without a window or first-is-cold, neither applies.
	c2 := NewClassifier(0, false)
	assert.Equal(t, Warm, c2.Classify(Evidence{Endpoint: "e", Timeline: call(0, 1, 2, true)}).Kind)
	assert.Equal(t, Warm, c2.Classify(Evidence{Endpoint: "e", Timeline: call(1e7, 1, 2, true)}).Kind)
}

func TestClassifierConcurrentFirstRequestsAreAllCold(t *testing.T) {
	// Four requests sent together to a scaled-to-zero endpoint all waited
	// for it: each was sent before any call had completed.
	c := NewClassifier(time.Minute, true)
	var tls []*Timeline
	for i := range 4 {
		tls = append(tls, call(float64(i), 2000, 2100+float64(i), true))
	}
	for _, tl := range tls {
		assert.Equal(t, ReasonFirstRequest, c.Classify(Evidence{Endpoint: "e", Timeline: tl}).Reason)
	}
	// One sent after the first completion is warm.
	assert.Equal(t, Warm, c.Classify(Evidence{Endpoint: "e", Timeline: call(2200, 100, 120, true)}).Kind)
}

// TestClassifierWarmP50Follows checks that the warm p50 the slow-first-byte
// test compares with is refreshed as warm calls accrue, not kept from the
// first time it was needed.
func TestClassifierWarmP50Follows(t *testing.T) {
	c := NewClassifier(0, false, SuspectSlowFirstByte(3, 5))
	send := 0.0
	classify := func(fbMs float64) StartKind {
		send += 1000
		return c.Classify(Evidence{Endpoint: "e", Timeline: call(send, fbMs, fbMs+1, true)}).Kind
	}
	for range 5 {
		require.Equal(t, Warm, classify(40))
	}
	for range 1000 {
		require.Equal(t, Warm, classify(100))
	}
	// Between 3 × min and 3 × max, so the p50 (100 ms) is computed: warm.
	require.Equal(t, Warm, classify(150))
	// The warm calls move to 20 ms; their p50 follows.
	for range 1200 {
		require.Equal(t, Warm, classify(20))
	}
	// 70 ms exceeds 3 × the p50 of 20 ms (and not 3 × the old 100 ms).
	assert.Equal(t, SuspectedCold, classify(70))
}

func TestClassifierSuspectsSlowFirstByte(t *testing.T) {
	c := NewClassifier(0, false, SuspectSlowFirstByte(3, 5))
	classify := func(sendMs, fbMs float64) Start {
		return c.Classify(Evidence{Endpoint: "e", Timeline: call(sendMs, fbMs, fbMs+10, true)})
	}
	// Before 5 warm calls, nothing is suspected.
	assert.Equal(t, Warm, classify(0, 5000).Kind)
	for i := range 5 {
		assert.Equal(t, Warm, classify(float64(10_000+i*1000), 100).Kind)
	}
	// Warm p50 is now 100 ms (and one 5 s outlier): 299 ms is warm, 301 ms suspected.
	assert.Equal(t, Warm, classify(20_000, 250).Kind)
	st := classify(30_000, 400)
	assert.Equal(t, Start{Kind: SuspectedCold, Reason: ReasonSlowFirstByte}, st)
	// A suspected call does not feed the warm baseline.
	for range 20 {
		assert.Equal(t, SuspectedCold, classify(40_000, 1000).Kind)
	}

	off := NewClassifier(0, false, SuspectSlowFirstByte(0, 0))
	for i := range 20 {
		off.Classify(Evidence{Endpoint: "e", Timeline: call(float64(i*1000), 100, 110, true)})
	}
	assert.Equal(t, Warm, off.Classify(Evidence{Endpoint: "e", Timeline: call(1e6, 5000, 5010, true)}).Kind)
}

func TestFirstByteTime(t *testing.T) {
	tl := call(0, 40, 100, true)
	d, ok := FirstByteTime(tl)
	assert.True(t, ok)
	assert.Equal(t, ms(40), d)
	// A stream's first body chunk, not its headers.
	st := stream(empty(300), content(350, 1))
	d, ok = FirstByteTime(st)
	assert.True(t, ok)
	assert.Equal(t, ms(300), d)
	_, ok = FirstByteTime(&Timeline{})
	assert.False(t, ok)
}

func TestClassifierIsSafeForConcurrentUse(t *testing.T) {
	c := NewClassifier(time.Second, true)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				c.Classify(Evidence{Endpoint: []string{"a", "b"}[g%2], Timeline: call(float64(i*10), 5, 6, true)})
			}
		})
	}
	wg.Wait()
	require.Len(t, c.endpoints, 2)
	assert.Equal(t, 800, c.endpoints["a"].total)
}

// TestLastEndBeforeMatchesFullScan checks the endpoint state's answer, with
// and without its no-scan path, against a scan of every end ever recorded,
// for calls that end out of order as concurrent ones do.
func TestLastActiveBeforeMatchesFullScan(t *testing.T) {
	base := time.Now()
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	var es endpointState
	type span struct{ from, end time.Time }
	var all []span
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		// Ends 10 ms apart, each up to 40 ms late: neighbours swap order;
		// each call up for up to 60 ms before its end.
		end := at(i*10 + rng.IntN(40))
		from := end.Add(-time.Duration(rng.IntN(60)) * time.Millisecond)
		for _, probe := range []time.Time{end.Add(-25 * time.Millisecond), end, end.Add(time.Hour)} {
			want, wantSeen := time.Time{}, false
			for _, sp := range all {
				if sp.from.After(probe) {
					continue
				}
				e := sp.end
				if e.After(probe) {
					e = probe
				}
				if !wantSeen || e.After(want) {
					want, wantSeen = e, true
				}
			}
			got, seen, known := es.lastActiveBefore(probe)
			if !known {
				continue
			}
			require.Equal(t, wantSeen, seen, "call %d", i)
			require.True(t, want.Equal(got), "call %d: got %v, want %v", i, got.Sub(base), want.Sub(base))
		}
		es.record(from, end)
		all = append(all, span{from, end})
	}
}

// TestClassifierLongCallKeepsTheEndpointUp: a call sent while a long warm
// one was being served is not the first after an idle gap, even when the
// last completion before it is older than the window.
func TestClassifierLongCallKeepsTheEndpointUp(t *testing.T) {
	c := NewClassifier(10*time.Second, true)
	classify := func(tl *Timeline) Start { return c.Classify(Evidence{Endpoint: "e", Timeline: tl}) }
	assert.Equal(t, ReasonFirstRequest, classify(call(0, 10, 20, false)).Reason)
	// A 60 s stream, warm (sent 1 s after the first ended).
	assert.Equal(t, Warm, classify(call(1_000, 50, 60_000, true)).Kind)
	// Sent 50 s in, while it was being served; the last completion before
	// it is 50 s old, but the endpoint was busy: warm.
	assert.Equal(t, Start{Kind: Warm, Reason: ReasonNoEvidence}, classify(call(50_000, 40, 15_000, true)))
	// 20 s after everything ended: idle gap.
	assert.Equal(t, ReasonIdleGap, classify(call(85_000, 40, 100, true)).Reason)
}

// TestClassifierKeepsEndpointsApart: calls that alternate between endpoints
// each see their own endpoint's history, the latest endpoint's state being
// kept at hand or not.
func TestClassifierKeepsEndpointsApart(t *testing.T) {
	c := NewClassifier(time.Second, true)
	classify := func(ep string, sendMs float64) Start {
		return c.Classify(Evidence{Endpoint: ep, Timeline: call(sendMs, 5, 10, true)})
	}
	assert.Equal(t, ReasonFirstRequest, classify("a", 0).Reason)
	assert.Equal(t, ReasonFirstRequest, classify("b", 100).Reason)
	assert.Equal(t, ReasonNoEvidence, classify("a", 200).Reason)
	assert.Equal(t, ReasonNoEvidence, classify("a", 300).Reason)
	assert.Equal(t, ReasonIdleGap, classify("b", 1500).Reason, "b idle since 110 ms")
	assert.Equal(t, ReasonFirstRequest, classify("c", 1600).Reason)
	assert.Equal(t, ReasonIdleGap, classify("a", 2000).Reason, "a idle since 310 ms")
}
