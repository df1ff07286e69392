package emulator

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// streamTiming is what a client measures on one streamed chat completion.
type streamTiming struct {
	ttft, e2e time.Duration
	chunks    int
	requestID string
}

// measureChat sends one streaming chat completion and times its content chunks.
func measureChat(ctx context.Context, client *http.Client, url, body string) (streamTiming, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return streamTiming{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	sent := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return streamTiming{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return streamTiming{}, fmt.Errorf("status %d", resp.StatusCode)
	}
	st := streamTiming{requestID: resp.Header.Get(HeaderRequestID)}
	sc := bufio.NewScanner(resp.Body)
	done := false
	for sc.Scan() {
		line := sc.Bytes()
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		at := time.Since(sent)
		if bytes.Equal(data, []byte("[DONE]")) {
			done = true
			break
		}
		// A content chunk: not the role-only first chunk, not the usage chunk.
		if !bytes.Contains(data, []byte(`"delta":{"content":"`)) {
			if !json.Valid(data) {
				return st, fmt.Errorf("invalid chunk %q", data)
			}
			continue
		}
		if st.chunks == 0 {
			st.ttft = at
		}
		st.e2e = at
		st.chunks++
	}
	if err := sc.Err(); err != nil {
		return st, err
	}
	if !done {
		return st, fmt.Errorf("stream ended without [DONE]")
	}
	return st, nil
}

// TestStatisticalReproduction sends 2,000 seeded, time-scaled streaming
// requests of the llama-3-8b profile (512-token prompt; batching penalty off
// so that concurrent clients see the concurrency-1 distribution) and checks
// that the injected TTFT and TPOT reproduce the profile's mean and sd within
// 3%, and that what the client measures is never earlier than what was
// injected. How close the client's measurement comes to the injected values
// depends on the machine's load; BenchmarkTimingAccuracy reports it.
func TestStatisticalReproduction(t *testing.T) {
	const (
		requests = 2000
		workers  = 16
		scale    = 0.02
	)
	p, _ := BuiltinProfile("llama-3-8b")
	p.BatchPenaltyMs = 0
	s := start(t, Options{TimeScale: scale, Seed: 2026, Endpoints: []Endpoint{{Name: "llama-3-8b", Providers: []Provider{OpenAI}, Profile: p}}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	defer client.CloseIdleConnections()
	body := `{"model":"llama-3-8b","stream":true,"messages":[{"role":"user","content":"` + strings.Repeat("x", 2048) + `"}]}`

	jobs := make(chan int)
	results := make([]streamTiming, requests)
	errs := make(chan error, requests)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				st, err := measureChat(ctx, client, s.URL()+"/v1/chat/completions", body)
				if err != nil {
					errs <- err
					continue
				}
				results[i] = st
			}
		}()
	}
	for i := range requests {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	recs := waitRecords(t, s, requests)
	byID := make(map[string]Record, len(recs))
	for _, r := range recs {
		byID[r.ID] = r
	}
	var injTTFT, injTPOT, measTTFT, measTPOT, errTTFT, errWritten []float64
	for _, st := range results {
		r, ok := byID[st.requestID]
		require.True(t, ok, "record of %s", st.requestID)
		require.Equal(t, r.OutputTokens, st.chunks)
		if st.chunks < 2 {
			continue
		}
		injTTFT = append(injTTFT, r.PrefillMs/scale) // the sampled TTFT; TTFTMs adds server-side waits
		injTPOT = append(injTPOT, r.TPOTMs/scale)
		m := ms(st.ttft)
		measTTFT = append(measTTFT, m/scale)
		measTPOT = append(measTPOT, ms(st.e2e-st.ttft)/float64(st.chunks-1)/scale)
		errTTFT = append(errTTFT, m-r.TTFTMs)
		errWritten = append(errWritten, m-r.FirstTokenMs)
		// Never early: the client's clock starts before the request arrives.
		require.GreaterOrEqual(t, m, r.TTFTMs-0.05, "TTFT of %s", r.ID)
		require.GreaterOrEqual(t, ms(st.e2e), r.E2EMs-0.05, "E2E of %s", r.ID)
	}
	for _, c := range []struct {
		what     string
		xs       []float64
		mean, sd float64
		check    bool
	}{
		{"injected TTFT", injTTFT, p.TTFTMs.Mean, p.TTFTMs.SD, true},
		{"injected TPOT", injTPOT, p.TPOTMs.Mean, p.TPOTMs.SD, true},
		{"measured TTFT", measTTFT, p.TTFTMs.Mean, p.TTFTMs.SD, false},
		{"measured TPOT", measTPOT, p.TPOTMs.Mean, p.TPOTMs.SD, false},
	} {
		m, sd := meanSD(c.xs)
		t.Logf("%s: %.2f ± %.2f ms (profile %.1f ± %.1f; n=%d)", c.what, m, sd, c.mean, c.sd, len(c.xs))
		if c.check {
			within(t, c.what+" mean", m, c.mean, 0.03)
			within(t, c.what+" sd", sd, c.sd, 0.03)
		}
	}
	m, sd := meanSD(errTTFT)
	slices.Sort(errTTFT)
	t.Logf("client TTFT − injected TTFT: %.3f ± %.3f ms real; p50 %.3f p90 %.3f p99 %.3f min %.3f (time scale %g)", m, sd,
		errTTFT[len(errTTFT)/2], errTTFT[len(errTTFT)*9/10], errTTFT[len(errTTFT)*99/100], errTTFT[0], scale)
	slices.Sort(errWritten)
	t.Logf("client TTFT − server's first-token write: p50 %.3f p90 %.3f p99 %.3f ms real",
		errWritten[len(errWritten)/2], errWritten[len(errWritten)*9/10], errWritten[len(errWritten)*99/100])
}

// BenchmarkTimingAccuracy streams llama-3-8b chat completions one at a time
// and reports how far the client's measurements fall from the injected
// values: TTFT error percentiles in real microseconds and the TPOT error in
// percent of the injected TPOT, at the time scales tests use.
func BenchmarkTimingAccuracy(b *testing.B) {
	for _, scale := range []float64{0.001, 0.01, 0.1} {
		var written []float64
		b.Run(fmt.Sprintf("scale=%g", scale), func(b *testing.B) {
			b.ReportAllocs()
			s := start(b, Options{TimeScale: scale, Seed: 9, Endpoints: []Endpoint{DefaultEndpoints()[0]}})
			client := &http.Client{Transport: &http.Transport{}}
			defer client.CloseIdleConnections()
			ctx := context.Background()
			body := `{"model":"llama-3-8b","stream":true,"messages":[{"role":"user","content":"` + strings.Repeat("x", 2048) + `"}]}`
			var ttftErr, tpotErr []float64
			ids := make([]streamTiming, 0, b.N)
			for b.Loop() {
				st, err := measureChat(ctx, client, s.URL()+"/v1/chat/completions", body)
				if err != nil {
					b.Fatal(err)
				}
				ids = append(ids, st)
			}
			recs := waitRecords(b, s, len(ids))
			byID := map[string]Record{}
			for _, r := range recs {
				byID[r.ID] = r
			}
			for _, st := range ids {
				r := byID[st.requestID]
				ttftErr = append(ttftErr, (ms(st.ttft)-r.TTFTMs)*1000)
				written = append(written, (ms(st.ttft)-r.FirstTokenMs)*1000)
				if st.chunks > 1 {
					tpot := ms(st.e2e-st.ttft) / float64(st.chunks-1)
					tpotErr = append(tpotErr, (tpot-r.TPOTMs)/r.TPOTMs*100)
				}
			}
			slices.Sort(ttftErr)
			b.ReportMetric(ttftErr[len(ttftErr)/2], "ttft-err-p50-µs")
			b.ReportMetric(ttftErr[len(ttftErr)*99/100], "ttft-err-p99-µs")
			slices.Sort(written)
			b.ReportMetric(written[len(written)/2], "ttft-vs-written-p50-µs")
			if len(tpotErr) > 0 {
				m, _ := meanSD(tpotErr)
				b.ReportMetric(m, "tpot-err-%")
			}
		})
	}
}
