package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// The start of a sharded run. Shard 0 is the coordinator: it listens on
// the --coordinator address's port, and every other shard dials it there
// (in an Indexed Job, the pod of index 0 behind a headless Service) and
// says which shard of which plan it runs, one JSON line. Once every shard
// 1…N−1 has arrived, the coordinator answers each {"start":true} and
// starts itself: they all start within a round trip of one another,
// whatever their clocks. When a shard does not arrive within
// --start-timeout, or arrives with another plan or shard count, the
// coordinator answers the others with the error and every shard exits 1
// without sending a request: a run starts whole or not at all.

// startHello is what a shard tells the coordinator.
type startHello struct {
	Index int    `json:"index"`
	Count int    `json:"count"`
	Plan  string `json:"plan"`
}

// startReply is the coordinator's answer.
type startReply struct {
	Start bool   `json:"start,omitempty"`
	Error string `json:"error,omitempty"`
}

// maxStartLine bounds a line of the start protocol.
const maxStartLine = 4096

// startBarrier waits until every shard of a run is there.
type startBarrier struct {
	addr         string // the coordinator's HOST:PORT
	index, count int
	plan         string // bench.PlanHash of the whole plan
	timeout      time.Duration
	notes        io.Writer // progress notes; nil: none
}

// wait returns once every shard is there (nil), or with the error that
// stops this shard from starting.
func (b *startBarrier) wait(ctx context.Context) error {
	if b.index == 0 {
		ctx, cancel := context.WithTimeout(ctx, b.timeout)
		defer cancel()
		return b.coordinate(ctx)
	}
	// A shard dials for at most the timeout, then waits a grace longer
	// for the answer: the coordinator's own timeout ends with one.
	ctx, cancel := context.WithTimeout(ctx, b.timeout+startGrace)
	defer cancel()
	return b.join(ctx, time.Now().Add(b.timeout))
}

// startGrace is how much longer than the coordinator a shard waits for
// its answer.
const startGrace = 10 * time.Second

func (b *startBarrier) note(format string, args ...any) {
	if b.notes != nil {
		fmt.Fprintf(b.notes, format+"\n", args...)
	}
}

func startError(format string, args ...any) error {
	return errcodes.Errorf(errcodes.Unavailable, "bench: start: "+format, args...)
}

// listenAddr is where the coordinator listens for addr: on its IP when
// addr names one (127.0.0.1 in tests), else on every interface at its port
// (addr is then the coordinator's own DNS name, as the others reach it).
func listenAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if net.ParseIP(host) != nil {
		return addr, nil
	}
	return net.JoinHostPort("", port), nil
}

type arrival struct {
	hello startHello
	conn  net.Conn
	err   error
}

