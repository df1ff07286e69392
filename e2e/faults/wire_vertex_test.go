package faults

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
	"google.golang.org/api/option"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/providers/vertex"
)

// vertexCodes are the gRPC statuses Vertex AI answers with, by their HTTP
// equivalent (google/rpc/code.proto).
var vertexCodes = map[int]codes.Code{
	400: codes.InvalidArgument, 401: codes.Unauthenticated, 403: codes.PermissionDenied,
	404: codes.NotFound, 429: codes.ResourceExhausted, 500: codes.Internal,
	503: codes.Unavailable, 504: codes.DeadlineExceeded,
}

func vertexBackend() backend {
	return backend{
		name: "vertex",
		grpc: true,
		applies: func(a answer) bool {
			if a.raw != nil || a.header != nil {
				return false
			}
			_, known := vertexCodes[a.status]
			return a.status == 0 || known || a.kind == kindNotReady
		},
		start: func(t testing.TB, env startEnv) cloudreq.Adapter {
			require.False(t, env.mem, "vertex: no in-memory network")
			return newVertexAt(t, startVertexFake(t, env.rec))
		},
		request: func(stream bool) *cloudreq.CloudRequest {
			if stream {
				return &cloudreq.CloudRequest{
					Provider: cloudreq.ProviderGCP, Service: cloudreq.ServiceVertex, Action: cloudreq.ActionGenerate,
					Target:   cloudreq.Target{Endpoint: "e1"},
					Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "hello"}}, MaxTokens: 8},
				}
			}
			return &cloudreq.CloudRequest{
				Provider: cloudreq.ProviderGCP, Service: cloudreq.ServiceVertex, Action: cloudreq.ActionInvoke,
				Target:  cloudreq.Target{Endpoint: "e1"},
				Payload: cloudreq.Payload{Body: []byte(`{"instances":[{"prompt":"hello"}]}`)},
			}
		},
	}
}

// newVertexAt returns a Vertex adapter dialing addr in plain text.
func newVertexAt(t testing.TB, addr string) *vertex.Adapter {
	t.Helper()
	ad, err := vertex.New(context.Background(), vertex.Options{
		Project: "p", Location: "us-central1", Endpoint: addr, Insecure: true,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ad.Close() })
	return ad
}

// vertexStatus is the gRPC status of an error answer.
func vertexStatus(a answer) error {
	c, ok := vertexCodes[a.status]
	if a.kind == kindNotReady {
		c, ok = codes.Unavailable, true
	}
	if !ok {
		c = codes.Unknown
	}
	st := status.New(c, fmt.Sprintf("injected %d", a.status))
	var details []protoadapt.MessageV1
	if a.kind == kindNotReady {
		details = append(details, &errdetails.ErrorInfo{Reason: "MODEL_NOT_READY", Domain: "aiplatform.googleapis.com"})
	}
	if a.retryInfo > 0 {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(a.retryInfo)})
	}
	if len(details) > 0 {
		if s, err := st.WithDetails(details...); err == nil {
			st = s
		}
	}
	return st.Err()
}

// vertexFake is a PredictionService that plays a recorder's answers.
type vertexFake struct {
	aiplatformpb.UnimplementedPredictionServiceServer
	rec *recorder
	lis *connTracker
}

// connTracker remembers accepted connections so that an answer can cut them.
type connTracker struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (l *connTracker) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
	}
	return c, err
}

func (l *connTracker) cutAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		_ = c.Close()
	}
	l.conns = nil
}

// startVertexFake serves a vertexFake on loopback and returns its address.
func startVertexFake(t testing.TB, rec *recorder) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &vertexFake{rec: rec, lis: &connTracker{Listener: l}}
	srv := grpc.NewServer()
	aiplatformpb.RegisterPredictionServiceServer(srv, f)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(f.lis) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	return l.Addr().String()
}

// begin records an attempt and plays the part of its answer that comes
// before any response: delay, hold, reset and errors. It returns the
// answer, or the error to end the RPC with.
func (f *vertexFake) begin(ctx context.Context, req proto.Message) (answer, error) {
	body, _ := proto.MarshalOptions{Deterministic: true}.Marshal(req)
	md, _ := metadata.FromIncomingContext(ctx)
	h := http.Header{}
	for k, vs := range md {
		h[http.CanonicalHeaderKey(k)] = vs
	}
	a := f.rec.next(seen{at: time.Now(), body: body, header: h})
	if !sleepCtx(ctx, a.delay) {
		return a, status.FromContextError(ctx.Err()).Err()
	}
	switch {
	case a.reset:
		f.lis.cutAll()
		<-ctx.Done()
		return a, status.FromContextError(ctx.Err()).Err()
	case a.hold:
		<-ctx.Done()
		return a, status.FromContextError(ctx.Err()).Err()
	case a.echoAuth:
		return a, status.Errorf(codes.Unauthenticated, "invalid credentials: %s", strings.Join(md.Get("authorization"), ", "))
	case a.status != 0 || a.kind != "":
		return a, vertexStatus(a)
	}
	return a, nil
}

