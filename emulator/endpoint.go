package emulator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"
)

// Provider names one wire protocol the emulator serves.
type Provider string

// The providers served.
const (
	SageMaker Provider = "sagemaker"
	AzureML   Provider = "azureml"
	Vertex    Provider = "vertex"
	PAIEAS    Provider = "pai-eas"
	OpenAI    Provider = "openai"
)

// Providers lists every provider, in a stable order.
func Providers() []Provider { return []Provider{SageMaker, AzureML, Vertex, PAIEAS, OpenAI} }

// ParseProvider accepts a provider name or one of its aliases (the
// cloudreq provider and service names: aws, azure, gcp, alibaba,
// openai-compatible).
func ParseProvider(s string) (Provider, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "sagemaker", "aws":
		return SageMaker, nil
	case "azureml", "azure":
		return AzureML, nil
	case "vertex", "gcp":
		return Vertex, nil
	case "pai-eas", "paieas", "eas", "alibaba":
		return PAIEAS, nil
	case "openai", "openai-compatible", "vllm":
		return OpenAI, nil
	}
	return "", fmt.Errorf("unknown provider %q (known: sagemaker, azureml, vertex, pai-eas, openai)", s)
}

// ColdMode says what an endpoint does with requests that arrive while it
// is starting from zero.
type ColdMode string

// The cold modes.
const (
	// ColdHold holds the request until the model is ready, then serves it
	// (the response says X-Emulator-Cold-Start: true).
	ColdHold ColdMode = "hold"
	// ColdReject answers with the provider's not-ready signal until the
	// model is ready (SageMaker ModelNotReadyException, Azure ML 503,
	// Vertex UNAVAILABLE, PAI-EAS 503, OpenAI-compatible 503).
	ColdReject ColdMode = "reject"
)

// Credentials are what an endpoint accepts. Empty fields accept anything.
type Credentials struct {
	// AWSAccessKeyID and AWSSecretAccessKey, when set, make the SageMaker
	// routes verify the request's SigV4 signature.
	AWSAccessKeyID string `json:"aws_access_key_id,omitempty"`
	// AWSSecretAccessKey is the secret for AWSAccessKeyID.
	AWSSecretAccessKey string `json:"aws_secret_access_key,omitempty"`
	// Keys, when set, are the accepted keys and tokens: Azure ML and
	// OpenAI-compatible `Authorization: Bearer <key>`, Vertex bearer tokens
	// (HTTP header or gRPC metadata), and PAI-EAS tokens (raw, Bearer, or
	// as the HMAC key of an EAS signature).
	Keys []string `json:"keys,omitempty"`
}

// String hides the secrets.
func (c Credentials) String() string {
	return fmt.Sprintf("Credentials{aws:%t keys:%d}", c.AWSAccessKeyID != "", len(c.Keys))
}

// MarshalJSON writes the credentials with every secret replaced by
// "<redacted>", so that GET /emulator/endpoints and logs never show them.
func (c Credentials) MarshalJSON() ([]byte, error) {
	type out struct {
		AWSAccessKeyID     string   `json:"aws_access_key_id,omitempty"`
		AWSSecretAccessKey string   `json:"aws_secret_access_key,omitempty"`
		Keys               []string `json:"keys,omitempty"`
	}
	var o out
	if c.AWSAccessKeyID != "" {
		o.AWSAccessKeyID, o.AWSSecretAccessKey = redacted, redacted
	}
	for range c.Keys {
		o.Keys = append(o.Keys, redacted)
	}
	return json.Marshal(o)
}

const redacted = "<redacted>"

