package emulator

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkStallWriterToken is the write-stall guard's cost per streamed
// token (a Write and a Flush of one SSE event) on a live loopback
// response, beside the same writes unguarded (guard=off).
func BenchmarkStallWriterToken(b *testing.B) {
	event := []byte("data: {\"choices\":[{\"delta\":{\"content\":\" token\"}}]}\n\n")
	for _, guard := range []bool{false, true} {
		name := "guard=off"
		if guard {
			name = "guard=on"
		}
		b.Run(name, func(b *testing.B) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				rc := http.NewResponseController(w)
				if guard {
					sw := &stallWriter{ResponseWriter: w, rc: rc, timeout: time.Minute}
					w, rc = sw, http.NewResponseController(sw)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					_, _ = w.Write(event)
					_ = rc.Flush()
				}
				b.StopTimer()
			}))
			defer srv.Close()
			resp, err := http.Get(srv.URL)
			if err != nil {
				b.Fatal(err)
			}
			defer resp.Body.Close()
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				b.Fatal(err)
			}
		})
	}
}