func (f *vertexFake) Predict(ctx context.Context, r *aiplatformpb.PredictRequest) (*aiplatformpb.PredictResponse, error) {
	if _, err := f.begin(ctx, r); err != nil {
		return nil, err
	}
	return &aiplatformpb.PredictResponse{Predictions: []*structpb.Value{structpb.NewStringValue("ok")}, DeployedModelId: "dm-1"}, nil
}

func (f *vertexFake) RawPredict(ctx context.Context, r *aiplatformpb.RawPredictRequest) (*httpbody.HttpBody, error) {
	if _, err := f.begin(ctx, r); err != nil {
		return nil, err
	}
	return &httpbody.HttpBody{ContentType: "application/json", Data: []byte(`{"ok":true}`)}, nil
}

func (f *vertexFake) GenerateContent(ctx context.Context, r *aiplatformpb.GenerateContentRequest) (*aiplatformpb.GenerateContentResponse, error) {
	if _, err := f.begin(ctx, r); err != nil {
		return nil, err
	}
	return vertexMsg("ok", aiplatformpb.Candidate_STOP), nil
}

func (f *vertexFake) StreamGenerateContent(r *aiplatformpb.GenerateContentRequest, s aiplatformpb.PredictionService_StreamGenerateContentServer) error {
	ctx := s.Context()
	a, err := f.begin(ctx, r)
	if err != nil {
		return err
	}
	if !a.lazyHead {
		if err := s.SendHeader(metadata.MD{}); err != nil {
			return err
		}
	}
	for i := range a.chunks {
		if !sleepCtx(ctx, a.gap) {
			return status.FromContextError(ctx.Err()).Err()
		}
		if err := s.Send(vertexMsg(fmt.Sprintf("tok%d ", i), aiplatformpb.Candidate_FINISH_REASON_UNSPECIFIED)); err != nil {
			return err
		}
	}
	switch a.end {
	case endComplete:
		return s.Send(vertexMsg("", aiplatformpb.Candidate_STOP))
	case endReset:
		awaitCut(ctx, a.cutWhen)
		f.lis.cutAll()
		<-ctx.Done()
		return ctx.Err()
	case endStall:
		<-ctx.Done()
		return status.FromContextError(ctx.Err()).Err()
	case endError:
		return status.Error(codes.Internal, "the model stream broke")
	}
	return nil
}

// vertexMsg is one GenerateContentResponse carrying text.
func vertexMsg(text string, finish aiplatformpb.Candidate_FinishReason) *aiplatformpb.GenerateContentResponse {
	c := &aiplatformpb.Candidate{FinishReason: finish}
	if text != "" {
		c.Content = &aiplatformpb.Content{Role: "model", Parts: []*aiplatformpb.Part{{Data: &aiplatformpb.Part_Text{Text: text}}}}
	}
	return &aiplatformpb.GenerateContentResponse{Candidates: []*aiplatformpb.Candidate{c}}
}

// startVertexFakeTLS serves a vertexFake over TLS with httptest's
// certificate (valid for 127.0.0.1) and returns its address and a pool
// trusting it.
func startVertexFakeTLS(t testing.TB, rec *recorder, cfg ...func(*tls.Config)) (string, *x509.CertPool) {
	t.Helper()
	hs := httptest.NewUnstartedServer(nil)
	hs.StartTLS()
	cert, pool := hs.TLS.Certificates[0], x509.NewCertPool()
	pool.AddCert(hs.Certificate())
	hs.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &vertexFake{rec: rec, lis: &connTracker{Listener: l}}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}}
	for _, f := range cfg {
		f(tc)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(tc)))
	aiplatformpb.RegisterPredictionServiceServer(srv, f)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(f.lis) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	return l.Addr().String(), pool
}

// vertexToken is a sentinel OAuth2 access token.
const vertexToken = "sentinel-vertex-bearer-Kc2r7TqA"

// newVertexTLS returns a Vertex adapter that dials addr over TLS,
// trusting pool (nil: the system roots), and sends the sentinel token.
func newVertexTLS(t testing.TB, addr string, pool *x509.CertPool) *vertex.Adapter {
	t.Helper()
	tc := &tls.Config{RootCAs: pool}
	ad, err := vertex.New(context.Background(), vertex.Options{
		Project: "p", Location: "us-central1", Endpoint: addr,
		ClientOptions: []option.ClientOption{
			option.WithTokenSource(oauth2.StaticTokenSource(&oauth2.Token{AccessToken: vertexToken, TokenType: "Bearer"})),
			option.WithGRPCDialOption(grpc.WithTransportCredentials(credentials.NewTLS(tc))),
		},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ad.Close() })
	return ad
}
