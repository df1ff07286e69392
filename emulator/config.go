package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// configFile is the on-disk configuration (see the package documentation
// for the schema). Profiles and endpoints are decoded one by one, so that
// an error names the entry.
type configFile struct {
	TimeScale float64 `json:"time_scale"`
	Seed      uint64  `json:"seed"`
	SpinWaits int     `json:"spin_waits"`
	// ReadBodyTimeoutMs and WriteStallTimeoutMs are Options'
	// ReadBodyTimeout and WriteStallTimeout in milliseconds.
	ReadBodyTimeoutMs   float64           `json:"read_body_timeout_ms"`
	WriteStallTimeoutMs float64           `json:"write_stall_timeout_ms"`
	BuiltinEndpoints    bool              `json:"builtin_endpoints"`
	Profiles            []json.RawMessage `json:"profiles"`
	Endpoints           []json.RawMessage `json:"endpoints"`
}

type endpointFile struct {
	Name         string          `json:"name"`
	Providers    []string        `json:"providers"`
	Profile      json.RawMessage `json:"profile"`
	Credentials  Credentials     `json:"credentials"`
	IdleWindowMs float64         `json:"idle_window_ms"`
	StartCold    bool            `json:"start_cold"`
	ColdMode     ColdMode        `json:"cold_mode"`
	// SageMaker is the endpoint's shape under SageMaker (variants,
	// multi_model, inference_components).
	SageMaker SageMakerEndpoint `json:"sagemaker"`
}

// profileFile is a profile in a config: a Profile's fields plus "base",
// the profile it starts from.
type profileFile struct {
	Base string `json:"base"`
	Profile
}

// profileHead is what a profile object says about where it starts: its
// base and name, and which of the fields that decide it it sets.
type profileHead struct {
	Base         string          `json:"base"`
	Name         string          `json:"name"`
	TTFTMs       json.RawMessage `json:"ttft_ms"`
	TPOTMs       json.RawMessage `json:"tpot_ms"`
	OutputTokens json.RawMessage `json:"output_tokens"`
	Slots        json.RawMessage `json:"slots"`
	MaxQueue     json.RawMessage `json:"max_queue"`
}

