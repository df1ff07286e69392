package bench

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/latency/stats"
)

func seedMix() *Mix {
	return &Mix{
		Classes: []Class{
			{Path: "/api/order/create", Weight: 0.32},
			{Path: "/api/user/profile", Weight: 0.45},
			{Path: "/api/product/search", Weight: 0.23},
		},
		Dimensions: []Dimension{{Name: "device", Values: []Value{
			{Value: "mobile", Weight: 7}, {Value: "desktop", Weight: 2}, {Value: "tablet", Weight: 1},
		}}},
	}
}

func TestPickerShares(t *testing.T) {
	m := seedMix()
	require.NoError(t, m.Validate())
	for _, n := range []int{100, 1000, 5000, 5037} {
		p := NewPicker(m, 3)
		classes := map[string]int{}
		devices := map[string]int{}
		for range n {
			pk := p.Next()
			classes[pk.Class.Label()]++
			devices[pk.Tags["device"]]++
		}
		for _, c := range m.Classes {
			got := float64(classes[c.Label()])
			// Within one request of the exact share at a deck's end, within
			// a deck's worth otherwise.
			slack := 1.0
			if n%DeckSize != 0 {
				slack = DeckSize
			}
			assert.LessOrEqual(t, math.Abs(got-c.Weight*float64(n)), slack, "%s of %d", c.Label(), n)
		}
		assert.InDelta(t, 0.7*float64(n), float64(devices["mobile"]), 1+float64(n%DeckSize))
	}
}

func TestPickerOrderIsRandomButSeeded(t *testing.T) {
	m := seedMix()
	a, b, c := NewPicker(m, 1), NewPicker(m, 1), NewPicker(m, 2)
	var sa, sb, sc []string
	runs := 0
	prev := ""
	for range 1000 {
		x, y, z := a.Next().Class.Label(), b.Next().Class.Label(), c.Next().Class.Label()
		sa, sb, sc = append(sa, x), append(sb, y), append(sc, z)
		if x != prev {
			runs++
		}
		prev = x
	}
	assert.Equal(t, sa, sb)
	assert.NotEqual(t, sa, sc)
	// A shuffled order changes class often; a sorted deck would not.
	assert.Greater(t, runs, 300)
}

func TestShortRunsHaveTheirShares(t *testing.T) {
	p := newPicker(seedMix(), 1, 20)
	got := map[string]int{}
	for range 20 {
		got[p.Next().Class.Label()]++
	}
	assert.Equal(t, map[string]int{"/api/order/create": 6, "/api/user/profile": 9, "/api/product/search": 5}, got)
}

func TestPickerTinyWeights(t *testing.T) {
	m := &Mix{Classes: []Class{{Name: "rare", Weight: 0.001}, {Name: "common", Weight: 0.999}, {Name: "never", Weight: 0}}}
	require.NoError(t, m.Validate())
	p := NewPicker(m, 1)
	got := map[string]int{}
	for range 10000 {
		got[p.Next().Class.Label()]++
	}
	assert.Equal(t, 10, got["rare"])
	assert.Equal(t, 0, got["never"])
}

func TestMixValidate(t *testing.T) {
	bad := []*Mix{
		{},
		{Classes: []Class{{Name: "a", Weight: -1}}},
		{Classes: []Class{{Name: "a", Weight: 0}}},
		{Classes: []Class{{Name: "a", Weight: math.NaN()}}},
		{Classes: []Class{{Name: "a", Weight: 1}, {Name: "a", Weight: 1}}},
		{Classes: []Class{{Weight: 1}}},
		{Classes: []Class{{Name: "a", Weight: 1}}, Dimensions: []Dimension{{Name: "region"}}},
		{Classes: []Class{{Name: "a", Weight: 1, SLAs: []stats.SLA{{Metric: latency.TTFT, Percentile: 150, Threshold: 1}}}}},
		{Classes: []Class{{Name: "a b", Weight: 1, SLAs: []stats.SLA{{Metric: latency.TTFT, Percentile: 95, Threshold: 1}}}}},
		// Two dimensions of one name: each request would carry only the
		// second's tag, and the first's shares would be lost.
		{Classes: []Class{{Name: "a", Weight: 1}}, Dimensions: []Dimension{
			{Name: "region", Values: []Value{{Value: "eu", Weight: 1}}},
			{Name: "region", Values: []Value{{Value: "us", Weight: 1}}},
		}},
	}
	for i, m := range bad {
		assert.Error(t, m.Validate(), "case %d", i)
	}
}
