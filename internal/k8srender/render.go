// Package k8srender renders the Kubernetes manifests that run a
// benchmark plan on N workers, as `cloudinfer k8s render` prints them: a
// ConfigMap holding the plan, a headless Service through which the
// workers reach shard 0 (the start coordinator), a PersistentVolumeClaim
// for the results, and an Indexed Job of N pods (completions =
// parallelism = N, one per node), each running `cloudinfer bench
// --shards N` with its JOB_COMPLETION_INDEX; and, apart, the merge Job
// that runs `cloudinfer report --merge` over the results once the workers
// are done. The manifests are plain YAML from a text template: no Helm,
// no Kubernetes client library (the tests decode them strictly into the
// Kubernetes API types).
package k8srender

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"text/template"
	"time"
	"unicode/utf8"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// Options are what the manifests are rendered for.
type Options struct {
	// Name names the Job, its Service and (with suffixes) the other
	// objects: a DNS label (default cloudinfer-bench).
	Name string
	// Namespace, when set, is every object's namespace.
	Namespace string
	// Image is the cloudinfer container image (see the repository's
	// Dockerfile).
	Image string
	// Shards is the number of workers (at least 1).
	Shards int
	// CPU and Memory are each worker's requests and limits, as Kubernetes
	// quantities ("2", "500m", "1Gi").
	CPU, Memory string
	// Port is the start coordinator's port on shard 0 (default 7070).
	Port int
	// StartTimeout bounds the wait for every worker (default 5m).
	StartTimeout time.Duration
	// Claim, when set, is an existing PersistentVolumeClaim (ReadWriteMany)
	// for the results; otherwise one named NAME-results is rendered, of
	// Storage (default 1Gi) in StorageClass (default: the cluster's).
	Claim, Storage, StorageClass string
}

// Defaults.
const (
	DefaultName         = "cloudinfer-bench"
	DefaultPort         = 7070
	DefaultStartTimeout = 5 * time.Minute
	DefaultStorage      = "1Gi"
)

var (
	dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// quantity is the form of a Kubernetes resource quantity.
	quantity = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?|\.[0-9]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$`)
	// image is a container image reference, loosely: no spaces or quotes.
	image = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/:@-]*$`)
)

