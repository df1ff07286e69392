package faults

import (
	"bytes"
	"context"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/providers/azureml"
	"github.com/cloudinfer/cloudinfer/providers/openai"
	"github.com/cloudinfer/cloudinfer/providers/paieas"
	"github.com/cloudinfer/cloudinfer/providers/sagemaker"
)

// allocated returns the bytes the process allocated while f ran (all
// goroutines: the fake server's included, which only makes it stricter).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

const mib = 1 << 20

// hugeBody answers status with a body of size bytes of fill (after head),
// written a MiB at a time until the client goes away; streamHead writes
// the status and headers instead when set.
func hugeBody(status int, contentType, head string, fill byte, size int, streamHead func(http.ResponseWriter)) answer {
	return answer{raw: func(w http.ResponseWriter, _ *http.Request) {
		if streamHead != nil {
			streamHead(w)
		} else {
			w.Header().Set("Content-Type", contentType)
			w.WriteHeader(status)
		}
		if _, err := w.Write([]byte(head)); err != nil {
			return
		}
		buf := bytes.Repeat([]byte{fill}, mib)
		for sent := len(head); sent < size; sent += len(buf) {
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	}}
}

// TestHugeErrorPageBoundedMemory: a 100 MB HTML error page behind a 502
// is normalized to ERR_UNAVAILABLE from its first bytes; the rest is
// never read into memory (the call allocates less than 8 MB).
func TestHugeErrorPageBoundedMemory(t *testing.T) {
	for _, b := range httpBackends() {
		for _, stream := range modes() {
			t.Run(b.name+"/"+mode(stream), func(t *testing.T) {
				page := hugeBody(502, "text/html", "<html><head><title>502 Bad Gateway</title></head><body>", ' ', 100*mib, nil)
				r := newRig(t, b, []answer{page}, withClient(func(o *cloudreq.Options) { o.Retry.MaxAttempts = 1 }))
				var err error
				n := allocated(func() { _, _, err = r.call(context.Background(), stream) })
				var e *errcodes.Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, errcodes.Unavailable, e.Code, "%v", err)
				assert.Equal(t, 502, e.HTTPStatus)
				assert.Less(t, len(e.Error()), 2048, "the message is bounded")
				assert.Less(t, n, uint64(8*mib), "allocated %d MB", n/mib)
				t.Logf("allocated %.1f MB", float64(n)/mib)
			})
		}
	}
}

// limited returns b with a 1 MiB MaxResponseBytes (and event limit) for
// the adapters that take one, and false for those that do not.
func limited(b backend) (backend, bool) {
	const limit = mib
	switch b.name {
	case "openai":
		b.newAdapter = func(t testing.TB, base string, hc *http.Client) cloudreq.Adapter {
			return newOpenAI(t, base, hc, func(o *openai.Options) { o.MaxResponseBytes, o.MaxEventBytes = limit, limit })
		}
	case "paieas":
		b.newAdapter = func(t testing.TB, base string, hc *http.Client) cloudreq.Adapter {
			return newPAIEAS(t, base, hc, func(o *paieas.Options) { o.MaxResponseBytes, o.MaxEventBytes = limit, limit })
		}
	case "azureml":
		b.newAdapter = func(t testing.TB, base string, hc *http.Client) cloudreq.Adapter {
			return newAzureML(t, base, hc, func(o *azureml.Options) { o.MaxResponseBytes, o.MaxEventBytes = limit, limit })
		}
	case "sagemaker":
		// Its streams are bounded by its fixed model-line limit instead.
		b.newAdapter = func(t testing.TB, base string, hc *http.Client) cloudreq.Adapter {
			return newSageMaker(t, base, hc, func(o *sagemaker.Options) { o.MaxResponseBytes = limit })
		}
	default:
		return b, false
	}
	b.start = func(t testing.TB, env startEnv) cloudreq.Adapter {
		base, hc := serveHTTP(t, serveWire(nil, env.rec), env.mem)
		return b.newAdapter(t, base, hc)
	}
	return b, true
}

// TestHugeResponseBodyBounded: a 200 whose body passes the adapter's
// MaxResponseBytes (1 MiB here) fails with ERR_PAYLOAD_TOO_LARGE, is not
// retried, and costs memory in proportion to the limit, not the 100 MiB
// body: under 8 MiB, or 16 MiB for SageMaker, whose SDK reads the body
// into a growing buffer before it parses it.
func TestHugeResponseBodyBounded(t *testing.T) {
	for _, b := range httpBackends() {
		b, ok := limited(b)
		if !ok {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			body := hugeBody(200, "application/json", `{"output":"`, 'x', 100*mib, nil)
			r := newRig(t, b, []answer{body})
			var err error
			n := allocated(func() { _, err = r.invoke(context.Background()) })
			var e *errcodes.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, errcodes.PayloadTooLarge, e.Code, "%v", err)
			assert.Equal(t, 200, e.HTTPStatus)
			assert.False(t, e.Retryable)
			assert.Equal(t, 1, r.rec.count())
			budget := uint64(8 * mib)
			if b.name == "sagemaker" {
				budget = 16 * mib
			}
			assert.Less(t, n, budget, "allocated %d MB", n/mib)
			t.Logf("allocated %.1f MB", float64(n)/mib)
		})
	}
}

