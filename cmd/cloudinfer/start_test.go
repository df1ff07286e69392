package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// freeAddr returns a loopback address no one listens on (for now).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// barriers waits with shards of count at addr, each given its plan hash
// and timeout, and returns their errors by index.
func barriers(t *testing.T, addr string, count int, plans map[int]string, timeout time.Duration) map[int]error {
	t.Helper()
	var mu sync.Mutex
	errs := map[int]error{}
	var wg sync.WaitGroup
	for i, plan := range plans {
		wg.Go(func() {
			b := &startBarrier{addr: addr, index: i, count: count, plan: plan, timeout: timeout}
			err := b.wait(context.Background())
			mu.Lock()
			errs[i] = err
			mu.Unlock()
		})
	}
	wg.Wait()
	return errs
}

// TestStartBarrier: shard 0 releases the others once all are there, and
// they start within a moment of one another; a shard that never arrives,
// or one of another plan, calls the start off for every shard.
func TestStartBarrier(t *testing.T) {
	t.Run("all arrive", func(t *testing.T) {
		addr := freeAddr(t)
		var mu sync.Mutex
		started := map[int]time.Time{}
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				if i == 3 {
					time.Sleep(300 * time.Millisecond) // the last one keeps the others waiting
				}
				var notes bytes.Buffer
				b := &startBarrier{addr: addr, index: i, count: 4, plan: "p", timeout: 20 * time.Second, notes: &notes}
				if assert.NoError(t, b.wait(context.Background())) {
					mu.Lock()
					started[i] = time.Now()
					mu.Unlock()
				}
				if i == 0 {
					assert.Contains(t, notes.String(), "all 4 shards are here: start")
				}
			})
		}
		wg.Wait()
		require.Len(t, started, 4)
		for i := range 3 {
			assert.False(t, started[i].Before(started[3].Add(-200*time.Millisecond)), "shard %d started before the last arrived", i)
		}
	})
	t.Run("one never arrives", func(t *testing.T) {
		errs := barriers(t, freeAddr(t), 3, map[int]string{0: "p", 1: "p"}, time.Second)
		assert.ErrorContains(t, errs[0], "1 of 3 shards never arrived within 1s (2): nothing was run")
		assert.ErrorContains(t, errs[1], "the coordinator (shard 0) called the start off: 1 of 3 shards never arrived")
		assert.ErrorContains(t, errs[0], "ERR_UNAVAILABLE")
	})
	t.Run("another plan", func(t *testing.T) {
		errs := barriers(t, freeAddr(t), 2, map[int]string{0: "p", 1: "q"}, 10*time.Second)
		assert.ErrorContains(t, errs[0], "shard 1 runs plan q over 2 shards, shard 0 plan p over 2")
		assert.ErrorContains(t, errs[1], "called the start off: shard 1 runs plan q")
	})
	t.Run("no coordinator", func(t *testing.T) {
		errs := barriers(t, freeAddr(t), 2, map[int]string{1: "p"}, 600*time.Millisecond)
		assert.ErrorContains(t, errs[1], "could not be reached within 600ms")
	})
	t.Run("not a shard", func(t *testing.T) {
		addr := freeAddr(t)
		stop := make(chan struct{})
		var stray sync.WaitGroup
		stray.Go(func() {
			for range 100 { // a stray client's garbage is no hello
				if c, err := net.Dial("tcp", addr); err == nil {
					_, _ = c.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
					_ = c.Close()
					return
				}
				select {
				case <-stop: // the barrier is done: no goroutine outlives the test
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		})
		errs := barriers(t, addr, 2, map[int]string{0: "p", 1: "p"}, 10*time.Second)
		close(stop)
		stray.Wait()
		assert.NoError(t, errs[0])
		assert.NoError(t, errs[1])
	})
}

// TestShardFlags: shard flags that name no shard are usage errors; the
// index comes from --shard or JOB_COMPLETION_INDEX.
func TestShardFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  string // JOB_COMPLETION_INDEX; "-" unset
		says string
	}{
		{[]string{"--shard", "1"}, "-", "--shard 1 needs --shards N"},
		{[]string{"--coordinator", "a:1"}, "-", "--coordinator starts the shards"},
		{[]string{"--shards", "3"}, "-", "needs this worker's index: --shard I, or JOB_COMPLETION_INDEX"},
		{[]string{"--shards", "3"}, "x", `JOB_COMPLETION_INDEX="x" is no shard index`},
		{[]string{"--shards", "3"}, "3", "shard 3 of 3: want an index from 0 to 2"},
		{[]string{"--shards", "3", "--shard", "5"}, "-", "shard 5 of 3"},
		{[]string{"--shards=-2"}, "-", "--shards -2: want 1 to"},
		{[]string{"--shards", "2", "--shard", "0", "--coordinator", "nohost"}, "-", `--coordinator "nohost": want HOST:PORT`},
		{[]string{"--shards", "2", "--shard", "0", "--start-timeout=-1s"}, "-", "--start-timeout must not be negative"},
	} {
		t.Run(tc.says, func(t *testing.T) {
			if tc.env == "-" {
				t.Setenv("JOB_COMPLETION_INDEX", "")
				require.NoError(t, unsetenv("JOB_COMPLETION_INDEX"))
			} else {
				t.Setenv("JOB_COMPLETION_INDEX", tc.env)
			}
			var out, errOut bytes.Buffer
			code := run(append([]string{"bench"}, tc.args...), &out, &errOut)
			assert.Equal(t, exitUsage, code, errOut.String())
			assert.Contains(t, errOut.String(), tc.says)
		})
	}
	t.Setenv("JOB_COMPLETION_INDEX", "2")
	c := parse(t, "bench", "--shards", "3")
	require.NoError(t, c.Bench.checkFlags())
	assert.Equal(t, 2, c.Bench.shardIndex)
	c = parse(t, "bench", "--shards", "3", "--shard", "1")
	require.NoError(t, c.Bench.checkFlags())
	assert.Equal(t, 1, c.Bench.shardIndex, "--shard wins over the environment")
}

func unsetenv(k string) error { return os.Unsetenv(k) }
