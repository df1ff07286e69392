package latency_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/cloudreq/cloudreqtest"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/latency/stats"
)

func generate() *cloudreq.CloudRequest {
	return &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderOpenAI, Service: cloudreq.ServiceOpenAICompatible, Action: cloudreq.ActionGenerate,
		Target: cloudreq.Target{Model: "m"}, Class: "chat",
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "hi"}}},
	}
}

// measure drains a stream and measures it as the benchmark does.
func measure(t *testing.T, c *cloudreq.Client, r *cloudreq.CloudRequest) latency.Sample {
	t.Helper()
	s, err := c.Stream(context.Background(), r)
	require.NoError(t, err)
	for s.Next() {
	}
	resp := s.Response()
	require.NotNil(t, resp)
	o := latency.Outcome{Endpoint: r.EndpointKey(), Class: r.Class, Start: resp.Start,
		OutputTokens: resp.Usage.OutputTokens, TokenSource: latency.TokenSource(resp.Usage.Source)}
	if err := s.Err(); err != nil {
		o.Err = string(errcodes.Of(err))
	}
	return latency.Measure(resp.Timing, o)
}

// TestMeasureThroughClient checks the formulas on timelines cloudreq itself
// filled, with the fake adapter's delays on synctest's exact clock.
func TestMeasureThroughClient(t *testing.T) {
	chunks := []cloudreq.StreamChunk{
		{Data: []byte(`{"role":"assistant"}`)},                   // role-only
		{Text: "Hel"}, {Text: "lo", Tokens: 2}, {Text: " world"}, // 4 tokens counted
		{Usage: &cloudreq.Usage{InputTokens: 5, OutputTokens: 4}}, // usage-only
	}
	t.Run("role-only first, usage-only last, multi-token chunk", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Chunks: chunks, Delay: 100 * time.Millisecond, ChunkDelay: 10 * time.Millisecond}}}
			c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{fake}})
			require.NoError(t, err)
			s := measure(t, c, generate())
			// Open at 100 ms; chunks at 110 (role), 120, 130, 140, 150 (usage).
			assert.Equal(t, 120*time.Millisecond, s.TTFT)
			assert.Equal(t, 140*time.Millisecond, s.E2E)
			assert.Equal(t, 4, s.OutputTokens)
			assert.Equal(t, latency.TokensFromServer, s.TokenSource)
			assert.Equal(t, time.Duration(6_666_667), s.TPOT, "20 ms / 3, rounded to the ns")
			assert.Equal(t, []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}, s.ITL)
			assert.Equal(t, []time.Duration{5 * time.Millisecond, 10 * time.Millisecond}, s.ITLPerToken)
			assert.Equal(t, latency.Warm, s.Start)
			assert.Equal(t, "chat", s.Class)
		})
	})
	t.Run("retried after not-ready: cold, clock at the ready attempt", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{
				{Err: errcodes.New(errcodes.ModelNotReady, "loading"), Delay: 30 * time.Millisecond},
				{Chunks: chunks, Delay: 100 * time.Millisecond, ChunkDelay: 10 * time.Millisecond},
			}}
			c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{fake}})
			require.NoError(t, err)
			r := generate()
			r.IntendedSend = time.Now()
			s := measure(t, c, r)
			assert.Equal(t, latency.Cold, s.Start)
			assert.Equal(t, latency.ReasonNotReadyThenReady, s.Reason)
			assert.Equal(t, latency.ClockModelReady, s.Clock)
			assert.Equal(t, 2, s.Attempts)
			assert.Equal(t, 120*time.Millisecond, s.TTFT, "from the ready attempt's send")
			overhead := s.ColdStart
			assert.GreaterOrEqual(t, overhead, 30*time.Millisecond, "first attempt plus backoff")
			assert.Equal(t, overhead+120*time.Millisecond, s.TTFTIntended)
			require.Len(t, s.AttemptPhases, 2)
			assert.Equal(t, "ERR_MODEL_NOT_READY", s.AttemptPhases[0].Code)
		})
	})
	t.Run("cut mid-way", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Chunks: chunks[:3], ChunkDelay: 10 * time.Millisecond,
				StreamErr: errcodes.New(errcodes.StreamInterrupted, "connection reset")}}}
			c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{fake}})
			require.NoError(t, err)
			s := measure(t, c, generate())
			assert.Equal(t, "ERR_STREAM_INTERRUPTED", s.Err)
			assert.Equal(t, 20*time.Millisecond, s.TTFT)
			assert.Equal(t, 30*time.Millisecond, s.E2E)
			assert.Equal(t, 3, s.OutputTokens)
			assert.Equal(t, latency.TokensCounted, s.TokenSource)

			rec, err := stats.NewRecorder(stats.RecorderOptions{})
			require.NoError(t, err)
			rec.Add(&s)
			assert.Equal(t, int64(1), rec.Counts(stats.Filter{}).Failed)
			assert.Equal(t, uint64(0), rec.Dist(latency.TTFT, stats.Filter{}).Count())
		})
	})
}