// coordinate is shard 0's side.
func (b *startBarrier) coordinate(ctx context.Context) error {
	la, err := listenAddr(b.addr)
	if err != nil {
		return startError("--coordinator %q: %v", b.addr, err)
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", la)
	if err != nil {
		return startError("listen on %s: %v", la, err)
	}
	defer ln.Close()
	b.note("shard 0 of %d: waiting at %s for the other shards (at most %v)", b.count, ln.Addr(), b.timeout)
	arrivals := make(chan arrival)
	go func() { // ends when ln is closed
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				h, err := readHello(conn, time.Now().Add(10*time.Second))
				select {
				case arrivals <- arrival{h, conn, err}:
				case <-ctx.Done():
					conn.Close()
				}
			}()
		}
	}()
	conns := map[int]net.Conn{}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	tell := func(r startReply) {
		line, _ := json.Marshal(r)
		for _, c := range conns {
			_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			_, _ = c.Write(append(line, '\n'))
		}
	}
	for len(conns) < b.count-1 {
		select {
		case <-ctx.Done():
			var missing []string
			for i := 1; i < b.count && len(missing) < 10; i++ {
				if conns[i] == nil {
					missing = append(missing, strconv.Itoa(i))
				}
			}
			msg := fmt.Sprintf("%d of %d shards never arrived within %v (%s): nothing was run",
				b.count-1-len(conns), b.count, b.timeout, strings.Join(missing, ", "))
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				msg = "interrupted while waiting for the other shards: nothing was run"
			}
			tell(startReply{Error: msg})
			return startError("%s", msg)
		case a := <-arrivals:
			h := a.hello
			switch {
			case a.err != nil:
				a.conn.Close() // not a shard: a probe, a stray client
				continue
			case h.Count != b.count || h.Plan != b.plan:
				msg := fmt.Sprintf("shard %d runs plan %s over %d shards, shard 0 plan %s over %d: every shard must run the same plan file with the same --shards",
					h.Index, h.Plan, h.Count, b.plan, b.count)
				conns[-1] = a.conn
				tell(startReply{Error: msg})
				return startError("%s", msg)
			case h.Index < 1 || h.Index >= b.count:
				msg := fmt.Sprintf("a shard says it is shard %d of %d: no such shard besides 0", h.Index, b.count)
				conns[-1] = a.conn
				tell(startReply{Error: msg})
				return startError("%s", msg)
			}
			if old := conns[h.Index]; old != nil {
				old.Close() // a restarted pod: its first connection is dead
			}
			conns[h.Index] = a.conn
			b.note("shard %d of %d arrived (%d of %d)", h.Index, b.count, len(conns)+1, b.count)
		}
	}
	tell(startReply{Start: true})
	b.note("all %d shards are here: start", b.count)
	return nil
}

// readHello reads a shard's hello from conn by deadline.
func readHello(conn net.Conn, deadline time.Time) (startHello, error) {
	var h startHello
	_ = conn.SetReadDeadline(deadline)
	line, err := readLine(conn)
	if err != nil {
		return h, err
	}
	_ = conn.SetReadDeadline(time.Time{})
	err = json.Unmarshal(line, &h)
	return h, err
}

// readLine reads one line of at most maxStartLine bytes.
func readLine(r io.Reader) ([]byte, error) {
	line, err := bufio.NewReaderSize(io.LimitReader(r, maxStartLine), maxStartLine).ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	return slices.Clone(line), nil
}

// join is the side of shards 1…N−1: dial the coordinator (again and again
// until it listens: its pod may come up last), say hello, wait for its
// answer.
func (b *startBarrier) join(ctx context.Context, dialUntil time.Time) error {
	hello, _ := json.Marshal(startHello{Index: b.index, Count: b.count, Plan: b.plan})
	var conn net.Conn
	var lastErr error
	for conn == nil {
		d := net.Dialer{Timeout: 2 * time.Second}
		c, err := d.DialContext(ctx, "tcp", b.addr)
		if err == nil {
			conn = c
			break
		}
		lastErr = err
		if ctx.Err() == nil && time.Now().After(dialUntil) {
			return startError("shard %d of %d: the coordinator (shard 0) at %s could not be reached within %v (%v): nothing was run",
				b.index, b.count, b.addr, b.timeout, lastErr)
		}
		select {
		case <-ctx.Done():
			return startError("interrupted while waiting to start: nothing was run")
		case <-time.After(250 * time.Millisecond):
		}
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	if _, err := conn.Write(append(hello, '\n')); err != nil {
		return startError("shard %d of %d: tell the coordinator at %s: %v", b.index, b.count, b.addr, err)
	}
	b.note("shard %d of %d: waiting at %s for the start", b.index, b.count, b.addr)
	line, err := readLine(conn)
	if err != nil {
		if ctx.Err() != nil {
			return startError("shard %d of %d: no start from the coordinator at %s within %v: nothing was run", b.index, b.count, b.addr, b.timeout+startGrace)
		}
		return startError("shard %d of %d: the coordinator at %s left before the start (%v): nothing was run", b.index, b.count, b.addr, err)
	}
	var r startReply
	if err := json.Unmarshal(line, &r); err != nil {
		return startError("shard %d of %d: the coordinator's answer does not parse: %v", b.index, b.count, err)
	}
	if !r.Start {
		return startError("the coordinator (shard 0) called the start off: %s", r.Error)
	}
	return nil
}
