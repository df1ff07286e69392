package grpctrace_test

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cloudinfer/cloudinfer/latency/grpctrace"
)

// A gRPC adapter installs the stats handler on its connection and hands
// each attempt's trace (cloudreq.Call.Trace) to the RPC's context.
func ExampleNewStatsHandler() {
	conn, err := grpc.NewClient("127.0.0.1:8443",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStatsHandler(grpctrace.NewStatsHandler()))
	if err != nil {
		return
	}
	defer conn.Close()
	// In the adapter's Invoke(ctx, call):
	//	ctx = latency.ContextWithTrace(ctx, call.Trace)
	//	resp, err := client.Predict(ctx, req)
}
