package k8srender_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/internal/k8srender"
)

var update = flag.Bool("update", false, "rewrite deploy/kubernetes/bench.yaml and merge.yaml")

// objects is a rendered stream of manifests, decoded.
type objects struct {
	configMaps []*corev1.ConfigMap
	services   []*corev1.Service
	claims     []*corev1.PersistentVolumeClaim
	jobs       []*batchv1.Job
}

// decodeStrict decodes every document of a manifest stream into its
// Kubernetes API type, strictly: an unknown or misspelt field, a field
// given twice or a value of the wrong type fails the test, as does a kind
// the stream should not hold.
func decodeStrict(t *testing.T, stream []byte) objects {
	t.Helper()
	var out objects
	for i, doc := range strings.Split(string(stream), "\n---\n") {
		var tm metav1.TypeMeta
		require.NoError(t, yaml.Unmarshal([]byte(doc), &tm), "document %d", i)
		var obj any
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 ConfigMap":
			o := &corev1.ConfigMap{}
			out.configMaps, obj = append(out.configMaps, o), o
		case "v1 Service":
			o := &corev1.Service{}
			out.services, obj = append(out.services, o), o
		case "v1 PersistentVolumeClaim":
			o := &corev1.PersistentVolumeClaim{}
			out.claims, obj = append(out.claims, o), o
		case "batch/v1 Job":
			o := &batchv1.Job{}
			out.jobs, obj = append(out.jobs, o), o
		default:
			t.Fatalf("document %d: unexpected %q %q", i, tm.APIVersion, tm.Kind)
		}
		require.NoError(t, yaml.UnmarshalStrict([]byte(doc), obj), "document %d:\n%s", i, doc)
	}
	return out
}

func TestStrictDecodeCatchesAMisspeltField(t *testing.T) {
	doc := []byte("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: x\nspec:\n  completionMode: Indexed\n  paralelism: 3\n")
	assert.ErrorContains(t, yaml.UnmarshalStrict(doc, &batchv1.Job{}), `unknown field "paralelism"`)
}

func render(t *testing.T, o k8srender.Options, planPath string) (workers, merge []byte, plan *k8srender.Plan) {
	t.Helper()
	p, err := bench.LoadPlan(planPath)
	require.NoError(t, err)
	require.NoError(t, p.Prepare())
	plan, err = k8srender.PlanFile(p, o.Shards)
	require.NoError(t, err)
	var w, m bytes.Buffer
	require.NoError(t, k8srender.Workers(&w, o, plan))
	require.NoError(t, k8srender.Merge(&m, o, plan))
	return w.Bytes(), m.Bytes(), plan
}

