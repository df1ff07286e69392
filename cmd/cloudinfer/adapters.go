package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"google.golang.org/api/option"
	"google.golang.org/grpc"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/hooks"
	"github.com/cloudinfer/cloudinfer/impair"
	"github.com/cloudinfer/cloudinfer/internal/h1client"
	"github.com/cloudinfer/cloudinfer/providers/azureml"
	"github.com/cloudinfer/cloudinfer/providers/openai"
	"github.com/cloudinfer/cloudinfer/providers/paieas"
	"github.com/cloudinfer/cloudinfer/providers/sagemaker"
	"github.com/cloudinfer/cloudinfer/providers/vertex"
)

// connect builds the client of one target: its provider's adapter, the
// default hooks (and, for an emulator target, the emulator's start report),
// no retries unless asked, the per-request timeout.
func (e *environment) connect(ctx context.Context, t *bench.Target) (*cloudreq.Client, error) {
	ad, err := e.adapter(ctx, t)
	if err != nil {
		return nil, err
	}
	opts := cloudreq.Options{
		Adapters:          []cloudreq.Adapter{ad},
		ScaleToZeroWindow: t.ScaleToZero.D(),
		CallOptions: cloudreq.CallOptions{
			Hooks:   hooks.Default(),
			Retry:   cloudreq.RetryOptions{MaxAttempts: 1 + max(e.cmd.Retries, 0)},
			Timeout: e.cmd.Timeout,
		},
	}
	if e.emulatorTarget(t) {
		return cloudreq.New(opts, emulator.WithStartReport())
	}
	return cloudreq.New(opts)
}

// emulated reports whether t goes to the embedded emulator.
func (e *environment) emulated(t *bench.Target) bool { return e.emu != nil && toEmulator(t) }

// emulatorTarget reports whether t may be served by a cloudinfer emulator:
// the embedded one, or a server on this machine over plain http or gRPC
// (a cloudinfer emulate running apart, as for credentials). Its client
// reads the emulator's start report; a real cloud sends none.
func (e *environment) emulatorTarget(t *bench.Target) bool {
	if e.emulated(t) {
		return true
	}
	if t.Provider == cloudreq.ProviderGCP && !vertexREST(t) {
		return loopbackAddr(t.GRPCAddr)
	}
	return loopbackHTTP(serverURL(t))
}

