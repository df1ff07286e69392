package emulator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// Options configure a Server.
type Options struct {
	// TimeScale multiplies every injected duration (default 1; e.g. 0.01 in tests).
	TimeScale float64
	// Seed makes every draw deterministic.
	Seed uint64
	// Endpoints are the served endpoints; nil means DefaultEndpoints(). An
	// endpoint whose Profile has no name and no TTFT, TPOT or output-length
	// figures gets the built-in profile of its name, else llama-3-8b, with
	// the fields its Profile does set (non-zero) in place of the built-in's;
	// setting Slots without MaxQueue gives a queue of 4 × Slots.
	Endpoints []Endpoint
	// MaxRecords bounds the kept ground-truth records (default 100000; the
	// oldest go first). The kept records also hold at most 2^24 inter-token
	// gaps in all (128 MiB), the newest record always kept.
	MaxRecords int
	// Logger receives one line per request at debug level and server errors; nil discards.
	Logger *slog.Logger
	// SpinWaits bounds how many waits may spin on the clock at once for
	// their last 2 ms, so that tokens leave on time to within microseconds
	// rather than up to about 1 ms late; no wait spins while more than two
	// per slot are pending (see the package documentation). Zero means one
	// per four CPUs, at least one; a negative value turns spinning off,
	// leaving every wait to the runtime's timers.
	SpinWaits int
	// ReadBodyTimeout bounds how long a request's body may take to arrive,
	// counted from when its headers were read (default 30 s; negative: no
	// bound). A request whose body is not all in by then is answered 408
	// and its connection closed. Real time: TimeScale does not change it.
	ReadBodyTimeout time.Duration
	// WriteStallTimeout bounds each write of a response: a client that
	// takes none of the bytes written for this long (for at least ¾ of it:
	// the write deadline moves in quarter steps) has its response ended
	// and its connection closed (default 1 minute; negative: no bound). It
	// bounds each write, not the response: a stream lasts as long as its
	// tokens. On the gRPC listener it bounds each message of a streamed
	// answer: a message the client's flow-control window keeps out for
	// this long ends the call with DEADLINE_EXCEEDED, and the connection
	// stays open for its other calls. Real time: TimeScale does not change
	// it.
	WriteStallTimeout time.Duration
	// AMLTokenTTL is how long an AML token issued by the ARM token route
	// is accepted (default DefaultAMLTokenTTL).
	AMLTokenTTL time.Duration
	// OTLPWriter, when set, receives vLLM's per-request OpenTelemetry span
	// ("llm_request", its gen_ai.* attributes from the request's record)
	// of every request answered in full, as OTLP JSON: one TracesData (the
	// JSON of an ExportTraceServiceRequest) a line, as an OpenTelemetry
	// Collector's file exporter writes what vLLM's --otlp-traces-endpoint
	// sends it. Writes are serialized; a failed one is logged once.
	OTLPWriter io.Writer
}

// Server is the emulator: one HTTP listener for every provider's REST
// protocol plus one gRPC listener for Vertex AI's PredictionService.
type Server struct {
	opts      Options
	scale     float64
	instance  uint32
	endpoints map[string]*endpoint
	order     []string
	log       *slog.Logger
	metrics   *metrics

	closed    chan struct{}
	closeOnce sync.Once

	s3     objectStore // the S3 of asynchronous inference (s3.go)
	queues easQueues   // PAI-EAS queue services (paieas_queue.go)
	async  asyncState  // asynchronous inferences in flight (sagemaker_async.go)
	aml    amlTokens   // AML tokens issued (azureml_token.go)

	mu        sync.Mutex
	httpSrv   *http.Server
	httpLn    net.Listener
	grpcSrv   *grpc.Server
	grpcLn    net.Listener
	serveDone sync.WaitGroup
	started   bool
	grpcLim   grpcLimits // bounds on gRPC clients; tests shorten them

	ids      atomic.Uint64
	spinners atomic.Int32 // waits spinning now; see sleepUntil
	waiting  atomic.Int32 // waits pending now
	spun     atomic.Int64 // waits that spun, ever
	maxSpin  int32        // how many may spin at once

	recMu   sync.Mutex
	records []Record          // kept records, oldest first, from recHead on
	recHead int               // records before it were dropped
	recBase uint64            // number of the record at records[0]
	recByID map[string]uint64 // number of each kept record by Record.ID
	recGaps int               // gaps held by the kept records
	maxGaps int               // bound on recGaps (maxKeptGaps)
}

