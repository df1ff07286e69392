package latency

import (
	"sync"
	"time"
)

// StartKind says whether a response came from a warm or a cold model.
type StartKind string

// Start kinds.
const (
	// Warm: the model was already loaded.
	Warm StartKind = "warm"
	// Cold: the endpoint had to bring a model up to serve the request.
	Cold StartKind = "cold"
	// SuspectedCold: only statistical evidence (slow first byte) points to a
	// cold start; never mixed with Cold in reports.
	SuspectedCold StartKind = "suspected-cold"
)

// StartReason is the evidence behind a StartKind, strongest first.
type StartReason string

// Start reasons, in MEASUREMENT.md's evidence order.
const (
	// ReasonServerReported: the server said so in a header the adapter knows.
	ReasonServerReported StartReason = "server-reported"
	// ReasonNotReadyThenReady: an attempt was refused with a not-ready signal
	// and a later attempt succeeded.
	ReasonNotReadyThenReady StartReason = "not-ready-then-ready"
	// ReasonFirstRequest: the first request to the endpoint from this client.
	ReasonFirstRequest StartReason = "first-request"
	// ReasonIdleGap: the first request after an idle gap longer than the
	// endpoint's scale-to-zero window.
	ReasonIdleGap StartReason = "idle-gap"
	// ReasonSlowFirstByte: time to first byte beyond k × the warm p50.
	ReasonSlowFirstByte StartReason = "slow-first-byte"
	// ReasonNoEvidence: nothing indicated a cold start.
	ReasonNoEvidence StartReason = "no-evidence"
)

// Start is the cold/warm verdict of one response.
type Start struct {
	Kind   StartKind   `json:"kind"`
	Reason StartReason `json:"reason"`
	// ConnectionCold is true when the final attempt opened a new connection
	// (TCP and maybe TLS): a separate, smaller effect than a cold model.
	ConnectionCold bool `json:"connection_cold"`
	// Overhead is the cold-start overhead: model-ready − first send. Zero
	// when warm or unknown.
	Overhead time.Duration `json:"overhead,omitempty"`
}

// Evidence is what the client knows about one finished call when it
// classifies the start.
type Evidence struct {
	// Endpoint identifies the endpoint (provider/service/target) for the
	// per-endpoint idle state.
	Endpoint string
	// ServerCold is set when the server reported a cold start (true) or a
	// warm one (false); nil when it said nothing.
	ServerCold *bool
	// ServerSetup is the model setup time the server reported, if any.
	ServerSetup time.Duration
	// NotReadyThenReady is true when an earlier attempt of this call was
	// refused with a not-ready signal and the final attempt succeeded.
	NotReadyThenReady bool
	// Timeline is the call's timeline (attempts and sends are read).
	Timeline *Timeline
}

// Classifier classifies starts using MEASUREMENT.md's evidence order. It keeps
// per-endpoint state (last use) and is safe for concurrent use. The zero
// value is not usable; call NewClassifier.
type Classifier struct {
	// IdleWindow is the scale-to-zero window: a request after a longer idle
	// gap is cold (reason idle-gap). Zero disables idle-gap evidence.
	idleWindow time.Duration
	// firstIsCold makes the first request to an endpoint cold (reason first-request).
	firstIsCold bool

	mu   sync.Mutex
	last map[string]time.Time
}

// NewClassifier returns a classifier. idleWindow is the endpoint's
// scale-to-zero window (0: none); firstIsCold says whether a client's first
// request to an endpoint counts as cold.
func NewClassifier(idleWindow time.Duration, firstIsCold bool) *Classifier {
	return &Classifier{idleWindow: idleWindow, firstIsCold: firstIsCold, last: map[string]time.Time{}}
}

// Classify returns the verdict for a successful call and records the
// endpoint's last use. It also sets tl.ModelReady for cold starts.
func (c *Classifier) Classify(ev Evidence) Start {
	tl := ev.Timeline
	var st Start
	var firstSend, lastSend time.Time
	if tl != nil && len(tl.Attempts) > 0 {
		firstSend = tl.Attempts[0].Send
		last := tl.Attempts[len(tl.Attempts)-1]
		lastSend = last.Send
		st.ConnectionCold = !last.ConnReused && !last.GotConn.IsZero()
	}

	c.mu.Lock()
	prev, seen := c.last[ev.Endpoint]
	if tl != nil && !tl.End.IsZero() {
		c.last[ev.Endpoint] = tl.End
	} else {
		c.last[ev.Endpoint] = time.Now()
	}
	c.mu.Unlock()

	switch {
	case ev.ServerCold != nil:
		st.Reason = ReasonServerReported
		if *ev.ServerCold {
			st.Kind = Cold
			st.Overhead = ev.ServerSetup
			if tl != nil && ev.ServerSetup > 0 && !lastSend.IsZero() {
				tl.ModelReady = lastSend.Add(ev.ServerSetup)
			}
		} else {
			st.Kind = Warm
		}
	case ev.NotReadyThenReady:
		st.Kind, st.Reason = Cold, ReasonNotReadyThenReady
		if tl != nil {
			tl.ModelReady = lastSend
			st.Overhead = lastSend.Sub(firstSend)
		}
	case !seen && c.firstIsCold:
		st.Kind, st.Reason = Cold, ReasonFirstRequest
	case seen && c.idleWindow > 0 && !firstSend.IsZero() && firstSend.Sub(prev) > c.idleWindow:
		st.Kind, st.Reason = Cold, ReasonIdleGap
	default:
		st.Kind, st.Reason = Warm, ReasonNoEvidence
	}
	return st
}
