package emulator

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func easPost(ctx context.Context, t *testing.T, url, body string, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func TestPAIEASAuthAndStreams(t *testing.T) {
	ep := DefaultEndpoints()[0]
	ep.Credentials.Keys = []string{"eas-token"}
	s := start(t, Options{TimeScale: 0.001, Seed: 2, Endpoints: []Endpoint{ep}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url := s.URL() + "/api/predict/" + ep.Name
	legacy := `{"prompt":"hello","use_stream_chat":"True","max_new_tokens":5}`
	date := time.Now().UTC().Format(http.TimeFormat)

	for _, tc := range []struct {
		name   string
		hdr    map[string]string
		status int
	}{
		{"raw token", map[string]string{"Authorization": "eas-token"}, 200},
		{"bearer", map[string]string{"Authorization": "Bearer eas-token"}, 200},
		{"signature", map[string]string{"Date": date, "Content-Type": "application/octet-stream",
			"Authorization": easSignature("eas-token", "application/octet-stream", date, "/api/predict/"+ep.Name, []byte(legacy))}, 200},
		{"bad signature", map[string]string{"Date": date,
			"Authorization": easSignature("other", "application/octet-stream", date, "/api/predict/"+ep.Name, []byte(legacy))}, 401},
		{"missing", nil, 401},
		{"wrong token", map[string]string{"Authorization": "nope"}, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := easPost(ctx, t, url, legacy, tc.hdr)
			require.Equal(t, tc.status, resp.StatusCode)
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			if tc.status == 401 {
				assert.Equal(t, "Authorization Failed", string(b))
				return
			}
			chunks := bytes.Split(bytes.TrimSuffix(b, []byte{0}), []byte{0})
			require.Len(t, chunks, 5)
			var last easChunk
			require.NoError(t, json.Unmarshal(chunks[4], &last))
			assert.Len(t, strings.Fields(last.Response), 5, "the last chunk holds the whole text")
		})
	}

	// OpenAI-compatible sub-path with SSE.
	resp := easPost(ctx, t, url+"/v1/chat/completions", `{"model":"x","messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true}`,
		map[string]string{"Authorization": "Bearer eas-token"})
	require.Equal(t, 200, resp.StatusCode)
	events := readSSE(t, resp.Body)
	assert.Equal(t, "[DONE]", events[len(events)-1])

	resp = easPost(ctx, t, url, `{"inputs":"x"}`, map[string]string{"Authorization": "eas-token"})
	assert.Equal(t, 400, resp.StatusCode)
	resp = easPost(ctx, t, s.URL()+"/api/predict/no-such-service", legacy, nil)
	assert.Equal(t, 404, resp.StatusCode)
	resp = easPost(ctx, t, url, legacy, map[string]string{"Authorization": "eas-token", HeaderInject: "model-not-ready"})
	assert.Equal(t, 503, resp.StatusCode)
}

func TestPAIEASQueueFull(t *testing.T) {
	p, _ := BuiltinProfile("llama-3-8b")
	p.Slots, p.MaxQueue = 1, 1
	// At this scale A holds the slot about 0.5 s: time enough for B to
	// queue and C to arrive on a loaded machine.
	s := start(t, Options{TimeScale: 0.25, Seed: 2, Endpoints: []Endpoint{{Name: "small", Providers: []Provider{PAIEAS}, Profile: p}}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url := s.URL() + "/api/predict/small"
	body := `{"prompt":"hello","use_stream_chat":true}`
	ep := s.endpoints["small"]

	// A holds the slot, B waits in the queue: C is refused with 450.
	var wg sync.WaitGroup
	statuses := make(chan int, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				statuses <- 0
				return
			}
			_, _ = io.Copy(io.Discard, bufio.NewReader(resp.Body))
			_ = resp.Body.Close()
			statuses <- resp.StatusCode
		}()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Microsecond) {
			active, waiting := ep.load()
			if active+waiting == i+1 {
				break
			}
		}
	}
	resp := easPost(ctx, t, url, body, nil)
	b, _ := io.ReadAll(resp.Body)
	assert.Equal(t, 450, resp.StatusCode)
	assert.Equal(t, "request is discarded because the queue is full", string(b))
	wg.Wait()
	close(statuses)
	for st := range statuses {
		assert.Equal(t, 200, st)
	}
	recs := waitRecords(t, s, 3)
	faults := 0
	for _, r := range recs {
		if r.Fault == FaultQueueFull {
			faults++
			assert.Equal(t, 450, r.Status)
		}
	}
	assert.Equal(t, 1, faults)
}
