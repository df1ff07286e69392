// Package cloudreqtest provides a scriptable fake adapter, for testing code
// that uses a cloudreq.Client without a network or a cloud account.
// Register an Adapter with the client, script what each attempt yields,
// then check what the fake received:
//
//	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{
//		{Err: errcodes.New(errcodes.Throttled, "slow down")},                      // attempt 1
//		{Response: &cloudreq.CloudResponse{StatusCode: 200, Data: []byte("ok")}}, // attempt 2 on
//	}}
//	client, _ := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{fake}})
//	resp, err := client.Invoke(ctx, req) // "ok", with the throttle in resp.Errors
//	calls := fake.Calls()                // each attempt's Request, Body and number
//
// An Outcome's error may carry any code, Retryable and RetryAfter. A stream
// yields Chunks, ChunkDelay apart, then ends, or fails with StreamErr. Delays
// end with the context; in a testing/synctest bubble they take no real time,
// so that the response's latency.Timeline gives exact TTFT and TPOT. Respond
// scripts each call apart (concurrent calls, answers that depend on the
// request). The fake serves openai/openai-compatible unless Provider and
// Service say otherwise.
package cloudreqtest
