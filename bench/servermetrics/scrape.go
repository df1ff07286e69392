package servermetrics

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// Scraping defaults and bounds.
const (
	// DefaultInterval is the time between two scrapes during the run.
	DefaultInterval = time.Second
	// MinInterval is the shortest interval accepted.
	MinInterval = 50 * time.Millisecond
	// DefaultTimeout bounds one scrape.
	DefaultTimeout = 2 * time.Second
	// MaxBody bounds one exposition's size.
	MaxBody = 32 << 20
)

// Options configures a Scraper.
type Options struct {
	// URL is the metrics endpoint (http or https).
	URL string
	// Interval is the time between scrapes during the run (default
	// DefaultInterval, at least MinInterval).
	Interval time.Duration
	// Timeout bounds each scrape (default DefaultTimeout). A scrape that
	// takes longer is a failed scrape; the next tick scrapes again.
	Timeout time.Duration
	// Models keeps only the series of these models (see Reducer.Models).
	Models []string
	// Client is the HTTP client; nil: one of its own, with its own
	// connection, apart from the benchmark's.
	Client *http.Client
}

// Scraper scrapes one server's metrics: a baseline when started, one at
// Mark (the measured window's start), every Interval after it and one at
// Stop. Its failures are warnings in the Summary, never errors: an
// unreachable, slow or non-Prometheus endpoint does not fail a run.
type Scraper struct {
	opts   Options
	source string
	client *http.Client
	own    *http.Transport

	mu       sync.Mutex
	red      *Reducer
	ok, bad  int
	total    time.Duration
	maxCost  time.Duration
	bytes    int64
	problems map[string]int // first message of each kind → count
	kinds    []string

	stop chan struct{}
	done chan struct{}
}

// Start makes the baseline scrape and returns the scraper. It fails only
// for a URL that cannot be one (InvalidParam).
func Start(ctx context.Context, opts Options) (*Scraper, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errcodes.Errorf(errcodes.InvalidParam, "servermetrics: %q is not an http(s) URL", PublicURL(opts.URL))
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	opts.Interval = max(opts.Interval, MinInterval)
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	s := &Scraper{opts: opts, source: PublicURL(opts.URL), red: NewReducer(opts.Models...), problems: map[string]int{}}
	s.client = opts.Client
	if s.client == nil {
		s.own = &http.Transport{Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 1, IdleConnTimeout: 30 * time.Second}
		s.client = &http.Client{Transport: s.own}
	}
	if fams, at, ok := s.scrape(ctx); ok {
		s.mu.Lock()
		s.red.Add(at, fams)
		s.mu.Unlock()
	}
	return s, nil
}

// Source is the scraped URL without credentials.
func (s *Scraper) Source() string { return s.source }

// Mark scrapes at the measured window's start and starts the periodic
// scrapes. A failed scrape here leaves the window to start at the next
// that succeeds.
func (s *Scraper) Mark(ctx context.Context) {
	s.scrapeInto(ctx, true)
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.done)
		tk := time.NewTicker(s.opts.Interval)
		defer tk.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-ctx.Done():
				return
			case <-tk.C:
				s.scrapeInto(context.WithoutCancel(ctx), false)
			}
		}
	}()
}

// Stop ends the periodic scrapes, makes the last one and returns the
// window's Summary (nil if Mark was never called). It closes the
// scraper's own connection.
func (s *Scraper) Stop(ctx context.Context) *Summary {
	if s.stop == nil {
		s.close()
		return nil
	}
	close(s.stop)
	<-s.done
	s.scrapeInto(context.WithoutCancel(ctx), false)
	s.close()
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := s.red.Summary()
	if sum == nil {
		sum = &Summary{}
	}
	sum.Source = s.source
	sum.Scrapes, sum.Failed = s.ok, s.bad
	if n := s.ok + s.bad; n > 0 {
		sum.Cost = Cost{Mean: s.total / time.Duration(n), Max: s.maxCost, Bytes: s.bytes}
	}
	for _, k := range s.kinds {
		msg := k
		if n := s.problems[k]; n > 1 {
			msg = fmt.Sprintf("%s (%d scrapes)", k, n)
		}
		sum.Warnings = append(sum.Warnings, msg)
	}
	if n, at := s.red.Restarts(); n > 0 {
		sum.Warnings = append(sum.Warnings, fmt.Sprintf("server metrics at %s: the server restarted %d time(s) during the run (counters reset at %s): deltas count from zero after each", s.source, n, strings.Join(at, ", ")))
	}
	if s.ok > 0 && len(sum.Families) == 0 && s.red.marked {
		sum.Warnings = append(sum.Warnings, fmt.Sprintf("server metrics at %s: no series (for this target's model)", s.source))
	}
	if !s.red.marked {
		sum.Warnings = append(sum.Warnings, fmt.Sprintf("server metrics at %s: no scrape succeeded during the run", s.source))
	}
	return sum
}