// adapterFactories build a provider's adapter for a target; emu is the
// embedded emulator when the target goes to it.
var adapterFactories = map[string]func(ctx context.Context, t *bench.Target, emu *emulator.Server, n netOpts) (cloudreq.Adapter, error){
	cloudreq.ProviderOpenAI: func(_ context.Context, t *bench.Target, emu *emulator.Server, n netOpts) (cloudreq.Adapter, error) {
		// Credentials: OPENAI_API_KEY, over plain http only to a server on
		// this machine (a local vLLM started with --api-key, a cloudinfer
		// emulate with keys), where it does not cross a network; another
		// host is refused. The embedded emulator is sent none.
		o := openai.Options{BaseURL: t.URL, APIKey: os.Getenv("OPENAI_API_KEY"), HTTPClient: n.http}
		switch {
		case emu != nil:
			o.BaseURL, o.APIKey = emu.URL(), ""
		case loopbackHTTP(serverURL(t)):
			o.AllowInsecureHTTP = true
		default:
			if err := inClear(t, serverURL(t), "OPENAI_API_KEY", o.APIKey != ""); err != nil {
				return nil, err
			}
		}
		return openai.New(o)
	},
	cloudreq.ProviderAzure: func(_ context.Context, t *bench.Target, emu *emulator.Server, n netOpts) (cloudreq.Adapter, error) {
		// Credentials: AZUREML_API_KEY when set, else Microsoft Entra's
		// default chain (azidentity.DefaultAzureCredential) — except for a
		// plain-http loopback URL (a local emulator), sent no credential
		// unless a key is set.
		o := azureml.Options{EndpointURL: t.URL, Region: t.Region, Key: os.Getenv("AZUREML_API_KEY"), HTTPClient: n.http}
		if root, ok := emulatorRoot(t); ok {
			o.EndpointURL = root
		}
		switch {
		case emu != nil:
			o.EndpointURL, o.Anonymous, o.Key, o.AllowInsecureHTTP = emu.URL()+"/azureml/{endpoint}", true, "", true
		case loopbackHTTP(serverURL(t)):
			o.AllowInsecureHTTP, o.Anonymous = true, o.Key == ""
		default:
			if err := inClear(t, serverURL(t), "an Azure credential", true); err != nil {
				return nil, err
			}
		}
		if id := os.Getenv("AZUREML_ENDPOINT_ID"); id != "" && o.Key == "" && !o.Anonymous {
			// An aml_token endpoint: refreshing AML tokens from Azure
			// Resource Manager, asked with the default Entra chain.
			entra, err := azidentity.NewDefaultAzureCredential(nil)
			if err != nil {
				return nil, errcodes.Wrap(err, errcodes.Unauthenticated, "bench: AZUREML_ENDPOINT_ID: no Azure credential for Resource Manager")
			}
			if o.Credential, err = azureml.NewEndpointTokenCredential(entra, id, nil); err != nil {
				return nil, err
			}
		}
		return azureml.New(o)
	},
	cloudreq.ProviderAlibaba: func(_ context.Context, t *bench.Target, emu *emulator.Server, n netOpts) (cloudreq.Adapter, error) {
		// PAI-EAS authenticates with the service token: EAS_TOKEN, over
		// plain http only to a server on this machine (as OPENAI_API_KEY).
		o := paieas.Options{Endpoint: t.URL, Token: os.Getenv("EAS_TOKEN"), HTTPClient: n.http}
		switch {
		case emu != nil:
			o.Endpoint, o.Token, o.AllowInsecureHTTP = emu.URL(), "", true
		case loopbackHTTP(serverURL(t)):
			o.AllowInsecureHTTP = true
		default:
			if err := inClear(t, serverURL(t), "EAS_TOKEN", o.Token != ""); err != nil {
				return nil, err
			}
		}
		if t.Service == paieas.ServiceQueue {
			// The asynchronous service's queue: enqueue, then wait for
			// the result (long polls of a second on the emulator).
			w := paieas.WaitOptions{}
			if emu != nil || loopbackHTTP(serverURL(t)) {
				w.Poll = time.Second
			}
			return paieas.NewQueueAdapter(o, w)
		}
		return paieas.New(o)
	},
	cloudreq.ProviderAWS: func(ctx context.Context, t *bench.Target, emu *emulator.Server, n netOpts) (cloudreq.Adapter, error) {
		o := sagemaker.Options{Region: t.Region, BaseEndpoint: t.URL, HTTPClient: n.http}
		switch {
		case emu != nil:
			o.BaseEndpoint, o.AllowInsecureHTTP = emu.URL(), true
			o.Region = cmpOr(o.Region, "us-east-1")
			o.Credentials = credentials.NewStaticCredentialsProvider("emulator", "emulator", "")
		case loopbackHTTP(t.URL):
			// A local emulator: signed with placeholder keys unless the
			// environment names some (an emulator configured with keys).
			o.AllowInsecureHTTP = true
			o.Region = cmpOr(o.Region, "us-east-1")
			if os.Getenv("AWS_ACCESS_KEY_ID") == "" {
				o.Credentials = credentials.NewStaticCredentialsProvider("emulator", "emulator", "")
			}
		default:
			// SigV4 keeps the secret key, but the access key id and a
			// session token would cross the network in clear.
			if err := inClear(t, t.URL, "AWS credentials", true); err != nil {
				return nil, err
			}
		}
		if t.Service == sagemaker.ServiceAsync {
			return asyncAdapter(ctx, t, o, emu)
		}
		if t.Service == sagemaker.ServiceOpenAI {
			// The OpenAI-compatible route, with bearer tokens minted from
			// the same credentials (the emulator's placeholder keys).
			return sagemaker.NewOpenAI(ctx, sagemaker.OpenAIOptions{Region: o.Region, BaseURL: o.BaseEndpoint,
				Credentials: o.Credentials, AllowInsecureHTTP: o.AllowInsecureHTTP, HTTPClient: n.http})
		}
		return sagemaker.New(ctx, o)
	},
	cloudreq.ProviderGCP: func(ctx context.Context, t *bench.Target, emu *emulator.Server, n netOpts) (cloudreq.Adapter, error) {
		if t.Service == vertex.ServiceOpenAPI {
			// OpenAI-compatible chat over HTTPS with Application Default
			// Credentials; the embedded emulator's route takes no token.
			o := vertex.OpenAPIOptions{Project: t.Project, Location: cmpOr(t.Location, "us-central1"), HTTPClient: n.http}
			if emu != nil {
				o.BaseURL, o.Anonymous = emu.URL()+"/v1/projects/emulator/locations/"+o.Location+"/endpoints/openapi", true
			}
			return vertex.NewOpenAPI(ctx, o)
		}
		if vertexREST(t) {
			return vertexRESTAdapter(ctx, t, emu, n)
		}
		o := vertex.Options{Project: t.Project, Location: t.Location, Endpoint: t.GRPCAddr, ClientOptions: n.grpc}
		if host, _, _ := strings.Cut(t.GRPCAddr, ":"); strings.HasSuffix(host, ".prediction.vertexai.goog") {
			// A dedicated endpoint's DNS name: its calls need the
			// endpoint-id metadata (vertex.Options.DedicatedEndpoint).
			o.Endpoint, o.DedicatedEndpoint = "", t.GRPCAddr
		}
		switch {
		case emu != nil:
			o.Endpoint, o.Insecure = emu.GRPCAddr(), true
			o.Project, o.Location = cmpOr(o.Project, "emulator"), cmpOr(o.Location, "us-central1")
		case loopbackAddr(t.GRPCAddr):
			// A local emulator: plain text, no Google credentials.
			o.Insecure = true
			o.Project, o.Location = cmpOr(o.Project, "emulator"), cmpOr(o.Location, "us-central1")
		}
		return vertex.New(ctx, o)
	},
}

