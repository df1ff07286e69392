package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// Sessions is the sessions model: Users concurrent users, each holding one
// conversation after another of Turns turns. Turn 1's prompt is a user
// message of the payload's PromptTokens tokens (with a Prefix, the
// session's group's prefix first); turn k's is the conversation so far —
// every earlier user message and the answer it got, as user and assistant
// messages — and a new user message of TurnTokens tokens. A user waits a
// think time between receiving an answer and sending its next turn. Each
// turn is a measured request; the requests limit counts turns, and a
// duration ends every session where it stands. TargetResult.Turns holds
// the figures by turn index: TTFT growing less than the prompt shows a
// prefix cache at work.
//
// With Stateful, on SageMaker targets each conversation is a stateful
// session: it is opened by an unmeasured InvokeEndpoint with session id
// NEW_SESSION (a stream cannot open one) that sends turn 1's prompt for
// one output token, every turn carries the id the endpoint answered, and
// the session is closed after its last turn by an unmeasured
// InvokeEndpoint carrying the id and CloseBody. Other providers have no
// such sessions: the flag is ignored there.
type Sessions struct {
	// Users is how many conversations run at once (default 1).
	Users int `json:"users,omitempty" yaml:"users,omitempty"`
	// Turns is each conversation's length (default 3).
	Turns int `json:"turns,omitempty" yaml:"turns,omitempty"`
	// TurnTokens is the length of each user message after the first
	// (default: the payload's PromptTokens).
	TurnTokens int `json:"turn_tokens,omitempty" yaml:"turn_tokens,omitempty"`
	// Think is the mean think time between turns (0: none).
	Think Duration `json:"think,omitempty" yaml:"think,omitempty"`
	// ThinkDist is the think time's distribution: constant (default),
	// exponential or uniform (on [0, 2 × Think]).
	ThinkDist string `json:"think_dist,omitempty" yaml:"think_dist,omitempty"`
	// Stateful carries SageMaker stateful session ids (see above).
	Stateful bool `json:"stateful,omitempty" yaml:"stateful,omitempty"`
	// CloseBody is the body that closes a stateful session, which the
	// model's container defines (default {"requestType":"CLOSE"}, which
	// the emulator takes).
	CloseBody string `json:"close_body,omitempty" yaml:"close_body,omitempty"`
}

// Think-time distributions.
const (
	ThinkConstant    = "constant"
	ThinkExponential = "exponential"
	ThinkUniform     = "uniform"
)

// DefaultCloseBody is Sessions.CloseBody's default.
const DefaultCloseBody = `{"requestType":"CLOSE"}`

// MaxTurns bounds Sessions.Turns.
const MaxTurns = 1000

// SageMaker stateful session values (see package sagemaker).
const (
	sessionNew          = "NEW_SESSION"
	headerNewSessionID  = "X-Amzn-SageMaker-New-Session-Id"
	headerClosedSession = "X-Amzn-SageMaker-Closed-Session-Id"
)

func (ss *Sessions) prepare() error {
	bad := func(format string, args ...any) error {
		return errcodes.Errorf(errcodes.InvalidParam, "bench: sessions: "+format, args...)
	}
	if ss.Users == 0 {
		ss.Users = 1
	}
	if ss.Turns == 0 {
		ss.Turns = 3
	}
	ss.ThinkDist = strings.ToLower(ss.ThinkDist)
	if ss.ThinkDist == "" {
		ss.ThinkDist = ThinkConstant
	}
	if ss.CloseBody == "" {
		ss.CloseBody = DefaultCloseBody
	}
	switch {
	case ss.Users < 0 || ss.Users > MaxWorkers:
		return bad("users %d must lie in [1, %d]", ss.Users, MaxWorkers)
	case ss.Turns < 0 || ss.Turns > MaxTurns:
		return bad("turns %d must lie in [1, %d]", ss.Turns, MaxTurns)
	case ss.TurnTokens < 0 || ss.TurnTokens > MaxPromptTokens:
		return bad("turn tokens %d must lie in [0, %d]", ss.TurnTokens, MaxPromptTokens)
	case ss.Think < 0:
		return bad("think time %v must not be negative", ss.Think)
	case ss.ThinkDist != ThinkConstant && ss.ThinkDist != ThinkExponential && ss.ThinkDist != ThinkUniform:
		return bad("think distribution %q: want constant, exponential or uniform", ss.ThinkDist)
	}
	return nil
}

// String describes the sessions load.
func (ss *Sessions) String() string {
	s := fmt.Sprintf("sessions: %d users × %d turns", ss.Users, ss.Turns)
	if ss.Think > 0 {
		s += fmt.Sprintf(", think %v (%s)", ss.Think, ss.ThinkDist)
	}
	if ss.Stateful {
		s += ", stateful"
	}
	return s
}

// think draws one think time.
func (ss *Sessions) think(r *rand.Rand) time.Duration {
	m := ss.Think.D()
	switch {
	case m <= 0:
		return 0
	case ss.ThinkDist == ThinkExponential:
		return time.Duration(r.ExpFloat64() * float64(m))
	case ss.ThinkDist == ThinkUniform:
		return time.Duration(r.Float64() * 2 * float64(m))
	}
	return m
}

// turnKey is the context key of a session request's turn index.
type turnKey struct{}

// turnOf returns the turn index a request's context carries (1, 2, …), or
// 0 outside sessions.
func turnOf(ctx context.Context) int {
	n, _ := ctx.Value(turnKey{}).(int)
	return n
}

