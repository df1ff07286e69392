package paieas

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
)

// The queue service's wire, as the EAS SDKs speak it.
const (
	// HeaderQueueRequestID is the request id the input queue gives a
	// request it enqueued.
	HeaderQueueRequestID = "X-Eas-Queueservice-Request-Id"
	// QueueDefaultGroup is the group id the EAS SDKs send.
	QueueDefaultGroup = "eas"
	// Attribute keys every queue service answers (GET ?_attrs_=true).
	AttrUserHeader  = "meta.header.userIdentifyHeader"
	AttrGroupHeader = "meta.header.groupIdentifyHeader"
	AttrMaxPayload  = "meta.maxPayloadBytes"
	// TagRequestID is the tag of an output frame naming the request it
	// answers.
	TagRequestID = "requestId"
	// TagStatus is the tag of an output frame holding the inference's
	// HTTP status, where the service writes one.
	TagStatus = "lastCode"
	// maxQueueBody bounds what is read of a queue answer.
	maxQueueBody = 64 << 20
)

// QueueOptions configures a QueueClient.
type QueueOptions struct {
	// Endpoint is the EAS endpoint root (as Options.Endpoint).
	Endpoint string
	// Service is the asynchronous service's name: its input queue is
	// {Endpoint}/api/predict/{Service}, its output queue …/{Service}/sink.
	Service string
	// Token is the service token, sent as "Authorization: <token>".
	Token string
	// UserID identifies this client to the queue (default: a random
	// UUID, as the SDKs make); GroupID its group (default "eas").
	UserID, GroupID string
	// HTTPClient sends the requests (default http.DefaultClient's
	// transport).
	HTTPClient *http.Client
	// AllowInsecureHTTP permits the token over plain http (the emulator).
	AllowInsecureHTTP bool
}

// QueueClient speaks the PAI-EAS queue service of an asynchronous
// inference service: Put enqueues a request and returns its index and
// request id, Get and Wait fetch results from the output (sink) queue,
// Watch follows it over a websocket, Commit and Delete acknowledge and
// remove results. It is safe for concurrent use.
type QueueClient struct {
	opts   QueueOptions
	base   string // {Endpoint}/api/predict/{Service}
	client *http.Client

	mu    sync.Mutex
	attrs map[string]string
}

// NewQueueClient returns a QueueClient.
func NewQueueClient(o QueueOptions) (*QueueClient, error) {
	if o.Service == "" || strings.ContainsAny(o.Service, "/?#") {
		return nil, invalid("paieas queue: QueueOptions.Service must name the service, got %q", o.Service)
	}
	u, err := url.Parse(o.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, invalid("paieas queue: QueueOptions.Endpoint %q is not an absolute http(s) URL", o.Endpoint)
	}
	if o.Token != "" {
		if err := httpadapter.CheckPlainHTTP(cloudreq.ProviderAlibaba, u, "EAS_TOKEN", httpadapter.Insecure(o.AllowInsecureHTTP)); err != nil {
			return nil, err
		}
	}
	if o.UserID == "" {
		o.UserID = uuid.NewString()
	}
	if o.GroupID == "" {
		o.GroupID = QueueDefaultGroup
	}
	c := o.HTTPClient
	if c == nil {
		c = &http.Client{}
	}
	return &QueueClient{opts: o, base: strings.TrimRight(o.Endpoint, "/") + "/api/predict/" + o.Service, client: c}, nil
}

// Frame is one entry of a queue.
type Frame struct {
	// Index is the entry's index in its queue.
	Index uint64 `json:"index"`
	// Tags are its tags (an output frame's TagRequestID names its request).
	Tags map[string]string `json:"tags,omitempty"`
	// Data is its payload: an output frame's inference answer.
	Data []byte `json:"-"`
	// Message is an error the queue reports in the frame's place.
	Message string `json:"message,omitempty"`
}

// frameJSON is a frame as the queue's JSON codec writes it (data base64).
type frameJSON struct {
	Index   uint64            `json:"index"`
	Message string            `json:"message,omitempty"`
	Tags    map[string]string `json:"tags"`
	Data    string            `json:"data"`
}

