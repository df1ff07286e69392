package emulator

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/md5"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The emulator's S3 is what asynchronous inference needs and no more:
// path-style PutObject, GetObject, HeadObject and DeleteObject under
// /s3/{bucket}/{key}, in memory, with S3's XML errors (NoSuchKey 404). Any
// bucket exists; signatures are not checked; objects live as long as the
// Server, within s3MaxBytes in all (the oldest are dropped past it).
const (
	s3Prefix = "/s3/"
	// s3MaxObject bounds one object; s3MaxBytes all of them.
	s3MaxObject = 64 << 20
	s3MaxBytes  = 256 << 20
)

// s3Object is one stored object.
type s3Object struct {
	body        []byte
	contentType string
	etag        string
	modified    time.Time
}

// objectStore is the emulator's S3: objects by "bucket/key".
type objectStore struct {
	mu    sync.Mutex
	objs  map[string]s3Object
	order []string // keys, oldest first
	size  int64
}

func (o *objectStore) put(bucket, key string, body []byte, contentType string) s3Object {
	sum := md5.Sum(body)
	obj := s3Object{body: body, contentType: contentType, etag: `"` + hex.EncodeToString(sum[:]) + `"`, modified: time.Now().UTC()}
	k := bucket + "/" + key
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.objs == nil {
		o.objs = make(map[string]s3Object)
	}
	if old, ok := o.objs[k]; ok {
		o.size -= int64(len(old.body))
	} else {
		o.order = append(o.order, k)
	}
	o.objs[k] = obj
	o.size += int64(len(body))
	for o.size > s3MaxBytes && len(o.order) > 1 {
		old := o.order[0]
		o.order = o.order[1:]
		if v, ok := o.objs[old]; ok && old != k {
			o.size -= int64(len(v.body))
			delete(o.objs, old)
		}
	}
	return obj
}

func (o *objectStore) get(bucket, key string) (s3Object, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	v, ok := o.objs[bucket+"/"+key]
	return v, ok
}

func (o *objectStore) delete(bucket, key string) {
	k := bucket + "/" + key
	o.mu.Lock()
	defer o.mu.Unlock()
	if v, ok := o.objs[k]; ok {
		o.size -= int64(len(v.body))
		delete(o.objs, k)
	}
}

// S3Object returns the object the emulator's S3 holds at s3://bucket/key:
// an asynchronous inference's output or failure, or what was put there.
func (s *Server) S3Object(bucket, key string) ([]byte, bool) {
	v, ok := s.s3.get(bucket, key)
	return v.body, ok
}

// PutS3Object stores body at s3://bucket/key in the emulator's S3, as
// PutObject would: an asynchronous inference's input, say.
func (s *Server) PutS3Object(bucket, key string, body []byte, contentType string) {
	s.s3.put(bucket, key, bytes.Clone(body), contentType)
}

// s3Error is S3's XML error body.
type s3Error struct {
	XMLName   xml.Name `xml:"Error"`
	Code      string   `xml:"Code"`
	Message   string   `xml:"Message"`
	Key       string   `xml:"Key,omitempty"`
	Bucket    string   `xml:"BucketName,omitempty"`
	RequestID string   `xml:"RequestId"`
}

func writeS3Error(w http.ResponseWriter, r *http.Request, status int, e s3Error) {
	h := w.Header()
	h.Set("Content-Type", "application/xml")
	h.Set("x-amz-request-id", e.RequestID)
	if r.Method == http.MethodHead {
		w.WriteHeader(status)
		return
	}
	b, _ := xml.Marshal(e)
	w.WriteHeader(status)
	_, _ = w.Write(append([]byte(xml.Header), b...))
}