func (s *Scraper) close() {
	if s.own != nil {
		s.own.CloseIdleConnections()
	}
}

// scrapeInto scrapes and reduces; mark starts the window (or, if it has
// not started yet, the first scrape that succeeds does).
func (s *Scraper) scrapeInto(ctx context.Context, mark bool) {
	fams, at, ok := s.scrape(ctx)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if mark || !s.red.marked {
		s.red.Mark(at, fams)
		return
	}
	s.red.Add(at, fams)
}

// scrape fetches and parses one exposition; at is the response's time.
func (s *Scraper) scrape(ctx context.Context) (map[string]*dto.MetricFamily, time.Time, bool) {
	t0 := time.Now()
	fams, n, err := s.fetch(ctx)
	cost := time.Since(t0)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total += cost
	s.maxCost = max(s.maxCost, cost)
	s.bytes += n
	if err != nil {
		s.bad++
		msg := fmt.Sprintf("server metrics at %s: %s", s.source, err)
		if _, ok := s.problems[msg]; !ok {
			s.kinds = append(s.kinds, msg)
		}
		s.problems[msg]++
		return nil, time.Time{}, false
	}
	s.ok++
	return fams, t0.Add(cost / 2), true
}

func (s *Scraper) fetch(ctx context.Context) (map[string]*dto.MetricFamily, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.opts.URL, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("bad URL")
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4;q=1,*/*;q=0.1")
	resp, err := s.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, 0, fmt.Errorf("no answer within %v", s.opts.Timeout)
		}
		return nil, 0, fmt.Errorf("unreachable (%s)", transportError(err))
	}
	defer resp.Body.Close()
	cr := &countReader{r: io.LimitReader(resp.Body, MaxBody)}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, cr)
		return nil, cr.n, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	fams, err := Parse(cr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, cr.n, fmt.Errorf("no answer within %v", s.opts.Timeout)
		}
		return nil, cr.n, fmt.Errorf("not a Prometheus exposition (%s)", firstLine(err.Error()))
	}
	return fams, cr.n, nil
}

// transportError is a transport failure's message without the URL (which
// may hold credentials).
func transportError(err error) string {
	var ue *url.Error
	if e, ok := err.(*url.Error); ok {
		ue = e
		err = ue.Err
	}
	return firstLine(err.Error())
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// PublicURL returns u without user info, fragment or query values (they
// may be credentials).
func PublicURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	out := p.Scheme + "://" + p.Host + p.EscapedPath()
	if p.RawQuery != "" {
		var names []string
		for k := range p.Query() {
			names = append(names, k+"=[redacted]")
		}
		out += "?" + strings.Join(names, "&")
	}
	return out
}

// Request is one request as the server's own per-request record tells it
// (the cloudinfer emulator's GET /emulator/requests): times in
// milliseconds from the request's arrival.
type Request struct {
	ID string `json:"id"`
	// Outcome is "ok" for a request answered in full.
	Outcome      string  `json:"outcome"`
	Cold         bool    `json:"cold"`
	ColdStartMs  float64 `json:"cold_start_ms"`
	QueueMs      float64 `json:"queue_ms"`
	PrefillMs    float64 `json:"prefill_ms"`
	FirstTokenMs float64 `json:"first_token_ms"`
	LastTokenMs  float64 `json:"last_token_ms"`
	TokensSent   int     `json:"tokens_sent"`
}

// RecordsURL returns the emulator's records URL beside its metrics URL
// (ROOT/metrics → ROOT/emulator/requests).
func RecordsURL(metricsURL string) string {
	return strings.TrimSuffix(metricsURL, "/metrics") + "/emulator/requests"
}

// FetchRequests reads a cloudinfer emulator's per-request records, by id.
func FetchRequests(ctx context.Context, client *http.Client, recordsURL string, timeout time.Duration) (map[string]Request, error) {
	if client == nil {
		client = http.DefaultClient
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, recordsURL, nil)
	if err != nil {
		return nil, errcodes.Errorf(errcodes.InvalidParam, "servermetrics: records URL %s", PublicURL(recordsURL))
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, errcodes.Errorf(errcodes.Unavailable, "servermetrics: records at %s: %s", PublicURL(recordsURL), transportError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, errcodes.Errorf(errcodes.Unavailable, "servermetrics: records at %s: HTTP %d", PublicURL(recordsURL), resp.StatusCode)
	}
	var recs []Request
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8*MaxBody)).Decode(&recs); err != nil {
		return nil, errcodes.Errorf(errcodes.InvalidParam, "servermetrics: records at %s: %s", PublicURL(recordsURL), firstLine(err.Error()))
	}
	out := make(map[string]Request, len(recs))
	for _, r := range recs {
		out[r.ID] = r
	}
	return out, nil
}
