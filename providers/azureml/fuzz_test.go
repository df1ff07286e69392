package azureml

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"testing"
)

// FuzzDecodeScore reads arbitrary /score bodies: never a panic, and text
// implies content.
func FuzzDecodeScore(f *testing.F) {
	for _, s := range []string{
		`{"output":"hi"}`, `[{"0":"hi"}]`, `"hi"`,
		`{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`,
		`{"error":{"code":"ModelNotReady","message":"m"}}`, `[]`, `{"output":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := decodeScore(body)
		if err != nil {
			return
		}
		if r.Text != "" && !r.Content {
			t.Fatalf("text %q without content", r.Text)
		}
		d := &wholeDecoder{}
		_, _, _ = d.Decode(body)
	})
}

// FuzzErrorResponse maps arbitrary error responses: always a valid code,
// the provider, the status, and a bounded message.
func FuzzErrorResponse(f *testing.F) {
	f.Add(503, []byte(`{"error":{"code":"ModelNotReady","message":"loading"}}`), "application/json", "")
	f.Add(422, []byte(`{"status":422,"code":"parameter_not_supported","detail":{"a":1},"message":"m"}`), "application/json", "")
	f.Add(424, []byte(``), "text/plain", "model_error")
	f.Add(502, []byte(`<html><title>502</title></html>`), "text/html", "")
	f.Fuzz(func(t *testing.T, status int, body []byte, ct, errCode string) {
		if status < 100 || status > 999 {
			return
		}
		req := &http.Request{Method: http.MethodPost, URL: &url.URL{Scheme: "https", Host: "h", Path: "/score"}, Header: http.Header{}}
		resp := &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(bytes.NewReader(body)), Request: req}
		resp.Header.Set(HeaderErrorCode, errCode)
		resp.Header.Set(HeaderModelErrorReason, errCode)
		e := errorTable(resp, body, "")
		if !e.Code.Valid() || e.Provider != "azure" || e.HTTPStatus != status {
			t.Fatalf("%+v", e)
		}
		if len(e.Message) > 2048 {
			t.Fatalf("message of %d bytes", len(e.Message))
		}
		_ = e.Error()
	})
}
