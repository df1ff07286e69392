package telemetry

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// ServiceName is the default service.name of the resource the export
// helpers describe; OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override it.
const ServiceName = "cloudinfer"

// PrometheusPath is where ServePrometheus serves the metrics.
const PrometheusPath = "/metrics"

func newResource(ctx context.Context) (*resource.Resource, error) {
	return resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", ServiceName)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
}

// Prometheus is a MeterProvider whose metrics are served over HTTP in the
// Prometheus exposition format, through the OpenTelemetry Prometheus
// exporter and a registry of its own (the process's default registry is
// left alone).
type Prometheus struct {
	// MeterProvider is what to give Options.MeterProvider.
	MeterProvider *sdkmetric.MeterProvider
	srv           *http.Server
	addr          string
	served        chan error
}

// ServePrometheus listens on addr (":9464", "127.0.0.1:0", …) and serves
// the metrics recorded with the returned Prometheus's MeterProvider at
// PrometheusPath until Shutdown. ctx bounds only the listen.
func ServePrometheus(ctx context.Context, addr string) (*Prometheus, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, errcodes.Wrap(err, errcodes.Internal, "telemetry: prometheus exporter: "+err.Error())
	}
	res, err := newResource(ctx)
	if err != nil {
		return nil, errcodes.Wrap(err, errcodes.InvalidParam, "telemetry: resource: "+err.Error())
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, errcodes.Wrap(err, errcodes.InvalidParam, "telemetry: cannot listen for Prometheus on "+addr+": "+err.Error())
	}
	mux := http.NewServeMux()
	mux.Handle(PrometheusPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	p := &Prometheus{
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithResource(res)),
		srv:           &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		addr:          ln.Addr().String(),
		served:        make(chan error, 1),
	}
	go func() {
		p.served <- p.srv.Serve(ln)
		close(p.served) // a second Shutdown must not wait for a second result
	}()
	return p, nil
}

// Addr returns the address the server listens on (with the port chosen,
// when addr asked for port 0).
func (p *Prometheus) Addr() string { return p.addr }

// URL returns the metrics URL, "http://ADDR/metrics".
func (p *Prometheus) URL() string { return "http://" + p.addr + PrometheusPath }

// Shutdown stops the server, waiting for scrapes in progress until ctx
// ends, then shuts the MeterProvider down. Calling it again returns at
// once (with the errors of stopping what is already stopped).
func (p *Prometheus) Shutdown(ctx context.Context) error {
	err := p.srv.Shutdown(ctx)
	if serr := <-p.served; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return errors.Join(err, p.MeterProvider.Shutdown(ctx))
}

// otlpHeaderVars are the environment variables whose headers the OTLP
// exporters send with every export.
var otlpHeaderVars = []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_METRICS_HEADERS"}

// OTLPOptions configures OTLP.
type OTLPOptions struct {
	// Headers are sent with every export (a collector's API key, say).
	// They are never logged, and never sent over plain HTTP unless
	// AllowInsecureHeaders is set (a collector on loopback, say); nor are
	// those of the OTEL_EXPORTER_OTLP_*HEADERS variables, which the
	// exporters read themselves.
	Headers map[string]string
	// AllowInsecureHeaders permits Headers over a plain-HTTP endpoint.
	AllowInsecureHeaders bool
	// Interval is the metric export interval (default 10 s). Shutdown
	// exports what is left.
	Interval time.Duration
	// Timeout bounds one export (default 10 s).
	Timeout time.Duration
}

// Providers is a TracerProvider and a MeterProvider that export over OTLP.
// Give them to Options; call Shutdown at exit to flush what is buffered.
type Providers struct {
	TracerProvider *sdktrace.TracerProvider
	MeterProvider  *sdkmetric.MeterProvider
}

// Shutdown flushes and stops both providers, concurrently, so that a trace
// backend that does not answer cannot use up ctx before the final metric
// export is made; it returns both providers' errors, joined. A nil
// provider (a Providers literal that sets only one) is skipped.
func (p *Providers) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	terr := make(chan error, 1)
	if tp := p.TracerProvider; tp != nil {
		go func() { terr <- tp.Shutdown(ctx) }()
	} else {
		terr <- nil
	}
	var merr error
	if p.MeterProvider != nil {
		merr = p.MeterProvider.Shutdown(ctx)
	}
	return errors.Join(<-terr, merr)
}

