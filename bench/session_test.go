package bench_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/providers/sagemaker"
)

// promptLog is an observer that keeps every measured request's messages.
type promptLog struct {
	mu   sync.Mutex
	msgs [][]cloudreq.Message
}

func (l *promptLog) StartCall(ctx context.Context, req *cloudreq.CloudRequest, _ bool) (context.Context, cloudreq.CallObserver) {
	l.mu.Lock()
	l.msgs = append(l.msgs, slices.Clone(req.Generate.Messages))
	l.mu.Unlock()
	return ctx, nopCall{}
}

type nopCall struct{}

func (nopCall) EndAttempt(cloudreq.AttemptInfo)                                     {}
func (nopCall) EndCall(*cloudreq.CloudResponse, *latency.Timeline, *errcodes.Error) {}

func bytesOf(msgs []cloudreq.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content)
	}
	return n
}

// TestSessionsAgainstEmulator: each turn's prompt is the conversation so
// far: turn k holds k user messages (the first of PromptTokens tokens, the
// others of TurnTokens) and the k−1 answers between them, and the emulator
// counted exactly that prompt; the turns' figures are by turn index.
func TestSessionsAgainstEmulator(t *testing.T) {
	ep := fastEndpoint("fast", 2)
	ep.Profile.PrefixCacheTokens = 1 << 20
	srv := startEmulator(t, 1, []emulator.Endpoint{ep})
	tg := target("fast", true)
	tg.Payload.OutputTokens, tg.Payload.IgnoreEOS = 5, true
	const users, turns = 2, 4
	p := &bench.Plan{Targets: []bench.Target{tg},
		Load:   bench.Load{Model: bench.LoadSessions, Sessions: &bench.Sessions{Users: users, Turns: turns, TurnTokens: 16, Think: bench.Duration(5 * time.Millisecond), ThinkDist: bench.ThinkExponential}},
		Limits: bench.Limits{Requests: 2 * users * turns}}
	log := &promptLog{}
	res, err := bench.Run(context.Background(), p, bench.Options{Connect: emulatorConnect(srv), Observers: []cloudreq.Observer{log}})
	require.NoError(t, err)
	tr := res.Targets[0]
	require.Zero(t, tr.Counts().Failed, "%v", tr.ErrorExamples)
	require.Len(t, log.msgs, 2*users*turns)
	var designed []int
	for _, msgs := range log.msgs {
		require.Equal(t, 1, len(msgs)%2, "user, assistant, …, user")
		k := (len(msgs) + 1) / 2
		for i, m := range msgs {
			switch {
			case i == 0:
				assert.Equal(t, "user", m.Role)
				assert.Len(t, m.Content, 64*bench.CharsPerToken)
			case i%2 == 1:
				assert.Equal(t, "assistant", m.Role)
				assert.NotEmpty(t, m.Content, "the previous answer")
			default:
				assert.Equal(t, "user", m.Role)
				assert.Len(t, m.Content, 16*bench.CharsPerToken)
			}
		}
		assert.LessOrEqual(t, k, turns)
		designed = append(designed, (bytesOf(msgs)+3)/4)
	}
	var counted []int
	for _, r := range srv.Records() {
		counted = append(counted, r.PromptTokens)
		assert.Equal(t, 5, r.OutputTokens)
	}
	slices.Sort(designed)
	slices.Sort(counted)
	assert.Equal(t, designed, counted, "the emulator counted the prompts the turns were designed to hold")

	require.Len(t, tr.Turns, turns)
	var total int64
	for k, ts := range tr.Turns {
		assert.Equal(t, k+1, ts.Turn)
		total += ts.Count
		if k > 0 {
			assert.LessOrEqual(t, ts.Count, tr.Turns[k-1].Count, "turn %d comes after turn %d", k+1, k)
		}
		require.NotNil(t, ts.TTFT)
		if k > 0 {
			assert.Greater(t, ts.MeanPromptTokens(), tr.Turns[k-1].MeanPromptTokens()+16, "turn %d's prompt grows by a user message and an answer", k+1)
		}
	}
	assert.Equal(t, int64(2*users*turns), total)
	assert.Equal(t, 64.0, tr.Turns[0].MeanPromptTokens())
	// The tables and the report show the turns.
	for _, f := range []bench.Format{bench.FormatText, bench.FormatMarkdown, bench.FormatHTML} {
		var b strings.Builder
		require.NoError(t, res.Render(&b, f, bench.RenderOptions{}))
		assert.Contains(t, b.String(), "Turns (sessions", f)
		assert.Regexp(t, `fast(\W|td)+4(\W|td)+[1-9]`, b.String(), "%s: turn 4's row", f)
	}
	// Turns merge across machines.
	second := *res
	second.Hosts = []bench.Host{{Name: "second", CPUs: 1}}
	m, err := bench.Merge(res, &second)
	require.NoError(t, err)
	assert.Equal(t, 2*tr.Turns[0].Count, m.Targets[0].Turns[0].Count)
	assert.Equal(t, 2*tr.Turns[3].PromptTokens, m.Targets[0].Turns[3].PromptTokens)
	// The conversation so far is cached: turn k > 1 finds its earlier
	// turns' prompt in the prefix cache.
	cached := 0
	for _, r := range srv.Records() {
		cached += r.CachedTokens
	}
	assert.Positive(t, cached)
}