// serveS3 serves /s3/{bucket}/{key}: PUT, GET, HEAD and DELETE of one
// object.
func (s *Server) serveS3(w http.ResponseWriter, r *http.Request) {
	reqID := strings.ToUpper(strconv.FormatUint(s.ids.Add(1), 16))
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, s3Prefix), "/")
	if bucket == "" || key == "" || r.URL.Query().Has("uploads") || r.URL.Query().Has("uploadId") {
		writeS3Error(w, r, http.StatusNotImplemented, s3Error{Code: "NotImplemented",
			Message: "the emulator's S3 serves PUT, GET, HEAD and DELETE of one object, path-style: /s3/BUCKET/KEY", RequestID: reqID})
		return
	}
	w.Header().Set("x-amz-request-id", reqID)
	switch r.Method {
	case http.MethodPut:
		body, tooLarge, err := s.readBody(w, r, s3MaxObject)
		if err != nil {
			return
		}
		if tooLarge {
			writeS3Error(w, r, http.StatusBadRequest, s3Error{Code: "EntityTooLarge",
				Message: fmt.Sprintf("Your proposed upload exceeds the maximum allowed size (%d bytes in the emulator)", s3MaxObject), RequestID: reqID})
			return
		}
		if awsChunked(r) {
			if body, err = decodeAWSChunked(body); err != nil {
				writeS3Error(w, r, http.StatusBadRequest, s3Error{Code: "IncompleteBody", Message: err.Error(), RequestID: reqID})
				return
			}
		}
		obj := s.s3.put(bucket, key, body, r.Header.Get("Content-Type"))
		w.Header().Set("ETag", obj.etag)
		w.WriteHeader(http.StatusOK)
	case http.MethodGet, http.MethodHead:
		obj, ok := s.s3.get(bucket, key)
		if !ok {
			writeS3Error(w, r, http.StatusNotFound, s3Error{Code: "NoSuchKey", Message: "The specified key does not exist.", Key: key, RequestID: reqID})
			return
		}
		h := w.Header()
		h.Set("Content-Type", cmp.Or(obj.contentType, "binary/octet-stream"))
		h.Set("ETag", obj.etag)
		h.Set("Last-Modified", obj.modified.Format(http.TimeFormat))
		h.Set(headerContentLength, strconv.Itoa(len(obj.body)))
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(obj.body)
		}
	case http.MethodDelete:
		s.s3.delete(bucket, key)
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "PUT, GET, HEAD, DELETE")
		writeS3Error(w, r, http.StatusMethodNotAllowed, s3Error{Code: "MethodNotAllowed", Message: "The specified method is not allowed against this resource.", RequestID: reqID})
	}
}

// awsChunked reports whether r's body is in aws-chunked encoding (the SDKs'
// streaming uploads with trailing checksums).
func awsChunked(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Content-Encoding"), "aws-chunked") ||
		strings.HasPrefix(r.Header.Get("X-Amz-Content-Sha256"), "STREAMING-")
}

// decodeAWSChunked returns the data of an aws-chunked body: chunks of
// "HEXSIZE[;chunk-signature=…]\r\nDATA\r\n", ended by a zero-size chunk
// and the trailers, which are not checked.
func decodeAWSChunked(b []byte) ([]byte, error) {
	br := bufio.NewReader(bytes.NewReader(b))
	var out []byte
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, errors.New("aws-chunked body cut before its last chunk")
		}
		size, _, _ := strings.Cut(strings.TrimSpace(line), ";")
		n, err := strconv.ParseInt(size, 16, 64)
		if err != nil || n < 0 || n > int64(len(b)) {
			return nil, fmt.Errorf("aws-chunked body: bad chunk size %q", size)
		}
		if n == 0 {
			return out, nil
		}
		chunk := make([]byte, n)
		if _, err := io.ReadFull(br, chunk); err != nil {
			return nil, errors.New("aws-chunked body cut inside a chunk")
		}
		out = append(out, chunk...)
		if _, err := br.ReadString('\n'); err != nil {
			return nil, errors.New("aws-chunked body cut after a chunk")
		}
	}
}
