package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/latency"
)

// TestShardedRunOfThreeProcesses builds the cloudinfer binary, runs a
// Poisson plan as three worker processes (JOB_COMPLETION_INDEX=0,1,2, as
// an Indexed Job runs them; shard 2 comes up late, and the coordinator
// holds the others until it is there) against an emulator, merges their
// results with report --merge DIR, and checks the merged result against
// the plan and against one process running the same load: the counts are
// the plan's exactly, the offered rate is the sum of the shards', the
// shards started together, and the TTFT quantiles agree within the
// sketch's accuracy plus the sampling error of two samples.
func TestShardedRunOfThreeProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs four benchmark processes")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "cloudinfer")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// Latencies of about 100 ms, spread wide: the sample's spread, not the
	// busy machine's few milliseconds, decides the quantiles. No spinning
	// waits: the four processes share the machine's cores.
	emu, err := emulator.New(emulator.Options{Seed: 3, SpinWaits: -1, Endpoints: []emulator.Endpoint{{
		Name: "fast", Providers: []emulator.Provider{emulator.OpenAI},
		Profile: emulator.Profile{Name: "fast", TTFTMs: emulator.Dist{Mean: 100, SD: 50}, TPOTMs: emulator.Dist{Mean: 2},
			OutputTokens: emulator.Dist{Mean: 4}, Slots: 1024},
	}}})
	require.NoError(t, err)
	require.NoError(t, emu.Start("127.0.0.1:0", ""))
	t.Cleanup(func() { _ = emu.Close() })

	const requests, rate, shards = 300, 150.0, 3
	load := []string{"bench", "--provider", "openai", "--url", emu.URL(), "--model", "fast", "--load", "poisson",
		"--rate", fmt.Sprint(rate), "--requests", strconv.Itoa(requests), "--warmup", "0", "--prompt-tokens", "16",
		"--output-tokens", "4", "--quiet", "--format", "json", "--seed", "7"}
	cloudinfer := func(ctx context.Context, index int, args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), "JOB_COMPLETION_INDEX=")
		if index >= 0 {
			cmd.Env = append(os.Environ(), "JOB_COMPLETION_INDEX="+strconv.Itoa(index))
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.Bytes(), err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	shardDir := filepath.Join(dir, "results")
	require.NoError(t, os.Mkdir(shardDir, 0o755))
	coord := freeAddr(t)
	var wg sync.WaitGroup
	outs := make([][]byte, shards)
	errs := make([]error, shards)
	for i := range shards {
		wg.Go(func() {
			if i == 2 {
				time.Sleep(1500 * time.Millisecond) // its pod came up late
			}
			outs[i], errs[i] = cloudinfer(ctx, i, append(load, "--shards", strconv.Itoa(shards), "--coordinator", coord,
				"--start-timeout", "1m", "--out", shardDir)...)
		})
	}
	wg.Wait()
	for i := range shards {
		require.NoError(t, errs[i], "shard %d:\n%s", i, outs[i])
	}
	out, err := cloudinfer(ctx, -1, "report", "--merge", shardDir)
	require.NoError(t, err, "%s", out)
	t.Logf("report --merge:\n%s", out)
	merged := filepath.Join(dir, "merged.json")
	out, err = cloudinfer(ctx, -1, "report", "--merge", shardDir, "--format", "json", "--out", merged)
	require.NoError(t, err, "%s", out)
	single := filepath.Join(dir, "single.json")
	out, err = cloudinfer(ctx, -1, append(load, "--out", single)...)
	require.NoError(t, err, "%s", out)

	m, err := bench.ReadResult(merged)
	require.NoError(t, err)
	one, err := bench.ReadResult(single)
	require.NoError(t, err)
	require.Len(t, m.Targets, 1)
	require.Len(t, m.Shards, shards)
	for i, s := range m.Shards {
		assert.Equal(t, i, s.Index)
		r, err := bench.ReadResult(filepath.Join(shardDir, fmt.Sprintf("shard-%d-of-%d.json", i, shards)))
		require.NoError(t, err)
		require.NotNil(t, r.Shard)
		assert.Equal(t, bench.Shard{Index: i, Count: shards, Plan: r.Shard.Plan}, *r.Shard)
		assert.Equal(t, int64(requests/shards), r.Targets[0].Sent, "shard %d", i)
		assert.InDelta(t, rate/shards, r.Targets[0].OfferedRate, 1e-9)
	}
	tr, tone := m.Targets[0], one.Targets[0]
	c := tr.Counts()
	assert.Equal(t, int64(requests), tr.Sent)
	assert.Equal(t, int64(requests), c.Requests)
	assert.Zero(t, c.Failed, "%v", tr.ErrorExamples)
	assert.Equal(t, int64(requests), tone.Counts().Requests)
	assert.InDelta(t, rate, tr.OfferedRate, 1e-9)
	assert.InDelta(t, tone.OfferedRate, tr.OfferedRate, 1e-9)
	assert.Equal(t, "poisson 150 req/s", tr.Load)
	// Shard 2 came up 1.5 s late; released together, they started within
	// a fraction of that.
	assert.Less(t, tr.StartSpread.D(), time.Second, "the shards did not start together")

	// Two samples of n = 300 from one distribution: by the DKW inequality
	// each empirical CDF lies within ε = √(ln(2/α)/2n) of the true one
	// (α = 0.001 each), so the merged q-quantile lies between the single
	// run's (q − 2ε)- and (q + 2ε)-quantiles, widened by the sketches' 1%.
	eps := math.Sqrt(math.Log(2/0.001) / (2 * requests))
	dm, d1 := tr.Dist(latency.TTFT, "", ""), tone.Dist(latency.TTFT, "", "")
	require.Equal(t, uint64(requests), dm.Count())
	for _, q := range []float64{0.5, 0.9} {
		lo, hi := d1.Quantile(max(q-2*eps, 0))*0.99, d1.Quantile(min(q+2*eps, 1))*1.01
		got := dm.Quantile(q)
		t.Logf("TTFT p%.0f: merged %.2f ms, one process %.2f ms (allowed %.2f to %.2f)", 100*q, got/1e6, d1.Quantile(q)/1e6, lo/1e6, hi/1e6)
		assert.True(t, got >= lo && got <= hi, "TTFT p%.0f %.2f ms outside [%.2f, %.2f]", 100*q, got/1e6, lo/1e6, hi/1e6)
	}
}
