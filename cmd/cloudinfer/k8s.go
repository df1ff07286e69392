package main

import (
	"bytes"
	"fmt"
	"time"

	"github.com/alecthomas/kong"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/k8srender"
)

// k8sCmd is the `cloudinfer k8s` command group.
type k8sCmd struct {
	Render k8sRenderCmd `cmd:"" help:"Print the Kubernetes manifests that run a plan on N workers (an Indexed Job, one worker per node, started together), or with --merge the Job that merges their results."`
}

// k8sRenderCmd is `cloudinfer k8s render`.
type k8sRenderCmd struct {
	Config string `help:"Plan file (YAML or JSON), as bench --config reads it; its payload files are put inline, a trace replay's trace file beside it." type:"existingfile" required:"" placeholder:"FILE"`
	Shards int    `help:"Number of workers (pods, one per node)." required:"" placeholder:"N"`
	Image  string `help:"cloudinfer container image (build it from the repository's Dockerfile and push it where the cluster pulls from)." required:"" placeholder:"IMAGE"`
	Merge  bool   `help:"Print the merge Job instead: apply it once the workers' Job is complete."`

	Name         string        `help:"Name of the Job and its Service; the other objects' names start with it." default:"cloudinfer-bench"`
	Namespace    string        `help:"Namespace of every object (default: kubectl's)."`
	CPU          string        `name:"cpu" help:"Each worker's CPU, request and limit." default:"2"`
	Memory       string        `help:"Each worker's memory, request and limit." default:"1Gi"`
	Port         int           `help:"Port of the start coordinator on shard 0." default:"7070"`
	StartTimeout time.Duration `help:"How long the workers wait for each other before none runs." default:"5m"`
	Claim        string        `help:"Existing ReadWriteMany PersistentVolumeClaim for the results (default: one named NAME-results is rendered)." placeholder:"NAME"`
	Storage      string        `help:"Size of the rendered results claim." default:"1Gi"`
	StorageClass string        `help:"Storage class of the rendered results claim (ReadWriteMany; default: the cluster's)." placeholder:"NAME"`
}

// Run renders the manifests. Bad options are usage errors; a plan that
// cannot run, or cannot be split over the shards, is refused as bench
// would refuse it.
func (c *k8sRenderCmd) Run(k *kong.Context) error {
	o := k8srender.Options{Name: c.Name, Namespace: c.Namespace, Image: c.Image, Shards: c.Shards, CPU: c.CPU,
		Memory: c.Memory, Port: c.Port, StartTimeout: c.StartTimeout, Claim: c.Claim, Storage: c.Storage,
		StorageClass: c.StorageClass}
	if c.Shards < 1 || c.Shards > bench.MaxShards {
		return usageError{errcodes.Errorf(errcodes.InvalidParam, "k8s render: --shards %d: want 1 to %d", c.Shards, bench.MaxShards)}
	}
	p, err := bench.LoadPlan(c.Config)
	if err != nil {
		return err
	}
	if err := p.Prepare(); err != nil {
		return err
	}
	plan, err := k8srender.PlanFile(p, c.Shards)
	if err != nil {
		return err
	}
	render := k8srender.Workers
	if c.Merge {
		render = k8srender.Merge
	}
	var b bytes.Buffer
	if err := render(&b, o, plan); err != nil {
		return usageError{err} // the plan rendered; what is left is the options'
	}
	if _, err := k.Stdout.Write(b.Bytes()); err != nil {
		return fmt.Errorf("k8s render: %w", err)
	}
	return nil
}
