package emulator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Record is the ground truth of one request: what the emulator injected and
// when it wrote. Durations are real (already scaled) milliseconds.
type Record struct {
	// ID is the emulator's request id (also X-Emulator-Request-Id).
	ID string `json:"id"`
	// Seq is the endpoint's request number (1, 2, …), which seeds its draws.
	Seq uint64 `json:"seq"`
	// Endpoint is the endpoint's name.
	Endpoint string `json:"endpoint"`
	// Provider is the protocol that served it.
	Provider Provider `json:"provider"`
	// Route is the operation (e.g. "invocations-response-stream", "chat/completions", "StreamGenerateContent").
	Route string `json:"route"`
	// Stream says whether the response was streamed.
	Stream bool `json:"stream"`
	// Arrival is when the request arrived.
	Arrival time.Time `json:"arrival"`
	// Status is the HTTP status sent (for gRPC, the status code's HTTP equivalent); 0 if none was sent.
	Status int `json:"status"`
	// Fault is the injected fault, if any.
	Fault Fault `json:"fault,omitempty"`
	// FaultForced says the fault came from X-Emulator-Inject (else from the profile's error rates or the endpoint's state).
	FaultForced bool `json:"fault_forced,omitempty"`
	// Cold says the request met a cold start (and waited ColdStartMs).
	Cold bool `json:"cold"`
	// ColdStartMs is the setup time this request waited.
	ColdStartMs float64 `json:"cold_start_ms"`
	// QueueMs is the time waited for a concurrency slot.
	QueueMs float64 `json:"queue_ms"`
	// Active is the number of requests being served at admission, this one included.
	Active int `json:"active"`
	// PrefillMs is the injected prefill time (TTFT less the cold-start and queue waits).
	PrefillMs float64 `json:"prefill_ms"`
	// TTFTMs is the injected time from arrival to the first token.
	TTFTMs float64 `json:"ttft_ms"`
	// TPOTMs is the injected time per output token of this request ((E2E−TTFT)/(N−1)).
	TPOTMs float64 `json:"tpot_ms"`
	// E2EMs is the injected time from arrival to the last token.
	E2EMs float64 `json:"e2e_ms"`
	// GapsMs are the injected inter-token gaps.
	GapsMs []float64 `json:"gaps_ms,omitempty"`
	// PromptTokens is the estimated prompt length (bytes/4, rounded up).
	PromptTokens int `json:"prompt_tokens"`
	// MaxTokens is the client's output limit (0: none).
	MaxTokens int `json:"max_tokens,omitempty"`
	// SessionID is the SageMaker stateful session the request belongs to:
	// the one it opened (NEW_SESSION), or the id it carried.
	SessionID string `json:"session_id,omitempty"`
	// IgnoreEOS says the request asked for its max tokens past the end of
	// sequence (vLLM's ignore_eos): OutputTokens is then MaxTokens.
	IgnoreEOS bool `json:"ignore_eos,omitempty"`
	// CachedTokens is the prompt's part found in the endpoint's prefix
	// cache (whole blocks; see Profile.PrefixCacheTokens), left out of its
	// prefill time.
	CachedTokens int `json:"cached_tokens,omitempty"`
	// OutputTokens is the number of tokens planned (the usage the response reports).
	OutputTokens int `json:"output_tokens"`
	// TokensSent is how many tokens were written before the response ended.
	TokensSent int `json:"tokens_sent"`
	// FirstTokenMs is when the first token was written, measured from arrival (0 if none).
	FirstTokenMs float64 `json:"first_token_ms"`
	// LastTokenMs is when the last token was written, measured from arrival (0 if none).
	LastTokenMs float64 `json:"last_token_ms"`
	// Outcome is "ok", "error" (an error answer), "fault" (a transport or mid-stream fault) or "canceled".
	Outcome string `json:"outcome"`
	// TimeScale is the time scale the request ran under.
	TimeScale float64 `json:"time_scale"`
	// ClientRequestID is the client's X-Request-Id (at most 256 bytes kept),
	// which the request's vLLM span names (SpanRequestID).
	ClientRequestID string `json:"client_request_id,omitempty"`

	cacheQueried bool // the prefix cache was looked up (the request reached its prefill)
}

