package cloudreq_test

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/hooks"
)

// httpAdapter is the thinnest real adapter: POST the payload, read the body.
type httpAdapter struct {
	url string
	hc  *http.Client
}

func (a *httpAdapter) Describe() cloudreq.Description {
	return cloudreq.Description{Provider: "openai", Service: "openai-compatible", Actions: []string{"invoke"}}
}

func (a *httpAdapter) Invoke(ctx context.Context, call *cloudreq.Call) (*cloudreq.CloudResponse, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url, call.Body())
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	res, err := a.hc.Do(hr)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != 200 {
		return nil, errcodes.New(errcodes.ForHTTPStatus(res.StatusCode), string(b))
	}
	return &cloudreq.CloudResponse{StatusCode: res.StatusCode, Data: b}, nil
}

// namingHTTPAdapter is httpAdapter as a cloudreq.CredentialSource, like
// the shipped HTTP adapters that know their credentials (openai, azureml):
// the client then records no request headers through httptrace.
type namingHTTPAdapter struct{ httpAdapter }

func (a *namingHTTPAdapter) Credentials() []string { return nil }

var benchBody = []byte(`{"model":"m","messages":[{"role":"user","content":"hello there"}],"max_tokens":16}`)

func benchServer(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = w.Write([]byte(`{"choices":[{"message":{"content":"hi"}}]}`))
	}))
	b.Cleanup(srv.Close)
	return srv
}

// rawPOST is the baseline call: a plain net/http POST of benchBody.
func rawPOST(b *testing.B, hc *http.Client, url string) {
	hr, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader(benchBody))
	hr.Header.Set("Content-Type", "application/json")
	res, err := hc.Do(hr)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.ReadAll(res.Body); err != nil {
		b.Fatal(err)
	}
	res.Body.Close()
}

// BenchmarkRawPOST is the baseline: a plain net/http POST of the same bytes.
func BenchmarkRawPOST(b *testing.B) {
	srv := benchServer(b)
	hc := srv.Client()
	b.ReportAllocs()
	for b.Loop() {
		rawPOST(b, hc, srv.URL)
	}
}

// benchClient is a Client with the default hooks and the thinnest real
// adapter, and the request it sends. A naming adapter is a
// CredentialSource; the other has its requests' headers recorded.
func benchClient(b *testing.B, srv *httptest.Server, naming bool) (*cloudreq.Client, *cloudreq.CloudRequest) {
	var ad cloudreq.Adapter = &httpAdapter{url: srv.URL, hc: srv.Client()}
	if naming {
		ad = &namingHTTPAdapter{httpAdapter{url: srv.URL, hc: srv.Client()}}
	}
	return clientFor(b, ad)
}

// clientFor returns a Client with the default hooks and ad, and an invoke
// request of benchBody for it.
func clientFor(b *testing.B, ad cloudreq.Adapter) (*cloudreq.Client, *cloudreq.CloudRequest) {
	c, err := cloudreq.New(cloudreq.Options{
		Adapters:    []cloudreq.Adapter{ad},
		CallOptions: cloudreq.CallOptions{Hooks: hooks.Default()},
	})
	if err != nil {
		b.Fatal(err)
	}
	r := &cloudreq.CloudRequest{Provider: "openai", Service: "openai-compatible", Action: "invoke",
		Target: cloudreq.Target{Model: "m"}, Payload: cloudreq.Payload{Body: benchBody}}
	return c, r
}

// adapterKinds are the two ways an adapter can let the client redact its
// credentials, which cost differently.
var adapterKinds = []struct {
	name   string
	naming bool
}{{"credential-source", true}, {"recorded-headers", false}}