// OTLP returns providers that export spans and metrics over OTLP/HTTP
// (protobuf) to endpoint: a URL ("http://collector:4318",
// "https://otlp.example.com/base"), under which /v1/traces and /v1/metrics
// are used, or a bare "host:port", which means plain HTTP. The endpoint
// alone decides between TLS and plain HTTP: the OTEL_EXPORTER_OTLP_*ENDPOINT
// and OTEL_EXPORTER_OTLP_*INSECURE variables cannot turn an https endpoint
// into a plain-HTTP one.
func OTLP(ctx context.Context, endpoint string, optFns ...func(*OTLPOptions)) (*Providers, error) {
	var o OTLPOptions
	for _, f := range optFns {
		f(&o)
	}
	if o.Interval <= 0 {
		o.Interval = 10 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	host, base, insecure, err := parseOTLPEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	if insecure && len(o.Headers) > 0 && !o.AllowInsecureHeaders {
		return nil, errcodes.New(errcodes.InvalidParam,
			"telemetry: OTLP headers may hold credentials and the endpoint is plain HTTP; use https or set AllowInsecureHeaders")
	}
	if insecure && !o.AllowInsecureHeaders {
		// The exporters add the headers of these variables themselves.
		for _, v := range otlpHeaderVars {
			if os.Getenv(v) != "" {
				return nil, errcodes.Errorf(errcodes.InvalidParam,
					"telemetry: %s may hold credentials and the OTLP endpoint is plain HTTP; use https, unset it, or set AllowInsecureHeaders", v)
			}
		}
	}
	res, rerr := newResource(ctx)
	if rerr != nil {
		return nil, errcodes.Wrap(rerr, errcodes.InvalidParam, "telemetry: resource: "+rerr.Error())
	}

	// The full URL, not a host and a path: WithEndpointURL also sets
	// whether the exporter uses TLS, from the scheme, overriding
	// OTEL_EXPORTER_OTLP_*ENDPOINT and OTEL_EXPORTER_OTLP_*INSECURE, which
	// would otherwise send an https endpoint's headers over plain HTTP.
	topts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(otlpURL(host, base, "/v1/traces", insecure)),
		otlptracehttp.WithTimeout(o.Timeout)}
	mopts := []otlpmetrichttp.Option{otlpmetrichttp.WithEndpointURL(otlpURL(host, base, "/v1/metrics", insecure)),
		otlpmetrichttp.WithTimeout(o.Timeout)}
	if len(o.Headers) > 0 {
		topts = append(topts, otlptracehttp.WithHeaders(o.Headers))
		mopts = append(mopts, otlpmetrichttp.WithHeaders(o.Headers))
	}
	texp, terr := otlptracehttp.New(ctx, topts...)
	if terr != nil {
		return nil, errcodes.Wrap(terr, errcodes.InvalidParam, "telemetry: OTLP trace exporter: "+terr.Error())
	}
	mexp, merr := otlpmetrichttp.New(ctx, mopts...)
	if merr != nil {
		_ = texp.Shutdown(ctx)
		return nil, errcodes.Wrap(merr, errcodes.InvalidParam, "telemetry: OTLP metric exporter: "+merr.Error())
	}
	return &Providers{
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithBatcher(texp), sdktrace.WithResource(res)),
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
			sdkmetric.WithReader(sdkmetric.NewPeriodicReader(mexp, sdkmetric.WithInterval(o.Interval)))),
	}, nil
}

// otlpURL is the URL of one signal's OTLP endpoint: http for an insecure
// endpoint, https otherwise.
func otlpURL(host, base, signal string, insecure bool) string {
	u := url.URL{Scheme: "https", Host: host, Path: base + signal}
	if insecure {
		u.Scheme = "http"
	}
	return u.String()
}

// parseOTLPEndpoint splits an OTLP endpoint into host:port, base path and
// whether it is plain HTTP. Error messages never quote the endpoint's user
// info or query.
func parseOTLPEndpoint(endpoint string) (host, base string, insecure bool, err error) {
	bad := func(why string) (string, string, bool, error) {
		return "", "", false, errcodes.New(errcodes.InvalidParam, "telemetry: OTLP endpoint "+why+
			` (want "http://host:4318", "https://host/base" or "host:port")`)
	}
	endpoint = strings.TrimSpace(endpoint)
	if endpoint == "" {
		return bad("is empty")
	}
	if !strings.Contains(endpoint, "://") {
		if _, _, err := net.SplitHostPort(endpoint); err != nil {
			return bad("has no port")
		}
		return endpoint, "", true, nil
	}
	u, perr := url.Parse(endpoint)
	if perr != nil || u.Host == "" {
		return bad("is not a valid URL")
	}
	switch u.Scheme {
	case "http":
		insecure = true
	case "https":
	default:
		return bad("has scheme " + u.Scheme)
	}
	return u.Host, strings.TrimSuffix(u.Path, "/"), insecure, nil
}