// Ground-truth and control header names (gRPC metadata uses them in lower case).
const (
	HeaderInject = "X-Emulator-Inject"
	// HeaderStreamError: "InternalStreamFailure" makes SageMaker's
	// stream-error fault an InternalStreamFailure frame instead of a
	// ModelStreamError.
	HeaderStreamError   = "X-Emulator-Stream-Error"
	HeaderCold          = "X-Emulator-Cold"
	HeaderTTFTMs        = "X-Emulator-Ttft-Ms"
	HeaderTPOTMs        = "X-Emulator-Tpot-Ms"
	HeaderColdStart     = "X-Emulator-Cold-Start"
	HeaderColdStartMs   = "X-Emulator-Cold-Start-Ms"
	HeaderQueueMs       = "X-Emulator-Queue-Ms"
	HeaderRequestID     = "X-Emulator-Request-Id"
	HeaderOutputTokens  = "X-Emulator-Output-Tokens"
	HeaderPromptTokens  = "X-Emulator-Prompt-Tokens"
	HeaderTimeScale     = "X-Emulator-Time-Scale"
	HeaderFault         = "X-Emulator-Fault"
	HeaderEndpoint      = "X-Emulator-Endpoint"
	HeaderRetryAfterMs  = "retry-after-ms"
	headerContentLength = "Content-Length"
)

// call is one request in flight.
type call struct {
	s      *Server
	ep     *endpoint
	gen    genRequest
	rec    Record
	rng    *rand.Rand
	forced bool // X-Emulator-Cold

	// drawn at creation, in a fixed order
	coldMs  float64
	prefill float64 // ms, before prompt and batching terms
	tpot    float64 // ms
	n       int
	finish  string // "stop" or "length"
	gapsRaw []float64
	words   []string
	// the answer's form (see shape): its call, whether it is JSON, and
	// how many of words, first, are reasoning
	tool       *toolCallAnswer
	structured bool
	reasoningN int
	breakAt    int // tokens sent before a mid-stream fault
	retryIn    time.Duration
	arrived    bool
	slotHeld   bool
	kv         *kvSeq // in the endpoint's KV cache while it runs

	// holdUntil is the earliest time any answer may start (see minAnswerDelay).
	holdUntil time.Time

	// schedule, set by admit
	firstAt time.Time
	tokenAt []time.Time
}

// headerGetter reads a request header or gRPC metadata value.
type headerGetter func(name string) string

// newCall creates a call and draws all its random values.
func (s *Server) newCall(ep *endpoint, prov Provider, route string, gen genRequest, get headerGetter, arrival time.Time) (*call, error) {
	seq := ep.seq.next()
	c := &call{s: s, ep: ep, gen: gen, rng: ep.rng(seq)}
	c.rec = Record{
		ID:           fmt.Sprintf("emu-%s-%d-%d", ep.Name, s.instance, seq),
		Seq:          seq,
		Endpoint:     ep.Name,
		Provider:     prov,
		Route:        route,
		Stream:       gen.stream,
		Arrival:      arrival,
		PromptTokens: gen.promptTokens,
		MaxTokens:    gen.maxTokens,
		IgnoreEOS:    gen.ignoreEOS && gen.maxTokens > 0,
		TimeScale:    s.scale,
	}
	if id := get(HeaderClientRequestID); id != "" {
		c.rec.ClientRequestID = id[:min(len(id), maxClientRequestID)]
	}
	p := ep.prof
	d := drawRequestN(p, gen.maxTokens, c.rec.IgnoreEOS, c.rng)
	u := d.u
	c.coldMs, c.prefill, c.tpot, c.n, c.finish, c.gapsRaw, c.words = d.coldMs, d.prefillMs, d.tpotMs, d.n, d.finish, d.gapsMs, d.words
	c.breakAt = max(1, (c.n+1)/2)
	c.rec.OutputTokens = c.n
	c.shape()

	if v := get(HeaderInject); v != "" {
		v = strings.ToLower(strings.TrimSpace(v))
		if !isFault(v) {
			return c, fmt.Errorf("unknown %s value %q (known: %v)", HeaderInject, v, Faults())
		}
		c.rec.Fault, c.rec.FaultForced = Fault(v), true
	} else if f := drawFault(p.ErrorRates, u); f != "" {
		c.rec.Fault = f
	}
	if v := get(HeaderCold); v == "1" || strings.EqualFold(v, "true") {
		c.forced = true
	}
	return c, nil
}

