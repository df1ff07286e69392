package faults

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
	"github.com/aws/smithy-go/logging"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/providers/azureml"
	"github.com/cloudinfer/cloudinfer/providers/openai"
	"github.com/cloudinfer/cloudinfer/providers/paieas"
	"github.com/cloudinfer/cloudinfer/providers/sagemaker"
	"github.com/cloudinfer/cloudinfer/providers/vertex"
)

// emulatorFaults are injected, one per request in turn ("" is none).
var emulatorFaults = []string{
	"", "", "", "", "", "",
	"throttle", "unavailable", "model-not-ready", "reset-before-headers", "html-502",
	"close-mid-stream", "stall-mid-stream", "stream-error", "malformed-body",
}

// midStream are the faults that strike after the first chunk: the stream
// must never end as a success.
var midStream = map[string]bool{"close-mid-stream": true, "stall-mid-stream": true, "stream-error": true, "malformed-body": true}

// emulatorClient returns one cloudreq client holding every adapter,
// pointed at the emulator with the sentinel credentials.
func emulatorClient(t *testing.T, srv *emulator.Server, hc *http.Client) *cloudreq.Client {
	t.Helper()
	ctx := context.Background()
	sm, err := sagemaker.New(ctx, sagemaker.Options{
		Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider(awsKeyID, awsSecret, awsSessionToken),
		BaseEndpoint: srv.URL(), HTTPClient: hc, AllowInsecureHTTP: true,
		// The SDK warns on stderr about bodies the faults cut short.
		ClientOptions: []func(*sagemakerruntime.Options){func(o *sagemakerruntime.Options) { o.Logger = logging.Nop{} }},
	})
	require.NoError(t, err)
	oa, err := openai.New(openai.Options{BaseURL: srv.URL(), APIKey: openAIKey, HTTPClient: hc, AllowInsecureHTTP: true})
	require.NoError(t, err)
	pa, err := paieas.New(paieas.Options{Endpoint: srv.URL(), Token: easToken, HTTPClient: hc, AllowInsecureHTTP: true})
	require.NoError(t, err)
	az, err := azureml.New(azureml.Options{EndpointURL: srv.URL() + "/azureml/{endpoint}", Key: azureKey, HTTPClient: hc, AllowInsecureHTTP: true})
	require.NoError(t, err)
	vx, err := vertex.New(ctx, vertex.Options{Project: "p", Location: "us-central1", Endpoint: srv.GRPCAddr(), Insecure: true})
	require.NoError(t, err)
	c, err := cloudreq.New(cloudreq.Options{
		Adapters: []cloudreq.Adapter{sm, oa, pa, az, vx},
		CallOptions: cloudreq.CallOptions{
			Timeout:        time.Minute,
			AttemptTimeout: 30 * time.Second,
			// A safety net only (the emulator ends its stalls itself), wide
			// enough for a thousand streams under the race detector on a
			// busy machine.
			StreamIdleTimeout: 20 * time.Second,
		},
	}, fastRetries)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// emulatorRequest is a generate request for provider p (0–4) to the
// emulator's phi-3-mini endpoint, with fault injected.
func emulatorRequest(p int, fault string) *cloudreq.CloudRequest {
	r := &cloudreq.CloudRequest{
		Action:   cloudreq.ActionGenerate,
		Target:   cloudreq.Target{Endpoint: "phi-3-mini"},
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "hello"}}, MaxTokens: 16},
	}
	switch p {
	case 0:
		r.Provider, r.Service = cloudreq.ProviderAWS, cloudreq.ServiceSageMaker
	case 1:
		r.Provider, r.Service = cloudreq.ProviderOpenAI, cloudreq.ServiceOpenAICompatible
		r.Target = cloudreq.Target{Model: "phi-3-mini"}
	case 2:
		r.Provider, r.Service = cloudreq.ProviderAlibaba, cloudreq.ServicePAIEAS
	case 3:
		r.Provider, r.Service = cloudreq.ProviderAzure, cloudreq.ServiceAzureML
	default:
		r.Provider, r.Service = cloudreq.ProviderGCP, cloudreq.ServiceVertex
		r.Target = cloudreq.Target{Model: "phi-3-mini"}
	}
	if fault != "" {
		r.Header = http.Header{emulator.HeaderInject: {fault}}
	}
	return r
}

