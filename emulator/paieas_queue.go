package emulator

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// The PAI-EAS queue service's wire, as the EAS SDKs speak it.
const (
	easQueueRequestID   = "X-Eas-Queueservice-Request-Id"
	easQueueUserHeader  = "X-Eas-Queueservice-User-Id"
	easQueueGroupHeader = "X-Eas-Queueservice-Group-Id"
	// easQueueMaxWait bounds a Get's _timeout_.
	easQueueMaxWait = 30 * time.Second
	// easQueueMaxFrames bounds a sink: past it, the oldest results go.
	easQueueMaxFrames = 10000
)

// easFrame is one entry of a queue.
type easFrame struct {
	index     uint64
	tags      map[string]string
	data      []byte
	committed bool
}

// easFrameJSON is a frame as the queue's JSON codec writes it.
type easFrameJSON struct {
	Index   uint64            `json:"index"`
	Message string            `json:"message,omitempty"`
	Tags    map[string]string `json:"tags"`
	Data    string            `json:"data"`
}

func (f *easFrame) json(indexOnly bool) easFrameJSON {
	j := easFrameJSON{Index: f.index, Tags: f.tags}
	if !indexOnly {
		j.Data = base64.StdEncoding.EncodeToString(f.data)
	}
	return j
}

// easQueue is one asynchronous service's pair of queues: the input
// counter and the output (sink) frames, by the input's index.
type easQueue struct {
	next    uint64
	sink    []*easFrame // sorted by index
	changed chan struct{}
}

// easQueues holds the queues of the services used as asynchronous ones.
type easQueues struct {
	mu sync.Mutex
	q  map[string]*easQueue
}

// get returns name's queue, locked by the caller (q.mu).
func (qs *easQueues) get(name string) *easQueue {
	if qs.q == nil {
		qs.q = map[string]*easQueue{}
	}
	q := qs.q[name]
	if q == nil {
		q = &easQueue{next: 1, changed: make(chan struct{})}
		qs.q[name] = q
	}
	return q
}

// notify wakes the waiters on q (q.mu held).
func (q *easQueue) notify() {
	close(q.changed)
	q.changed = make(chan struct{})
}

// isEASQueueRequest reports whether r is for a service's queue: its sink,
// or the service root with the queue's identity header or reserved query.
func isEASQueueRequest(r *http.Request) bool {
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/predict/")
	if !ok || rest == "" {
		return false
	}
	name, sub, _ := strings.Cut(rest, "/")
	if name == "" {
		return false
	}
	if sub == "sink" {
		return true
	}
	if sub != "" {
		return false
	}
	q := r.URL.Query()
	return r.Header.Get(easQueueUserHeader) != "" || q.Has("_attrs_") || q.Has("_eos_")
}

// serveEASQueue serves the queue service of an asynchronous PAI-EAS
// service at /api/predict/{service} (input) and …/{service}/sink (output):
//
//	GET    ?_attrs_=true                      attributes (JSON), naming the identity headers
//	POST   input, tags as the query           enqueue: 200, the index as text, X-Eas-Queueservice-Request-Id
//	GET    sink ?_index_&_length_&_timeout_&_auto_delete_&tag=value
//	                                          frames (JSON list), waiting up to _timeout_ (≤ 30 s)
//	GET    sink ?_watch_=true (websocket)     frames from _index_ as they are written, _window_
//	                                          unacknowledged at most unless _auto_commit_
//	PUT    sink ?_indexes_=1,2                commit; DELETE sink ?_indexes_= delete
//	DELETE sink ?_index_&_trunc_=true         delete the frames before _index_
//
// Each request enqueued runs at once through the service's own inference
// (the legacy body at the root, an OpenAI chat body, one with "messages",
// at /v1/chat/completions): its latency and fault model and its Record.
// Its answer is written to the sink with the input's index and tags, plus
// requestId and lastCode (the HTTP status); a sink keeps the last 10000
// results (an older one is dropped). Priority (_priority_) is kept
// as a tag; the emulator has no worker limit for it to reorder.
func (s *Server) serveEASQueue(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/api/predict/")
	name, sub, _ := strings.Cut(rest, "/")
	ep := s.lookup(name, PAIEAS)
	if ep == nil {
		writeEASError(w, FaultNotFound, name, "")
		return
	}
	var body []byte
	if r.Method == http.MethodPost {
		b, tooLarge, err := s.readBody(w, r, maxBody)
		if err != nil {
			return
		}
		if tooLarge {
			writeEASError(w, FaultPayloadTooLarge, name, "")
			return
		}
		body = b
	}
	if !s.authorized(ep, PAIEAS, r, body) {
		writeEASError(w, FaultUnauthenticated, name, "")
		return
	}
	q := r.URL.Query()
	sink := sub == "sink"
	switch {
	case q.Get("_attrs_") == "true":
		writeJSON(w, http.StatusOK, map[string]string{
			"meta.backend": "emulator", "meta.maxPayloadBytes": strconv.Itoa(maxBody),
			"meta.header.userIdentifyHeader": easQueueUserHeader, "meta.header.groupIdentifyHeader": easQueueGroupHeader,
		})
	case r.Header.Get(easQueueUserHeader) == "":
		writeEASQueueText(w, http.StatusBadRequest, "missing header "+easQueueUserHeader+": the user identity (see ?_attrs_=true)")
	case !sink && r.Method == http.MethodPost && q.Get("_eos_") == "true":
		writeEASQueueText(w, http.StatusOK, "OK")
	case !sink && r.Method == http.MethodPost:
		s.easEnqueue(w, r, name, body, q)
	case sink && r.Method == http.MethodGet && q.Get("_watch_") == "true":
		s.easWatch(w, r, name, q)
	case sink && r.Method == http.MethodGet:
		s.easGet(w, r, name, q)
	case sink && (r.Method == http.MethodPut || r.Method == http.MethodDelete):
		s.easAck(w, r.Method, name, q)
	default:
		writeEASQueueText(w, http.StatusMethodNotAllowed, "method not allowed on this queue")
	}
}