// Endpoint is one emulated deployment.
type Endpoint struct {
	// Name is the endpoint's name: the SageMaker endpoint, Azure ML
	// endpoint, Vertex endpoint or publisher model, PAI-EAS service and
	// OpenAI-compatible model.
	Name string `json:"name"`
	// Providers lists the protocols that serve it; empty means all.
	Providers []Provider `json:"providers,omitempty"`
	// Profile is the latency and fault model.
	Profile Profile `json:"profile"`
	// Credentials are what the endpoint accepts.
	Credentials Credentials `json:"credentials"`
	// IdleWindowMs is the scale-to-zero window: after this long with no
	// request (emulated ms), the next request cold-starts. 0 never scales to zero.
	IdleWindowMs float64 `json:"idle_window_ms,omitempty"`
	// StartCold makes the endpoint start scaled to zero.
	StartCold bool `json:"start_cold,omitempty"`
	// ColdMode is what a cold start does to requests (default hold).
	ColdMode ColdMode `json:"cold_mode,omitempty"`
	// SageMaker is the endpoint's shape under SageMaker: its production
	// variants, multi-model mode and inference components.
	SageMaker SageMakerEndpoint `json:"sagemaker,omitzero"`
}

// clone returns e with its own copies of every slice, map and pointer.
func (e Endpoint) clone() Endpoint {
	e.Providers = slices.Clone(e.Providers)
	e.Credentials.Keys = slices.Clone(e.Credentials.Keys)
	e.Profile = e.Profile.clone()
	e.SageMaker = e.SageMaker.clone()
	return e
}

// serves reports whether the endpoint is served under provider p.
func (e Endpoint) serves(p Provider) bool {
	return len(e.Providers) == 0 || slices.Contains(e.Providers, p)
}

// Validate reports the first invalid field.
func (e Endpoint) Validate() error {
	if e.Name == "" {
		return errors.New("endpoint: name is required")
	}
	if strings.ContainsAny(e.Name, "/?#: ") {
		return fmt.Errorf("endpoint %q: name must not contain '/', '?', '#', ':' or spaces", e.Name)
	}
	for _, p := range e.Providers {
		if _, err := ParseProvider(string(p)); err != nil {
			return fmt.Errorf("endpoint %q: %w", e.Name, err)
		}
	}
	switch e.ColdMode {
	case "", ColdHold, ColdReject:
	default:
		return fmt.Errorf("endpoint %q: cold_mode must be %q or %q", e.Name, ColdHold, ColdReject)
	}
	if math.IsNaN(e.IdleWindowMs) || math.IsInf(e.IdleWindowMs, 0) || e.IdleWindowMs < 0 {
		return fmt.Errorf("endpoint %q: idle_window_ms must be finite and >= 0", e.Name)
	}
	if (e.Credentials.AWSAccessKeyID == "") != (e.Credentials.AWSSecretAccessKey == "") {
		return fmt.Errorf("endpoint %q: aws_access_key_id and aws_secret_access_key go together", e.Name)
	}
	if err := e.SageMaker.validate(); err != nil {
		return fmt.Errorf("endpoint %q: sagemaker: %w", e.Name, err)
	}
	return e.Profile.Validate()
}

var (
	errQueueFull = errors.New("queue full")
	errClosed    = errors.New("emulator closed")
)

// endpoint is an Endpoint's runtime state.
type endpoint struct {
	Endpoint
	prof  Profile
	scale float64
	seed  uint64
	seq   seqCounter

	slots chan struct{}

	mu       sync.Mutex
	waiting  int
	active   int
	inflight int
	lastSeen time.Time // last arrival or completion
	readyAt  time.Time // model ready (after a cold start)
	scaled0  bool      // scaled to zero
	tokens   float64   // throttle bucket
	refillAt time.Time

	cache *prefixCache // nil: no prefix cache
	kv    *kvCache
}

// seqCounter hands out request sequence numbers.
type seqCounter struct {
	mu sync.Mutex
	n  uint64
}

func (c *seqCounter) next() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return c.n
}