// maxKeptGaps bounds the inter-token gaps held by all kept records together
// (8 bytes each: 128 MiB), beside Options.MaxRecords: long outputs make
// large records.
const maxKeptGaps = 1 << 24

var instances atomic.Uint32

// New validates the options and returns a Server ready to Start.
func New(opts Options) (*Server, error) {
	if opts.TimeScale == 0 {
		opts.TimeScale = 1
	}
	if math.IsNaN(opts.TimeScale) || math.IsInf(opts.TimeScale, 0) || opts.TimeScale < 0 {
		return nil, errcodes.Errorf(errcodes.InvalidParam, "emulator: time scale must be a finite number > 0, got %v", opts.TimeScale)
	}
	if opts.MaxRecords <= 0 {
		opts.MaxRecords = 100000
	}
	if opts.ReadBodyTimeout == 0 {
		opts.ReadBodyTimeout = defaultReadBodyTimeout
	}
	if opts.WriteStallTimeout == 0 {
		opts.WriteStallTimeout = defaultWriteStallTimeout
	}
	if opts.Endpoints == nil {
		opts.Endpoints = DefaultEndpoints()
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		opts:      opts,
		scale:     opts.TimeScale,
		instance:  instances.Add(1),
		endpoints: make(map[string]*endpoint),
		log:       log,
		closed:    make(chan struct{}),
		maxSpin:   spinSlots(opts.SpinWaits),
		maxGaps:   maxKeptGaps,
		grpcLim:   defaultGRPCLimits,
	}
	for _, e := range opts.Endpoints {
		if e.Profile.Name == "" && !e.Profile.hasFigures() {
			// No profile named or drawn: the endpoint's default profile
			// with the fields given in place of its own.
			base, ok := BuiltinProfile(e.Name)
			if !ok {
				base, _ = BuiltinProfile(fallbackProfile)
			}
			e.Profile = overlay(base, e.Profile)
		}
		// The server keeps its own copies: the caller may reuse its Options.
		e = e.clone()
		if err := e.Validate(); err != nil {
			return nil, errcodes.Wrap(err, errcodes.InvalidParam, "emulator: "+err.Error())
		}
		if _, dup := s.endpoints[e.Name]; dup {
			return nil, errcodes.Errorf(errcodes.InvalidParam, "emulator: endpoint %q defined twice", e.Name)
		}
		for i, p := range e.Providers {
			e.Providers[i], _ = ParseProvider(string(p))
		}
		if e.ColdMode == "" {
			e.ColdMode = ColdHold
		}
		s.endpoints[e.Name] = newEndpoint(e, opts.TimeScale, opts.Seed)
		s.order = append(s.order, e.Name)
	}
	s.metrics = newMetrics(s)
	return s, nil
}

// Start listens on httpAddr (every REST protocol) and, unless grpcAddr is
// empty, on grpcAddr (Vertex gRPC), and serves in the background until
// Close. Use "127.0.0.1:0" for free ports.
func (s *Server) Start(httpAddr, grpcAddr string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errcodes.New(errcodes.InvalidParam, "emulator: already started")
	}
	select {
	case <-s.closed:
		return errcodes.New(errcodes.InvalidParam, "emulator: closed")
	default:
	}
	ln, err := net.Listen("tcp", httpAddr)
	if err != nil {
		return errcodes.Wrap(err, errcodes.InvalidParam, "emulator: listen "+httpAddr+": "+err.Error())
	}
	var gln net.Listener
	if grpcAddr != "" {
		gln, err = net.Listen("tcp", grpcAddr)
		if err != nil {
			_ = ln.Close()
			return errcodes.Wrap(err, errcodes.InvalidParam, "emulator: listen "+grpcAddr+": "+err.Error())
		}
	}
	s.started = true
	s.httpLn = ln
	// No WriteTimeout: it bounds a whole response, so it would end the
	// streams that outlast it; ServeHTTP bounds each write instead
	// (Options.WriteStallTimeout). No ReadTimeout: ServeHTTP bounds a
	// request's body from when its headers were read (Options.ReadBodyTimeout).
	s.httpSrv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	s.serveDone.Add(1)
	go func() {
		defer s.serveDone.Done()
		if err := s.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("emulator: http serve", "err", err)
		}
	}()
	if gln != nil {
		s.grpcLn = gln
		s.grpcSrv = s.newGRPCServer()
		s.serveDone.Add(1)
		go func() {
			defer s.serveDone.Done()
			if err := s.grpcSrv.Serve(gln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
				s.log.Error("emulator: grpc serve", "err", err)
			}
		}()
	}
	return nil
}