// TestRenderedManifests: the manifests decode strictly into the
// Kubernetes API types, and say what the run needs: an Indexed Job of N
// pods at once, one per node, never retried, each the shard of its
// index, started by shard 0 through the headless Service; the plan in
// the ConfigMap is the plan (it hashes as the workers will hash it); the
// merge Job reads what the workers write.
func TestRenderedManifests(t *testing.T) {
	for _, o := range []k8srender.Options{
		{Image: "registry.example.com/cloudinfer:v1", Shards: 3, CPU: "2", Memory: "1Gi"},
		{Name: "big", Namespace: "perf", Image: "cloudinfer@sha256:0123", Shards: 16, CPU: "3500m", Memory: "2Gi",
			Port: 9000, Claim: "shared-results", StorageClass: "nfs"},
	} {
		t.Run(o.Name, func(t *testing.T) {
			w, m, plan := render(t, o, "../../deploy/kubernetes/plan.yaml")
			name := o.Name
			if name == "" {
				name = k8srender.DefaultName
			}
			objs := decodeStrict(t, w)
			require.Len(t, objs.configMaps, 1)
			require.Len(t, objs.services, 1)
			require.Len(t, objs.jobs, 1)

			p, err := bench.ParsePlan([]byte(objs.configMaps[0].Data["plan.json"]))
			require.NoError(t, err)
			require.NoError(t, p.Prepare())
			hash, err := bench.PlanHash(p)
			require.NoError(t, err)
			assert.Equal(t, string(plan.JSON), strings.TrimSuffix(objs.configMaps[0].Data["plan.json"], "\n"))
			assert.Equal(t, plan.Hash, hash)
			assert.Equal(t, 60.0, p.Load.Rate)

			svc := objs.services[0]
			assert.Equal(t, name, svc.Name)
			assert.Equal(t, corev1.ClusterIPNone, svc.Spec.ClusterIP)
			assert.True(t, svc.Spec.PublishNotReadyAddresses)
			assert.Equal(t, name, svc.Spec.Selector["batch.kubernetes.io/job-name"])

			job := objs.jobs[0]
			assert.Equal(t, name, job.Name)
			assert.Equal(t, o.Namespace, job.Namespace)
			assert.Equal(t, hash, job.Annotations["cloudinfer.dev/plan"])
			s := job.Spec
			require.NotNil(t, s.CompletionMode)
			assert.Equal(t, batchv1.IndexedCompletion, *s.CompletionMode)
			assert.Equal(t, int32(o.Shards), *s.Completions)
			assert.Equal(t, int32(o.Shards), *s.Parallelism)
			assert.Equal(t, int32(0), *s.BackoffLimit)
			ps := s.Template.Spec
			assert.Equal(t, name, ps.Subdomain, "shard 0 is reached through the Service")
			assert.Equal(t, corev1.RestartPolicyNever, ps.RestartPolicy)
			anti := ps.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
			require.Len(t, anti, 1)
			assert.Equal(t, "kubernetes.io/hostname", anti[0].TopologyKey)
			assert.Equal(t, s.Template.Labels["app.kubernetes.io/component"], anti[0].LabelSelector.MatchLabels["app.kubernetes.io/component"])
			assert.Equal(t, s.Template.Labels["app.kubernetes.io/instance"], anti[0].LabelSelector.MatchLabels["app.kubernetes.io/instance"])
			require.True(t, *ps.SecurityContext.RunAsNonRoot)
			require.Len(t, ps.Containers, 1)
			c := ps.Containers[0]
			assert.Equal(t, o.Image, c.Image)
			assert.Contains(t, c.Args, "--shards="+itoa(o.Shards))
			port := o.Port
			if port == 0 {
				port = k8srender.DefaultPort
			}
			assert.Contains(t, c.Args, "--coordinator="+name+"-0."+name+":"+itoa(port))
			assert.Equal(t, int32(port), c.Ports[0].ContainerPort)
			assert.Equal(t, int32(port), svc.Spec.Ports[0].Port)
			assert.Contains(t, c.Args, "--out=/results")
			assert.Equal(t, o.CPU, c.Resources.Limits.Cpu().String())
			assert.Equal(t, o.Memory, c.Resources.Requests.Memory().String())
			assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)

			claim := name + "-results"
			if o.Claim != "" {
				claim = o.Claim
				assert.Empty(t, objs.claims, "an existing claim is not rendered")
			} else {
				require.Len(t, objs.claims, 1)
				assert.Equal(t, claim, objs.claims[0].Name)
				assert.Equal(t, corev1.ReadWriteMany, objs.claims[0].Spec.AccessModes[0])
			}
			vols := map[string]corev1.Volume{}
			for _, v := range ps.Volumes {
				vols[v.Name] = v
			}
			assert.Equal(t, claim, vols["results"].PersistentVolumeClaim.ClaimName)
			assert.Equal(t, objs.configMaps[0].Name, vols["plan"].ConfigMap.Name)

			mo := decodeStrict(t, m)
			require.Len(t, mo.jobs, 1)
			mj := mo.jobs[0].Spec.Template.Spec
			assert.Equal(t, []string{"report", "--merge", "/results", "--format=json", "--out=/results/merged.json"}, mj.InitContainers[0].Args)
			assert.Equal(t, claim, mj.Volumes[0].PersistentVolumeClaim.ClaimName)
		})
	}
}