func newEndpoint(e Endpoint, scale float64, seed uint64) *endpoint {
	p := e.Profile.withDefaults()
	h := fnv.New64a()
	_, _ = h.Write([]byte(e.Name))
	ep := &endpoint{
		Endpoint: e,
		prof:     p,
		scale:    scale,
		seed:     seed ^ h.Sum64(),
		slots:    make(chan struct{}, p.Slots),
		scaled0:  e.StartCold,
		lastSeen: time.Now(),
		kv:       newKVCache(p.KVCacheTokens),
	}
	if p.Throttle != nil {
		ep.tokens = p.Throttle.Burst
		ep.refillAt = time.Now()
	}
	if p.PrefixCacheTokens > 0 {
		ep.cache = newPrefixCache(p.PrefixCacheTokens)
	}
	return ep
}

// rng returns the deterministic generator of request number n: the set of
// draws does not depend on the order in which concurrent requests arrive.
func (e *endpoint) rng(n uint64) *rand.Rand {
	return rand.New(rand.NewPCG(e.seed, n))
}

// scaled converts emulated milliseconds to a real duration.
func (e *endpoint) scaled(ms float64) time.Duration {
	v := ms * e.scale * float64(time.Millisecond)
	if !(v > 0) {
		return 0
	}
	return time.Duration(math.Min(v, float64(24*time.Hour)))
}

// takeToken spends one throttle token; when none is left it returns the
// real time until the next one.
func (e *endpoint) takeToken(now time.Time) (time.Duration, bool) {
	t := e.prof.Throttle
	if t == nil {
		return 0, true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	rate := t.RatePerSec / e.scale // tokens per real second (+Inf at a tiny scale)
	// A caller that read the clock before the last refill adds nothing
	// (and takes nothing away).
	if el := now.Sub(e.refillAt); el > 0 {
		e.tokens = math.Min(t.Burst, e.tokens+el.Seconds()*rate)
		e.refillAt = now
	}
	if e.tokens >= 1 {
		e.tokens--
		return 0, true
	}
	return time.Duration((1 - e.tokens) / rate * float64(time.Second)), false
}

// coldState is what arrival finds about the model.
type coldState struct {
	cold    bool          // the model is (or is being) brought up
	wait    time.Duration // until it is ready
	started bool          // this arrival triggered the start
}

// arrive registers an arrival and tells whether it meets a cold model.
// coldMs is the sampled setup time, used when this arrival starts one.
func (e *endpoint) arrive(now time.Time, coldMs float64) coldState {
	e.mu.Lock()
	defer e.mu.Unlock()
	var st coldState
	idle := e.IdleWindowMs > 0 && e.inflight == 0 && now.Sub(e.lastSeen) > e.scaled(e.IdleWindowMs)
	if (e.scaled0 || idle) && !now.Before(e.readyAt) {
		e.scaled0 = false
		e.readyAt = now.Add(e.scaled(coldMs))
		st.started = true
	}
	if now.Before(e.readyAt) {
		st.cold = true
		st.wait = e.readyAt.Sub(now)
	}
	e.inflight++
	e.lastSeen = now
	return st
}

// leave registers the end of a request counted by arrive.
func (e *endpoint) leave() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.inflight--
	e.lastSeen = time.Now()
}

// acquire waits for a concurrency slot and returns how many requests are
// being served, this one included.
func (e *endpoint) acquire(ctx context.Context, closed <-chan struct{}) (int, error) {
	select {
	case e.slots <- struct{}{}:
		return e.admitted(), nil
	default:
	}
	e.mu.Lock()
	if e.prof.MaxQueue < 0 || e.waiting >= e.prof.MaxQueue {
		e.mu.Unlock()
		return 0, errQueueFull
	}
	e.waiting++
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.waiting--
		e.mu.Unlock()
	}()
	select {
	case e.slots <- struct{}{}:
		return e.admitted(), nil
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-closed:
		return 0, errClosed
	}
}

func (e *endpoint) admitted() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.active++
	return e.active
}

// release frees a slot taken by acquire.
func (e *endpoint) release() {
	e.mu.Lock()
	e.active--
	e.mu.Unlock()
	<-e.slots
}

// load returns the requests being served and waiting.
func (e *endpoint) load() (active, waiting int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.active, e.waiting
}
