package faults

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
)

// The seed corpora live in testdata/fuzz/<FuzzName>/.

// FuzzRetryAfter checks the Retry-After parser on any header value: it
// never panics, never returns a negative delay, accepts a plain run of
// digits as whole seconds (the longest Duration when they overflow), and
// treats the millisecond forms the same way.
func FuzzRetryAfter(f *testing.F) {
	names := []string{"Retry-After", "retry-after-ms", "x-ms-retry-after-ms", "x-amz-retry-after"}
	f.Fuzz(func(t *testing.T, which uint8, v string) {
		name := names[int(which)%len(names)]
		h := http.Header{}
		h.Set(name, v)
		now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
		d, ok := cloudreq.RetryAfter(h, now)
		if d < 0 {
			t.Fatalf("%s: %q gave a negative delay %v", name, v, d)
		}
		if !ok && d != 0 {
			t.Fatalf("%s: %q: not usable but %v", name, v, d)
		}
		tv := strings.TrimSpace(v)
		if tv == "" || strings.Trim(tv, "0123456789") != "" {
			return
		}
		if !ok {
			t.Fatalf("%s: digits %q not accepted", name, v)
		}
		unit := time.Second
		if name != "Retry-After" {
			unit = time.Millisecond
		}
		n, err := strconv.ParseUint(tv, 10, 64)
		if err != nil || n > uint64(math.MaxInt64/int64(unit)) {
			if d != time.Duration(math.MaxInt64) {
				t.Fatalf("%s: overflowing %q gave %v, want the longest Duration", name, v, d)
			}
			return
		}
		if want := time.Duration(n) * unit; d != want && !(unit == time.Millisecond && d >= want-time.Microsecond && d <= want+time.Microsecond) {
			t.Fatalf("%s: %q gave %v, want %v", name, v, d, want)
		}
	})
}

// FuzzErrorText checks the error-page reducer every net/http adapter uses:
// any body gives a short, valid UTF-8, one-line message.
func FuzzErrorText(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		msg := httpadapter.ErrorText(body, contentType)
		if len(msg) > httpadapter.MaxErrorMessage+len("…") {
			t.Fatalf("message of %d bytes", len(msg))
		}
		if !utf8.ValidString(msg) {
			t.Fatalf("invalid UTF-8 %q", msg)
		}
		if strings.ContainsAny(msg, "\n\r") {
			t.Fatalf("multi-line message %q", msg)
		}
	})
}

// canned is an http.RoundTripper that answers every request with one
// response, in memory.
type canned struct {
	status int
	header http.Header
	body   []byte
}

func (c canned) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{
		StatusCode: c.status, Status: strconv.Itoa(c.status) + " " + http.StatusText(c.status),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: c.header.Clone(), Body: io.NopCloser(bytes.NewReader(c.body)),
		ContentLength: int64(len(c.body)), Request: r,
	}, nil
}

// swap is an http.RoundTripper whose canned answer a fuzz target sets
// before each input (inputs run one at a time in a fuzzing process).
type swap struct {
	mu  sync.Mutex
	cur canned
}

func (s *swap) set(c canned) {
	s.mu.Lock()
	s.cur = c
	s.mu.Unlock()
}

func (s *swap) RoundTrip(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	c := s.cur
	s.mu.Unlock()
	return c.RoundTrip(r)
}

// fuzzHTTPBackend fuzzes backend name's adapter with canned responses: one
// Invoke or Stream per input, through a client without retries. Whatever
// the response, there is no panic, the stream ends, a success comes only
// from a 2xx (for an SSE stream, only with an end marker in the body), and
// an error is a normalized, bounded *errcodes.Error.
func fuzzHTTPBackend(f *testing.F, name string) {
	var b backend
	for _, x := range httpBackends() {
		if x.name == name {
			b = x
		}
	}
	sw := &swap{}
	ad := b.newAdapter(f, "https://fuzz.invalid", &http.Client{Transport: sw})
	c, err := cloudreq.New(cloudreq.Options{
		Adapters:    []cloudreq.Adapter{ad},
		CallOptions: cloudreq.CallOptions{Timeout: 10 * time.Second},
	}, func(o *cloudreq.Options) {
		o.Retry.MaxAttempts, o.Retry.NoBudget = 1, true
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = c.Close() })
	f.Fuzz(func(t *testing.T, status uint16, contentType string, body []byte, stream bool) {
		st := 200 + int(status)%400 // 2xx to 5xx: 1xx are interim answers net/http never hands back
		h := http.Header{}
		if contentType != "" {
			h.Set("Content-Type", contentType)
		}
		if b.name == "sagemaker" {
			if st >= 300 {
				h.Set("X-Amzn-ErrorType", contentType) // any name, any junk
			} else if stream {
				h.Set("Content-Type", "application/vnd.amazon.eventstream")
			}
		}
		sw.set(canned{status: st, header: h, body: body})
		var err error
		if stream {
			var s *cloudreq.Stream
			s, err = c.Stream(context.Background(), b.request(true))
			if err == nil {
				n := 0
				for s.Next() {
					if n++; n > 1<<20 {
						t.Fatal("the stream does not end")
					}
				}
				err = s.Err()
				_ = s.Close()
			}
		} else {
			_, err = c.Invoke(context.Background(), b.request(true))
		}
		if err == nil {
			if st >= 300 {
				t.Fatalf("HTTP %d succeeded", st)
			}
			// An SSE stream needs its end marker; a stream of another type
			// is plain text that ends with its body (the adapters' rule).
			if stream && httpadapter.IsEventStream(contentType) && !bytes.Contains(body, []byte("[DONE]")) && !bytes.Contains(body, []byte("finish_reason")) {
				t.Fatalf("an SSE stream with no end marker succeeded: %q", body)
			}
			return
		}
		var e *errcodes.Error
		if !errors.As(err, &e) {
			t.Fatalf("not an *errcodes.Error: %T %v", err, err)
		}
		if !e.Code.Valid() || e.Provider == "" {
			t.Fatalf("code %q provider %q", e.Code, e.Provider)
		}
		if msg := e.Error(); len(msg) > 4096 {
			t.Fatalf("an error message of %d bytes", len(msg))
		}
	})
}