// outcome is how one stream ended.
type outcome struct {
	provider string
	fault    string
	chunks   int
	finish   string
	err      error
}

// TestThousandStreamsUnderFaults runs 1,000 concurrent streams through one
// Client — 200 per provider, SageMaker, OpenAI-compatible, PAI-EAS, Azure
// ML and Vertex (gRPC) — against the emulator at time scale 0.001, with a
// fault injected into 9 of every 15. Run under -race it proves the client
// free of data races; goleak (TestMain) that nothing outlives it. Every
// clean stream completes; every stream hit after its first chunk ends in
// an error, never a success; every error is a normalized *errcodes.Error;
// the heap stays bounded while they run and returns to its baseline after.
func TestThousandStreamsUnderFaults(t *testing.T) {
	const streams = 1000
	srv, err := emulator.New(emulator.Options{TimeScale: 0.001, Seed: 7})
	require.NoError(t, err)
	require.NoError(t, srv.Start("127.0.0.1:0", "127.0.0.1:0"))
	t.Cleanup(func() { _ = srv.Close() })
	tr := &http.Transport{MaxIdleConnsPerHost: 256}
	t.Cleanup(tr.CloseIdleConnections)
	c := emulatorClient(t, srv, &http.Client{Transport: tr})

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peak.Load() {
					peak.Store(m.HeapInuse)
				}
			}
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := make([]outcome, streams)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for i := range streams {
		wg.Go(func() {
			<-gate
			fault := emulatorFaults[i%len(emulatorFaults)]
			req := emulatorRequest(i%5, fault)
			o := outcome{provider: req.Provider, fault: fault}
			s, err := c.Stream(ctx, req)
			if err != nil {
				o.err = err
				out[i] = o
				return
			}
			for s.Next() {
				if s.Chunk().Content {
					o.chunks++
				}
			}
			o.err = s.Err()
			if resp := s.Response(); resp != nil {
				o.finish = resp.FinishReason
			}
			_ = s.Close()
			out[i] = o
		})
	}
	start := time.Now()
	close(gate)
	wg.Wait()
	elapsed := time.Since(start)
	close(stop)
	<-sampled

	ok, failed := 0, map[errcodes.Code]int{}
	for i, o := range out {
		if o.err == nil {
			ok++
			if o.fault != "" {
				t.Logf("stream %d (%s): fault %q ended as a success (%d chunks)", i, o.provider, o.fault, o.chunks)
			}
			assert.Positive(t, o.chunks, "stream %d (%s, fault %q) succeeded without content", i, o.provider, o.fault)
			assert.False(t, midStream[o.fault], "stream %d (%s): fault %q after the first chunk ended as a success", i, o.provider, o.fault)
			continue
		}
		var e *errcodes.Error
		if assert.True(t, errors.As(o.err, &e), "stream %d: not an *errcodes.Error: %v", i, o.err) {
			assert.True(t, e.Code.Valid(), "stream %d: code %q", i, e.Code)
			assert.NotEmpty(t, e.Provider, "stream %d: %v", i, e)
			failed[e.Code]++
		}
		assert.NotEmpty(t, o.fault, "stream %d (%s) failed with no fault injected: %v", i, o.provider, o.err)
	}
	records := len(srv.Records())
	assert.LessOrEqual(t, records, streams*3, "no retry amplification")

	tr.CloseIdleConnections()
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	const mb = 1 << 20
	assert.Less(t, peak.Load(), uint64(512*mb), "peak heap in use")
	assert.Less(t, int64(after.HeapAlloc)-int64(base.HeapAlloc), int64(64*mb), "heap retained after the streams")
	t.Logf("%d streams in %v: %d ok, failed by code %v; %d requests reached the emulator; peak heap in use %.0f MB, retained %.1f MB",
		streams, elapsed.Round(time.Millisecond), ok, failed, records, float64(peak.Load())/mb,
		float64(int64(after.HeapAlloc)-int64(base.HeapAlloc))/mb)
}
