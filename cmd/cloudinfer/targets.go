package main

import (
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency/stats"
	"github.com/cloudinfer/cloudinfer/providers/vertex"
)

// ReferenceModels are the default run's endpoints: the emulator's A10
// reference profiles.
var referenceModels = []string{"llama-3-8b", "phi-3-mini", "qwen2-7b"}

// defaultRequests bounds a run given no duration or request count.
const defaultRequests = 100

// referenceBudget is the default run's target wall time.
const referenceBudget = 60 * time.Second

// plan builds the plan from the config file and the flags, and says
// whether it is the default reference experiment.
func (c *benchCmd) plan() (*bench.Plan, bool, error) {
	if err := c.checkFlags(); err != nil {
		return nil, false, err
	}
	p := &bench.Plan{}
	if c.Config != "" {
		lp, err := bench.LoadPlan(c.Config)
		if err != nil {
			return nil, false, err
		}
		p = lp
	}
	reference := false
	switch {
	case len(c.Endpoint) > 0 || c.Model != "" || c.URL != "" || c.GRPCAddr != "":
		eps := c.Endpoint
		if len(eps) == 0 {
			eps = []string{""}
		}
		prov := cmpOr(c.Provider, cloudreq.ProviderOpenAI)
		for _, ep := range eps {
			t := bench.Target{
				Provider: prov, Endpoint: ep, Model: c.Model, Variant: c.Variant, Path: c.Path, URL: c.URL, GRPCAddr: c.GRPCAddr,
				Transport: c.Transport, Method: c.Method, Region: c.Region, Project: c.Project, Location: c.Location, Action: c.Action, Stream: !c.NoStream,
				Payload: bench.Payload{File: c.Payload, ContentType: c.ContentType, Prompt: c.Prompt,
					PromptTokens: c.PromptTokens, OutputTokens: c.OutputTokens},
			}
			if t.Model == "" && t.Endpoint != "" && !isURL(t.Endpoint) && prov == cloudreq.ProviderOpenAI {
				t.Model = t.Endpoint // an OpenAI-compatible server routes by model
			}
			p.Targets = append(p.Targets, t)
		}
	case c.Config == "":
		reference = true
		prov := cmpOr(c.Provider, defaultProvider())
		for _, m := range referenceModels {
			// The payload and addressing flags apply to the reference
			// models as to flag-built targets.
			t := bench.Target{
				Provider: prov, Endpoint: m, Variant: c.Variant, Path: c.Path, Transport: c.Transport, Method: c.Method,
				Region: c.Region, Project: c.Project, Location: c.Location, Action: c.Action, Stream: !c.NoStream,
				Payload: bench.Payload{File: c.Payload, ContentType: c.ContentType, Prompt: c.Prompt,
					PromptTokens: c.PromptTokens, OutputTokens: c.OutputTokens},
			}
			if prov == cloudreq.ProviderOpenAI {
				t.Model = m
			}
			p.Targets = append(p.Targets, t)
		}
		if c.Warmup < 0 {
			p.Limits.Warmup = 1
		}
		// The three models are independent endpoints: measuring them at
		// once (each still sequential) gives each three times the sample
		// in the same minute.
		p.Parallel = true
	default:
		if c.NoStream {
			for i := range p.Targets {
				p.Targets[i].Stream = false
			}
		}
	}
	if c.Network != "" {
		for i := range p.Targets {
			p.Targets[i].Network = c.Network // the flag wins over the file
		}
	}
	c.applyLoad(p)
	if err := c.applyServerMetrics(p); err != nil {
		return nil, false, err
	}
	for _, s := range c.SLA {
		sla, err := stats.ParseSLA(s)
		if err != nil {
			return nil, false, usageError{err}
		}
		p.SLAs = append(p.SLAs, sla)
	}
	for _, s := range c.FailOn {
		g, err := bench.ParseGate(s)
		if err != nil {
			return nil, false, usageError{err}
		}
		p.FailOn = append(p.FailOn, g)
	}
	if err := c.applyMix(p); err != nil {
		return nil, false, err
	}
	return p, reference, nil
}

// needsEmulator reports whether some target goes to the embedded emulator.
func (c *benchCmd) needsEmulator(p *bench.Plan) bool {
	if c.Cloud {
		return false
	}
	for i := range p.Targets {
		if toEmulator(&p.Targets[i]) {
			return true
		}
	}
	return false
}

// toEmulator reports whether t names no server of its own (a URL for the
// HTTP providers, a gRPC address for Vertex), and so goes to the embedded
// emulator.
func toEmulator(t *bench.Target) bool {
	if t.Provider == cloudreq.ProviderGCP && !vertexREST(t) {
		return t.GRPCAddr == ""
	}
	return t.URL == ""
}

