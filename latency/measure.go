package latency

import (
	"strconv"
	"time"
)

// TokenSource says where a request's output token count (N_out) came from.
type TokenSource string

// Token sources.
const (
	// TokensFromServer: the provider's usage report.
	TokensFromServer TokenSource = "server"
	// TokensCounted: counted from the stream's content chunks.
	TokensCounted TokenSource = "counted"
)

// Outcome is what the caller knows about a finished call besides its
// Timeline. cloudreq users fill it from the request and the response:
//
//	s := latency.Measure(resp.Timing, latency.Outcome{
//		Endpoint:     req.EndpointKey(),
//		Class:        req.Class,
//		Start:        resp.Start,
//		OutputTokens: resp.Usage.OutputTokens,
//		TokenSource:  latency.TokenSource(resp.Usage.Source),
//	})
//
// and, for a failed call, Err: string(errcodes.Of(err)).
type Outcome struct {
	// Endpoint and Class label the request in reports.
	Endpoint string
	Class    string
	// Start is the call's cold/warm verdict (zero for failed calls).
	Start Start
	// OutputTokens is N_out as the response reported it; 0 when unknown,
	// in which case it is counted from the timeline's content chunks.
	OutputTokens int
	// TokenSource says where OutputTokens came from; empty means
	// TokensFromServer when OutputTokens > 0.
	TokenSource TokenSource
	// Err is the portable error code of a failed call, "" on success.
	Err string
}

// Clock names where a request's SLA clock started.
type Clock string

// SLA clocks.
const (
	// ClockSend: the final attempt's send time.
	ClockSend Clock = "send"
	// ClockModelReady: the time the model became ready (cold requests whose
	// ready time is known).
	ClockModelReady Clock = "model-ready"
)

// Phases is one attempt's time split (see the package documentation). A
// zero phase did not happen, or was not observed.
type Phases struct {
	// Attempt counts from 1.
	Attempt int `json:"attempt"`
	// Queue is the wait before this attempt's send: from the call's start
	// for the first attempt, from the previous attempt's end (backoff
	// included) for a retry.
	Queue time.Duration `json:"queue"`
	// DNS, Connect and TLS are the connection setup phases.
	DNS     time.Duration `json:"dns,omitempty"`
	Connect time.Duration `json:"connect,omitempty"`
	TLS     time.Duration `json:"tls,omitempty"`
	// Write is signing and request write: send → request written, less
	// DNS, connect and TLS.
	Write time.Duration `json:"write,omitempty"`
	// ServerWait is request written → first response byte.
	ServerWait time.Duration `json:"server_wait,omitempty"`
	// FirstToken is first response byte → first content chunk (final
	// attempt only; for a non-streamed call, the body's transfer).
	FirstToken time.Duration `json:"first_token,omitempty"`
	// Decode is first → last content chunk (final attempt of a stream).
	Decode time.Duration `json:"decode,omitempty"`
	// Status and Code are the attempt's outcome.
	Status int    `json:"status,omitempty"`
	Code   string `json:"code,omitempty"`
}