// vertexRESTAdapter builds a Vertex adapter on the REST transport: to the
// target's url (a dedicated endpoint's DNS name when its host is one), the
// embedded emulator's HTTP root, or Google's regional host with
// Application Default Credentials. A url on this machine over plain http
// is an emulator's: no Google credential.
func vertexRESTAdapter(ctx context.Context, t *bench.Target, emu *emulator.Server, n netOpts) (cloudreq.Adapter, error) {
	o := vertex.Options{Project: t.Project, Location: t.Location, Transport: vertex.TransportREST, Endpoint: t.URL, HTTPClient: n.http}
	if u, err := url.Parse(t.URL); err == nil && strings.HasSuffix(u.Hostname(), ".prediction.vertexai.goog") {
		o.Endpoint, o.DedicatedEndpoint = "", t.URL
	}
	switch {
	case emu != nil:
		o.Endpoint, o.Insecure = emu.URL(), true
		o.Project, o.Location = cmpOr(o.Project, "emulator"), cmpOr(o.Location, "us-central1")
	case loopbackHTTP(t.URL):
		o.Insecure = true
		o.Project, o.Location = cmpOr(o.Project, "emulator"), cmpOr(o.Location, "us-central1")
	}
	return vertex.New(ctx, o)
}

// asyncAdapter builds a SageMaker asynchronous inference adapter: results
// are read from S3, the emulator's (its /s3 root) for an emulator target,
// polled every 10 ms there and from 1 s (doubling up to 15 s) in the cloud.
func asyncAdapter(ctx context.Context, t *bench.Target, o sagemaker.Options, emu *emulator.Server) (cloudreq.Adapter, error) {
	var ao sagemaker.AsyncOptions
	switch {
	case emu != nil:
		ao.S3Endpoint = emu.URL() + "/s3"
	case loopbackHTTP(t.URL):
		ao.S3Endpoint = strings.TrimSuffix(t.URL, "/") + "/s3"
	}
	if ao.S3Endpoint != "" {
		ao.Wait = sagemaker.WaitOptions{PollInterval: 10 * time.Millisecond, MaxPollInterval: 10 * time.Millisecond}
	}
	return sagemaker.NewAsync(ctx, o, ao)
}