func (f frameJSON) frame() (Frame, error) {
	d, err := base64.StdEncoding.DecodeString(f.Data)
	return Frame{Index: f.Index, Tags: f.Tags, Data: d, Message: f.Message}, err
}

// Enqueued is what Put returns.
type Enqueued struct {
	// Index is the request's index in the input queue; its result has
	// the same index in the output queue.
	Index uint64
	// RequestID is the id the queue gave it (X-Eas-Queueservice-Request-Id).
	RequestID string
}

// PutOptions are a Put's options.
type PutOptions struct {
	// Tags are sent as query parameters and kept with the request and its
	// result; a key may not start with "_" (reserved).
	Tags map[string]string
	// Priority, when above 0, is sent as the reserved tag _priority_
	// (higher first). Not in the EAS documentation this was built from:
	// see the package doc.
	Priority int
}

// queueError maps a queue answer that is not 2xx, or a transport failure.
func queueError(resp *http.Response, body []byte, err error) error {
	if err != nil {
		e := errcodes.FromTransport(err)
		e.Provider = cloudreq.ProviderAlibaba
		return e
	}
	e := errorTable(resp, body, resp.Header.Get(HeaderQueueRequestID))
	e.Message = "paieas queue: " + e.Message
	return e
}

// do sends one request to the input queue (sink false) or the output
// queue, with the token and, when ident, the identity headers.
func (q *QueueClient) do(ctx context.Context, method string, sink bool, query url.Values, body []byte, ident bool) (*http.Response, []byte, error) {
	u := q.base
	if sink {
		u += "/sink"
	}
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, nil, invalid("paieas queue: %v", err)
	}
	req.Header.Set("Accept", "application/json")
	if q.opts.Token != "" {
		req.Header.Set("Authorization", q.opts.Token)
	}
	if ident {
		a, err := q.Attributes(ctx)
		if err != nil {
			return nil, nil, err
		}
		if h := a[AttrUserHeader]; h != "" {
			req.Header.Set(h, q.opts.UserID)
		}
		if h := a[AttrGroupHeader]; h != "" {
			req.Header.Set(h, q.opts.GroupID)
		}
	}
	resp, err := q.client.Do(req)
	if err != nil {
		return nil, nil, queueError(nil, nil, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxQueueBody))
	if err != nil {
		return nil, nil, queueError(nil, nil, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return resp, b, queueError(resp, b, nil)
	}
	return resp, b, nil
}

// Attributes returns the queue's attributes (GET ?_attrs_=true), read
// once and kept: among them the names of the identity headers.
func (q *QueueClient) Attributes(ctx context.Context) (map[string]string, error) {
	q.mu.Lock()
	a := q.attrs
	q.mu.Unlock()
	if a != nil {
		return a, nil
	}
	_, b, err := q.do(ctx, http.MethodGet, false, url.Values{"_attrs_": {"true"}}, nil, false)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &a); err != nil || a[AttrUserHeader] == "" {
		e := errcodes.Errorf(errcodes.Internal, "paieas queue: the attributes are not a JSON object naming %s", AttrUserHeader)
		e.Provider = cloudreq.ProviderAlibaba
		return nil, e
	}
	q.mu.Lock()
	q.attrs = a
	q.mu.Unlock()
	return a, nil
}

// Put enqueues data (the body the service's processor reads: a legacy
// LLM body, an OpenAI chat body) and returns its index and request id.
func (q *QueueClient) Put(ctx context.Context, data []byte, o PutOptions) (Enqueued, error) {
	query := url.Values{}
	for k, v := range o.Tags {
		if strings.HasPrefix(k, "_") || k == "" {
			return Enqueued{}, invalid("paieas queue: tag %q: keys starting with _ are reserved", k)
		}
		query.Set(k, v)
	}
	if o.Priority > 0 {
		query.Set("_priority_", strconv.Itoa(o.Priority))
	}
	resp, b, err := q.do(ctx, http.MethodPost, false, query, data, true)
	if err != nil {
		return Enqueued{}, err
	}
	idx, perr := strconv.ParseUint(strings.TrimSpace(string(b)), 0, 64)
	if perr != nil {
		e := errcodes.Errorf(errcodes.Internal, "paieas queue: the enqueue answer %q is not an index", httpadapter.ErrorText(b, "text/plain"))
		e.Provider = cloudreq.ProviderAlibaba
		return Enqueued{}, e
	}
	return Enqueued{Index: idx, RequestID: resp.Header.Get(HeaderQueueRequestID)}, nil
}