// URL returns the HTTP base URL, e.g. "http://127.0.0.1:8080" ("" before Start).
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.httpLn == nil {
		return ""
	}
	return "http://" + s.httpLn.Addr().String()
}

// GRPCAddr returns the gRPC listener's address ("" when not serving gRPC).
func (s *Server) GRPCAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.grpcLn == nil {
		return ""
	}
	return s.grpcLn.Addr().String()
}

// Close stops both listeners, ends every request in flight (sleeping
// requests stop at once) and waits for the serving goroutines.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	s.mu.Lock()
	hs, gs := s.httpSrv, s.grpcSrv
	s.mu.Unlock()
	var err error
	if hs != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = hs.Shutdown(ctx)
		cancel()
		if err != nil {
			err = hs.Close()
		}
	}
	if gs != nil {
		stopped := make(chan struct{})
		go func() { gs.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(5 * time.Second):
			gs.Stop()
			<-stopped
		}
	}
	s.serveDone.Wait()
	s.async.close()
	return err
}

// Endpoints returns the served endpoints' configuration, in definition order.
func (s *Server) Endpoints() []Endpoint {
	out := make([]Endpoint, 0, len(s.order))
	for _, n := range s.order {
		out = append(out, s.endpoints[n].Endpoint.clone())
	}
	return out
}

// TimeScale returns the time scale in force.
func (s *Server) TimeScale() float64 { return s.scale }

// Records returns a copy of the ground-truth records of finished requests,
// oldest first.
func (s *Server) Records() []Record {
	s.recMu.Lock()
	defer s.recMu.Unlock()
	return append(make([]Record, 0, len(s.records)-s.recHead), s.records[s.recHead:]...)
}

// Record returns the kept ground-truth record of the finished request whose
// id is id (the X-Emulator-Request-Id header), and whether there is one. A
// request's record is kept once its handler returns, which may be just
// after its client read the response's end.
func (s *Server) Record(id string) (Record, bool) {
	s.recMu.Lock()
	defer s.recMu.Unlock()
	if n, ok := s.recByID[id]; ok {
		return s.records[n-s.recBase], true
	}
	return Record{}, false
}

// ResetRecords drops the kept records.
func (s *Server) ResetRecords() {
	s.recMu.Lock()
	defer s.recMu.Unlock()
	s.records, s.recHead, s.recBase, s.recByID, s.recGaps = nil, 0, 0, nil, 0
}

// store keeps r, dropping the oldest records beyond MaxRecords or the gap bound.
func (s *Server) store(r Record) {
	s.recMu.Lock()
	defer s.recMu.Unlock()
	if s.recByID == nil {
		s.recByID = make(map[string]uint64)
	}
	s.recByID[r.ID] = s.recBase + uint64(len(s.records))
	s.records = append(s.records, r)
	s.recGaps += len(r.GapsMs)
	for kept := len(s.records) - s.recHead; kept > s.opts.MaxRecords || (kept > 1 && s.recGaps > s.maxGaps); kept-- {
		old := &s.records[s.recHead]
		if s.recByID[old.ID] == s.recBase+uint64(s.recHead) {
			delete(s.recByID, old.ID)
		}
		s.recGaps -= len(old.GapsMs)
		*old = Record{}
		s.recHead++
	}
	// Move the kept records to the front once the dropped ones are as many.
	if s.recHead > 0 && s.recHead >= len(s.records)-s.recHead {
		n := copy(s.records, s.records[s.recHead:])
		clear(s.records[n:])
		s.records = s.records[:n]
		s.recBase += uint64(s.recHead)
		s.recHead = 0
	}
}

// uuid returns a fresh UUID-shaped id for provider request-id headers.
func (s *Server) uuid() string {
	n := s.ids.Add(1)
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", s.instance, n)
}

