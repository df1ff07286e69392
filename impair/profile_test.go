package impair_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/impair"
)

func TestParse(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		spec string
		want impair.Profile
	}{
		{"", impair.Profile{}},
		{"delay=20ms", impair.Profile{Up: impair.Link{Delay: 20 * ms}, Down: impair.Link{Delay: 20 * ms}}},
		{"delay=20ms, jitter=2ms loss=0.5% rate=100mbit", impair.Profile{
			Up:   impair.Link{Delay: 20 * ms, Jitter: 2 * ms, Loss: 0.005, Rate: 100_000_000},
			Down: impair.Link{Delay: 20 * ms, Jitter: 2 * ms, Loss: 0.005, Rate: 100_000_000}}},
		// A direction's own setting wins, whatever the order.
		{"down.delay=30ms,delay=10ms", impair.Profile{Up: impair.Link{Delay: 10 * ms}, Down: impair.Link{Delay: 30 * ms}}},
		{"UP.Rate=1.5kbit,loss=0.01,rto=1s,seed=42", impair.Profile{
			Up: impair.Link{Rate: 1500, Loss: 0.01}, Down: impair.Link{Loss: 0.01}, RetransmitDelay: time.Second, Seed: 42}},
		{"rate=1gbit,down.rate=8bit", impair.Profile{Up: impair.Link{Rate: 1e9}, Down: impair.Link{Rate: 8}}},
		// 0 bit/s, spelled out, is unlimited: it undoes a rate for one direction.
		{"rate=1mbit,down.rate=0bit", impair.Profile{Up: impair.Link{Rate: 1e6}}},
		{"rate=0.0kbit", impair.Profile{}},
	} {
		got, err := impair.Parse(tc.spec)
		require.NoError(t, err, tc.spec)
		assert.Equal(t, tc.want, got, tc.spec)
		again, err := impair.Parse(got.String())
		require.NoError(t, err, got.String())
		assert.Equal(t, got, again, "String reads back: %q", got.String())
	}
}

func TestParseErrors(t *testing.T) {
	for spec, want := range map[string]string{
		"delay":             `"delay" is not key=value`,
		"delay=":            `"delay=" is not key=value`,
		"latency=5ms":       `unknown setting "latency"`,
		"sideways.delay=1s": `unknown setting "sideways.delay"`,
		"delay=20":          `delay "20" is not a duration`,
		"jitter=-1ms":       `jitter -1ms is negative`,
		"loss=150%":         `loss "150%" is not between 0% and 100%`,
		"loss=NaN":          `loss "NaN" is not a number`,
		"loss=-0.1":         `loss "-0.1" is not between`,
		"rate=100mbps":      `rate "100mbps" is not a bandwidth`,
		"rate=-5kbit":       `rate "-5kbit" is not a bandwidth`,
		"rate=1e30gbit":     `rate "1e30gbit" is not a bandwidth`,
		// 2^63 bit/s does not fit an int64: converting it is
		// implementation-defined (negative on amd64, saturated on arm64).
		"rate=9223372036854775808bit": `rate "9223372036854775808bit" is not a bandwidth`,
		"seed=-1":                     `seed "-1" is not a non-negative integer`,
		"rto=soon":                    `rto "soon" is not a duration`,
		// 0 is the field's "default" (200 ms): as text it would silently
		// stand for a cost it does not say.
		"rto=0s": `rto 0s is not positive`,
		// Too small for a float64, it reads as 0, which is "unlimited".
		"rate=1e-400bit":            `rate "1e-400bit" is below 1 bit/s`,
		"rate=0.1bit":               `rate "0.1bit" is below 1 bit/s`,
		"delay=1e400ms":             `delay "1e400ms" is not a duration`,
		"delay=3000000h":            `delay "3000000h" is not a duration`,
		"rate=Infgbit":              `rate "Infgbit" is not a bandwidth`,
		"rate=NaNmbit":              `rate "NaNmbit" is not a bandwidth`,
		"seed=18446744073709551616": `seed "18446744073709551616" is not a non-negative integer`,
	} {
		_, err := impair.Parse(spec)
		if !assert.Error(t, err, spec) {
			continue
		}
		assert.Contains(t, err.Error(), want, spec)
		assert.Contains(t, err.Error(), "impair: ", spec)
	}
}

func TestValidate(t *testing.T) {
	assert.NoError(t, impair.Profile{}.Validate())
	assert.ErrorContains(t, impair.Profile{Down: impair.Link{Delay: -1}}.Validate(), "down delay")
	assert.ErrorContains(t, impair.Profile{Up: impair.Link{Loss: 2}}.Validate(), "up loss")
	assert.ErrorContains(t, impair.Profile{Up: impair.Link{Rate: -1}}.Validate(), "up rate")
	assert.ErrorContains(t, impair.Profile{RetransmitDelay: -1}.Validate(), "retransmit delay")
}

func TestIsZero(t *testing.T) {
	assert.True(t, impair.Profile{Seed: 5, RetransmitDelay: time.Second}.IsZero(), "a seed alone impairs nothing")
	assert.False(t, impair.Profile{Down: impair.Link{Rate: 1}}.IsZero())
}