// draws are one request's random values, in emulated milliseconds.
type draws struct {
	u         float64 // picks the fault from the error rates
	coldMs    float64
	prefillMs float64 // TTFT before the prompt-length and batching terms
	tpotMs    float64
	n         int
	finish    string // "stop", or "length" when max tokens cut the output
	gapsMs    []float64
	words     []string
}

// drawRequest draws a request's values in a fixed order: fault, cold start,
// prefill, decode speed, length, gaps, words.
func drawRequest(p Profile, maxTokens int, r *rand.Rand) draws {
	return drawRequestN(p, maxTokens, false, r)
}

// drawRequestN is drawRequest; with exact (ignore_eos) the output is
// maxTokens long, its drawn length left unused.
func drawRequestN(p Profile, maxTokens int, exact bool, r *rand.Rand) draws {
	d := draws{u: r.Float64()}
	d.coldMs = p.ColdStartMs.sample(r)
	d.prefillMs = p.TTFTMs.sample(r)
	d.tpotMs = p.TPOTMs.sample(r)
	d.n = sampleLength(p.OutputTokens, r)
	d.finish = "stop"
	if maxTokens > 0 && (d.n > maxTokens || exact) {
		d.n, d.finish = maxTokens, "length"
	}
	d.gapsMs = make([]float64, max(d.n-1, 0))
	jitter := Dist{1, p.GapJitter}
	sum := 0.0
	for i := range d.gapsMs {
		d.gapsMs[i] = jitter.sample(r)
		sum += d.gapsMs[i]
	}
	for i := range d.gapsMs {
		d.gapsMs[i] *= d.tpotMs * float64(len(d.gapsMs)) / sum
	}
	d.words = make([]string, d.n)
	for i := range d.words {
		d.words[i] = vocabulary[r.IntN(len(vocabulary))]
	}
	return d
}

// sampleLength draws an output length: the lognormal of mean d.Mean and
// sd √(d.SD² − 1/12), rounded (rounding adds 1/12 to the variance), at least 1.
func sampleLength(d Dist, r *rand.Rand) int {
	sd := math.Sqrt(math.Max(d.SD*d.SD-1.0/12, 0))
	v := Dist{d.Mean, sd}.sample(r)
	return max(1, int(math.Round(math.Min(v, 4*maxOutputTokens))))
}

// drawFault picks a fault from rates with one uniform draw u.
func drawFault(rates map[string]float64, u float64) Fault {
	if len(rates) == 0 {
		return ""
	}
	acc := 0.0
	for _, f := range allFaults {
		acc += rates[string(f)]
		if u < acc {
			return f
		}
	}
	return ""
}

// fault returns the fault to act on.
func (c *call) fault() Fault { return c.rec.Fault }

// setFault records a fault decided by the endpoint's state.
func (c *call) setFault(f Fault) { c.rec.Fault, c.rec.FaultForced = f, false }

var errStateFault = errors.New("refused by endpoint state")

// minAnswerDelay is the least real time between reading a request and
// answering it on the routes whose official client needs it. aws-sdk-go-v2
// closes the request body as soon as the response headers arrive; when that
// happens before net/http's transport has finished its final read of the
// body (microseconds after sending it), the transport sees io.EOF as a write
// error and closes the connection under the response. A real endpoint never
// answers that fast; the emulator at a small time scale would. The margin
// allows for a client whose writing goroutine waits a few milliseconds for
// a CPU, as under a busy test run.
const minAnswerDelay = 5 * time.Millisecond

// hold delays every answer of the call until minAnswerDelay after now.
func (c *call) hold() { c.holdUntil = time.Now().Add(minAnswerDelay) }

// waitHold sleeps until the call may answer.
func (c *call) waitHold(ctx context.Context) error {
	if c.holdUntil.IsZero() {
		return nil
	}
	return c.s.sleepUntil(ctx, c.holdUntil)
}

