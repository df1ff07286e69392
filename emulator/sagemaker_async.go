package emulator

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync"
)

// asyncState is the emulator's asynchronous inference: the S3 it writes
// results to, and the runs in flight, which Close waits for.
type asyncState struct {
	mu     sync.Mutex
	closed bool // Close began: no run starts
	runs   sync.WaitGroup
}

// start counts one run in, unless Close began.
func (a *asyncState) start() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false
	}
	a.runs.Add(1)
	return true
}

// close stops new runs and waits for those in flight.
func (a *asyncState) close() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.runs.Wait()
}

// asyncRunKey marks the internal InvokeEndpoint request an asynchronous
// inference runs as: its submission was authorized already.
type asyncRunKey struct{}

// asyncInternal reports whether r is an asynchronous inference's run.
func asyncInternal(r *http.Request) bool {
	v, _ := r.Context().Value(asyncRunKey{}).(bool)
	return v
}

// sageMakerAsyncLocations returns the output and failure locations of an
// asynchronous inference, as SageMaker builds them from the endpoint's
// S3OutputPath and S3FailurePath (here s3://cloudinfer-emulator/async-output/NAME
// and …/async-failures/NAME), the request's S3OutputPathExtension and
// Filename (default: the inference id).
func sageMakerAsyncLocations(name, id string, h http.Header) (out, fail string) {
	ext := strings.Trim(h.Get("X-Amzn-SageMaker-S3OutputPathExtension"), "/")
	file := h.Get("X-Amzn-SageMaker-Filename")
	outFile := id + ".out"
	if file != "" {
		outFile = file
	}
	out = "s3://" + path.Join(sageMakerAsyncBucket, "async-output", name, ext, outFile)
	fail = "s3://" + path.Join(sageMakerAsyncBucket, "async-failures", name, ext, id+"-error.out")
	return out, fail
}

// asyncRunHeader returns the submission's headers the run passes on to
// the container (the rest are the signature's or the async API's own), with
// the payload's Content-Type and Accept.
func asyncRunHeader(h http.Header) http.Header {
	out := http.Header{}
	for k, vs := range h {
		lk := strings.ToLower(k)
		switch {
		case lk == "authorization", lk == "content-length", lk == "content-type", lk == "accept",
			strings.HasPrefix(lk, "x-amz-"), lk == "x-amzn-sagemaker-inputlocation",
			lk == "x-amzn-sagemaker-requestttlseconds", lk == "x-amzn-sagemaker-invocationtimeoutseconds",
			lk == "x-amzn-sagemaker-filename", lk == "x-amzn-sagemaker-s3outputpathextension":
			continue
		}
		out[k] = append([]string(nil), vs...)
	}
	out.Set("Content-Type", cmp.Or(h.Get("X-Amzn-SageMaker-Content-Type"), "application/json"))
	if a := h.Get("X-Amzn-SageMaker-Accept"); a != "" {
		out.Set("Accept", a)
	}
	return out
}

// runSageMakerAsync runs one accepted asynchronous inference in the
// background, as the endpoint's queue would: it reads the input (the
// inline body, or the object at the input location in the emulator's S3),
// serves it as an InvokeEndpoint of the same endpoint (with its latency
// model, faults and Record), and writes the answer to the output location,
// or, for any answer but 200, the error body to the failure location. A
// missing input object is a failure. Close ends a run in flight; nothing is
// written then.
func (s *Server) runSageMakerAsync(h http.Header, name string, body []byte, input, out, fail string) {
	if !s.async.start() {
		return
	}
	go func() {
		defer s.async.runs.Done()
		ctx, cancel := context.WithCancel(context.WithValue(context.Background(), asyncRunKey{}, true))
		defer cancel()
		go func() {
			select {
			case <-s.closed:
				cancel()
			case <-ctx.Done():
			}
		}()
		writeFailure := func(msg string) {
			b, _ := json.Marshal(map[string]string{"message": msg})
			s.putS3URI(fail, b, "application/json")
		}
		if input != "" {
			bucket, key, ok := splitS3URI(input)
			obj, found := s.s3.get(bucket, key)
			if !ok || !found {
				writeFailure("Failed to download the input from " + input + ": the object does not exist (the emulator's S3 serves /s3/BUCKET/KEY)")
				return
			}
			body = obj.body
		}
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/endpoints/"+name+"/invocations", bytes.NewReader(body))
		req.Header = asyncRunHeader(h)
		rec := httptest.NewRecorder()
		s.serveSageMaker(rec, req)
		if ctx.Err() != nil {
			return
		}
		if rec.Code == http.StatusOK {
			s.putS3URI(out, rec.Body.Bytes(), rec.Header().Get("Content-Type"))
			return
		}
		s.putS3URI(fail, rec.Body.Bytes(), cmp.Or(rec.Header().Get("Content-Type"), "application/json"))
	}()
}

// putS3URI stores body at an s3:// URI in the emulator's S3.
func (s *Server) putS3URI(uri string, body []byte, contentType string) {
	if bucket, key, ok := splitS3URI(uri); ok {
		s.s3.put(bucket, key, bytes.Clone(body), contentType)
	}
}

// splitS3URI splits s3://bucket/key.
func splitS3URI(uri string) (bucket, key string, ok bool) {
	rest, found := strings.CutPrefix(uri, "s3://")
	if !found {
		return "", "", false
	}
	bucket, key, _ = strings.Cut(rest, "/")
	return bucket, key, bucket != "" && key != ""
}