// spinWindow is how much of a wait is spun rather than slept. The runtime's
// timers wake through the network poller, whose sleeps are whole
// milliseconds, so a timer alone fires up to about 1 ms late: too coarse for
// TTFTs that clients compare with X-Emulator-Ttft-Ms to well under a
// millisecond. A wait sleeps until spinWindow before its deadline and spins
// on the clock for the rest, yielding to other goroutines on each turn.
const spinWindow = 2 * time.Millisecond

// spinLoad is how many pending waits per spin slot still let a wait spin.
// Spinning is for light loads, where the timing of each request is what is
// measured; under more load every wait sleeps on the timer alone, so that
// the emulator does not burn a core beside the load generator.
const spinLoad = 2

// spinSlots is how many waits may spin at once for Options.SpinWaits n: a
// bound so that a busy emulator keeps its cores for serving. A wait that
// finds every slot taken sleeps to its deadline on the timer alone.
func spinSlots(n int) int32 {
	switch {
	case n < 0:
		return 0
	case n == 0:
		return int32(max(1, runtime.GOMAXPROCS(0)/4))
	}
	return int32(min(n, math.MaxInt32))
}

// sleepUntil waits until t, the context's end or Close, whichever is first.
// Deadlines are absolute, so timer overshoot does not accumulate over a stream.
func (s *Server) sleepUntil(ctx context.Context, t time.Time) error {
	if s.maxSpin == 0 {
		return s.sleep(ctx, time.Until(t))
	}
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	if err := s.sleep(ctx, time.Until(t)-spinWindow); err != nil {
		return err
	}
	if !time.Now().Before(t) {
		return ctx.Err()
	}
	if s.waiting.Load() > spinLoad*s.maxSpin {
		return s.sleep(ctx, time.Until(t))
	}
	if s.spinners.Add(1) > s.maxSpin {
		s.spinners.Add(-1)
		return s.sleep(ctx, time.Until(t))
	}
	defer s.spinners.Add(-1)
	s.spun.Add(1)
	for time.Now().Before(t) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.closed:
			return errClosed
		default:
			runtime.Gosched()
		}
	}
	return nil
}

// sleep waits d on a timer, or until the context's end or Close.
func (s *Server) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.closed:
		return errClosed
	}
}

// arrivalKey keys a request's arrival time in its context.
type arrivalKey struct{}

// arrivalOf returns when r arrived (now, for a request ServeHTTP did not see).
func arrivalOf(r *http.Request) time.Time {
	if t, ok := r.Context().Value(arrivalKey{}).(time.Time); ok {
		return t
	}
	return time.Now()
}

// lookup returns the endpoint named name if provider p serves it.
func (s *Server) lookup(name string, p Provider) *endpoint {
	ep := s.endpoints[name]
	if ep == nil || !ep.serves(p) {
		return nil
	}
	return ep
}

