package sagemaker

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

// testAdapter starts h on an httptest server and returns an adapter that
// talks to it with static credentials.
func testAdapter(t testing.TB, h http.Handler, optFns ...func(*Options)) (*Adapter, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(h)
	tr := &http.Transport{}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.Close()
	})
	ad, err := New(context.Background(), Options{
		Region:            "us-east-1",
		Credentials:       credentials.NewStaticCredentialsProvider("AKIDTESTTESTTEST", "secret", ""),
		BaseEndpoint:      srv.URL,
		HTTPClient:        &http.Client{Transport: tr},
		AllowInsecureHTTP: true,
	}, optFns...)
	require.NoError(t, err)
	return ad, srv
}

// testClient wraps ad in a cloudreq.Client without retries, with optFns
// applied after.
func testClient(t testing.TB, ad *Adapter, optFns ...func(*cloudreq.Options)) *cloudreq.Client {
	t.Helper()
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}}, append([]func(*cloudreq.Options){func(o *cloudreq.Options) {
		o.Retry.MaxAttempts = 1
	}}, optFns...)...)
	require.NoError(t, err)
	return c
}

// frame is one eventstream message a test server sends.
type frame struct {
	kind    string // "part", "exception", "error"
	name    string // exception type or error code
	payload []byte
}

func part(s string) frame { return frame{kind: "part", payload: []byte(s)} }

func exception(name, payload string) frame {
	return frame{kind: "exception", name: name, payload: []byte(payload)}
}

func (f frame) message() eventstream.Message {
	var m eventstream.Message
	switch f.kind {
	case "part":
		m.Headers.Set(":message-type", eventstream.StringValue("event"))
		m.Headers.Set(":event-type", eventstream.StringValue("PayloadPart"))
		m.Headers.Set(":content-type", eventstream.StringValue("application/octet-stream"))
	case "exception":
		m.Headers.Set(":message-type", eventstream.StringValue("exception"))
		m.Headers.Set(":exception-type", eventstream.StringValue(f.name))
		m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
	case "error":
		m.Headers.Set(":message-type", eventstream.StringValue("error"))
		m.Headers.Set(":error-code", eventstream.StringValue(f.name))
		m.Headers.Set(":error-message", eventstream.StringValue(string(f.payload)))
		return m
	}
	m.Payload = f.payload
	return m
}

// encodeFrames encodes frames with the SDK's eventstream encoder.
func encodeFrames(t testing.TB, frames ...frame) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := eventstream.NewEncoder()
	for _, f := range frames {
		require.NoError(t, enc.Encode(&buf, f.message()))
	}
	return buf.Bytes()
}

// writeStreamHead writes the headers of a successful stream response.
func writeStreamHead(w http.ResponseWriter, extra http.Header) {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.Header().Set("X-Amzn-SageMaker-Content-Type", "text/event-stream")
	w.Header().Set("X-Amzn-Invoked-Production-Variant", "AllTraffic")
	w.Header().Set("X-Amzn-RequestId", "req-stream-1")
	for k, vs := range extra {
		w.Header()[k] = vs
	}
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
}

// streamHandler answers every request with frames, flushed one by one.
func streamHandler(t testing.TB, frames ...frame) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		writeStreamHead(w, nil)
		enc := eventstream.NewEncoder()
		for _, f := range frames {
			if err := enc.Encode(w, f.message()); err != nil {
				t.Errorf("encode: %v", err)
				return
			}
			w.(http.Flusher).Flush()
		}
	}
}

// drain reads a ChunkStream to its end.
func drain(cs cloudreq.ChunkStream) ([]cloudreq.StreamChunk, error) {
	var out []cloudreq.StreamChunk
	for range 10000 {
		ch, err := cs.Next()
		if err != nil {
			return out, err
		}
		ch.Data = bytes.Clone(ch.Data)
		out = append(out, ch)
	}
	return out, io.ErrNoProgress
}

func texts(chs []cloudreq.StreamChunk) string {
	var b bytes.Buffer
	for _, c := range chs {
		b.WriteString(c.Text)
	}
	return b.String()
}

func genCall(endpoint string, stream bool, ad *Adapter, dialect Dialect) (*cloudreq.Call, error) {
	req := &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderAWS, Service: cloudreq.ServiceSageMaker, Action: cloudreq.ActionGenerate,
		Target:   cloudreq.Target{Endpoint: endpoint},
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "Hi"}}, MaxTokens: 8},
	}
	if dialect != "" {
		req.Attributes.Dialect = string(dialect)
	}
	p, err := ad.Encode(req, stream)
	if err != nil {
		return nil, err
	}
	return &cloudreq.Call{Request: req, Payload: p, Attempt: 1}, nil
}

func invokeCall(endpoint string, body string) *cloudreq.Call {
	req := &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderAWS, Service: cloudreq.ServiceSageMaker, Action: cloudreq.ActionInvoke,
		Target:  cloudreq.Target{Endpoint: endpoint},
		Payload: cloudreq.Payload{Body: []byte(body)},
	}
	return &cloudreq.Call{Request: req, Payload: req.Payload, Attempt: 1}
}