// TestSessionsSageMakerStateful: on SageMaker each conversation opens a
// stateful session, carries its id on every turn and closes it.
func TestSessionsSageMakerStateful(t *testing.T) {
	ep := fastEndpoint("sm", 2)
	ep.Providers = []emulator.Provider{emulator.SageMaker}
	srv := startEmulator(t, 1, []emulator.Endpoint{ep})
	connect := func(ctx context.Context, _ *bench.Target) (*cloudreq.Client, error) {
		ad, err := sagemaker.New(ctx, sagemaker.Options{BaseEndpoint: srv.URL(), AllowInsecureHTTP: true, Region: "us-east-1",
			Credentials: credentials.NewStaticCredentialsProvider("emulator", "emulator", "")})
		if err != nil {
			return nil, err
		}
		return cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad},
			CallOptions: cloudreq.CallOptions{Retry: cloudreq.RetryOptions{MaxAttempts: 1}, Timeout: 10 * time.Second}})
	}
	tg := bench.Target{Name: "sm", Provider: "aws", Endpoint: "sm", Stream: true, Payload: bench.Payload{PromptTokens: 32, OutputTokens: 3}}
	const users, turns = 2, 3
	p := &bench.Plan{Targets: []bench.Target{tg},
		Load:   bench.Load{Model: bench.LoadSessions, Sessions: &bench.Sessions{Users: users, Turns: turns, Stateful: true}},
		Limits: bench.Limits{Requests: users * turns * 2}}
	res, err := bench.Run(context.Background(), p, bench.Options{Connect: connect})
	require.NoError(t, err)
	tr := res.Targets[0]
	require.Zero(t, tr.Counts().Failed, "%v", tr.ErrorExamples)
	// The request limit may cut a conversation short (users run theirs
	// at once): count the sessions in the records.
	assert.Positive(t, tr.SessionsOpened)
	assert.Equal(t, tr.SessionsOpened, tr.SessionsClosed)

	bySession := map[string][]emulator.Record{}
	for _, r := range srv.Records() {
		require.NotEmpty(t, r.SessionID, "route %s", r.Route)
		bySession[r.SessionID] = append(bySession[r.SessionID], r)
	}
	require.Len(t, bySession, int(tr.SessionsOpened))
	sent := 0
	for id, recs := range bySession {
		slices.SortFunc(recs, func(a, b emulator.Record) int { return a.Arrival.Compare(b.Arrival) })
		n := len(recs) - 2
		require.True(t, n >= 1 && n <= turns, "session %s: open, 1 to %d turns, close: %d records", id, turns, len(recs))
		assert.Equal(t, "invocations", recs[0].Route, "opened by InvokeEndpoint")
		for _, r := range recs[1 : 1+n] {
			assert.Equal(t, "invocations-response-stream", r.Route)
		}
		assert.Equal(t, "close-session", recs[len(recs)-1].Route)
		sent += n
	}
	assert.Equal(t, users*turns*2, sent, "every turn carried its session's id")
}
