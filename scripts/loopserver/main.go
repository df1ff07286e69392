// Command loopserver is the minimal OpenAI-compatible server that
// scripts/vs-vegeta.sh measures load generators against: every request
// is read to its end and answered at once with one fixed, non-streamed
// chat completion of one output token. It listens on loopback only.
//
//	go run ./scripts/loopserver -addr 127.0.0.1:18080
package main

import (
	"flag"
	"io"
	"log"
	"net/http"
	"strconv"
)

// reply is the one answer: a chat completion with one output token.
const reply = `{"id":"cmpl-loop","object":"chat.completion","created":0,"model":"m",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`

func main() {
	addr := flag.String("addr", "127.0.0.1:18080", "loopback address to listen on")
	flag.Parse()
	body := []byte(reply)
	length := strconv.Itoa(len(body))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		hd := w.Header()
		hd["Content-Type"] = []string{"application/json"}
		hd["Content-Length"] = []string{length}
		_, _ = w.Write(body)
	})
	log.Fatal(http.ListenAndServe(*addr, h))
}
