package cloudreqtest_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/cloudreq/cloudreqtest"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// request is what the service under test would send.
func request(model, body string) *cloudreq.CloudRequest {
	return &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderOpenAI, Service: cloudreq.ServiceOpenAICompatible,
		Action: cloudreq.ActionInvoke, Target: cloudreq.Target{Model: model},
		Payload: cloudreq.Payload{Body: []byte(body)},
	}
}

// A retry test: the first attempt is throttled, the second succeeds, and
// the fake recorded both.
func ExampleAdapter() {
	throttled := errcodes.New(errcodes.Throttled, "slow down")
	throttled.RetryAfter = time.Millisecond
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{
		{Err: throttled},
		{Response: &cloudreq.CloudResponse{StatusCode: 200, Data: []byte("hello")}},
	}}
	client, err := cloudreq.New(cloudreq.Options{
		Adapters:    []cloudreq.Adapter{fake},
		CallOptions: cloudreq.CallOptions{Retry: cloudreq.RetryOptions{BaseDelay: time.Millisecond}},
	})
	if err != nil {
		log.Fatal(err)
	}
	resp, err := client.Invoke(context.Background(), request("m", "hi"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(resp.Data), resp.Errors[0].Code)
	for _, c := range fake.Calls() {
		fmt.Println(c.Attempt, string(c.Body))
	}
	// Output:
	// hello ERR_THROTTLED
	// 1 hi
	// 2 hi
}

// A stream that breaks after two chunks.
func ExampleOutcome_stream() {
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{
		Chunks:    []cloudreq.StreamChunk{{Text: "Hel"}, {Text: "lo", Tokens: 2}},
		StreamErr: errcodes.New(errcodes.StreamInterrupted, "connection reset"),
	}}}
	client, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{fake}})
	if err != nil {
		log.Fatal(err)
	}
	s, err := client.Stream(context.Background(), request("m", "hi"))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	for s.Next() {
		fmt.Print(s.Chunk().Text, " ")
	}
	fmt.Println(errcodes.Of(s.Err()), s.Response().Usage.OutputTokens)
	// Output: Hel lo ERR_STREAM_INTERRUPTED 3
}

// Respond scripts each call apart: here by model, whatever the order in
// which concurrent calls arrive.
func ExampleAdapter_respond() {
	fake := &cloudreqtest.Adapter{Respond: func(r cloudreqtest.Recorded) cloudreqtest.Outcome {
		if r.Request.Target.Model == "missing" {
			return cloudreqtest.Outcome{Err: errcodes.New(errcodes.NotFound, "no such model")}
		}
		return cloudreqtest.Outcome{Response: &cloudreq.CloudResponse{StatusCode: 200, Data: r.Body}}
	}}
	client, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{fake}})
	if err != nil {
		log.Fatal(err)
	}
	resp, err := client.Invoke(context.Background(), request("m", "echo"))
	fmt.Println(string(resp.Data), err)
	_, err = client.Invoke(context.Background(), request("missing", "echo"))
	fmt.Println(errcodes.Of(err))
	// Output:
	// echo <nil>
	// ERR_NOT_FOUND
}
