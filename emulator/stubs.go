package emulator

import (
	"net/http"

	"google.golang.org/grpc"
)

func (s *Server) serveVertexREST(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, "not implemented", http.StatusNotImplemented)
}
func (s *Server) servePAIEAS(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, "not implemented", http.StatusNotImplemented)
}
func (s *Server) newGRPCServer() *grpc.Server { return grpc.NewServer() }

type metrics struct{}

func newMetrics(*Server) *metrics                               { return &metrics{} }
func (m *metrics) serve(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(200) }
func (s *Server) observe(*Record)                               {}