func readHead(raw json.RawMessage) (profileHead, error) {
	var h profileHead
	if err := json.Unmarshal(raw, &h); err != nil {
		return h, fmt.Errorf("must be a profile name or object: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return h, nil
}

// LoadConfig reads a JSON or YAML configuration file into Options
// (TimeScale and Seed are 0 where the file does not set them).
func LoadConfig(path string) (Options, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Options{}, errcodes.Wrap(err, errcodes.InvalidParam, "emulator: read config: "+err.Error())
	}
	opts, err := ParseConfig(b)
	if err != nil {
		return Options{}, errcodes.Wrap(err, errcodes.InvalidParam, fmt.Sprintf("emulator: config %s: %v", filepath.Base(path), err))
	}
	return opts, nil
}

// ParseConfig parses a JSON or YAML configuration (JSON is YAML). Errors
// name the offending key, e.g. "profiles[1].ttft_ms.mean" or
// "endpoints[0]: unknown field ...".
func ParseConfig(data []byte) (Options, error) {
	js, err := configJSON(data)
	if err != nil {
		return Options{}, err
	}
	var f configFile
	if err := strictJSON(js, &f); err != nil {
		return Options{}, err
	}
	if f.TimeScale < 0 {
		return Options{}, fmt.Errorf("time_scale must be > 0 (0 or absent means 1), got %v", f.TimeScale)
	}
	profiles := map[string]Profile{}
	for _, p := range BuiltinProfiles() {
		profiles[p.Name] = p
	}
	// The names of the file's profiles, to tell a base defined below from an unknown one.
	names := make([]string, len(f.Profiles))
	for i, raw := range f.Profiles {
		if h, err := readHead(raw); err == nil {
			names[i] = h.Name
		}
	}
	defined := map[string]int{}
	for i, raw := range f.Profiles {
		if h, err := readHead(raw); err == nil && h.Base != "" {
			if _, ok := profiles[h.Base]; !ok {
				switch {
				case h.Base == h.Name:
					return Options{}, fmt.Errorf("profiles[%d]: profile %q cannot be its own base", i, h.Name)
				case slices.Contains(names[i+1:], h.Base):
					return Options{}, fmt.Errorf("profiles[%d]: base profile %q is defined below; a base must be a built-in or a profile defined above", i, h.Base)
				}
			}
		}
		p, err := decodeProfile(raw, profiles, "")
		if err != nil {
			return Options{}, fmt.Errorf("profiles[%d]: %w", i, err)
		}
		if p.Name == "" {
			return Options{}, fmt.Errorf("profiles[%d]: name is required", i)
		}
		if j, dup := defined[p.Name]; dup {
			return Options{}, fmt.Errorf("profiles[%d]: profile %q is defined twice (also profiles[%d])", i, p.Name, j)
		}
		defined[p.Name] = i
		profiles[p.Name] = p
	}
	opts := Options{TimeScale: f.TimeScale, Seed: f.Seed, SpinWaits: f.SpinWaits,
		ReadBodyTimeout: msDuration(f.ReadBodyTimeoutMs), WriteStallTimeout: msDuration(f.WriteStallTimeoutMs)}
	if f.BuiltinEndpoints || len(f.Endpoints) == 0 {
		opts.Endpoints = DefaultEndpoints()
	}
	seen := map[string]int{}
	for i, raw := range f.Endpoints {
		var e endpointFile
		if err := strictJSON(raw, &e); err != nil {
			return Options{}, fmt.Errorf("endpoints[%d]: %w", i, err)
		}
		if j, dup := seen[e.Name]; dup && e.Name != "" {
			return Options{}, fmt.Errorf("endpoints[%d]: endpoint %q is defined twice (also endpoints[%d])", i, e.Name, j)
		}
		seen[e.Name] = i
		ep := Endpoint{Name: e.Name, Credentials: e.Credentials, IdleWindowMs: e.IdleWindowMs, StartCold: e.StartCold, ColdMode: e.ColdMode,
			SageMaker: e.SageMaker}
		for _, p := range e.Providers {
			pv, err := ParseProvider(p)
			if err != nil {
				return Options{}, fmt.Errorf("endpoints[%d] (%s): %w", i, e.Name, err)
			}
			ep.Providers = append(ep.Providers, pv)
		}
		prof, err := resolveProfile(e.Profile, e.Name, profiles)
		if err != nil {
			return Options{}, fmt.Errorf("endpoints[%d] (%s): profile: %w", i, e.Name, err)
		}
		ep.Profile = prof
		if err := ep.Validate(); err != nil {
			return Options{}, fmt.Errorf("endpoints[%d]: %w", i, err)
		}
		opts.Endpoints = replaceEndpoint(opts.Endpoints, ep)
	}
	return opts, nil
}

// configJSON returns the configuration as JSON: JSON as it is, YAML
// converted. YAML's .nan and .inf have no JSON form; the first one found is
// reported by its key.
func configJSON(data []byte) ([]byte, error) {
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		return data, nil
	}
	var tree any
	if err := yaml.Unmarshal(data, &tree); err == nil {
		if path, v, ok := nonFinite(tree, ""); ok {
			return nil, fmt.Errorf("%s: must be a finite number, got %v", path, v)
		}
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("invalid YAML: %w", err)
	}
	return js, nil
}

