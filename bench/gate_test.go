package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseGate(t *testing.T) {
	for in, want := range map[string]Gate{
		"sla":           {Kind: GateSLA},
		" SLA ":         {Kind: GateSLA},
		"errors>1%":     {Kind: GateErrors, Max: 1, Percent: true},
		"errors > 0.5%": {Kind: GateErrors, Max: 0.5, Percent: true},
		"errors>0":      {Kind: GateErrors},
		"errors>12":     {Kind: GateErrors, Max: 12},
	} {
		g, err := ParseGate(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, g, in)
		again, err := ParseGate(g.String())
		require.NoError(t, err, g.String())
		assert.Equal(t, g, again, "the text form reads back")
	}
	for in, says := range map[string]string{
		"":            "want",
		"slas":        "want",
		"latency>1%":  "want",
		"errors<1%":   "want",
		"errors>":     "not a number",
		"errors>abc":  "not a number",
		"errors>NaN%": "not a number",
		"errors>-1":   "negative",
		"errors>101%": "at most 100%",
		"errors>1.5":  "whole number",
		"errors>=1":   `">="`,
	} {
		_, err := ParseGate(in)
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), says, in)
	}
}

// TestPlanFailOnIsValidated: a plan's fail_on is read in the text form,
// and a gate that does not parse refuses the plan.
func TestPlanFailOnIsValidated(t *testing.T) {
	p, err := ParsePlan([]byte("targets: [{provider: openai, model: m}]\nlimits: {requests: 1}\nfail_on: [sla, \"errors>1%\"]\n"))
	require.NoError(t, err)
	require.NoError(t, p.Prepare())
	assert.Equal(t, []Gate{{Kind: GateSLA}, {Kind: GateErrors, Max: 1, Percent: true}}, p.FailOn)

	_, err = ParsePlan([]byte("targets: [{provider: openai, model: m}]\nfail_on: [errors>lots]\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `gate "errors>lots"`)

	p = &Plan{Targets: []Target{{Provider: "openai", Model: "m"}}, Limits: Limits{Requests: 1}, FailOn: []Gate{{Kind: "latency"}}}
	assert.ErrorContains(t, p.Prepare(), `gate "latency"`)
}

// TestCheckGates: the SLA gate fails on a target whose SLA failed; the
// error gates on a target whose failed requests exceed the count or the
// share; a result within every gate passes.
func TestCheckGates(t *testing.T) {
	// TTFT 100..199 ms against "ttft p95 150ms": the SLA fails; 5 failures in 105.
	bad := synthetic(t, "m1", 100, 0, 100, 5)
	// TTFT 0..99 ms: the SLA passes; no failure.
	good := synthetic(t, "m2", 0, 0, 100, 0)
	gates := []Gate{{Kind: GateSLA}, {Kind: GateErrors, Max: 4}, {Kind: GateErrors, Max: 4, Percent: true}, {Kind: GateErrors, Max: 5}, {Kind: GateErrors, Max: 5, Percent: true}}

	fs, err := bad.CheckGates(gates)
	require.NoError(t, err)
	var lines []string
	for _, f := range fs {
		lines = append(lines, f.String())
	}
	require.Len(t, lines, 3, "%q", lines)
	assert.Contains(t, lines[0], `gate sla: target "m1": SLA "ttft p95 150ms" failed: measured 19`)
	assert.Contains(t, lines[0], "ms over 100 requests")
	assert.Equal(t, `gate errors>4: target "m1": 5 of 105 measured requests failed (4.76%)`, lines[1])
	assert.Equal(t, `gate errors>4%: target "m1": 5 of 105 measured requests failed (4.76%)`, lines[2])

	fs, err = good.CheckGates(gates)
	require.NoError(t, err)
	assert.Empty(t, fs)
	fs, err = good.CheckGates([]Gate{{Kind: GateErrors, Max: 0}})
	require.NoError(t, err)
	assert.Empty(t, fs, "errors>0 passes with no failure")

	// nil: the plan's own gates.
	bad.Plan.FailOn = []Gate{{Kind: GateErrors, Max: 0}}
	fs, err = bad.CheckGates(nil)
	require.NoError(t, err)
	require.Len(t, fs, 1)
	assert.Equal(t, "errors>0", fs[0].Gate.String())

	// A target that could not run fails every gate.
	bad.Targets[0].Fatal = "ERR_INVALID_PARAM: no adapter"
	fs, err = bad.CheckGates([]Gate{{Kind: GateErrors, Max: 100, Percent: true}})
	require.NoError(t, err)
	require.Len(t, fs, 1)
	assert.Contains(t, fs[0].Reason, "could not run")
}
