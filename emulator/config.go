package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// configFile is the on-disk configuration (see the package documentation
// for the schema).
type configFile struct {
	TimeScale        float64           `json:"time_scale"`
	Seed             uint64            `json:"seed"`
	SpinWaits        int               `json:"spin_waits"`
	BuiltinEndpoints bool              `json:"builtin_endpoints"`
	Profiles         []json.RawMessage `json:"profiles"`
	Endpoints        []endpointFile    `json:"endpoints"`
}

type endpointFile struct {
	Name         string          `json:"name"`
	Providers    []string        `json:"providers"`
	Profile      json.RawMessage `json:"profile"`
	Credentials  Credentials     `json:"credentials"`
	IdleWindowMs float64         `json:"idle_window_ms"`
	StartCold    bool            `json:"start_cold"`
	ColdMode     ColdMode        `json:"cold_mode"`
}

// profileFile is a profile in a config: a Profile's fields plus "base",
// the profile it starts from.
type profileFile struct {
	Base string `json:"base"`
	Profile
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

// ParseConfig parses a JSON or YAML configuration (JSON is YAML).
func ParseConfig(data []byte) (Options, error) {
	js := data
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		var err error
		js, err = yaml.YAMLToJSON(data)
		if err != nil {
			return Options{}, fmt.Errorf("invalid YAML: %w", err)
		}
	}
	var f configFile
	if err := strictJSON(js, &f); err != nil {
		return Options{}, err
	}
	profiles := map[string]Profile{}
	for _, p := range BuiltinProfiles() {
		profiles[p.Name] = p
	}
	for i, raw := range f.Profiles {
		p, err := decodeProfile(raw, profiles)
		if err != nil {
			return Options{}, fmt.Errorf("profiles[%d]: %w", i, err)
		}
		if p.Name == "" {
			return Options{}, fmt.Errorf("profiles[%d]: name is required", i)
		}
		profiles[p.Name] = p
	}
	opts := Options{TimeScale: f.TimeScale, Seed: f.Seed, SpinWaits: f.SpinWaits}
	if f.BuiltinEndpoints || len(f.Endpoints) == 0 {
		opts.Endpoints = DefaultEndpoints()
	}
	for i, e := range f.Endpoints {
		ep := Endpoint{Name: e.Name, Credentials: e.Credentials, IdleWindowMs: e.IdleWindowMs, StartCold: e.StartCold, ColdMode: e.ColdMode}
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
// else llama-3-8b).
func resolveProfile(raw json.RawMessage, endpoint string, known map[string]Profile) (Profile, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		if p, ok := known[endpoint]; ok {
			return p, nil
		}
		return known["llama-3-8b"], nil
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
	p, err := decodeProfile(raw, known)
	if err != nil {
		return Profile{}, err
	}
	if p.Name == "" {
		p.Name = endpoint
	}
	return p, nil
}

// decodeProfile decodes a profile object, starting from its "base".
func decodeProfile(raw json.RawMessage, known map[string]Profile) (Profile, error) {
	var probe struct {
		Base string `json:"base"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return Profile{}, fmt.Errorf("must be a profile name or object: %w", err)
	}
	var pf profileFile
	if probe.Base != "" {
		b, ok := known[probe.Base]
		if !ok {
			return Profile{}, fmt.Errorf("unknown base profile %q", probe.Base)
		}
		pf.Profile = b
		pf.Profile.Name = ""
		pf.Profile.Description = ""
		pf.Profile.ErrorRates = cloneRates(b.ErrorRates)
		if b.Throttle != nil {
			t := *b.Throttle
			pf.Profile.Throttle = &t
		}
	}
	if err := strictJSON(raw, &pf); err != nil {
		return Profile{}, err
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