// msDuration converts a config's milliseconds (finite: the YAML and JSON
// readers refuse others) to a Duration.
func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// nonFinite finds a NaN or infinite number in a decoded YAML tree and
// returns its path (keys in sorted order, so the answer is stable).
func nonFinite(v any, path string) (string, float64, bool) {
	switch t := v.(type) {
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return path, t, true
		}
	case float32:
		return nonFinite(float64(t), path)
	case []any:
		for i, e := range t {
			if p, x, ok := nonFinite(e, fmt.Sprintf("%s[%d]", path, i)); ok {
				return p, x, true
			}
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			if p, x, ok := nonFinite(t[k], joinKey(path, k)); ok {
				return p, x, true
			}
		}
	case map[any]any:
		keys := make([]string, 0, len(t))
		byKey := make(map[string]any, len(t))
		for k, e := range t {
			ks := fmt.Sprint(k)
			keys = append(keys, ks)
			byKey[ks] = e
		}
		slices.Sort(keys)
		for _, k := range keys {
			if p, x, ok := nonFinite(byKey[k], joinKey(path, k)); ok {
				return p, x, true
			}
		}
	}
	return "", 0, false
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// replaceEndpoint replaces the endpoint of the same name or appends ep.
func replaceEndpoint(eps []Endpoint, ep Endpoint) []Endpoint {
	for i := range eps {
		if eps[i].Name == ep.Name {
			eps[i] = ep
			return eps
		}
	}
	return append(eps, ep)
}

// resolveProfile reads an endpoint's "profile": a profile name, an inline
// profile object, or absent (the built-in profile named like the endpoint,
// else llama-3-8b). An inline object with no base, no name and none of
// ttft_ms, tpot_ms and output_tokens starts from that same default profile,
// as if it named it as its base.
func resolveProfile(raw json.RawMessage, endpoint string, known map[string]Profile) (Profile, error) {
	raw = bytes.TrimSpace(raw)
	def := endpoint
	if _, ok := known[def]; !ok {
		def = fallbackProfile
	}
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return known[def], nil
	}
	if raw[0] == '"' {
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			return Profile{}, err
		}
		p, ok := known[name]
		if !ok {
			return Profile{}, fmt.Errorf("unknown profile %q", name)
		}
		return p, nil
	}
	h, err := readHead(raw)
	if err != nil {
		return Profile{}, err
	}
	implicit := ""
	if h.Base == "" && h.Name == "" && h.TTFTMs == nil && h.TPOTMs == nil && h.OutputTokens == nil {
		implicit = def
	}
	p, err := decodeProfile(raw, known, implicit)
	if err != nil {
		return Profile{}, err
	}
	if p.Name == "" {
		p.Name = endpoint
	}
	return p, nil
}

// decodeProfile decodes a profile object, starting from its "base" (or
// from implicitBase when it names none). Fields the object sets replace the
// base's; objects (ttft_ms, throttle, …) merge field by field and
// error_rates fault by fault. An object that sets slots but not max_queue
// gets 4 × its slots when the base's queue is the default one, else the
// base's queue.
func decodeProfile(raw json.RawMessage, known map[string]Profile, implicitBase string) (Profile, error) {
	h, err := readHead(raw)
	if err != nil {
		return Profile{}, err
	}
	base := h.Base
	if base == "" {
		base = implicitBase
	}
	var pf profileFile
	var b Profile
	if base != "" {
		var ok bool
		if b, ok = known[base]; !ok {
			return Profile{}, fmt.Errorf("unknown base profile %q (a base is a built-in or a profile defined above)", base)
		}
		pf.Profile = b.clone()
		pf.Profile.Name = ""
		pf.Profile.Description = ""
	}
	if err := strictJSON(raw, &pf); err != nil {
		return Profile{}, err
	}
	if base != "" && h.Slots != nil && h.MaxQueue == nil {
		pf.Profile.MaxQueue = followSlots(b, pf.Profile.Slots)
	}
	if err := pf.Profile.Validate(); err != nil {
		return Profile{}, err
	}
	return pf.Profile, nil
}

func cloneRates(m map[string]float64) map[string]float64 {
	if m == nil {
		return nil
	}
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// strictJSON decodes one JSON value, refusing unknown fields.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the configuration")
	}
	return nil
}
