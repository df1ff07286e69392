package latency

import "context"

type traceKey struct{}

// ContextWithTrace returns a context that carries an attempt's trace for a
// transport that fills it from its own events rather than from
// net/http/httptrace: the gRPC stats handler of package
// latency/grpctrace. A gRPC adapter calls it with cloudreq.Call.Trace
// before each RPC:
//
//	ctx = latency.ContextWithTrace(ctx, call.Trace)
//	resp, err := client.Predict(ctx, req)
func ContextWithTrace(ctx context.Context, tr *AttemptTrace) context.Context {
	if tr == nil {
		return ctx
	}
	return context.WithValue(ctx, traceKey{}, tr)
}

// TraceFromContext returns the trace ContextWithTrace (or
// AttemptTrace.Context) put in ctx, or nil.
func TraceFromContext(ctx context.Context) *AttemptTrace {
	tr, _ := ctx.Value(traceKey{}).(*AttemptTrace)
	return tr
}