func writeEASQueueText(w http.ResponseWriter, status int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set(headerContentLength, itoa(int64(len(text))))
	w.WriteHeader(status)
	_, _ = w.Write([]byte(text))
}

// easEnqueue takes a request into the input queue and starts its inference.
func (s *Server) easEnqueue(w http.ResponseWriter, r *http.Request, name string, body []byte, query map[string][]string) {
	tags := map[string]string{}
	for k, v := range query {
		if len(v) > 0 && (!strings.HasPrefix(k, "_") || k == "_priority_") {
			tags[k] = v[0]
		}
	}
	id := s.uuid()
	tags["requestId"] = id
	s.queues.mu.Lock()
	qu := s.queues.get(name)
	idx := qu.next
	qu.next++
	s.queues.mu.Unlock()
	h := r.Header.Clone()
	h.Del(easQueueUserHeader)
	h.Del(easQueueGroupHeader)
	go s.easRun(name, idx, tags, body, h)
	w.Header().Set(easQueueRequestID, id)
	writeEASQueueText(w, http.StatusOK, strconv.FormatUint(idx, 10))
}

// easRun runs one queued request through the service's inference and
// writes its answer to the sink.
func (s *Server) easRun(name string, idx uint64, tags map[string]string, body []byte, h http.Header) {
	path := "/api/predict/" + name
	if bytes.Contains(body, []byte(`"messages"`)) {
		path += "/v1/chat/completions"
	}
	ctx := context.WithValue(context.Background(), arrivalKey{}, time.Now())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, path, bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header = h
	req.Header.Del("Accept")
	rec := &queueRecorder{h: http.Header{}}
	s.servePAIEAS(rec, req)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	tags["lastCode"] = strconv.Itoa(rec.status)
	s.queues.mu.Lock()
	qu := s.queues.get(name)
	f := &easFrame{index: idx, tags: tags, data: rec.body.Bytes()}
	i, _ := slices.BinarySearchFunc(qu.sink, idx, func(a *easFrame, x uint64) int { return cmpUint(a.index, x) })
	qu.sink = slices.Insert(qu.sink, i, f)
	if n := len(qu.sink) - easQueueMaxFrames; n > 0 {
		qu.sink = slices.Delete(qu.sink, 0, n)
	}
	qu.notify()
	s.queues.mu.Unlock()
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// queueRecorder is the ResponseWriter of a queued request's inference.
type queueRecorder struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (q *queueRecorder) Header() http.Header { return q.h }
func (q *queueRecorder) WriteHeader(code int) {
	if q.status == 0 {
		q.status = code
	}
}
func (q *queueRecorder) Write(b []byte) (int, error) {
	if q.status == 0 {
		q.status = http.StatusOK
	}
	return q.body.Write(b)
}
func (q *queueRecorder) Flush() {}

// matches reports whether f is selected by the query's tags.
func (f *easFrame) matches(query map[string][]string) bool {
	for k, v := range query {
		if strings.HasPrefix(k, "_") || len(v) == 0 {
			continue
		}
		if f.tags[k] != v[0] {
			return false
		}
	}
	return true
}

// easGet answers frames of the sink from _index_ on.
func (s *Server) easGet(w http.ResponseWriter, r *http.Request, name string, q map[string][]string) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	if a := r.Header.Get("Accept"); a != "" && !strings.Contains(a, "json") && !strings.Contains(a, "*/*") {
		writeEASQueueText(w, http.StatusNotAcceptable, "the emulator's queue answers application/json only")
		return
	}
	from, _ := strconv.ParseUint(get("_index_"), 10, 64)
	length, err := strconv.Atoi(cmpOrStr(get("_length_"), "1"))
	if err != nil || length < 1 {
		writeEASQueueText(w, http.StatusBadRequest, "_length_ must be a positive integer")
		return
	}
	wait, _ := time.ParseDuration(cmpOrStr(get("_timeout_"), "0s"))
	wait = min(max(wait, 0), easQueueMaxWait)
	del := get("_auto_delete_") == "true"
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		s.queues.mu.Lock()
		qu := s.queues.get(name)
		var out []*easFrame
		for _, f := range qu.sink {
			if f.index >= from && f.matches(q) && len(out) < length {
				out = append(out, f)
			}
		}
		changed := qu.changed
		if len(out) == length || wait == 0 {
			if del && len(out) > 0 {
				qu.sink = slices.DeleteFunc(qu.sink, func(f *easFrame) bool { return slices.Contains(out, f) })
				qu.notify()
			}
			list := make([]easFrameJSON, 0, len(out))
			for _, f := range out {
				list = append(list, f.json(false))
			}
			s.queues.mu.Unlock()
			writeJSON(w, http.StatusOK, list)
			return
		}
		s.queues.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			wait = 0
		case <-r.Context().Done():
			return
		case <-s.closed:
			return
		}
	}
}

func cmpOrStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// easAck commits (PUT) or deletes (DELETE) sink frames.
func (s *Server) easAck(w http.ResponseWriter, method, name string, q map[string][]string) {
	var idx []uint64
	var trunc uint64
	if v := q["_trunc_"]; method == http.MethodDelete && len(v) > 0 && v[0] == "true" {
		var err error
		if trunc, err = strconv.ParseUint(strings.Join(q["_index_"], ""), 10, 64); err != nil {
			writeEASQueueText(w, http.StatusBadRequest, "_index_ must be an index")
			return
		}
	} else {
		for p := range strings.SplitSeq(strings.Join(q["_indexes_"], ","), ",") {
			n, err := strconv.ParseUint(strings.TrimSpace(p), 10, 64)
			if err != nil {
				writeEASQueueText(w, http.StatusBadRequest, "_indexes_ must be a comma-separated list of indexes")
				return
			}
			idx = append(idx, n)
		}
	}
	s.queues.mu.Lock()
	qu := s.queues.get(name)
	switch {
	case trunc > 0:
		qu.sink = slices.DeleteFunc(qu.sink, func(f *easFrame) bool { return f.index < trunc })
	case method == http.MethodDelete:
		qu.sink = slices.DeleteFunc(qu.sink, func(f *easFrame) bool { return slices.Contains(idx, f.index) })
	default:
		for _, f := range qu.sink {
			if slices.Contains(idx, f.index) {
				f.committed = true
			}
		}
	}
	qu.notify()
	s.queues.mu.Unlock()
	writeEASQueueText(w, http.StatusOK, "OK")
}

// easWatch streams sink frames over a websocket from _index_ on: each
// frame not committed once, as it is written (the lowest index first of
// those waiting); without _auto_commit_, at most _window_ delivered and not
// committed at a time.
func (s *Server) easWatch(w http.ResponseWriter, r *http.Request, name string, q map[string][]string) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	next, _ := strconv.ParseUint(get("_index_"), 10, 64)
	window, _ := strconv.ParseUint(cmpOrStr(get("_window_"), "1"), 10, 64)
	window = max(window, 1)
	auto := get("_auto_commit_") == "true"
	indexOnly := get("_index_only_") == "true"
	// A watch lives long: no write-stall or body deadline carries over
	// to the hijacked connection.
	rc := http.NewResponseController(innermost(w))
	_ = rc.SetWriteDeadline(time.Time{})
	_ = rc.SetReadDeadline(time.Time{})
	conn, err := websocket.Accept(innermost(w), r, nil)
	if err != nil {
		return
	}
	defer conn.CloseNow()
	ctx := conn.CloseRead(r.Context())
	var inFlight []*easFrame
	sent := map[uint64]bool{}
	for {
		s.queues.mu.Lock()
		qu := s.queues.get(name)
		inFlight = slices.DeleteFunc(inFlight, func(f *easFrame) bool { return f.committed || !slices.Contains(qu.sink, f) })
		var send *easFrame
		if auto || uint64(len(inFlight)) < window {
			for _, f := range qu.sink {
				if f.index >= next && !f.committed && !sent[f.index] {
					send = f
					break
				}
			}
		}
		if send != nil {
			sent[send.index] = true
			if auto {
				send.committed = true
			} else {
				inFlight = append(inFlight, send)
			}
		}
		changed := qu.changed
		var msg []byte
		if send != nil {
			msg, _ = json.Marshal(send.json(indexOnly))
		}
		s.queues.mu.Unlock()
		if msg != nil {
			if err := conn.Write(ctx, websocket.MessageText, msg); err != nil {
				return
			}
			continue
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		case <-s.closed:
			_ = conn.Close(websocket.StatusGoingAway, "emulator closed")
			return
		}
	}
}
