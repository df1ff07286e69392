package impair_test

import (
	"fmt"
	"log"
	"net/http"

	"github.com/cloudinfer/cloudinfer/impair"
)

// An HTTP client whose connections cross a 20 ms (each way) link with
// 2 ms of jitter and 0.1% loss, up to 100 Mbit/s, with repeatable draws.
// Pass it as a provider's Options.HTTPClient; for Vertex's gRPC, pass
// grpc.WithContextDialer with p.Dialer(nil) in Options.ClientOptions.
func Example() {
	p, err := impair.Parse("delay=20ms,jitter=2ms,loss=0.1%,rate=100mbit,seed=7")
	if err != nil {
		log.Fatal(err)
	}
	tr, err := p.Transport(nil, nil)
	if err != nil {
		log.Fatal(err)
	}
	hc := &http.Client{Transport: tr}
	_ = hc
	fmt.Println(p)
	fmt.Println(p.Up.Delay+p.Down.Delay, "added to each round trip")
	// Output:
	// delay=20ms,jitter=2ms,loss=0.1%,rate=100mbit,seed=7
	// 40ms added to each round trip
}

// Each direction can differ: a slow uplink and a lossy downlink.
func ExampleParse() {
	p, err := impair.Parse("delay=5ms,up.rate=1mbit,down.loss=2%")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("up: %+v\ndown: %+v\n", p.Up, p.Down)
	// Output:
	// up: {Delay:5ms Jitter:0s Loss:0 Rate:1000000}
	// down: {Delay:5ms Jitter:0s Loss:0.02 Rate:0}
}
