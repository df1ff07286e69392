package vertex

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

// fakeCall is one RPC as the fake server saw it.
type fakeCall struct {
	Method string
	Name   string // endpoint or model
	MD     metadata.MD
	Req    proto.Message
}

// fakeServer is an in-test PredictionService. Each RPC pops the next
// error of errs (nil or an empty queue: success); streams send their
// chunks, then end with streamEnd, or wait on hold, or, when breakNow is
// set, break the connection once the test closes it (the test has the
// messages then: breaking sooner could lose them in flight).
type fakeServer struct {
	aiplatformpb.UnimplementedPredictionServiceServer

	mu        sync.Mutex
	calls     []fakeCall
	errs      []error
	header    metadata.MD
	trailer   metadata.MD
	genChunks []*aiplatformpb.GenerateContentResponse
	rawChunks [][]byte
	streamEnd error
	hold      bool
	breakNow  chan struct{}
	canceled  chan struct{} // closed when a held stream's context ends

	lis *trackingListener
}

// trackingListener remembers accepted connections so a test can break them.
type trackingListener struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
	}
	return c, err
}

func (l *trackingListener) breakAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		_ = c.Close()
	}
}

// startFake serves a fakeServer on a loopback port and returns it with
// its address.
func startFake(t testing.TB) (*fakeServer, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{canceled: make(chan struct{}), lis: &trackingListener{Listener: l}}
	srv := grpc.NewServer()
	aiplatformpb.RegisterPredictionServiceServer(srv, f)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(f.lis) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	return f, l.Addr().String()
}