// TestLongStreamLineBounded: a stream line that never ends (64 MiB with no
// line break; 1 GiB in 1 MiB eventstream parts for SageMaker) fails the
// stream once it passes the line limit — the SSE adapters' MaxEventBytes
// (1 MiB here), SageMaker's 8 MiB model line — with memory in proportion
// to the limit, not to the line (for SageMaker, under a quarter of it:
// the SDK decodes and copies each part on its way to the line buffer).
func TestLongStreamLineBounded(t *testing.T) {
	for _, b := range httpBackends() {
		budget := uint64(8 * mib)
		if b.name == "sagemaker" {
			budget = 256 * mib
		} else if lb, ok := limited(b); ok {
			b = lb
		}
		t.Run(b.name, func(t *testing.T) {
			var a answer
			if b.name == "sagemaker" {
				part := strings.Repeat("x", mib)
				a = answer{raw: func(w http.ResponseWriter, _ *http.Request) {
					sagemakerWire{}.streamHead(w)
					if payloadPart(w, []byte(`data: {"choices":[{"delta":{"content":"`)) != nil {
						return
					}
					for range 1024 {
						if payloadPart(w, []byte(part)) != nil {
							return
						}
					}
				}}
			} else {
				a = hugeBody(200, "", `data: {"choices":[{"delta":{"content":"`, 'x', 64*mib, openAIWire{}.streamHead)
			}
			r := newRig(t, b, []answer{a}, withClient(func(o *cloudreq.Options) { o.Retry.MaxAttempts = 1 }))
			var err error
			n := allocated(func() { _, _, err = r.stream(context.Background()) })
			require.Error(t, err)
			code := errcodes.Of(err)
			assert.Contains(t, []errcodes.Code{errcodes.PayloadTooLarge, errcodes.StreamInterrupted}, code, "%v", err)
			assert.Less(t, n, budget, "allocated %d MB", n/mib)
			t.Logf("%v; allocated %.1f MB", err, float64(n)/mib)
		})
	}
}

// TestLargeSSEEventBounded: an event whose data lines are each short but
// never end the event (64 MiB of 64 KiB data lines, no blank line) fails
// once it passes the event limit (1 MiB here), with memory in proportion
// to the limit (under 16 MiB), not to the 64 MiB sent.
func TestLargeSSEEventBounded(t *testing.T) {
	line := "data: " + strings.Repeat("y", 64<<10) + "\n"
	for _, b := range httpBackends() {
		b, ok := limited(b)
		if !ok || b.name == "sagemaker" { // eventstream, not SSE
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			a := answer{raw: func(w http.ResponseWriter, _ *http.Request) {
				openAIWire{}.streamHead(w)
				for range 1024 {
					if _, err := w.Write([]byte(line)); err != nil {
						return
					}
				}
			}}
			r := newRig(t, b, []answer{a}, withClient(func(o *cloudreq.Options) { o.Retry.MaxAttempts = 1 }))
			var err error
			n := allocated(func() { _, _, err = r.stream(context.Background()) })
			assert.Equal(t, errcodes.PayloadTooLarge, errcodes.Of(err), "%v", err)
			assert.Less(t, n, uint64(16*mib), "allocated %d MB", n/mib)
			t.Logf("%v; allocated %.1f MB", err, float64(n)/mib)
		})
	}
}

// TestEventStreamLengthPrefixBounded: a frame whose prelude claims 4 GiB,
// followed by 64 MiB of payload, fails the stream at the prelude; nothing
// near the claimed (or the sent) size is allocated.
func TestEventStreamLengthPrefixBounded(t *testing.T) {
	b := sagemakerBackend()
	for _, generate := range []bool{true, false} {
		t.Run(map[bool]string{true: "generate", false: "invoke-stream"}[generate], func(t *testing.T) {
			a := answer{raw: func(w http.ResponseWriter, _ *http.Request) {
				sagemakerWire{}.streamHead(w)
				if _, err := w.Write(prelude(0xFFFFFFFF, 0)); err != nil {
					return
				}
				buf := make([]byte, mib)
				for range 64 {
					if _, err := w.Write(buf); err != nil {
						return
					}
				}
			}}
			r := newRig(t, b, []answer{a}, withClient(func(o *cloudreq.Options) { o.Retry.MaxAttempts = 1 }))
			var err error
			n := allocated(func() {
				s, serr := r.client.Stream(context.Background(), b.request(generate))
				require.NoError(t, serr)
				for s.Next() {
				}
				err = s.Err()
				_ = s.Close()
			})
			// Refused at the first prelude, before any frame: the answer is no
			// event stream, a 2xx body that does not parse.
			assert.Equal(t, errcodes.ModelError, errcodes.Of(err), "%v", err)
			assert.Less(t, n, uint64(8*mib), "allocated %d MB", n/mib)
			t.Logf("%v; allocated %.1f MB", err, float64(n)/mib)
		})
	}
}
