// Package cloudreqtest provides a scriptable fake adapter, for testing code
// that uses a cloudreq.Client without a network or a cloud account.
//
//	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{
//		{Err: errcodes.New(errcodes.Throttled, "slow down")},
//		{Response: &cloudreq.CloudResponse{StatusCode: 200, Data: []byte("ok")}},
//	}}
//	client, _ := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{fake}})
package cloudreqtest