// newFakeAdapter returns an adapter dialing addr in plain text.
func newFakeAdapter(t testing.TB, addr string) *Adapter {
	t.Helper()
	a, err := New(context.Background(), Options{Project: "p", Location: "us-central1", Endpoint: addr, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

// newFakeClient returns a cloudreq client over a fake-server adapter, with
// fast retries.
func newFakeClient(t testing.TB, addr string, fns ...func(*cloudreq.Options)) (*cloudreq.Client, *Adapter) {
	t.Helper()
	a := newFakeAdapter(t, addr)
	o := cloudreq.Options{Adapters: []cloudreq.Adapter{a}}
	o.Retry.BaseDelay = time.Millisecond
	o.Retry.MaxDelay = 5 * time.Millisecond
	for _, f := range fns {
		f(&o)
	}
	c, err := cloudreq.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c, a
}

func (f *fakeServer) record(ctx context.Context, method, name string, req proto.Message) error {
	md, _ := metadata.FromIncomingContext(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fakeCall{Method: method, Name: name, MD: md, Req: proto.Clone(req)})
	if f.header != nil {
		if err := grpc.SetHeader(ctx, f.header); err != nil {
			return err
		}
	}
	if f.trailer != nil {
		if err := grpc.SetTrailer(ctx, f.trailer); err != nil {
			return err
		}
	}
	if len(f.errs) == 0 {
		return nil
	}
	err := f.errs[0]
	f.errs = f.errs[1:]
	return err
}

// set changes the fake's behaviour under its lock.
func (f *fakeServer) set(fn func(f *fakeServer)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// streamPlan is what a fake stream sends and how it ends.
type streamPlan struct {
	gen      []*aiplatformpb.GenerateContentResponse
	raw      [][]byte
	end      error
	hold     bool
	breakNow <-chan struct{} // nil: no break
}

// snapshot returns the fake's stream behaviour.
func (f *fakeServer) snapshot() streamPlan {
	f.mu.Lock()
	defer f.mu.Unlock()
	return streamPlan{f.genChunks, f.rawChunks, f.streamEnd, f.hold, f.breakNow}
}

func (f *fakeServer) Calls() []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeCall(nil), f.calls...)
}

func (f *fakeServer) Predict(ctx context.Context, r *aiplatformpb.PredictRequest) (*aiplatformpb.PredictResponse, error) {
	if err := f.record(ctx, "Predict", r.GetEndpoint(), r); err != nil {
		return nil, err
	}
	return &aiplatformpb.PredictResponse{
		Predictions:     append([]*structpb.Value{structpb.NewStringValue("ok")}, r.GetInstances()...),
		DeployedModelId: "dm-1",
		ModelVersionId:  "3",
		Model:           "projects/p/locations/us-central1/models/m",
	}, nil
}

func (f *fakeServer) RawPredict(ctx context.Context, r *aiplatformpb.RawPredictRequest) (*httpbody.HttpBody, error) {
	if err := f.record(ctx, "RawPredict", r.GetEndpoint(), r); err != nil {
		return nil, err
	}
	_ = grpc.SetHeader(ctx, metadata.Pairs("x-vertex-ai-deployed-model-id", "dm-raw", "x-vertex-ai-endpoint-id", "ep"))
	return &httpbody.HttpBody{ContentType: "text/plain", Data: append([]byte("echo:"), r.GetHttpBody().GetData()...)}, nil
}

func (f *fakeServer) GenerateContent(ctx context.Context, r *aiplatformpb.GenerateContentRequest) (*aiplatformpb.GenerateContentResponse, error) {
	if err := f.record(ctx, "GenerateContent", r.GetModel(), r); err != nil {
		return nil, err
	}
	return genMsg("hello world", aiplatformpb.Candidate_STOP, 7, 2), nil
}

func (f *fakeServer) StreamGenerateContent(r *aiplatformpb.GenerateContentRequest, s aiplatformpb.PredictionService_StreamGenerateContentServer) error {
	if err := f.record(s.Context(), "StreamGenerateContent", r.GetModel(), r); err != nil {
		return err
	}
	p := f.snapshot()
	for _, m := range p.gen {
		if err := s.Send(m); err != nil {
			return err
		}
	}
	return f.endStream(s.Context(), p)
}

func (f *fakeServer) StreamRawPredict(r *aiplatformpb.StreamRawPredictRequest, s aiplatformpb.PredictionService_StreamRawPredictServer) error {
	if err := f.record(s.Context(), "StreamRawPredict", r.GetEndpoint(), r); err != nil {
		return err
	}
	p := f.snapshot()
	for _, d := range p.raw {
		if err := s.Send(&httpbody.HttpBody{ContentType: "text/event-stream", Data: d}); err != nil {
			return err
		}
	}
	return f.endStream(s.Context(), p)
}

func (f *fakeServer) endStream(ctx context.Context, p streamPlan) error {
	switch {
	case p.breakNow != nil:
		select {
		case <-p.breakNow:
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
		}
		f.lis.breakAll()
		<-ctx.Done()
		return ctx.Err()
	case p.hold:
		select {
		case <-ctx.Done():
			close(f.canceled)
			return status.FromContextError(ctx.Err()).Err()
		case <-time.After(10 * time.Second):
			return status.Error(codes.DeadlineExceeded, "fake: held stream was never canceled")
		}
	}
	return p.end
}

// genMsg builds one GenerateContentResponse; finish and usage are left
// out when zero.
func genMsg(text string, finish aiplatformpb.Candidate_FinishReason, in, out int32) *aiplatformpb.GenerateContentResponse {
	m := &aiplatformpb.GenerateContentResponse{
		Candidates: []*aiplatformpb.Candidate{{
			Content:      &aiplatformpb.Content{Role: "model", Parts: []*aiplatformpb.Part{{Data: &aiplatformpb.Part_Text{Text: text}}}},
			FinishReason: finish,
		}},
		ModelVersion: "v-test",
		ResponseId:   "resp-1",
	}
	if in > 0 || out > 0 {
		m.UsageMetadata = &aiplatformpb.GenerateContentResponse_UsageMetadata{PromptTokenCount: in, CandidatesTokenCount: out}
	}
	return m
}