// TestRenderedTraceReplay: a trace replay's trace goes in the ConfigMap
// beside the plan, which reads it there; the workers' plan hashes as the
// manifests say.
func TestRenderedTraceReplay(t *testing.T) {
	p := &bench.Plan{Targets: []bench.Target{{Provider: "openai", Model: "m", URL: "http://vllm:8000"}},
		Load: bench.Load{Model: bench.LoadTrace, Trace: &bench.TraceLoad{File: "../../bench/testdata/traces/azure2023.csv", Speed: 2}}}
	require.NoError(t, p.Prepare())
	plan, err := k8srender.PlanFile(p, 3)
	require.NoError(t, err)
	var w bytes.Buffer
	require.NoError(t, k8srender.Workers(&w, k8srender.Options{Image: "img:1", Shards: 3, CPU: "1", Memory: "1Gi"}, plan))
	objs := decodeStrict(t, w.Bytes())
	cm := objs.configMaps[0].Data
	want, err := os.ReadFile("../../bench/testdata/traces/azure2023.csv")
	require.NoError(t, err)
	assert.Equal(t, strings.TrimRight(string(want), "\n"), strings.TrimRight(cm["trace.csv"], "\n"))

	// As a pod sees it: the ConfigMap's files under /plan.
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trace.csv"), []byte(cm["trace.csv"]), 0o644))
	wp, err := bench.ParsePlan([]byte(strings.ReplaceAll(cm["plan.json"], "/plan/", dir+"/")))
	require.NoError(t, err)
	assert.Equal(t, "/plan/trace.csv", strings.Split(strings.Split(cm["plan.json"], `"file": "`)[1], `"`)[0])
	require.NoError(t, wp.Prepare())
	assert.Equal(t, p.Limits.Requests, wp.Limits.Requests)
	wp.Load.Trace.File = "/plan/trace.csv" // the hash is of the plan as the pods read it
	h, err := bench.PlanHash(wp)
	require.NoError(t, err)
	assert.Equal(t, plan.Hash, h)
	assert.Equal(t, plan.Hash, objs.jobs[0].Annotations["cloudinfer.dev/plan"])
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestDeployManifestsAreRendered: deploy/kubernetes holds the manifests
// rendered from its plan (go test -update rewrites them).
func TestDeployManifestsAreRendered(t *testing.T) {
	o := k8srender.Options{Image: "registry.example.com/cloudinfer:v0.1.0", Shards: 3, CPU: "2", Memory: "1Gi"}
	w, m, _ := render(t, o, "../../deploy/kubernetes/plan.yaml")
	dir := "../../deploy/kubernetes"
	if *update {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "bench.yaml"), w, 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "merge.yaml"), m, 0o644))
	}
	for name, want := range map[string][]byte{"bench.yaml": w, "merge.yaml": m} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "%s is not what cloudinfer k8s render prints (go test ./internal/k8srender -update)", name)
	}
}

func TestRenderRefuses(t *testing.T) {
	p, err := bench.LoadPlan("../../deploy/kubernetes/plan.yaml")
	require.NoError(t, err)
	require.NoError(t, p.Prepare())
	plan, err := k8srender.PlanFile(p, 3)
	require.NoError(t, err)
	ok := k8srender.Options{Image: "img:1", Shards: 3, CPU: "1", Memory: "1Gi"}
	for _, tc := range []struct {
		name string
		edit func(*k8srender.Options)
		says string
	}{
		{"name", func(o *k8srender.Options) { o.Name = "Bench_1" }, `name "Bench_1": want a DNS label`},
		{"cpu", func(o *k8srender.Options) { o.CPU = "two" }, `cpu "two": want a Kubernetes quantity`},
		{"memory", func(o *k8srender.Options) { o.Memory = "1GB" }, `memory "1GB"`},
		{"image", func(o *k8srender.Options) { o.Image = "a b" }, `image "a b"`},
		{"shards", func(o *k8srender.Options) { o.Shards = 0 }, "0 shards"},
		{"port", func(o *k8srender.Options) { o.Port = 70000 }, "port 70000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := ok
			tc.edit(&o)
			err := k8srender.Workers(&bytes.Buffer{}, o, plan)
			assert.ErrorContains(t, err, tc.says)
		})
	}
	h := *p
	h.Targets = append([]bench.Target(nil), p.Targets...)
	h.Targets[0].Header = map[string]string{"Authorization": "Bearer x"}
	_, err = k8srender.PlanFile(&h, 3)
	assert.ErrorContains(t, err, "a ConfigMap is not secret")
	assert.NotContains(t, err.Error(), "Bearer")
	big := *p
	big.Targets = append([]bench.Target(nil), p.Targets...)
	big.Targets[0].Payload.Body = strings.Repeat("x", 1<<20)
	_, err = k8srender.PlanFile(&big, 3)
	assert.ErrorContains(t, err, "more than a ConfigMap holds")
	lad := &bench.Plan{Targets: p.Targets, Load: bench.Load{Model: bench.LoadLadder}, Limits: bench.Limits{Duration: bench.Duration(1e9)}}
	require.NoError(t, lad.Prepare())
	_, err = k8srender.PlanFile(lad, 3)
	assert.ErrorContains(t, err, "ladder")
}