func (o *Options) prepare() error {
	bad := func(format string, args ...any) error {
		return errcodes.Errorf(errcodes.InvalidParam, "k8s render: "+format, args...)
	}
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.Port == 0 {
		o.Port = DefaultPort
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.Storage == "" {
		o.Storage = DefaultStorage
	}
	// The longest derived name, NAME-results, and the pods' hostnames
	// NAME-INDEX, must stay DNS labels (63 characters).
	if !dnsLabel.MatchString(o.Name) || len(o.Name) > 40 {
		return bad("name %q: want a DNS label of at most 40 characters (lower-case letters, digits, '-')", o.Name)
	}
	if o.Namespace != "" && (!dnsLabel.MatchString(o.Namespace) || len(o.Namespace) > 63) {
		return bad("namespace %q: want a DNS label", o.Namespace)
	}
	if o.Claim != "" && (!dnsLabel.MatchString(o.Claim) || len(o.Claim) > 63) {
		return bad("claim %q: want a DNS label", o.Claim)
	}
	if o.StorageClass != "" && !dnsLabel.MatchString(o.StorageClass) {
		return bad("storage class %q: want a DNS label", o.StorageClass)
	}
	if !image.MatchString(o.Image) {
		return bad("image %q: want an image reference (REGISTRY/NAME:TAG)", o.Image)
	}
	if o.Shards < 1 || o.Shards > bench.MaxShards {
		return bad("%d shards: want 1 to %d", o.Shards, bench.MaxShards)
	}
	for _, q := range []struct{ name, v string }{{"cpu", o.CPU}, {"memory", o.Memory}, {"storage", o.Storage}} {
		if !quantity.MatchString(q.v) {
			return bad("%s %q: want a Kubernetes quantity (2, 500m, 1Gi)", q.name, q.v)
		}
	}
	if o.Port < 1 || o.Port > 65535 {
		return bad("port %d: want 1 to 65535", o.Port)
	}
	if o.StartTimeout < time.Second {
		return bad("start timeout %v: want at least 1s", o.StartTimeout)
	}
	return nil
}

// Plan is what the workers read from the ConfigMap: the plan file, and the
// trace file a trace replay reads.
type Plan struct {
	// JSON is the plan file (plan.json).
	JSON []byte
	// Hash is the plan's bench.PlanHash, as every worker computes it.
	Hash string
	// Files are further files beside plan.json, by key (a trace).
	Files map[string]string
}

// maxConfigMap bounds what the ConfigMap holds (Kubernetes allows 1 MiB).
const maxConfigMap = 900 << 10

// PlanFile returns what the workers read: p (loaded and prepared) as JSON,
// with its payload files' contents inline and its trace file beside it
// (a pod has only the ConfigMap). A plan with headers is refused: header
// values may be credentials, and a ConfigMap is not secret (credentials
// go in the Secret NAME-credentials as the environment variables the
// providers read). So is a plan its shards cannot split (see
// bench.Plan.ShardPlan), a payload or trace that is not text, and one
// past what a ConfigMap holds.
func PlanFile(p *bench.Plan, shards int) (*Plan, error) {
	for i := range shards {
		if _, err := p.ShardPlan(i, shards); err != nil {
			return nil, err
		}
	}
	out := &Plan{Files: map[string]string{}}
	c := *p
	c.Targets = append([]bench.Target(nil), p.Targets...)
	for i := range c.Targets {
		t := &c.Targets[i]
		if len(t.Header) > 0 {
			return nil, errcodes.Errorf(errcodes.InvalidParam,
				"k8s render: target %q has headers, which may be credentials, and a ConfigMap is not secret: put credentials in the Secret the workers read their environment from", t.Name)
		}
		if err := inline(&t.Payload); err != nil {
			return nil, err
		}
	}
	if p.Mix != nil {
		m := *p.Mix
		m.Classes = append([]bench.Class(nil), p.Mix.Classes...)
		for i := range m.Classes {
			cl := &m.Classes[i]
			if len(cl.Header) > 0 {
				return nil, errcodes.Errorf(errcodes.InvalidParam,
					"k8s render: mix class %q has headers, which may be credentials, and a ConfigMap is not secret", cl.Label())
			}
			if cl.Payload != nil {
				pl := *cl.Payload
				if err := inline(&pl); err != nil {
					return nil, err
				}
				cl.Payload = &pl
			}
		}
		c.Mix = &m
	}
	if tl := p.Load.Trace; p.Load.Model == bench.LoadTrace && tl != nil {
		if tl.File == "" {
			return nil, errcodes.New(errcodes.InvalidParam, "k8s render: the plan's trace has no file to put in the ConfigMap")
		}
		b, err := os.ReadFile(tl.File)
		if err != nil {
			return nil, errcodes.Wrap(err, errcodes.InvalidParam, "k8s render: trace file: "+err.Error())
		}
		if !utf8.Valid(b) {
			return nil, errcodes.Errorf(errcodes.InvalidParam, "k8s render: trace file %s is not text, and a ConfigMap holds text only", tl.File)
		}
		key := "trace" + filepath.Ext(tl.File)
		out.Files[key] = string(b)
		ct := *tl
		ct.File = "/plan/" + key
		ct.SetTrace(nil)
		c.Load.Trace = &ct
	}
	b, err := json.MarshalIndent(&c, "", "  ")
	if err != nil {
		return nil, errcodes.Wrap(err, errcodes.Internal, "k8s render: encode plan: "+err.Error())
	}
	size := len(b)
	for _, f := range out.Files {
		size += len(f)
	}
	if size > maxConfigMap {
		return nil, errcodes.Errorf(errcodes.InvalidParam, "k8s render: the plan and its files come to %d bytes, more than a ConfigMap holds (%d)", size, maxConfigMap)
	}
	out.JSON = b
	if out.Hash, err = bench.PlanHash(&c); err != nil {
		return nil, err
	}
	return out, nil
}

// inline puts a payload file's content in the payload's body.
func inline(pl *bench.Payload) error {
	if pl.File == "" {
		return nil
	}
	b, err := os.ReadFile(pl.File)
	if err != nil {
		return errcodes.Wrap(err, errcodes.InvalidParam, "k8s render: payload file: "+err.Error())
	}
	if !utf8.Valid(b) {
		return errcodes.Errorf(errcodes.InvalidParam, "k8s render: payload file %s is not text, and a ConfigMap's plan holds text only", pl.File)
	}
	pl.Body, pl.File = string(b), ""
	return nil
}

// data is the template's input.
type data struct {
	Options
	Plan     string            // the plan file
	Files    map[string]string // the files beside it
	PlanHash string
	Results  string // the results' claim
	Coord    string // shard 0's address
}

func newData(o Options, plan *Plan) (*data, error) {
	if err := o.prepare(); err != nil {
		return nil, err
	}
	if plan == nil || len(plan.JSON) == 0 {
		return nil, errcodes.New(errcodes.InvalidParam, "k8s render: no plan")
	}
	d := &data{Options: o, Plan: string(plan.JSON), Files: plan.Files, PlanHash: plan.Hash, Results: o.Claim,
		Coord: fmt.Sprintf("%s-0.%s:%d", o.Name, o.Name, o.Port)}
	if d.Results == "" {
		d.Results = o.Name + "-results"
	}
	return d, nil
}

// Workers writes the manifests of the run: the plan's ConfigMap, the
// headless Service, the results' claim (unless Options.Claim names one)
// and the workers' Indexed Job.
func Workers(w io.Writer, o Options, plan *Plan) error {
	return render(w, workersTmpl, o, plan)
}

// Merge writes the merge Job, to apply once the workers' Job is complete:
// it merges the shards' results into NAME-results/merged.json and prints
// the merged report in its log.
func Merge(w io.Writer, o Options, plan *Plan) error {
	return render(w, mergeTmpl, o, plan)
}

func render(w io.Writer, t *template.Template, o Options, plan *Plan) error {
	d, err := newData(o, plan)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return errcodes.Wrap(err, errcodes.Internal, "k8s render: "+err.Error())
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return errcodes.Wrap(err, errcodes.Internal, "k8s render: write: "+err.Error())
	}
	return nil
}
