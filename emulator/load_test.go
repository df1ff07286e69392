package emulator

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestThousandConcurrentStreams opens 1,000 streaming chat completions at
// once over loopback (bounded by a 60 s context): every stream must end with
// [DONE] and its usage, every request must be recorded as ok, and no
// goroutine may outlive the server and the client.
func TestThousandConcurrentStreams(t *testing.T) {
	const streams = 1000
	s, err := New(Options{TimeScale: 0.001, Seed: 77})
	require.NoError(t, err)
	require.NoError(t, s.Start("127.0.0.1:0", ""))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr := &http.Transport{MaxIdleConnsPerHost: streams}
	client := &http.Client{Transport: tr}
	body := `{"model":"phi-3-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hello"}]}`

	var wg sync.WaitGroup
	errs := make(chan error, streams)
	results := make(chan streamTiming, streams)
	startGate := make(chan struct{})
	for range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-startGate
			st, err := measureChat(ctx, client, s.URL()+"/v1/chat/completions", body)
			if err != nil {
				errs <- err
				return
			}
			results <- st
		}()
	}
	close(startGate)
	wg.Wait()
	close(errs)
	close(results)
	for err := range errs {
		require.NoError(t, err)
	}
	n := 0
	for st := range results {
		require.Positive(t, st.chunks)
		n++
	}
	assert.Equal(t, streams, n)

	recs := waitRecords(t, s, streams)
	maxActive := 0
	for _, r := range recs {
		require.Equal(t, "ok", r.Outcome, r.ID)
		require.Equal(t, r.OutputTokens, r.TokensSent, r.ID)
		maxActive = max(maxActive, r.Active)
	}
	assert.LessOrEqual(t, maxActive, 256, "at most Slots requests are served at once")
	t.Logf("%d streams, up to %d served at once", streams, maxActive)

	client.CloseIdleConnections()
	require.NoError(t, s.Close())
	goleak.VerifyNone(t)
}