// FuzzSageMakerResponse feeds the SageMaker adapter any status, error type,
// content type and body (restJson1 errors, eventstream streams).
func FuzzSageMakerResponse(f *testing.F) { fuzzHTTPBackend(f, "sagemaker") }

// FuzzOpenAIResponse feeds the OpenAI-compatible adapter any status,
// content type and body (error envelopes, completions, SSE streams).
func FuzzOpenAIResponse(f *testing.F) { fuzzHTTPBackend(f, "openai") }

// FuzzPAIEASResponse feeds the PAI-EAS adapter any status, content type
// and body (plain-text gateway errors, SSE and plain streams).
func FuzzPAIEASResponse(f *testing.F) { fuzzHTTPBackend(f, "paieas") }

// FuzzAzureMLResponse feeds the Azure ML adapter any status, content type
// and body (/score errors and bodies, SSE streams).
func FuzzAzureMLResponse(f *testing.F) { fuzzHTTPBackend(f, "azureml") }

// statusFake is a PredictionService that fails every RPC with one
// google.rpc.Status, after one message on streams.
type statusFake struct {
	aiplatformpb.UnimplementedPredictionServiceServer
	mu sync.Mutex
	st *spb.Status
}

func (f *statusFake) status() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return status.ErrorProto(f.st)
}

func (f *statusFake) Predict(context.Context, *aiplatformpb.PredictRequest) (*aiplatformpb.PredictResponse, error) {
	return nil, f.status()
}

func (f *statusFake) StreamGenerateContent(_ *aiplatformpb.GenerateContentRequest, s aiplatformpb.PredictionService_StreamGenerateContentServer) error {
	if err := s.Send(vertexMsg("tok0 ", aiplatformpb.Candidate_FINISH_REASON_UNSPECIFIED)); err != nil {
		return err
	}
	return f.status()
}

// vertexDetailTypes are the detail types the fuzzer's bytes are sent as.
var vertexDetailTypes = []string{
	"type.googleapis.com/google.rpc.ErrorInfo", "type.googleapis.com/google.rpc.RetryInfo",
	"type.googleapis.com/google.rpc.QuotaFailure", "type.googleapis.com/google.rpc.RequestInfo",
	"type.googleapis.com/google.rpc.BadRequest", "type.googleapis.com/google.rpc.Help",
	"type.googleapis.com/unknown.Type",
}

// FuzzVertexStatus fails Vertex RPCs with any gRPC code, message and
// detail (any bytes as any of the google.rpc detail types): the adapter
// never panics and always returns a normalized error with a valid code and
// a non-negative RetryAfter.
func FuzzVertexStatus(f *testing.F) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	fake := &statusFake{st: &spb.Status{}}
	srv := grpc.NewServer()
	aiplatformpb.RegisterPredictionServiceServer(srv, fake)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(l) }()
	f.Cleanup(func() { srv.Stop(); <-done })
	ad := newVertexAt(f, l.Addr().String())
	c, err := cloudreq.New(cloudreq.Options{
		Adapters:    []cloudreq.Adapter{ad},
		CallOptions: cloudreq.CallOptions{Timeout: 10 * time.Second},
	}, func(o *cloudreq.Options) {
		o.Retry.MaxAttempts, o.Retry.NoBudget = 1, true
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = c.Close() })
	b := vertexBackend()
	f.Fuzz(func(t *testing.T, code uint32, msg string, kind uint8, detail []byte, stream bool) {
		st := &spb.Status{Code: int32(1 + code%16), Message: msg}
		st.Details = []*anypb.Any{{TypeUrl: vertexDetailTypes[int(kind)%len(vertexDetailTypes)], Value: detail}}
		fake.mu.Lock()
		fake.st = st
		fake.mu.Unlock()
		var err error
		if stream {
			var s *cloudreq.Stream
			s, err = c.Stream(context.Background(), b.request(true))
			if err == nil {
				for s.Next() {
				}
				err = s.Err()
				_ = s.Close()
			}
		} else {
			_, err = c.Invoke(context.Background(), b.request(false))
		}
		var e *errcodes.Error
		if !errors.As(err, &e) {
			t.Fatalf("not an *errcodes.Error: %T %v", err, err)
		}
		if !e.Code.Valid() || e.Provider == "" || e.RetryAfter < 0 {
			t.Fatalf("code %q provider %q retry after %v", e.Code, e.Provider, e.RetryAfter)
		}
	})
}
