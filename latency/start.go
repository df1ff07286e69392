package latency

import (
	"sync"
	"time"

	"github.com/cloudinfer/cloudinfer/latency/internal/quantile"
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

// Start reasons, strongest evidence first (see the package documentation).
const (
	// ReasonServerReported: the server said so, in a report read from its
	// response (cloudreq's CloudResponse.ServerStart, which a PostDeserialize
	// hook that knows the server's report sets).
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

// Classifier classifies starts by the evidence order of the package
// documentation, strongest first, and
// keeps the per-endpoint state that needs: recent completion times (for
// first-request and idle-gap evidence) and the distribution of warm times
// to first byte (for the statistical suspicion). It is safe for concurrent
// use. The zero value is not usable; call NewClassifier.
type Classifier struct {
	idleWindow  time.Duration
	firstIsCold bool
	suspectK    float64
	suspectMin  int

	mu        sync.Mutex
	endpoints map[string]*endpointState
	// last is the endpoint of the latest call and its state: calls to one
	// endpoint, the usual case, skip hashing the key. mu guards both.
	last   string
	lastES *endpointState
}

// endpointState is what a Classifier remembers about one endpoint.
type endpointState struct {
	// ends holds the end times of the last completed calls (a ring), and
	// froms, at the same index, since when each call knew the model up.
	ends    [recentEnds]time.Time
	froms   [recentEnds]time.Time
	next    int
	total   int
	evicted bool
	// latest is the latest of all the ends ever recorded.
	latest time.Time
	// warm holds the times to first byte of warm calls.
	warm warmFBT
}

// recentEnds is how many completion times an endpoint keeps: enough to
// find, under heavy concurrency, the last completion before a call was sent.
const recentEnds = 64

// ClassifierOption configures a Classifier.
type ClassifierOption func(*Classifier)

// SuspectSlowFirstByte sets the statistical evidence (case 4): a call whose
// time to first byte exceeds k × the endpoint's warm p50 is SuspectedCold,
// once the endpoint has at least minWarm warm calls. k ≤ 1 or minWarm < 1
// turns it off. The default is k = 3 after 10 warm calls.
func SuspectSlowFirstByte(k float64, minWarm int) ClassifierOption {
	return func(c *Classifier) { c.suspectK, c.suspectMin = k, minWarm }
}

// Defaults of the statistical evidence.
const (
	DefaultSuspectK       = 3
	DefaultSuspectMinWarm = 10
)

// NewClassifier returns a classifier. idleWindow is the endpoints'
// scale-to-zero window (0: none); firstIsCold says whether a client's first
// request to an endpoint counts as cold.
func NewClassifier(idleWindow time.Duration, firstIsCold bool, opts ...ClassifierOption) *Classifier {
	c := &Classifier{
		idleWindow: idleWindow, firstIsCold: firstIsCold,
		suspectK: DefaultSuspectK, suspectMin: DefaultSuspectMinWarm,
		endpoints: map[string]*endpointState{},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// FirstByteTime is the time to first byte the statistical evidence uses:
// from the final attempt's send to the first chunk of a stream (its first
// body bytes: stream headers often come before any work is done), or to the
// first response byte of a non-streamed call. It is false when the
// timeline has neither.
func FirstByteTime(tl *Timeline) (time.Duration, bool) {
	a := tl.LastAttempt()
	if a == nil {
		return 0, false
	}
	if tl.Streamed && len(tl.Chunks) > 0 {
		return tl.Chunks[0].At.Sub(a.Send), true
	}
	if !a.FirstByte.IsZero() {
		return a.FirstByte.Sub(a.Send), true
	}
	return 0, false
}

// Classify returns the verdict for a successful call and records the
// endpoint's use. It also sets tl.ModelReady for cold starts whose ready
// time is known. Evidence, strongest first:
//
//  1. the server reported a cold start (ServerCold true): the model was
//     ready ServerSetup after the final send, and ServerSetup is the
//     overhead;
//  2. an earlier attempt was refused as not ready and the final one
//     succeeded: the model was ready at the final send, and the overhead is
//     final send − first send. A server that reports the final attempt as
//     warm does not undo this: its report covers that attempt only. Short
//     of this evidence, a server's warm report makes the call Warm
//     (server-reported) and rules out 3 and 4;
//  3. no call to the endpoint had shown its model up by this call's first
//     send (first-request, when firstIsCold), or the last time one did was
//     longer ago than the scale-to-zero window (idle-gap): cold, with no
//     known ready time or overhead. A call shows the model up from its
//     first send to its end when it was warm, and from its model-ready
//     time (else its first byte) to its end when it may have been cold, so
//     a call sent while a long one was being served is not taken for the
//     first after an idle gap. Only calls classified before this one
//     count (cloudreq classifies the calls the endpoint served: successes,
//     and streams that delivered a chunk before they broke or were
//     closed): a call still in flight at this one's end, or one that
//     failed unserved, is not seen;
//  4. the time to first byte exceeds k × the endpoint's warm p50:
//     SuspectedCold (slow-first-byte), never Cold. The p50 is refreshed as
//     warm calls accrue, so that it covers at least 98% of them.
//
// Otherwise the call is Warm (no-evidence). Warm calls feed the warm p50.
// ConnectionCold is set apart whenever the final attempt opened a new
// connection.
func (c *Classifier) Classify(ev Evidence) Start {
	// The verdicts from server or retry evidence, and an endpoint's first
	// call, are in helpers: the common path stays short.
	var st Start
	var firstSend, lastSend, end time.Time
	var fbt time.Duration
	hasFBT := false
	if tl := ev.Timeline; tl != nil {
		if n := len(tl.Attempts); n > 0 {
			last := &tl.Attempts[n-1]
			firstSend, lastSend = tl.Attempts[0].Send, last.Send
			st.ConnectionCold = !last.ConnReused && !last.GotConn.IsZero()
		}
		end = tl.End
		fbt, hasFBT = FirstByteTime(tl)
	}
	if end.IsZero() {
		end = time.Now()
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	es := c.lastES
	if es == nil || c.last != ev.Endpoint {
		es = c.state(ev.Endpoint)
	}
	prev, seen, known := es.lastActiveBefore(firstSend)

	switch {
	case ev.ServerCold != nil || ev.NotReadyThenReady:
		reported(&st, ev, firstSend, lastSend)
	case known && !seen && c.firstIsCold:
		st.Kind, st.Reason = Cold, ReasonFirstRequest
	case known && seen && c.idleWindow > 0 && !firstSend.IsZero() && firstSend.Sub(prev) > c.idleWindow:
		st.Kind, st.Reason = Cold, ReasonIdleGap
	case hasFBT && c.suspectK > 1 && c.suspectMin > 0 && es.warm.n >= uint64(c.suspectMin) && c.slow(fbt, &es.warm):
		st.Kind, st.Reason = SuspectedCold, ReasonSlowFirstByte
	default:
		st.Kind, st.Reason = Warm, ReasonNoEvidence
	}
	if st.Kind == Warm && hasFBT && fbt >= 0 {
		es.warm.add(fbt)
	}
	es.record(upSince(st, ev.Timeline, firstSend, lastSend, fbt, hasFBT, end), end)
	return st
}

// upSince is since when a classified call shows the model up: its first
// send when it was warm; when it may have been cold, its model-ready time,
// else its first byte, else its end.
func upSince(st Start, tl *Timeline, firstSend, lastSend time.Time, fbt time.Duration, hasFBT bool, end time.Time) time.Time {
	switch {
	case st.Kind == Warm && !firstSend.IsZero():
		return firstSend
	case tl != nil && !tl.ModelReady.IsZero():
		return tl.ModelReady
	case hasFBT && !lastSend.IsZero():
		return lastSend.Add(fbt)
	}
	return end
}

// state returns the endpoint's state, made on its first call, and makes it
// the latest. c.mu must be held.
func (c *Classifier) state(endpoint string) *endpointState {
	es := c.endpoints[endpoint]
	if es == nil {
		es = &endpointState{}
		c.endpoints[endpoint] = es
	}
	c.last, c.lastES = endpoint, es
	return es
}

// reported sets the verdict of a call with server or retry evidence
// (Classify's items 1 and 2, and a server's warm report).
func reported(st *Start, ev Evidence, firstSend, lastSend time.Time) {
	tl := ev.Timeline
	switch {
	case ev.ServerCold != nil && *ev.ServerCold:
		st.Kind, st.Reason = Cold, ReasonServerReported
		st.Overhead = ev.ServerSetup
		if tl != nil && ev.ServerSetup > 0 && !lastSend.IsZero() {
			tl.ModelReady = lastSend.Add(ev.ServerSetup)
		}
	case ev.NotReadyThenReady:
		st.Kind, st.Reason = Cold, ReasonNotReadyThenReady
		if tl != nil {
			tl.ModelReady = lastSend
			st.Overhead = lastSend.Sub(firstSend)
		}
	default:
		st.Kind, st.Reason = Warm, ReasonServerReported
	}
}

// slow reports whether fbt exceeds k × the warm p50. The p50 lies between
// the warm minimum and maximum, which settle most calls without computing
// it: a warm-looking call (fbt ≤ k × min) or a far outlier (fbt > k × max).
func (c *Classifier) slow(fbt time.Duration, w *warmFBT) bool {
	f := float64(fbt)
	switch {
	case f <= c.suspectK*float64(w.min):
		return false
	case f > c.suspectK*float64(w.max):
		return true
	}
	return f > c.suspectK*w.median()
}

// warmFBT is an endpoint's distribution of warm times to first byte, with
// only what the slow-first-byte test reads: count, extremes and median.
// It is not a stats.Dist: the classifier needs none of a Dist's exact
// sums, and its sketch maps values by cubic interpolation, which takes no
// logarithm.
type warmFBT struct {
	sketch   warmSketch
	n        uint64
	min, max time.Duration
	// p50 is the median as of when the sketch held p50N values.
	p50  float64
	p50N uint64
}

// add records a time to first byte (≥ 0).
func (w *warmFBT) add(d time.Duration) {
	w.sketch.add(float64(d))
	if w.n == 0 || d < w.min {
		w.min = d
	}
	if w.n == 0 || d > w.max {
		w.max = d
	}
	w.n++
}

// median returns the median of the warm times to first byte. Computing it
// walks the sketch's bins, which would cost more than the rest of a call's
// classification, so it is recomputed only once the warm calls have grown
// by more than 1/64 since: the value used reflects at least 98% of them,
// and is exact while there are fewer than 64.
func (w *warmFBT) median() float64 {
	if w.n-w.p50N > w.n/64 {
		w.p50, w.p50N = 0, w.n
		w.p50 = w.sketch.valueAtRank(quantile.NearestRank(0.5, w.n))
	}
	return w.p50
}

// lastActiveBefore returns the latest time at or before t when a recorded
// call showed the model up: the latest end at or before t, or t itself
// when a call that showed it up by t ended after t. seen is false when no
// call showed it up by t; known is false when that cannot be told because
// older calls were evicted from the ring.
func (es *endpointState) lastActiveBefore(t time.Time) (last time.Time, seen, known bool) {
	if es.total > 0 && !es.latest.After(t) {
		// Every call ended by t (calls one after another): no scan.
		return es.latest, true, true
	}
	// Newest first: under concurrency a call recorded just before was
	// most often up at t already, and t is the latest an answer can be,
	// so the scan ends there.
	n := min(es.total, recentEnds)
	for k := 1; k <= n; k++ {
		i := (es.next - k + recentEnds) % recentEnds
		if es.froms[i].After(t) {
			continue
		}
		e := es.ends[i]
		if !e.Before(t) {
			return t, true, true // up at t
		}
		if !seen || e.After(last) {
			last, seen = e, true
		}
	}
	return last, seen, seen || !es.evicted
}

func (es *endpointState) record(from, end time.Time) {
	if es.total >= recentEnds {
		es.evicted = true
	}
	es.froms[es.next] = from
	es.ends[es.next] = end
	if es.total == 0 || end.After(es.latest) {
		es.latest = end
	}
	es.next = (es.next + 1) % recentEnds
	es.total++
}