// GetOptions select output frames.
type GetOptions struct {
	// Index is the first index to return (0: the oldest).
	Index uint64
	// RequestID, when set, selects the result of that request.
	RequestID string
	// Length is how many frames to return (default 1).
	Length int
	// Timeout makes the call wait up to that long for Length frames.
	Timeout time.Duration
	// AutoDelete deletes the frames returned.
	AutoDelete bool
	// Tags select frames carrying them.
	Tags map[string]string
}

// Get returns frames of the output queue.
func (q *QueueClient) Get(ctx context.Context, o GetOptions) ([]Frame, error) {
	if o.Length <= 0 {
		o.Length = 1
	}
	query := url.Values{"_index_": {strconv.FormatUint(o.Index, 10)}, "_length_": {strconv.Itoa(o.Length)},
		"_timeout_": {o.Timeout.String()}, "_raw_": {"false"}, "_auto_delete_": {strconv.FormatBool(o.AutoDelete)}}
	for k, v := range o.Tags {
		if strings.HasPrefix(k, "_") {
			return nil, invalid("paieas queue: tag %q: keys starting with _ are reserved", k)
		}
		query.Set(k, v)
	}
	if o.RequestID != "" {
		query.Set(TagRequestID, o.RequestID)
	}
	_, b, err := q.do(ctx, http.MethodGet, true, query, nil, true)
	if err != nil {
		return nil, err
	}
	var list []frameJSON
	if err := json.Unmarshal(b, &list); err != nil {
		e := errcodes.Wrap(err, errcodes.Internal, "paieas queue: the output frames are not a JSON list")
		e.Provider = cloudreq.ProviderAlibaba
		return nil, e
	}
	out := make([]Frame, 0, len(list))
	for _, f := range list {
		fr, err := f.frame()
		if err != nil {
			e := errcodes.Wrap(err, errcodes.Internal, "paieas queue: a frame's data is not base64")
			e.Provider = cloudreq.ProviderAlibaba
			return nil, e
		}
		out = append(out, fr)
	}
	return out, nil
}

// Commit marks output frames as consumed (PUT ?_indexes_=…).
func (q *QueueClient) Commit(ctx context.Context, indexes ...uint64) error {
	_, _, err := q.do(ctx, http.MethodPut, true, url.Values{"_indexes_": {joinIndexes(indexes)}}, nil, true)
	return err
}

// Delete removes output frames (DELETE ?_indexes_=…).
func (q *QueueClient) Delete(ctx context.Context, indexes ...uint64) error {
	_, _, err := q.do(ctx, http.MethodDelete, true, url.Values{"_indexes_": {joinIndexes(indexes)}}, nil, true)
	return err
}

func joinIndexes(ix []uint64) string {
	s := make([]string, len(ix))
	for i, x := range ix {
		s[i] = strconv.FormatUint(x, 10)
	}
	return strings.Join(s, ",")
}

// WaitOptions bound Wait.
type WaitOptions struct {
	// Poll is how long each Get waits on the server (default 5 s).
	Poll time.Duration
	// Keep leaves the result in the queue (default: deleted once read).
	Keep bool
}

// Wait waits for the result of a request (by its RequestID) until ctx
// ends, with Get calls that wait on the server, and deletes it once read
// unless o.Keep. A result whose TagStatus is not 2xx is its error, mapped
// as the service's own answer would be. A wait that ends first is
// ERR_TIMEOUT (or ERR_CANCELED), not retryable: the request may still run.
func (q *QueueClient) Wait(ctx context.Context, e Enqueued, o WaitOptions) (Frame, error) {
	if o.Poll <= 0 {
		o.Poll = 5 * time.Second
	}
	for {
		fs, err := q.Get(ctx, GetOptions{Index: e.Index, RequestID: e.RequestID, Timeout: o.Poll, AutoDelete: !o.Keep})
		if err != nil {
			if ctx.Err() != nil {
				return Frame{}, waitEnded(ctx.Err())
			}
			return Frame{}, err
		}
		for _, f := range fs {
			if e.RequestID == "" && f.Index != e.Index || e.RequestID != "" && f.Tags[TagRequestID] != e.RequestID {
				continue
			}
			return f, f.err()
		}
		if err := ctx.Err(); err != nil {
			return Frame{}, waitEnded(err)
		}
	}
}

