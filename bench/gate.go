package bench

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
)

// Gate is a pass/fail condition on a result, for continuous integration:
// a run whose result fails a gate should fail its job (cloudinfer bench
// --fail-on, or a plan's fail_on, makes the command exit 1). Without a
// gate, failed requests and failed SLAs are results, not a failure. Its
// text forms:
//
//	sla          every SLA passed, for every target (one with no data fails)
//	errors>N%    no target had more than N% of its measured requests fail
//	errors>N     no target had more than N failed measured requests
//
// N is a number (0 ≤ N ≤ 100 for a share; a whole number for a count), so
// "errors>0" fails on any failed request. Spaces around '>' are allowed.
type Gate struct {
	// Kind is GateSLA or GateErrors.
	Kind string
	// Max is the most failed requests a target may have (Percent false),
	// or the largest share of them, in percent (Percent true); GateErrors
	// only.
	Max     float64
	Percent bool
}

// Gate kinds.
const (
	GateSLA    = "sla"
	GateErrors = "errors"
)

// ParseGate parses a gate's text form (see Gate).
func ParseGate(s string) (Gate, error) {
	bad := func(format string, args ...any) (Gate, error) {
		return Gate{}, errcodes.Errorf(errcodes.InvalidParam, "bench: gate %q: "+format, append([]any{s}, args...)...)
	}
	t := strings.ToLower(strings.TrimSpace(s))
	if t == GateSLA {
		return Gate{Kind: GateSLA}, nil
	}
	kind, limit, ok := strings.Cut(t, ">")
	if !ok || strings.TrimSpace(kind) != GateErrors {
		return bad(`want "sla", "errors>N%%" or "errors>N"`)
	}
	limit = strings.TrimSpace(limit)
	g := Gate{Kind: GateErrors}
	if v, ok := strings.CutSuffix(limit, "%"); ok {
		g.Percent = true
		limit = strings.TrimSpace(v)
	}
	if strings.HasPrefix(limit, "=") {
		return bad(`">=" is not a gate: "errors>N" fails above N`)
	}
	v, err := strconv.ParseFloat(limit, 64)
	switch {
	case err != nil || math.IsNaN(v) || math.IsInf(v, 0):
		return bad("%q is not a number", limit)
	case v < 0:
		return bad("the limit must not be negative")
	case g.Percent && v > 100:
		return bad("a share is at most 100%%")
	case !g.Percent && v != math.Trunc(v):
		return bad("a count is a whole number (or give a share: %g%%)", v)
	}
	g.Max = v
	return g, nil
}

// String returns the gate's text form.
func (g Gate) String() string {
	if g.Kind != GateErrors {
		return g.Kind
	}
	s := "errors>" + strconv.FormatFloat(g.Max, 'g', -1, 64)
	if g.Percent {
		s += "%"
	}
	return s
}

// MarshalText implements encoding.TextMarshaler (the text form).
func (g Gate) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler (the text form).
func (g *Gate) UnmarshalText(b []byte) error {
	v, err := ParseGate(string(b))
	if err != nil {
		return err
	}
	*g = v
	return nil
}

// GateFailure is one gate that a target's result failed.
type GateFailure struct {
	Gate   Gate
	Target string
	// Reason says what failed: the SLA and its measure, or the failed
	// requests' count and share.
	Reason string
}

// String renders the failure in one line.
func (f GateFailure) String() string {
	return fmt.Sprintf("gate %s: target %q: %s", f.Gate, f.Target, f.Reason)
}

// CheckGates checks the result against gates (nil: the plan's FailOn) and
// returns every failure, by gate then by target; none means it passed. A
// target that could not run at all fails every gate.
func (r *Result) CheckGates(gates []Gate) ([]GateFailure, error) {
	if gates == nil && r.Plan != nil {
		gates = r.Plan.FailOn
	}
	var out []GateFailure
	for _, g := range gates {
		switch g.Kind {
		case GateSLA:
			fs, err := r.slaFailures(g)
			if err != nil {
				return nil, err
			}
			out = append(out, fs...)
		case GateErrors:
			for _, tr := range r.Targets {
				if f, failed := tr.errorGate(g); failed {
					out = append(out, f)
				}
			}
		default:
			return nil, errcodes.Errorf(errcodes.InvalidParam, "bench: unknown gate kind %q", g.Kind)
		}
	}
	return out, nil
}

// slaFailures returns a failure for every SLA of every target that did not
// pass, and for every target that could not run.
func (r *Result) slaFailures(g Gate) ([]GateFailure, error) {
	var out []GateFailure
	for _, tr := range r.Targets {
		if tr.Fatal != "" {
			out = append(out, GateFailure{Gate: g, Target: tr.Name, Reason: "the target could not run: " + tr.Fatal})
		}
	}
	rep, err := r.Report()
	if err != nil {
		return nil, err
	}
	for i := range rep.SLAs {
		s := &rep.SLAs[i]
		if s.Pass {
			continue
		}
		l := s.SLA
		l.Endpoint = ""
		reason := fmt.Sprintf("SLA %q: no request gave a value (no data)", l.Label())
		if !s.NoData {
			div, unit := 1.0, " "+string(s.SLA.Metric.Info().Unit)
			if s.SLA.Metric.Info().Unit == latency.Nanoseconds {
				div, unit = 1e6, " ms"
			}
			reason = fmt.Sprintf("SLA %q failed: measured %s%s over %d requests, %+.1f%% over the threshold",
				l.Label(), fmtNum(s.Measured/div), unit, s.Count, 100*s.Deviation)
		}
		out = append(out, GateFailure{Gate: g, Target: s.SLA.Endpoint, Reason: reason})
	}
	return out, nil
}

// errorGate checks one target's failed requests against g.
func (tr *TargetResult) errorGate(g Gate) (GateFailure, bool) {
	if tr.Fatal != "" {
		return GateFailure{Gate: g, Target: tr.Name, Reason: "the target could not run: " + tr.Fatal}, true
	}
	c := tr.Counts()
	share := 0.0
	if c.Requests > 0 {
		share = 100 * float64(c.Failed) / float64(c.Requests)
	}
	failed := float64(c.Failed) > g.Max
	if g.Percent {
		failed = c.Failed > 0 && share > g.Max
	}
	if !failed {
		return GateFailure{}, false
	}
	return GateFailure{Gate: g, Target: tr.Name,
		Reason: fmt.Sprintf("%d of %d measured requests failed (%.3g%%)", c.Failed, c.Requests, share)}, true
}