// Sample is the measurement of one call: every per-request metric of the
// package documentation, computed once by Measure. Has says which single-valued
// metrics are defined for it (TPOT needs N_out ≥ 2 and a stream, TTFT a
// stream with a content chunk, ColdStart a cold start with known overhead,
// and so on).
type Sample struct {
	Endpoint string    `json:"endpoint,omitempty"`
	Class    string    `json:"class,omitempty"`
	Start    StartKind `json:"start,omitempty"`
	// Reason is the evidence behind Start.
	Reason StartReason `json:"reason,omitempty"`
	// ConnectionCold: the final attempt opened a new connection.
	ConnectionCold bool `json:"connection_cold"`
	// Err is the portable error code of a failed call, "" on success.
	Err string `json:"err,omitempty"`
	// Streamed is true for a streamed call.
	Streamed bool `json:"streamed"`
	// Attempts is the number of attempts made.
	Attempts int `json:"attempts"`
	// Clock says where the SLA clock (TTFT, E2E) started.
	Clock Clock `json:"clock"`
	// Has is the set of single-valued metrics defined for this request.
	Has MetricSet `json:"has"`

	// The SLA-clock metrics.
	TTFT time.Duration `json:"ttft"`
	// TTFR is time to first reasoning chunk on the same clock (streamed
	// calls whose model reasoned).
	TTFR time.Duration `json:"ttfr,omitempty"`
	E2E  time.Duration `json:"e2e"`
	TPOT time.Duration `json:"tpot"`
	// TTFTFromSend and E2EFromSend are measured from the final attempt's
	// send time whatever the start (equal to TTFT and E2E unless Clock is
	// model-ready).
	TTFTFromSend time.Duration `json:"ttft_from_send"`
	E2EFromSend  time.Duration `json:"e2e_from_send"`
	// TTFTIntended and E2EIntended are measured from the intended send time.
	TTFTIntended time.Duration `json:"ttft_intended"`
	E2EIntended  time.Duration `json:"e2e_intended"`
	// ScheduleLag is the first attempt's send − the intended send time.
	ScheduleLag time.Duration `json:"schedule_lag"`
	// ColdStart is the cold-start overhead (cold requests).
	ColdStart time.Duration `json:"cold_start"`
	// ITL holds the gaps between consecutive content chunks, and
	// ITLPerToken each gap divided by its closing chunk's tokens.
	ITL         []time.Duration `json:"itl,omitempty"`
	ITLPerToken []time.Duration `json:"itl_per_token,omitempty"`
	// OutputTokens is N_out and TokenSource where it came from.
	OutputTokens int         `json:"output_tokens"`
	TokenSource  TokenSource `json:"token_source,omitempty"`
	// Phases is the final attempt's split, with Queue covering everything
	// from the call's start to the final send (earlier attempts included).
	Phases Phases `json:"phases"`
	// AttemptPhases holds each attempt's own split, in order.
	AttemptPhases []Phases `json:"attempt_phases,omitempty"`
	// Begin is the earlier of the intended send and the call's start; End
	// is the call's end. Recorders use them for the run's time window.
	Begin time.Time `json:"begin"`
	End   time.Time `json:"end"`
}

// String gives the attempt count and the TTFT, TPOT and E2E the sample has,
// rounded to the microsecond, on one line: "attempts=1 ttft=212.4ms
// tpot=21.3ms e2e=1.2s".
func (s *Sample) String() string {
	b := []byte("attempts=" + strconv.Itoa(s.Attempts))
	for _, m := range [...]struct {
		name string
		m    Metric
	}{{"ttft", TTFT}, {"tpot", TPOT}, {"e2e", E2E}} {
		if v, ok := s.Value(m.m); ok {
			b = append(b, " "+m.name+"="+time.Duration(v).Round(time.Microsecond).String()...)
		}
	}
	return string(b)
}

// Value returns a single-valued metric of the request (nanoseconds for
// durations), and whether the request has it. ITL and ITLToken, which have
// one value per gap, are never returned here: read Sample.ITL.
func (s *Sample) Value(m Metric) (int64, bool) {
	if !s.Has.Has(m) {
		return 0, false
	}
	var d time.Duration
	switch m {
	case TTFT:
		d = s.TTFT
	case TTFR:
		d = s.TTFR
	case TPOT:
		d = s.TPOT
	case E2E:
		d = s.E2E
	case TTFTIntended:
		d = s.TTFTIntended
	case E2EIntended:
		d = s.E2EIntended
	case ScheduleLag:
		d = s.ScheduleLag
	case ColdStart:
		d = s.ColdStart
	case Queue:
		d = s.Phases.Queue
	case DNS:
		d = s.Phases.DNS
	case Connect:
		d = s.Phases.Connect
	case TLS:
		d = s.Phases.TLS
	case Write:
		d = s.Phases.Write
	case ServerWait:
		d = s.Phases.ServerWait
	case FirstToken:
		d = s.Phases.FirstToken
	case Decode:
		d = s.Phases.Decode
	case OutputTokens:
		return int64(s.OutputTokens), true
	default:
		return 0, false
	}
	return int64(d), true
}

