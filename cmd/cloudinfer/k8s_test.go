package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/bench"
)

// TestK8sRenderPlanIsTheWorkersPlan: the plan k8s render puts in the
// ConfigMap is, read by bench --config as each worker reads it, the plan
// whose hash the manifests carry (what the start and the merge check).
func TestK8sRenderPlanIsTheWorkersPlan(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"k8s", "render", "--config", "../../deploy/kubernetes/plan.yaml", "--shards", "4", "--image", "img:1"}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	hash := regexp.MustCompile(`cloudinfer.dev/plan: "([0-9a-f]+)"`).FindStringSubmatch(out.String())
	require.NotNil(t, hash)
	_, rest, ok := strings.Cut(out.String(), "  plan.json: |\n")
	require.True(t, ok)
	plan, _, _ := strings.Cut(rest, "\n---\n")
	plan = strings.ReplaceAll(plan, "\n    ", "\n")
	f := filepath.Join(t.TempDir(), "plan.json")
	require.NoError(t, os.WriteFile(f, []byte(strings.TrimPrefix(plan, "    ")), 0o644))

	c := parse(t, "bench", "--config", f, "--shards", "4", "--shard", "3")
	p, _, err := c.Bench.plan()
	require.NoError(t, err)
	require.NoError(t, p.Prepare())
	got, err := bench.PlanHash(p)
	require.NoError(t, err)
	assert.Equal(t, hash[1], got)
	assert.Contains(t, out.String(), "--shards=4")
}

func TestK8sRenderUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--shards", "0"}, "--shards 0: want 1 to"},
		{[]string{"--shards", "3", "--cpu", "lots"}, `cpu "lots"`},
		{[]string{"--shards", "3", "--name", "UPPER"}, `name "UPPER"`},
	} {
		var out, errOut bytes.Buffer
		args := append([]string{"k8s", "render", "--config", "../../deploy/kubernetes/plan.yaml", "--image", "img:1"}, tc.args...)
		assert.Equal(t, exitUsage, run(args, &out, &errOut), errOut.String())
		assert.Contains(t, errOut.String(), tc.says)
		assert.Empty(t, out.String())
	}
}
