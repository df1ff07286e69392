package impair_test

import (
	"testing"

	"github.com/cloudinfer/cloudinfer/impair"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"",
		"delay=20ms,jitter=2ms,loss=0.1%,rate=100mbit,seed=7",
		"delay=10ms,down.delay=30ms",
		"UP.Rate=1.5kbit,loss=0.01,rto=1s,seed=42",
		"rate=1gbit,down.rate=8bit",
		"loss=1e-7",
		// Hostile values, each refused with an error.
		"loss=NaN",
		"loss=-0.1",
		"loss=150%",
		"delay=-1ms",
		"delay=1e400ms",
		"delay=2562047h47m16.854775807s,loss=100%",
		"rate=1e30gbit",
		"rate=Infbit",
		"rate=1e-400bit",
		"rate=9223372036854775808bit",
		"rto=0s",
		"seed=18446744073709551616",
		"up.up.delay=1ms",
		"=",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		p, err := impair.Parse(spec)
		if err != nil {
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("Parse(%q) gave an invalid profile: %v", spec, err)
		}
		again, err := impair.Parse(p.String())
		if err != nil {
			t.Fatalf("Parse(%q) of the String of Parse(%q): %v", p.String(), spec, err)
		}
		if again != p {
			t.Fatalf("Parse(%q) = %+v, its String %q reads back as %+v", spec, p, p.String(), again)
		}
	})
}