// BenchmarkInvoke is the same POST through cloudreq: the default hooks, the
// retry loop, httptrace timing and start classification.
func BenchmarkInvoke(b *testing.B) {
	for _, k := range adapterKinds {
		b.Run(k.name, func(b *testing.B) {
			srv := benchServer(b)
			c, r := benchClient(b, srv, k.naming)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Invoke(context.Background(), r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkInvokeVsRaw makes a raw POST and an Invoke in each iteration,
// in turns first, and reports the median time of each, their ratio and
// their difference (the client's cost on the call's path). Being
// paired, the comparison holds even when the machine's speed drifts between
// separate runs of BenchmarkRawPOST and BenchmarkInvoke.
func BenchmarkInvokeVsRaw(b *testing.B) {
	for _, k := range adapterKinds {
		b.Run(k.name, func(b *testing.B) { invokeVsRaw(b, k.naming) })
	}
}

func invokeVsRaw(b *testing.B, naming bool) {
	srv := benchServer(b)
	hc := srv.Client()
	c, r := benchClient(b, srv, naming)
	var raw, inv []time.Duration
	invoke := func() {
		t0 := time.Now()
		if _, err := c.Invoke(context.Background(), r); err != nil {
			b.Fatal(err)
		}
		inv = append(inv, time.Since(t0))
	}
	post := func() {
		t0 := time.Now()
		rawPOST(b, hc, srv.URL)
		raw = append(raw, time.Since(t0))
	}
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			post()
			invoke()
		} else {
			invoke()
			post()
		}
	}
	slices.Sort(raw)
	slices.Sort(inv)
	rawMed, invMed := raw[len(raw)/2], inv[len(inv)/2]
	b.ReportMetric(float64(rawMed.Nanoseconds()), "raw-p50-ns")
	b.ReportMetric(float64(invMed.Nanoseconds()), "invoke-p50-ns")
	b.ReportMetric(float64(invMed)/float64(rawMed), "ratio")
	b.ReportMetric(float64(invMed-rawMed), "extra-ns")
}

// nopAdapter answers at once, so BenchmarkOverhead measures the client
// alone: hooks, retry loop, timeline, classification.
type nopAdapter struct{}

func (nopAdapter) Describe() cloudreq.Description {
	return cloudreq.Description{Provider: "openai", Service: "openai-compatible", Actions: []string{"invoke"}}
}

func (nopAdapter) Invoke(context.Context, *cloudreq.Call) (*cloudreq.CloudResponse, error) {
	return &cloudreq.CloudResponse{StatusCode: 200}, nil
}

// BenchmarkOverhead is the client's own cost per call, without a network.
func BenchmarkOverhead(b *testing.B) {
	c, r := clientFor(b, nopAdapter{})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Invoke(context.Background(), r); err != nil {
			b.Fatal(err)
		}
	}
}

// coldEvictMB is how much memory BenchmarkInvokeCold sweeps before each
// call: more than the CPU's last-level cache, so that the call finds none
// of the client's code or data cached.
var coldEvictMB = flag.Int("cold.evict-mb", 64, "MiB BenchmarkInvokeCold sweeps before each call")

// tracedAdapter answers at once, reporting a connection, a write and a
// first byte through the call's trace as a transport would, so that the
// timing path (stamps, classification of a warm call) runs without a
// network.
type tracedAdapter struct{ nopAdapter }

func (tracedAdapter) Invoke(_ context.Context, c *cloudreq.Call) (*cloudreq.CloudResponse, error) {
	now := time.Now()
	c.Trace.GotConn(now, true)
	c.Trace.WroteRequest(now)
	c.Trace.FirstByte(now.Add(30 * time.Microsecond))
	return &cloudreq.CloudResponse{StatusCode: 200}, nil
}

// BenchmarkInvokeCold is the client's cost when none of its code or data
// is in the CPU's caches, as when other work (the network stack, other
// tenants of the host) ran since its last call: each iteration sweeps
// -cold.evict-mb of memory, then times one Invoke (cold-p50-ns) and a
// second one right after (warm-p50-ns).
func BenchmarkInvokeCold(b *testing.B) {
	c, r := clientFor(b, tracedAdapter{})
	sweep := make([]byte, *coldEvictMB<<20)
	var cold, warm []time.Duration
	invoke := func() time.Duration {
		t0 := time.Now()
		if _, err := c.Invoke(context.Background(), r); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	for b.Loop() {
		for i := 0; i < len(sweep); i += 64 {
			sweep[i]++
		}
		cold = append(cold, invoke())
		warm = append(warm, invoke())
	}
	slices.Sort(cold)
	slices.Sort(warm)
	b.ReportMetric(float64(cold[len(cold)/2]), "cold-p50-ns")
	b.ReportMetric(float64(warm[len(warm)/2]), "warm-p50-ns")
}

// BenchmarkOverheadAfterPOST is the client's own cost as it is on the
// call's path: each iteration makes a raw POST (untimed), whose network
// stack work evicts the client from the CPU's nearest caches, then times
// one Invoke through an adapter that answers at once (p50-ns).
func BenchmarkOverheadAfterPOST(b *testing.B) {
	srv := benchServer(b)
	hc := srv.Client()
	c, r := clientFor(b, tracedAdapter{})
	var d []time.Duration
	for b.Loop() {
		rawPOST(b, hc, srv.URL)
		t0 := time.Now()
		if _, err := c.Invoke(context.Background(), r); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(t0))
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2]), "p50-ns")
}