// ServeHTTP routes a request to its provider. Routes:
//
//	POST /endpoints/{name}/invocations                       SageMaker InvokeEndpoint
//	POST /endpoints/{name}/invocations-response-stream       SageMaker InvokeEndpointWithResponseStream
//	POST /endpoints/{name}[/inference-components/{ic}]/openai/v1/chat/completions  SageMaker OpenAI-compatible
//	POST /azureml/{endpoint}/score                           Azure ML online endpoint
//	POST /azureml/{endpoint}/chat/completions                Azure serverless chat completions
//	GET  /azureml/{endpoint}/info                            Azure model inference API model info
//	POST /score, /chat/completions; GET /info  (Host: {endpoint}.{region}.inference.ml.azure.com)
//	POST /v1/projects/{p}/locations/{l}/endpoints/{e}:{method}            Vertex AI REST
//	POST /v1/projects/{p}/locations/{l}/publishers/{pub}/models/{m}:{method}
//	POST /api/predict/{service}[/sub/path]                   PAI-EAS
//	POST /v1/chat/completions, /v1/completions; GET /v1/models   OpenAI-compatible
//	GET  /metrics                                            vLLM-style Prometheus metrics
//	GET  /emulator/requests, DELETE /emulator/requests       ground-truth records
//	GET  /emulator/endpoints                                 served endpoints and profiles
//
// A request's body must arrive within Options.ReadBodyTimeout of its
// headers, and each write of its answer must be taken by the client within
// Options.WriteStallTimeout (see the package documentation).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// A request arrives when its headers have been read: stamp it before
	// the body is read and parsed, so that the injected TTFT starts there.
	arrival := time.Now()
	r = r.WithContext(context.WithValue(r.Context(), arrivalKey{}, arrival))
	rc := http.NewResponseController(w)
	if d := s.opts.ReadBodyTimeout; d > 0 && r.Body != nil && r.Body != http.NoBody {
		// readBody lifts the deadline once the body is in; a body left
		// unread keeps it, which bounds net/http's read of the rest after
		// the answer.
		_ = rc.SetReadDeadline(arrival.Add(d))
	}
	if d := s.opts.WriteStallTimeout; d > 0 {
		sw := &stallWriter{ResponseWriter: w, rc: rc, timeout: d}
		sw.arm()
		w = sw
	}
	p := r.URL.Path
	switch {
	case isSageMakerOpenAIPath(p):
		s.serveSageMakerOpenAI(w, r)
	case strings.HasPrefix(p, "/endpoints/"):
		s.serveSageMaker(w, r)
	case strings.HasPrefix(p, s3Prefix):
		s.serveS3(w, r)
	case isAMLTokenPath(p):
		s.serveAMLToken(w, r)
	case strings.HasPrefix(p, "/azureml/"):
		s.serveAzureML(w, r)
	case p == "/score", p == "/chat/completions", p == "/info":
		// Azure ML's own URL shape, https://{endpoint}.{region}.inference.ml.azure.com/score.
		s.serveAzureMLHost(w, r)
	case isVertexOpenAPIPath(p):
		s.serveVertexOpenAPI(w, r)
	case strings.HasPrefix(p, "/v1/projects/"), strings.HasPrefix(p, "/v1beta1/projects/"):
		s.serveVertexREST(w, r)
	case isEASQueueRequest(r):
		s.serveEASQueue(w, r)
	case strings.HasPrefix(p, "/api/predict/"):
		s.servePAIEAS(w, r)
	case p == "/v1/chat/completions", p == "/v1/completions", p == "/v1/models", strings.HasPrefix(p, "/v1/models/"):
		s.serveOpenAI(w, r, "", p)
	case p == "/metrics":
		s.metrics.serve(w, r)
	case p == "/emulator/requests":
		s.serveRecords(w, r)
	case p == "/emulator/endpoints":
		writeJSON(w, http.StatusOK, s.Endpoints())
	case p == "/health", p == "/healthz", p == "/ping":
		w.WriteHeader(http.StatusOK)
	default:
		http.Error(w, "404 page not found: see the route table in the emulator package documentation", http.StatusNotFound)
	}
}

func (s *Server) serveRecords(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		q := r.URL.Query()
		var recs []Record
		if q.Has("id") {
			recs = []Record{}
			if rec, ok := s.Record(q.Get("id")); ok {
				recs = append(recs, rec)
			}
		} else {
			recs = s.Records()
		}
		if ep := q.Get("endpoint"); ep != "" {
			recs = slices.DeleteFunc(recs, func(x Record) bool { return x.Endpoint != ep })
		}
		writeJSON(w, http.StatusOK, recs)
	case http.MethodDelete:
		s.ResetRecords()
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "GET, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// readBody reads r's body, at most limit bytes. tooLarge says the body is
// bigger (by its declared length, then none of it is read, or by what came):
// the caller answers with the provider's payload-too-large error, after
// which the connection is closed. A body that does not arrive within
// Options.ReadBodyTimeout is answered 408, one that cannot be read (a broken
// chunked encoding, a client gone) 400, both with the connection closed;
// err then says why, and the caller returns. Once the whole body is in, the
// read deadline ServeHTTP set is lifted: it bounds the body only.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, limit int64) (body []byte, tooLarge bool, err error) {
	rc := http.NewResponseController(w)
	if r.ContentLength > limit {
		// Answered before any read, so no 100 Continue goes out.
		w.Header().Set("Connection", "close")
		return nil, true, nil
	}
	// On the innermost writer, so that net/http learns the limit was hit
	// and closes the connection after the answer without reading on.
	b, err := io.ReadAll(http.MaxBytesReader(innermost(w), r.Body, limit))
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		w.Header().Set("Connection", "close")
		// Whatever else the client sends is not read: net/http would
		// otherwise read up to 256 KiB more of it after the answer.
		_ = rc.SetReadDeadline(time.Now())
		return nil, true, nil
	}
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			refuseBody(w, http.StatusRequestTimeout, fmt.Sprintf("request body not received within %v", s.opts.ReadBodyTimeout))
		} else {
			refuseBody(w, http.StatusBadRequest, "request body could not be read: "+err.Error())
		}
		return nil, false, err
	}
	_ = rc.SetReadDeadline(time.Time{})
	return b, false, nil
}

