package impair_test

import (
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/cloudinfer/cloudinfer/impair"
)

// echoServer answers every byte it reads with the same byte, on loopback.
func echoServer(b *testing.B) net.Addr {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				_, _ = io.Copy(c, c)
				_ = c.Close()
			}()
		}
	}()
	return ln.Addr()
}

// BenchmarkAddedDelay measures round trips of 64 bytes through an
// impaired loopback connection (1 ms each way) and reports how much later
// than the configured 2 ms they are, at the median and p99: the cost of
// timer wake-ups plus the loopback's own round trip.
func BenchmarkAddedDelay(b *testing.B) {
	addr := echoServer(b)
	p := impair.Profile{Up: impair.Link{Delay: time.Millisecond}, Down: impair.Link{Delay: time.Millisecond}}
	c, err := p.Dialer(nil)(b.Context(), "tcp", addr.String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	msg, buf := make([]byte, 64), make([]byte, 64)
	var rtts []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		if _, err := c.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
		rtts = append(rtts, time.Since(t0))
	}
	slices.Sort(rtts)
	want := 2 * time.Millisecond
	b.ReportMetric(float64(rtts[len(rtts)/2]-want)/1e3, "late-p50-µs")
	b.ReportMetric(float64(rtts[len(rtts)*99/100]-want)/1e3, "late-p99-µs")
}

// BenchmarkThroughput copies 1 MiB at a time through a connection with no
// delay, to price the wrapper's own work per byte.
func BenchmarkThroughput(b *testing.B) {
	addr := echoServer(b)
	p := impair.Profile{Up: impair.Link{Rate: 100e9}, Down: impair.Link{Rate: 100e9}}
	c, err := p.Dialer(nil)(b.Context(), "tcp", addr.String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	msg, buf := make([]byte, 1<<20), make([]byte, 1<<20)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		go func() { _, _ = c.Write(msg) }()
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
	}
}