// admit runs the endpoint's admission: injected errors, throttling, cold
// start and the concurrency queue. On success it fixes the token schedule.
// When it returns errStateFault or the call already carries an error fault,
// the caller answers c.fault(); any other error means the client went away.
// The profile's request timeout bounds the cold-start and queue waits too:
// a request still waiting when it is up gets the timeout fault then.
func (c *call) admit(ctx context.Context) error {
	if f := c.fault(); f.isError() || f == FaultResetBeforeHeaders || f == FaultHTML502 {
		if f == FaultThrottle || f == FaultQueueFull || f == FaultModelNotReady {
			c.retryIn = c.ep.scaled(1000)
		}
		return errStateFault
	}
	now := time.Now()
	if wait, ok := c.ep.takeToken(now); !ok {
		c.setFault(FaultThrottle)
		c.retryIn = wait
		return errStateFault
	}
	p := c.ep.prof
	var deadline time.Time // the server's own timeout (zero: none)
	waitCtx := ctx         // ends at the deadline too
	if p.RequestTimeoutMs > 0 {
		deadline = c.rec.Arrival.Add(c.ep.scaled(p.RequestTimeoutMs))
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	// waitErr turns a wait cut by the deadline, not by the client, into the timeout fault.
	waitErr := func(err error) error {
		if !deadline.IsZero() && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			c.setFault(FaultTimeout)
			return errStateFault
		}
		return err
	}
	st := c.ep.arrive(now, c.coldMs)
	c.arrived = true
	switch {
	case c.forced:
		// Its own setup time, or longer if the model is still starting.
		wait := max(c.ep.scaled(c.coldMs), st.wait)
		c.rec.Cold = true
		c.rec.ColdStartMs = ms(wait)
		if err := c.s.sleepUntil(waitCtx, now.Add(wait)); err != nil {
			return waitErr(err)
		}
	case st.cold && c.ep.ColdMode == ColdReject:
		c.setFault(FaultModelNotReady)
		c.retryIn = st.wait
		return errStateFault
	case st.cold:
		c.rec.Cold = true
		c.rec.ColdStartMs = ms(st.wait)
		if err := c.s.sleepUntil(waitCtx, now.Add(st.wait)); err != nil {
			return waitErr(err)
		}
	}
	q0 := time.Now()
	active, err := c.ep.acquire(waitCtx, c.s.closed)
	if errors.Is(err, errQueueFull) {
		c.setFault(FaultQueueFull)
		c.retryIn = c.ep.scaled(c.prefill + c.tpot*float64(c.n))
		return errStateFault
	}
	if err != nil {
		return waitErr(err)
	}
	c.slotHeld = true
	start := time.Now()
	c.rec.QueueMs = ms(start.Sub(q0))
	c.rec.Active = active

	if c.ep.cache != nil {
		c.rec.CachedTokens = min(c.ep.cache.lookup(c.gen.prompt), c.gen.promptTokens)
		c.rec.cacheQueried = true
	}
	prefill := c.prefill + p.PrefillMsPer1K*float64(c.gen.promptTokens-c.rec.CachedTokens-p.RefPromptTokens)/1000 + p.BatchPenaltyMs*float64(active-1)
	prefill = math.Max(prefill, 0)
	c.firstAt = start.Add(c.ep.scaled(prefill))
	if c.firstAt.Before(c.holdUntil) {
		c.firstAt = c.holdUntil
	}
	c.tokenAt = make([]time.Time, c.n)
	c.rec.GapsMs = make([]float64, len(c.gapsRaw))
	t := c.firstAt
	c.tokenAt[0] = t
	for i, g := range c.gapsRaw {
		d := c.ep.scaled(g)
		t = t.Add(d)
		c.tokenAt[i+1] = t
		c.rec.GapsMs[i] = ms(d)
	}
	c.kv = c.ep.kv.add(c.gen.promptTokens, c.tokenAt)
	c.rec.PrefillMs = ms(c.ep.scaled(prefill))
	c.rec.TTFTMs = ms(c.firstAt.Sub(c.rec.Arrival))
	c.rec.E2EMs = ms(t.Sub(c.rec.Arrival))
	if c.n > 1 {
		c.rec.TPOTMs = ms(t.Sub(c.firstAt)) / float64(c.n-1)
	}
	if !deadline.IsZero() {
		answerAt := c.firstAt
		if !c.gen.stream {
			answerAt = c.lastAt()
		}
		if answerAt.After(deadline) {
			if err := c.s.sleepUntil(ctx, deadline); err != nil {
				return err
			}
			c.tokenAt = nil
			c.setFault(FaultTimeout)
			return errStateFault
		}
	}
	return nil
}

