package paieas

import (
	"bytes"
	"errors"
	"net/http"
	"testing"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// FuzzLegacyDecoder feeds arbitrary NUL-separated records to the legacy
// stream decoder: it never panics, a chunk is content exactly when it has
// text, and an error is an *errcodes.Error with a valid code: after
// content, ERR_STREAM_INTERRUPTED and not retryable.
func FuzzLegacyDecoder(f *testing.F) {
	f.Add([]byte("{\"response\":\"He\"}\x00{\"response\":\"Hello\"}\x00"), uint8(0))
	f.Add([]byte("{\"response\":\"a\"}\x00{\"respo"), uint8(1))
	f.Add([]byte("{\"response\":null}\x00[1,2]\x00\"s\""), uint8(2))
	f.Fuzz(func(t *testing.T, in []byte, mode uint8) {
		modes := []LegacyStream{LegacyAuto, LegacyCumulative, LegacyDelta}
		d := &legacyDecoder{mode: modes[int(mode)%len(modes)], raw: mode&4 != 0}
		content := false
		for _, rec := range bytes.Split(in, []byte{0}) {
			ch, end, err := d.Decode(rec)
			if end {
				t.Fatal("a legacy stream has no end marker")
			}
			if err != nil {
				var e *errcodes.Error
				if !errors.As(err, &e) || !e.Code.Valid() || e.Provider != "alibaba" {
					t.Fatalf("error %v", err)
				}
				if content && (e.Code != errcodes.StreamInterrupted || e.Retryable) {
					t.Fatalf("error after content %v (retryable %v)", err, e.Retryable)
				}
				return
			}
			if ch.Content != (ch.Text != "") {
				t.Fatalf("content %v for text %q", ch.Content, ch.Text)
			}
			content = content || ch.Content
		}
		_ = d.Complete()
	})
}

// FuzzErrorBody maps arbitrary error bodies for every status: always an
// *errcodes.Error with a valid code and provider, and a bounded message.
func FuzzErrorBody(f *testing.F) {
	f.Add(450, []byte("request is discarded because the queue is full"), "text/plain")
	f.Add(503, []byte(`{"error":{"message":"m","type":"ServiceUnavailableError","code":503}}`), "application/json")
	f.Add(502, []byte("<html><title>502</title></html>"), "text/html")
	f.Add(429, []byte(`{"error":{"code":"insufficient_quota"}}`), "application/json")
	f.Fuzz(func(t *testing.T, status int, body []byte, ct string) {
		if status < 100 || status > 999 {
			return
		}
		resp := &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {ct}}, Body: http.NoBody}
		e := errorTable(resp, body, "")
		if !e.Code.Valid() || e.Provider != "alibaba" || e.HTTPStatus != status {
			t.Fatalf("%+v", e)
		}
		if len(e.Message) > 2048 {
			t.Fatalf("message of %d bytes", len(e.Message))
		}
	})
}