// waitEnded is Wait's error when its context ends first: the request is
// queued or running still, so a retry (which would enqueue it again) is
// not offered.
func waitEnded(err error) error {
	e := queueError(nil, nil, err).(*errcodes.Error)
	e.Message = "paieas queue: no result before the wait ended (the request may still run): " + e.Message
	e.Retryable = false
	return e
}

// err is the error a result frame reports: its message, or a status tag
// that is not 2xx (its data then being the service's error answer).
func (f Frame) err() error {
	st, _ := strconv.Atoi(f.Tags[TagStatus])
	if f.Message == "" && (st == 0 || (st >= 200 && st < 300)) {
		return nil
	}
	if st == 0 {
		st = http.StatusInternalServerError
	}
	resp := &http.Response{StatusCode: st, Header: http.Header{"Content-Type": {"application/json"}}}
	body := f.Data
	if len(body) == 0 {
		body = []byte(f.Message)
	}
	e := errorTable(resp, body, f.Tags[TagRequestID])
	e.Message = "paieas queue: the inference failed: " + e.Message
	return e
}

// WatchOptions configure Watch.
type WatchOptions struct {
	// Index is the first index to deliver.
	Index uint64
	// Window is how many frames may be in flight unacknowledged (default 1).
	Window uint64
	// IndexOnly delivers frames without their data.
	IndexOnly bool
	// AutoCommit commits each frame as it is delivered.
	AutoCommit bool
}

// Watcher follows the output queue.
type Watcher struct {
	conn *websocket.Conn
}

// Watch opens a websocket on the output queue (GET …/sink?_watch_=true
// upgraded) that delivers its frames from o.Index on, as they are written.
func (q *QueueClient) Watch(ctx context.Context, o WatchOptions) (*Watcher, error) {
	if o.Window == 0 {
		o.Window = 1
	}
	a, err := q.Attributes(ctx)
	if err != nil {
		return nil, err
	}
	h := http.Header{"Accept": {"application/json"}}
	if q.opts.Token != "" {
		h.Set("Authorization", q.opts.Token)
	}
	h.Set(a[AttrUserHeader], q.opts.UserID)
	if g := a[AttrGroupHeader]; g != "" {
		h.Set(g, q.opts.GroupID)
	}
	query := url.Values{"_index_": {strconv.FormatUint(o.Index, 10)}, "_window_": {strconv.FormatUint(o.Window, 10)},
		"_index_only_": {strconv.FormatBool(o.IndexOnly)}, "_auto_commit_": {strconv.FormatBool(o.AutoCommit)}, "_watch_": {"true"}}
	conn, resp, err := websocket.Dial(ctx, q.base+"/sink?"+query.Encode(), &websocket.DialOptions{HTTPClient: q.client, HTTPHeader: h})
	if err != nil {
		if resp != nil && resp.StatusCode >= 300 {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			return nil, queueError(resp, b, nil)
		}
		return nil, queueError(nil, nil, err)
	}
	conn.SetReadLimit(maxQueueBody)
	return &Watcher{conn: conn}, nil
}

// Next returns the next frame, waiting for it until ctx ends.
func (w *Watcher) Next(ctx context.Context) (Frame, error) {
	_, b, err := w.conn.Read(ctx)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return Frame{}, queueError(nil, nil, err)
		}
		e := errcodes.Wrap(err, errcodes.StreamInterrupted, "paieas queue: the watch ended: "+err.Error())
		e.Provider = cloudreq.ProviderAlibaba
		return Frame{}, e
	}
	var f frameJSON
	if err := json.Unmarshal(b, &f); err != nil {
		e := errcodes.Wrap(err, errcodes.Internal, "paieas queue: a watched frame is not JSON")
		e.Provider = cloudreq.ProviderAlibaba
		return Frame{}, e
	}
	return f.frame()
}

// Close ends the watch.
func (w *Watcher) Close() error {
	return w.conn.Close(websocket.StatusNormalClosure, "")
}