// benchTransport is the transport of the HTTP adapters: every connection
// a run opened stays in the pool (per host, as many as a run may have
// requests in flight, bench.MaxWorkers), so that a run whose in-flight
// count peaks never closes a connection to open another at its next
// peak: the dials would cost the client CPU just when it is short of it
// (the standard transport keeps 2 per host). A pool never holds more
// connections than the run had calls in flight at once.
var benchTransport = func() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 0
	tr.MaxIdleConnsPerHost = bench.MaxWorkers
	return tr
}()

// benchHTTPClient is the HTTP client of the HTTP adapters of targets
// without a network impairment: one pool for them all. Cleartext requests
// that go direct are made by h1client, on the calling goroutine (a load
// generator's largest client cost with net/http's Transport is the
// hand-offs between its per-connection goroutines); the rest (https,
// proxied) by benchTransport.
var benchHTTPClient = &http.Client{Transport: &h1client.Transport{
	Fallback:            benchTransport,
	Proxy:               benchTransport.Proxy,
	MaxIdleConnsPerHost: bench.MaxWorkers,
	IdleConnTimeout:     benchTransport.IdleConnTimeout,
}}

// stdHTTPClient is benchHTTPClient with net/http's Transport for every
// request (--http-client std).
var stdHTTPClient = &http.Client{Transport: benchTransport}

// netOpts are how a target's adapter reaches the network: the HTTP
// adapters' client and Vertex's extra client options.
type netOpts struct {
	http *http.Client
	grpc []option.ClientOption
}

// netFor returns the target's network options: the shared client, or,
// when the target has a network impairment, a client and a gRPC dialer of
// its own whose connections take it. An impairment that sets no seed takes
// the plan's, so that machines of one merged run, each with its own
// --seed, draw apart.
func (e *environment) netFor(t *bench.Target) (netOpts, error) {
	if t.Network == "" {
		if e.cmd.HTTPClient == httpClientStd {
			return netOpts{http: stdHTTPClient}, nil
		}
		return netOpts{http: benchHTTPClient}, nil
	}
	p, err := impair.Parse(t.Network)
	if err != nil {
		return netOpts{}, errcodes.Wrap(err, errcodes.InvalidParam, "bench: target "+t.Name+": network: "+err.Error())
	}
	if p.Seed == 0 && e.plan != nil {
		p.Seed = e.plan.Seed
	}
	tr, err := p.Transport(benchTransport, nil)
	if err != nil {
		return netOpts{}, errcodes.Wrap(err, errcodes.InvalidParam, "bench: "+err.Error())
	}
	e.mu.Lock()
	e.transports = append(e.transports, tr)
	e.mu.Unlock()
	dial := p.Dialer(nil)
	return netOpts{
		http: &http.Client{Transport: tr},
		grpc: []option.ClientOption{option.WithGRPCDialOption(grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return dial(ctx, "tcp", addr)
		}))},
	}, nil
}

// defaultProvider is the default run's provider: OpenAI-compatible (vLLM's
// own protocol, as in the reference measurements) when built in, else the
// first one that is.
func defaultProvider() string {
	for _, p := range []string{cloudreq.ProviderOpenAI, cloudreq.ProviderAWS, cloudreq.ProviderAzure, cloudreq.ProviderAlibaba, cloudreq.ProviderGCP} {
		if _, ok := adapterFactories[p]; ok {
			return p
		}
	}
	return cloudreq.ProviderOpenAI
}

func (e *environment) adapter(ctx context.Context, t *bench.Target) (cloudreq.Adapter, error) {
	f, ok := adapterFactories[t.Provider]
	if !ok {
		return nil, errcodes.Errorf(errcodes.InvalidParam, "bench: provider %q is not built into this binary", t.Provider)
	}
	var emu *emulator.Server
	if e.emulated(t) {
		emu = e.emu
	}
	n, err := e.netFor(t)
	if err != nil {
		return nil, err
	}
	if emu != nil && e.trace != nil {
		n = e.trace.wrap(t.Name, n)
	}
	ad, err := f(ctx, t, emu, n)
	if err != nil {
		var ce *errcodes.Error
		if errors.As(err, &ce) {
			return nil, ce
		}
		return nil, errcodes.Wrap(err, errcodes.InvalidParam, "bench: "+t.Provider+" adapter")
	}
	return ad, nil
}

// httpClientStd is the --http-client value for net/http's Transport
// (the default, sync, is h1client's).
const httpClientStd = "std"
