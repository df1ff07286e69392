package stats

import (
	"encoding/json"
	"testing"
)

func FuzzParseSLA(f *testing.F) {
	for _, s := range []string{"ttft p95 150ms starts=warm", "cold-start p50 1.2s starts=cold endpoint=a/b name=x", "output-tokens p50 200", "tpot p99.9 30ms class=chat", "itl p1e2 1ns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sla, err := ParseSLA(s)
		if err != nil {
			return
		}
		again, err := ParseSLA(sla.String())
		if err != nil {
			t.Fatalf("String() of a parsed SLA does not parse: %q → %q: %v", s, sla.String(), err)
		}
		if again != sla {
			t.Fatalf("round trip changed %q: %+v vs %+v", s, sla, again)
		}
	})
}

func FuzzDistJSON(f *testing.F) {
	var d Dist
	for _, v := range []int64{-3, 0, 5, 1e9, 7e12} {
		d.Add(v)
	}
	b, _ := json.Marshal(&d)
	f.Add(b)
	f.Add([]byte(`{"count":0}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Dist
		if err := json.Unmarshal(b, &d); err != nil {
			return
		}
		// A decoded Dist answers without panicking and re-encodes to itself.
		_ = d.Summary()
		_, _ = d.FitLogNormal()
		out, err := json.Marshal(&d)
		if err != nil {
			t.Fatal(err)
		}
		var again Dist
		if err := json.Unmarshal(out, &again); err != nil {
			t.Fatalf("re-encoded Dist does not decode: %v", err)
		}
		if again.n != d.n || again.sum != d.sum || again.sumSq != d.sumSq {
			t.Fatal("round trip changed the sums")
		}
		again.Merge(&d)
	})
}

func FuzzRecorderJSON(f *testing.F) {
	r := referenceRecorder(f)
	b, _ := json.Marshal(r)
	f.Add(b)
	f.Add([]byte(`{"version":1,"relative_accuracy":0.01,"groups":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Recorder
		if err := json.Unmarshal(b, &r); err != nil {
			return
		}
		_ = r.Report(ReportOptions{})
		var m Recorder
		if err := m.Merge(&r); err != nil {
			t.Fatalf("merging a decoded recorder into an empty one: %v", err)
		}
		if _, err := json.Marshal(&m); err != nil {
			t.Fatal(err)
		}
	})
}