// Measure computes every per-request metric of a finished call from its
// Timeline — the one implementation of the package documentation's
// formulas:
//
//   - send time is the final attempt's send; the SLA clock starts there, or
//     at tl.ModelReady for a cold request whose ready time is known;
//   - TTFT = first content chunk − clock; role-only, empty and usage-only
//     chunks never count, nor do reasoning-only chunks when an answer
//     chunk (text or tool call) follows;
//   - TTFR = first reasoning-only chunk − clock (streamed calls with one); A non-streamed call's one chunk is its whole body:
//     its TTFT field equals E2E, and Has leaves TTFT (and TTFTIntended) out,
//     so that no TTFT distribution, SLA or ladder reads a total as a first
//     token;
//   - E2E = last content chunk (the whole body, non-streamed) − clock;
//   - N_out = o.OutputTokens when the server reported it (o.TokenSource),
//     else the tokens of the content chunks (a content chunk without a
//     count is one token);
//   - TPOT = (E2E − TTFT) / (N_out − 1) for a streamed call with N_out ≥ 2;
//   - ITL = gaps between consecutive content chunks, and per token each gap
//     divided by the tokens of the chunk that closed it;
//   - TTFTIntended, E2EIntended: the same arrivals − the intended send;
//   - ScheduleLag = first attempt's send − intended send.
//
// A failed call (o.Err set) is measured as far as its timeline goes — a
// stream cut mid-way keeps its TTFT and its gaps — but stats.Recorder
// counts it as an error and keeps it out of the latency distributions.
func Measure(tl *Timeline, o Outcome) Sample {
	s := Sample{Endpoint: o.Endpoint, Class: o.Class, Err: o.Err, Clock: ClockSend}
	if o.Err == "" {
		s.Start, s.Reason = o.Start.Kind, o.Start.Reason
	}
	if tl == nil {
		return s
	}
	s.Streamed = tl.Streamed
	s.Attempts = len(tl.Attempts)
	s.Begin, s.End = tl.IntendedSend, tl.End
	if !tl.Start.IsZero() && (s.Begin.IsZero() || tl.Start.Before(s.Begin)) {
		s.Begin = tl.Start
	}

	// Chunks: first and last content, counted tokens, gaps. The two gap
	// slices share one allocation.
	var first, last, answer, reasoning time.Time
	counted, contents := 0, 0
	if tl.Streamed {
		n := 0
		for i := range tl.Chunks {
			if tl.Chunks[i].Content {
				n++
			}
		}
		if n > 1 {
			buf := make([]time.Duration, 2*(n-1))
			s.ITL, s.ITLPerToken = buf[:0:n-1], buf[n-1:n-1]
		}
	}
	for _, c := range tl.Chunks {
		if !c.Content {
			continue
		}
		n := max(c.Tokens, 1)
		counted += n
		contents++
		if c.Reasoning {
			if reasoning.IsZero() {
				reasoning = c.At
			}
		} else if answer.IsZero() {
			answer = c.At
		}
		if first.IsZero() {
			first = c.At
		} else if tl.Streamed {
			gap := c.At.Sub(last)
			s.ITL = append(s.ITL, gap)
			s.ITLPerToken = append(s.ITLPerToken, divRound(gap, n))
		}
		last = c.At
	}
	switch {
	case o.OutputTokens > 0:
		s.OutputTokens, s.TokenSource = o.OutputTokens, o.TokenSource
		if s.TokenSource == "" {
			s.TokenSource = TokensFromServer
		}
	case !tl.Streamed:
		// A non-streamed body with no usage: its token count is unknown.
		if contents > 0 && tl.Chunks[0].Tokens > 0 {
			s.OutputTokens, s.TokenSource = counted, TokensCounted
		}
	default:
		s.OutputTokens, s.TokenSource = counted, TokensCounted
	}
	if s.TokenSource != "" {
		s.Has = s.Has.With(OutputTokens)
	}

	if len(tl.Attempts) == 0 {
		return s
	}
	a0, fin := &tl.Attempts[0], tl.LastAttempt()
	send := fin.Send

	if !tl.IntendedSend.IsZero() {
		s.ScheduleLag = a0.Send.Sub(tl.IntendedSend)
		s.Has = s.Has.With(ScheduleLag)
	}
	clock := send
	if s.Start == Cold && !tl.ModelReady.IsZero() {
		clock, s.Clock = tl.ModelReady, ClockModelReady
		if !first.IsZero() && clock.After(first) {
			clock = first // a reported setup longer than the wait itself
		}
	}
	if s.Start == Cold && o.Start.Overhead > 0 {
		s.ColdStart = o.Start.Overhead
		s.Has = s.Has.With(ColdStart)
	}
	s.ConnectionCold = !fin.ConnReused && !fin.GotConn.IsZero()

	if !first.IsZero() {
		// TTFT is the answer's first chunk; a stream of reasoning only
		// keeps its first chunk.
		ttft := answer
		if ttft.IsZero() {
			ttft = first
		}
		if !reasoning.IsZero() && tl.Streamed {
			s.TTFR = reasoning.Sub(clock)
			s.Has = s.Has.With(TTFR)
		}
		s.TTFT, s.E2E = ttft.Sub(clock), last.Sub(clock)
		s.TTFTFromSend, s.E2EFromSend = ttft.Sub(send), last.Sub(send)
		s.Has = s.Has.With(E2E)
		if tl.Streamed {
			s.Has = s.Has.With(TTFT)
		}
		if !tl.IntendedSend.IsZero() {
			s.TTFTIntended, s.E2EIntended = ttft.Sub(tl.IntendedSend), last.Sub(tl.IntendedSend)
			s.Has = s.Has.With(E2EIntended)
			if tl.Streamed {
				s.Has = s.Has.With(TTFTIntended)
			}
		}
		if tl.Streamed && s.OutputTokens >= 2 {
			s.TPOT = divRound(last.Sub(first), s.OutputTokens-1)
			s.Has = s.Has.With(TPOT)
		}
	}

	// Phases of each attempt, then the final one's with the full queue.
	s.AttemptPhases = make([]Phases, len(tl.Attempts))
	prevEnd := tl.Start
	for i := range tl.Attempts {
		a := &tl.Attempts[i]
		s.AttemptPhases[i] = attemptPhases(a, prevEnd)
		prevEnd = a.End
	}
	p := s.AttemptPhases[len(s.AttemptPhases)-1]
	if !tl.Start.IsZero() {
		p.Queue = send.Sub(tl.Start)
		s.Has = s.Has.With(Queue)
	}
	if !fin.DNSDone.IsZero() && !fin.DNSStart.IsZero() {
		s.Has = s.Has.With(DNS)
	}
	if !fin.ConnectDone.IsZero() && !fin.ConnectStart.IsZero() {
		s.Has = s.Has.With(Connect)
	}
	if !fin.TLSDone.IsZero() && !fin.TLSStart.IsZero() {
		s.Has = s.Has.With(TLS)
	}
	if !fin.WroteRequest.IsZero() {
		s.Has = s.Has.With(Write)
		if !fin.FirstByte.IsZero() {
			s.Has = s.Has.With(ServerWait)
		}
	}
	if !first.IsZero() && !fin.FirstByte.IsZero() {
		p.FirstToken = first.Sub(fin.FirstByte)
		s.Has = s.Has.With(FirstToken)
	}
	if !first.IsZero() && tl.Streamed {
		p.Decode = last.Sub(first)
		s.Has = s.Has.With(Decode)
	}
	s.AttemptPhases[len(s.AttemptPhases)-1].FirstToken = p.FirstToken
	s.AttemptPhases[len(s.AttemptPhases)-1].Decode = p.Decode
	s.Phases = p
	return s
}