// sessions runs the sessions model: Users workers, each running
// conversations until a limit. A duration's end, or an interrupt, stops
// them; the calls in flight then are drained.
func (tg *target) sessions(ctx context.Context) {
	lim := tg.plan.Limits
	ss := tg.plan.Load.Sessions
	stop, cancelStop := ctx, context.CancelFunc(func() {})
	if lim.Duration > 0 {
		stop, cancelStop = context.WithDeadline(ctx, tg.col.start.Add(lim.Duration.D()))
	}
	defer cancelStop()
	callCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	next := 0 // the next conversation's number
	for u := range ss.Users {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(tg.plan.Seed, uint64(u)+seedTurn))
			uctx, ucancel := context.WithCancel(callCtx) // the user's own (see closed)
			defer ucancel()
			for stop.Err() == nil {
				mu.Lock()
				n := next
				next++
				mu.Unlock()
				if !tg.session(stop, uctx, n, r) {
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-stop.Done():
	}
	tg.drain(ctx, done, cancel)
}

// session runs conversation n; it returns false once the request limit
// is reached.
func (tg *target) session(stop, callCtx context.Context, n int, r *rand.Rand) bool {
	lim := tg.plan.Limits
	ld := tg.plan.Load
	ss := ld.Sessions
	pl := &tg.t.Payload
	seed := tg.plan.Seed
	var first strings.Builder
	if px := ld.Prefix; px != nil {
		first.WriteString(prefixPrompt(px, pl.PromptTokens, n, seed))
	} else {
		blockText(&first, seed^uint64(n+1)*0x9e3779b97f4a7c15, seedTurn, pl.PromptTokens)
	}
	msgs := []cloudreq.Message{{Role: "user", Content: first.String()}}
	// reserve takes one turn from the request limit; false: none is left.
	reserve := func() bool {
		if c := tg.sent.Add(1); lim.Requests > 0 && c > int64(lim.Requests) {
			return false
		}
		tg.col.sent.Add(1)
		return true
	}
	if !reserve() { // turn 1's, before a session is opened for it
		return false
	}
	stateful := ss.Stateful && tg.t.Provider == cloudreq.ProviderAWS
	sid := ""
	if stateful {
		sid = tg.openSession(callCtx, msgs)
	}
	defer func() {
		if sid != "" {
			tg.closeSession(callCtx, sid)
		}
	}()
	turnTokens := cmp0(ss.TurnTokens, pl.PromptTokens)
	for k := 1; k <= ss.Turns; k++ {
		if k > 1 && (stop.Err() != nil || !reserve()) {
			return stop.Err() != nil
		}
		req := *tg.base
		g := *req.Generate
		g.Messages = msgs
		req.Generate = &g
		req.Attributes.SessionID = sid
		if tg.named {
			req.RequestID = newRequestID()
		}
		answer, ok := tg.doText(context.WithValue(callCtx, turnKey{}, k), &req)
		if !ok || k == ss.Turns {
			return true // a failed turn ends its conversation
		}
		var b strings.Builder
		blockText(&b, seed^uint64(n+1)*0x9e3779b97f4a7c15^uint64(k)<<40, seedTurn, turnTokens)
		msgs = append(msgs[:len(msgs):len(msgs)], cloudreq.Message{Role: "assistant", Content: answer},
			cloudreq.Message{Role: "user", Content: b.String()})
		if d := ss.think(r); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-stop.Done():
				t.Stop()
				return true
			}
		}
	}
	return true
}

func cmp0(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// doText sends one measured request and returns its answer's text and
// whether it succeeded.
func (tg *target) doText(ctx context.Context, req *cloudreq.CloudRequest) (string, bool) {
	if !tg.t.Stream {
		resp, err := tg.client.Invoke(ctx, req, tg.measured...)
		if err != nil || resp == nil {
			return "", false
		}
		return resp.Text, true
	}
	s, err := tg.client.Stream(ctx, req, tg.measured...)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	for s.Next() {
		b.WriteString(s.Chunk().Text)
	}
	ok := s.Err() == nil
	_ = s.Close()
	return b.String(), ok
}

// openSession opens a SageMaker stateful session with an unmeasured
// InvokeEndpoint (NEW_SESSION, the first prompt, one output token) and
// returns its id; "" when the endpoint opened none.
func (tg *target) openSession(ctx context.Context, msgs []cloudreq.Message) string {
	req := *tg.base
	g := *req.Generate
	g.Messages, g.MaxTokens = msgs, 1
	req.Generate = &g
	req.Attributes.SessionID = sessionNew
	resp, err := tg.client.Invoke(ctx, &req)
	if err != nil || resp == nil {
		return ""
	}
	id, _, _ := strings.Cut(resp.Metadata[headerNewSessionID], ";")
	id = strings.TrimSpace(id)
	if id != "" {
		tg.col.sessionsOpened.Add(1)
	}
	return id
}

// closeSession closes stateful session id with an unmeasured
// InvokeEndpoint carrying CloseBody.
func (tg *target) closeSession(ctx context.Context, id string) {
	req := cloudreq.CloudRequest{
		Provider: tg.base.Provider, Service: tg.base.Service, Action: cloudreq.ActionInvoke,
		Target: tg.base.Target, Header: tg.base.Header,
		Payload: cloudreq.Payload{Body: []byte(tg.plan.Load.Sessions.CloseBody), ContentType: "application/json"},
	}
	req.Attributes.SessionID = id
	resp, err := tg.client.Invoke(ctx, &req)
	if err == nil && resp != nil && strings.TrimSpace(resp.Metadata[headerClosedSession]) == id {
		tg.col.sessionsClosed.Add(1)
	}
}
