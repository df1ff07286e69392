package openaiwire

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// FuzzStreamDecoder feeds arbitrary frames (newline-separated) to the
// stream decoder: it never panics; a chunk with text is content; an error
// is an *errcodes.Error with a valid code and the decoder's provider and
// request id, never ERR_STREAM_INTERRUPTED before content, and after
// content always ERR_STREAM_INTERRUPTED, not retryable.
func FuzzStreamDecoder(f *testing.F) {
	for _, s := range []string{
		roleFrame + "\n" + contentFrame + "\n[DONE]",
		`{"error":{"message":"Too many requests","type":"RateLimitError","code":429}}` + "\n[DONE]",
		contentFrame + "\n" + `{"error":{"message":"boom","type":"server_error"}}`,
		roleFrame + "\n" + `{"choices":[{"delta":{"content`,
		contentFrame + "\n" + `{"choices":[{"delta":{},"finish_reason":"stop"}]}` + "\n" + `{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
		`{"error":"Model is overloaded","error_type":"overloaded"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		d := &StreamDecoder{Provider: "p", RequestID: "r"}
		content := false
		for _, frame := range bytes.Split(in, []byte("\n")) {
			ch, end, err := d.Decode(frame)
			if err != nil {
				var e *errcodes.Error
				if !errors.As(err, &e) || !e.Code.Valid() || e.Provider != "p" || e.RequestID != "r" {
					t.Fatalf("error %#v", err)
				}
				if content != (e.Code == errcodes.StreamInterrupted) {
					t.Fatalf("content %v, error %v", content, err)
				}
				if content && e.Retryable {
					t.Fatalf("retryable after content: %v", err)
				}
				return
			}
			if end {
				return
			}
			if ch.Text != "" && !ch.Content {
				t.Fatalf("text %q is not content", ch.Text)
			}
			content = content || ch.Content
		}
		if err := d.Complete(); err != nil && !errors.Is(err, errcodes.StreamInterrupted) {
			t.Fatalf("complete: %v", err)
		}
	})
}