// emulatorRoot returns the Azure ML endpoint template of a target whose
// base URL is a server's root on this machine, with no path (a cloudinfer
// emulate, as for the other HTTP providers): ROOT/azureml/{endpoint}, the
// emulator's Azure route. ok is false for any other target: an endpoint
// given as a URL, a URL with a path or a template, a server elsewhere (an
// Azure endpoint's own root, https://ENDPOINT.REGION.inference.ml.azure.com,
// has no path either).
func emulatorRoot(t *bench.Target) (string, bool) {
	if t.URL == "" || isURL(t.Endpoint) || strings.Contains(t.URL, "{") {
		return "", false
	}
	u, err := url.Parse(t.URL)
	if err != nil || (u.Path != "" && u.Path != "/") || !loopbackHost(u.Hostname()) {
		return "", false
	}
	root := u.Scheme + "://" + u.Host + "/azureml/{endpoint}"
	if u.RawQuery != "" {
		root += "?" + u.RawQuery
	}
	return root, true
}

// referenceRequests is the default run's request count per model: as many
// as the slowest model fits, with the warm-up, in about a minute given the
// emulator's reference profiles (mean total = TTFT + TPOT × (N_out − 1)),
// between 5 and 100. The models run at the same time.
func referenceRequests(scale float64, warmup int) int {
	if scale == 0 {
		scale = 1 // as the emulator reads it
	}
	total := 0.0 // the slowest model's mean request: the models run at once
	for _, m := range referenceModels {
		p, ok := emulator.BuiltinProfile(m)
		if !ok {
			return 100
		}
		total = max(total, (p.TTFTMs.Mean+p.TPOTMs.Mean*(p.OutputTokens.Mean-1))*scale)
	}
	if total <= 0 {
		return 100
	}
	n := int(math.Floor(float64(referenceBudget.Milliseconds())/total)) - max(warmup, 0)
	return min(max(n, 5), 100)
}

// serverURL returns the URL t's requests go to: its endpoint when that is
// a URL (the Azure ML, PAI-EAS and OpenAI-compatible adapters send there),
// else its base URL.
func serverURL(t *bench.Target) string {
	if isURL(t.Endpoint) {
		return t.Endpoint
	}
	return t.URL
}

// isURL reports whether s is an http or https URL rather than a name.
func isURL(s string) bool {
	ls := strings.ToLower(s)
	return strings.HasPrefix(ls, "http://") || strings.HasPrefix(ls, "https://")
}

// endpointURLs makes every target's endpoint that is a URL its server
// (endpointURL), so that it does not go to the embedded emulator.
// SageMaker and Vertex address endpoints by name only; an
// OpenAI-compatible server given by URL needs a model. A Vertex target
// with a url and no grpc_addr is refused (it would go to Google's own
// endpoint), as is another provider's target with a grpc_addr and no url
// (it would go to the embedded emulator).
func endpointURLs(p *bench.Plan) error {
	for i := range p.Targets {
		t := &p.Targets[i]
		head := fmt.Sprintf("bench: target %q: ", t.Name)
		switch {
		case t.Provider == cloudreq.ProviderGCP && t.URL != "" && t.GRPCAddr == "" && !vertexREST(t):
			return errcodes.New(errcodes.InvalidParam, head+"gcp (Vertex) is reached over gRPC, not at its url: give the server's gRPC address as grpc_addr (HOST:PORT)")
		case t.Provider == cloudreq.ProviderGCP && t.GRPCAddr != "" && vertexREST(t):
			return errcodes.New(errcodes.InvalidParam, head+"transport rest sends to url (the server's HTTP root), not to grpc_addr")
		case t.Provider != cloudreq.ProviderGCP && t.GRPCAddr != "" && t.URL == "" && !isURL(t.Endpoint):
			return errcodes.New(errcodes.InvalidParam, head+"grpc_addr is Vertex's (gcp); "+t.Provider+" speaks HTTP: give the server's root as url")
		}
		if !isURL(t.Endpoint) {
			continue
		}
		if t.Provider == cloudreq.ProviderOpenAI && t.Model == "" { // the URL names the server, not the model
			return errcodes.New(errcodes.InvalidParam, head+"an OpenAI-compatible server given by URL needs the model to ask for (--model)")
		}
		if err := endpointURL(t, head, "give the server's gRPC address with --grpc-addr (grpc_addr in a plan)"); err != nil {
			return err
		}
	}
	return nil
}

// vertexREST reports whether t is a Vertex target sent over REST
// (transport rest), whose server is its url.
func vertexREST(t *bench.Target) bool {
	return t.Provider == cloudreq.ProviderGCP && t.Transport == string(vertex.TransportREST)
}
