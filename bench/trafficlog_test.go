package bench

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMixFromTrafficLog(t *testing.T) {
	for _, file := range []string{"testdata/traffic.csv", "testdata/traffic.jsonl"} {
		t.Run(file, func(t *testing.T) {
			f, err := os.Open(file)
			require.NoError(t, err)
			defer f.Close()
			recs, err := ReadTrafficLog(f, "")
			require.NoError(t, err)
			require.Len(t, recs, 1000)
			m := MixFromLog(recs)
			require.NoError(t, m.Validate())
			want := map[string]float64{"/api/order/create": 0.32, "/api/user/profile": 0.45, "/api/product/search": 0.23}
			require.Len(t, m.Classes, 3)
			for _, c := range m.Classes {
				assert.InDelta(t, want[c.Label()], c.Weight, 1e-9, c.Label())
				assert.Equal(t, int(want[c.Label()]*1000+0.5), c.Observed.Count)
				assert.NotEmpty(t, c.Observed.Latencies)
				for k := range c.Header {
					assert.NotEqual(t, "authorization", strings.ToLower(k), "a logged credential must not be replayed")
				}
			}
			assert.Equal(t, "/api/user/profile", m.Classes[0].Label(), "classes are ordered by weight")
			require.Len(t, m.Dimensions, 2)
			assert.Equal(t, "device", m.Dimensions[0].Name)
			assert.Equal(t, "mobile", m.Dimensions[0].Values[0].Value)
			assert.InDelta(t, 0.7, m.Dimensions[0].Values[0].Weight, 0.05)
		})
	}
}

func TestReadTrafficLogFormats(t *testing.T) {
	tests := []struct {
		name, format, in string
		want             []LogRecord
		wantErr          string
	}{
		{"csv minimal", "", "path\n/a\n/b\n", []LogRecord{{Path: "/a"}, {Path: "/b"}}, ""},
		{"csv json headers and ms suffix", "csv", "Path,Method,Headers,latency\n/a,post,\"{\"\"X-A\"\":\"\"1\"\",\"\"Cookie\"\":\"\"c\"\"}\",12ms\n",
			[]LogRecord{{Path: "/a", Method: "POST", Header: map[string]string{"X-A": "1"}, LatencyMS: 12}}, ""},
		{"jsonl", "", "\n{\"path\":\"/x\",\"method\":\"get\",\"latency_ms\":3}\n\n", []LogRecord{{Path: "/x", Method: "GET", LatencyMS: 3}}, ""},
		{"no path column", "csv", "method\nGET\n", nil, "no path column"},
		{"empty path", "csv", "path,method\n,GET\n", nil, "line 2: empty path"},
		{"bad latency", "csv", "path,latency_ms\n/a,fast\n", nil, "not a number"},
		{"negative latency", "jsonl", "{\"path\":\"/a\",\"latency_ms\":-1}\n", nil, "non-negative"},
		{"bad header pair", "csv", "path,headers\n/a,nocolon\n", nil, "Name: value"},
		{"bad json line", "jsonl", "{\"path\":\n", nil, "line 1"},
		{"empty", "", "", nil, "no CSV header"},
		{"header only", "csv", "path\n", nil, "no records"},
		{"unknown format", "xml", "<a/>", nil, "want csv or jsonl"},
		{"csv line numbers count blank lines", "csv", "path,latency_ms\n/a,10\n\n\n/b,abc\n", nil, "line 5: "},
		{"csv line numbers count quoted line breaks", "csv", "path,method,latency_ms\n\"/a\nb\",GET,1\n/c,GET,x\n", nil, "line 4: "},
		{"csv wrong field count", "csv", "path,method\n/a,GET\n\n/b\n", nil, "line 4: wrong number of fields"},
		{"connection headers dropped", "jsonl", "{\"path\":\"/a\",\"headers\":{\"accept-encoding\":\"gzip\",\"Host\":\"old\",\"Content-Length\":\"9\",\"Proxy-Authorization\":\"x\",\"X-Keep\":\"1\"}}\n",
			[]LogRecord{{Path: "/a", Header: map[string]string{"X-Keep": "1"}}}, ""},
		{"jsonl with a byte order mark", "", "\ufeff{\"path\":\"/a\"}\n", []LogRecord{{Path: "/a"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadTrafficLog(strings.NewReader(tt.in), tt.format)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Contains(t, err.Error(), "ERR_INVALID_PARAM")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func FuzzReadTrafficLog(f *testing.F) {
	csv, err := os.ReadFile("testdata/traffic.csv")
	require.NoError(f, err)
	f.Add(csv[:min(len(csv), 600)], "")
	f.Add([]byte("{\"path\":\"/a\",\"headers\":{\"A\":\"b\"},\"tags\":{\"r\":\"x\"}}\n"), "jsonl")
	f.Add([]byte("path,headers\n/a,\"A: b; C: d\"\n"), "csv")
	f.Fuzz(func(t *testing.T, b []byte, format string) {
		recs, err := ReadTrafficLog(bytes.NewReader(b), format)
		if err != nil {
			return
		}
		m := MixFromLog(recs)
		if err := m.Validate(); err != nil {
			t.Fatalf("a mix built from a readable log is invalid: %v", err)
		}
		p := NewPicker(m, 1)
		for range 10 {
			if p.Next().Class == nil {
				t.Fatal("nil class")
			}
		}
	})
}

// TestMixFromLogEmptyTags: an empty tag value is a missing tag whatever
// the format, and a dimension's weights are shares of the records that
// carry it.
func TestMixFromLogEmptyTags(t *testing.T) {
	jsonl := "{\"path\":\"/a\",\"tags\":{\"region\":\"eu\"}}\n{\"path\":\"/a\",\"tags\":{\"region\":\"\"}}\n{\"path\":\"/a\",\"tags\":{\"region\":\"us\"}}\n{\"path\":\"/a\"}\n"
	csv := "path,region\n/a,eu\n/a,\n/a,us\n/a,\n"
	for format, body := range map[string]string{"jsonl": jsonl, "csv": csv} {
		recs, err := ReadTrafficLog(strings.NewReader(body), format)
		require.NoError(t, err, format)
		m := MixFromLog(recs)
		require.Len(t, m.Dimensions, 1, format)
		assert.ElementsMatch(t, []Value{{Value: "eu", Weight: 0.5}, {Value: "us", Weight: 0.5}}, m.Dimensions[0].Values, format)
	}
}