// waitToken sleeps until token i is due.
func (c *call) waitToken(ctx context.Context, i int) error {
	return c.s.sleepUntil(ctx, c.tokenAt[i])
}

// lastAt is when the last token is due.
func (c *call) lastAt() time.Time { return c.tokenAt[len(c.tokenAt)-1] }

// sent notes that token i was written.
func (c *call) sent(i int) {
	d := ms(time.Since(c.rec.Arrival))
	if i == 0 || c.rec.FirstTokenMs == 0 {
		c.rec.FirstTokenMs = d
	}
	c.rec.LastTokenMs = d
	c.rec.TokensSent = i + 1
}

// sentAll notes a non-streamed body holding every token.
func (c *call) sentAll() {
	d := ms(time.Since(c.rec.Arrival))
	c.rec.FirstTokenMs, c.rec.LastTokenMs, c.rec.TokensSent = d, d, c.n
}

// text returns the whole generated text.
func (c *call) text() string { return strings.Join(c.words, "") }

// stall holds a stalled stream for the profile's stall time.
func (c *call) stall(ctx context.Context) {
	_ = c.s.sleepUntil(ctx, time.Now().Add(c.ep.scaled(c.ep.prof.StallMs)))
}

// end releases the call's resources and stores its record.
func (c *call) end(status int, outcome string) {
	c.ep.kv.remove(c.kv)
	c.kv = nil
	if c.slotHeld {
		c.ep.release()
		c.slotHeld = false
	}
	if c.arrived {
		c.ep.leave()
		c.arrived = false
	}
	c.rec.Status = status
	c.rec.Outcome = outcome
	c.s.store(c.rec)
	c.s.observe(&c.rec, c.gen.dialect == dialectTGI)
	c.s.log.Debug("emulator request", "id", c.rec.ID, "endpoint", c.rec.Endpoint, "provider", c.rec.Provider,
		"route", c.rec.Route, "status", status, "outcome", outcome, "fault", c.rec.Fault, "cold", c.rec.Cold,
		"ttft_ms", c.rec.TTFTMs, "tokens", c.rec.TokensSent)
}

// truth returns the ground-truth header values.
func (c *call) truth() [][2]string {
	h := [][2]string{
		{HeaderRequestID, c.rec.ID},
		{HeaderEndpoint, c.ep.Name},
		{HeaderTimeScale, strconv.FormatFloat(c.s.scale, 'g', -1, 64)},
		{HeaderColdStart, strconv.FormatBool(c.rec.Cold)},
		{HeaderColdStartMs, fmtMs(c.rec.ColdStartMs)},
		{HeaderPromptTokens, strconv.Itoa(c.gen.promptTokens)},
	}
	if c.fault() != "" {
		h = append(h, [2]string{HeaderFault, string(c.fault())})
	}
	if c.tokenAt != nil {
		h = append(h,
			[2]string{HeaderTTFTMs, fmtMs(c.rec.TTFTMs)},
			[2]string{HeaderTPOTMs, fmtMs(c.rec.TPOTMs)},
			[2]string{HeaderQueueMs, fmtMs(c.rec.QueueMs)},
			[2]string{HeaderOutputTokens, strconv.Itoa(c.n)},
		)
	}
	return h
}

// setTruth writes the ground-truth headers.
func (c *call) setTruth(h http.Header) {
	for _, kv := range c.truth() {
		h.Set(kv[0], kv[1])
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fmtMs(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// vocabulary is what the emulated models say: one entry is one token.
var vocabulary = func() []string {
	words := strings.Fields(`the a model of cloud latency token stream first time to each request
		server response endpoint region warm cold start queue batch decode prefill output input prompt
		fast slow steady measure record report emulate protocol wire frame event chunk signal and with
		for from into over under between after before while when`)
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = " " + w
	}
	return slices.Clip(out)
}()
