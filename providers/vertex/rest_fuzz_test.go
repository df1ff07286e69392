package vertex

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// FuzzRESTErrorTable: any error body maps to an error of provider gcp
// with a code of the closed set and the answer's HTTP status.
func FuzzRESTErrorTable(f *testing.F) {
	f.Add(429, []byte(`{"error":{"code":429,"message":"q","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1s"}]}}`))
	f.Add(503, []byte("upstream reset"))
	f.Add(400, []byte(`{"error":{"message":"bad","type":"invalid_request_error"}}`))
	f.Add(404, []byte(`{"error":{"code":404,"details":[{"@type":"x"}]}}`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 300 || status > 599 {
			return
		}
		e := restErrorTable(&http.Response{StatusCode: status, Header: http.Header{}}, body, "")
		if e == nil || e.Provider != cloudreq.ProviderGCP || e.HTTPStatus != status || !e.Code.Valid() {
			t.Fatalf("body %q: %+v", body, e)
		}
	})
}

// FuzzRESTArrayStream: a stream body of any bytes ends, cleanly or with
// an error of the closed set, and never panics.
func FuzzRESTArrayStream(f *testing.F) {
	f.Add([]byte(`[{"outputs":[{"stringVal":["a"]}]}]`))
	f.Add([]byte(`[{"outputs":[{"stringVal":["a"]}]}` + "\n,\r\n" + `{"error":{"code":500,"status":"INTERNAL"}}]`))
	f.Add([]byte(`[{"outputs"`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, body []byte) {
		s := newArrayStream(&cloudreq.CloudResponse{}, io.NopCloser(bytes.NewReader(body)), &sspDecoder{frames{what: "StreamingPredictResponse"}}, 1<<10)
		for i := 0; ; i++ {
			_, err := s.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				if !errcodes.Of(err).Valid() {
					t.Fatalf("body %q: error %v outside the closed set", body, err)
				}
				return
			}
			if i > len(body) {
				t.Fatalf("body %q: more chunks than bytes", body)
			}
		}
	})
}