// refuseBody answers status with a plain-text message to a request whose
// body could not be read, and closes the connection as net/http closes one
// whose request it did not read to the end: the answer, a FIN, then what
// the client still sends read and dropped (lingerTimeout and
// lingerMaxBytes at most) before the close. Closing with unread bytes
// would send an RST, on which the client's TCP stack may drop the answer
// before it is read.
func refuseBody(w http.ResponseWriter, status int, msg string) {
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		w.Header().Set("Connection", "close")
		http.Error(w, msg, status)
		return
	}
	defer func() { _ = conn.Close() }()
	msg += "\n"
	h := w.Header().Clone()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set(headerContentLength, strconv.Itoa(len(msg)))
	h.Set("Connection", "close")
	_ = conn.SetDeadline(time.Now().Add(lingerTimeout))
	_, _ = fmt.Fprintf(brw, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	_ = h.Write(brw)
	_, _ = brw.WriteString("\r\n" + msg)
	if brw.Flush() != nil {
		return
	}
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(conn, lingerMaxBytes))
}

// innermost returns the ResponseWriter that w wraps, through every Unwrap.
func innermost(w http.ResponseWriter) http.ResponseWriter {
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}

// stallWriter keeps the connection's write deadline between ¾ of timeout
// and timeout ahead of each write and flush of a response, so that a client
// that takes no bytes for that long fails the write (the request then ends
// and its connection closes) while a stream may last as long as its
// tokens: http.Server.WriteTimeout would instead bound the whole response.
// The deadline is moved only once a quarter of timeout has passed since it
// was last set: setting it costs a timer update, and a stream writes and
// flushes every token.
type stallWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	armed   time.Time // when the deadline was last set; zero before
}

// arm moves the write deadline to timeout from now, unless it was set less
// than a quarter of timeout ago.
func (w *stallWriter) arm() {
	if !w.armed.IsZero() && time.Since(w.armed) < w.timeout/4 {
		return
	}
	w.armed = time.Now()
	_ = w.rc.SetWriteDeadline(w.armed.Add(w.timeout))
}

// Write writes b to the response.
func (w *stallWriter) Write(b []byte) (int, error) {
	w.arm()
	return w.ResponseWriter.Write(b)
}

// FlushError flushes the response, for http.ResponseController.
func (w *stallWriter) FlushError() error {
	w.arm()
	return w.rc.Flush()
}

// Flush flushes the response, for http.Flusher.
func (w *stallWriter) Flush() { _ = w.FlushError() }

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *stallWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, fmt.Sprintf("encode: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set(headerContentLength, fmt.Sprint(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// flush sends what was written so far.
func flush(w http.ResponseWriter) {
	_ = http.NewResponseController(w).Flush()
}

// Limits on HTTP clients (see the package documentation).
const (
	// readHeaderTimeout bounds the arrival of a request's headers.
	readHeaderTimeout = 30 * time.Second
	// idleTimeout is how long a kept-alive connection may wait for its next request.
	idleTimeout = 2 * time.Minute
	// maxHeaderBytes bounds a request's header block (net/http allows 4 KiB more).
	maxHeaderBytes = 64 << 10
	// lingerTimeout and lingerMaxBytes bound refuseBody's wait for the
	// client to read its answer (net/http waits 500 ms, reading 256 KiB).
	lingerTimeout  = 500 * time.Millisecond
	lingerMaxBytes = 256 << 10
	// defaultReadBodyTimeout is Options.ReadBodyTimeout's default.
	defaultReadBodyTimeout = 30 * time.Second
	// defaultWriteStallTimeout is Options.WriteStallTimeout's default.
	defaultWriteStallTimeout = time.Minute
)
