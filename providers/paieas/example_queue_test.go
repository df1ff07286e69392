package paieas_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/providers/paieas"
)

// ExampleNewQueueClient enqueues a request to an asynchronous service's
// queue and waits for its result in the output queue. Here the service is
// the emulator's; against EAS give the endpoint root, the service name and
// its token (and no AllowInsecureHTTP).
func ExampleNewQueueClient() {
	emu, err := emulator.New(emulator.Options{TimeScale: 0.001, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	if err := emu.Start("127.0.0.1:0", ""); err != nil {
		log.Fatal(err)
	}
	defer emu.Close()

	q, err := paieas.NewQueueClient(paieas.QueueOptions{Endpoint: emu.URL(), Service: "llama-3-8b", AllowInsecureHTTP: true})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	job, err := q.Put(ctx, []byte(`{"prompt":"Say hello.","max_new_tokens":8}`), paieas.PutOptions{Tags: map[string]string{"job": "greeting"}})
	if err != nil {
		log.Fatal(err)
	}
	result, err := q.Wait(ctx, job, paieas.WaitOptions{Poll: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(result.Index == job.Index, result.Tags["job"], result.Tags[paieas.TagStatus])
	// Output: true greeting 200
}