// attemptPhases splits one attempt; prevEnd is when the wait before it began.
func attemptPhases(a *Attempt, prevEnd time.Time) Phases {
	p := Phases{Attempt: a.Number, Status: a.Status, Code: a.Code}
	span := func(from, to time.Time) time.Duration {
		if from.IsZero() || to.IsZero() {
			return 0
		}
		return to.Sub(from)
	}
	p.Queue = max(span(prevEnd, a.Send), 0)
	p.DNS = span(a.DNSStart, a.DNSDone)
	p.Connect = span(a.ConnectStart, a.ConnectDone)
	p.TLS = span(a.TLSStart, a.TLSDone)
	if wrote := a.WroteRequest; !wrote.IsZero() {
		if !a.FirstByte.IsZero() && a.FirstByte.Before(wrote) {
			// The response began before the transport reported the
			// request written: HTTP/2 reports it from its writer goroutine,
			// which may run after the answer came, and a server may answer
			// before reading the whole request. The write then counts up to
			// the first byte, and there was no wait.
			wrote = a.FirstByte
		}
		p.Write = max(wrote.Sub(a.Send)-p.DNS-p.Connect-p.TLS, 0)
		p.ServerWait = span(wrote, a.FirstByte)
	}
	return p
}

// divRound returns d / n rounded to the nearest nanosecond.
func divRound(d time.Duration, n int) time.Duration {
	if n <= 1 {
		return d
	}
	q, r := d/time.Duration(n), d%time.Duration(n)
	if 2*r >= time.Duration(n) {
		q++
	} else if 2*r <= -time.Duration(n) {
		q--
	}
	return q
}
