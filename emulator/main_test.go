package emulator

import (
	"bufio"
	"io"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// start starts a server with opts on free loopback ports and closes it at the end of the test.
func start(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := s.Start("127.0.0.1:0", "127.0.0.1:0"); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// waitRecords waits (at most 5 s) until s holds n records: a record is
// stored when its handler returns, which may be just after the client saw
// the end of the response.
func waitRecords(t testing.TB, s *Server, n int) []Record {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		recs := s.Records()
		if len(recs) >= n || time.Now().After(deadline) {
			if len(recs) != n {
				t.Fatalf("got %d records, want %d", len(recs), n)
			}
			return recs
		}
		time.Sleep(time.Millisecond)
	}
}

// readSSE returns the data of each SSE event in r.
func readSSE(t testing.TB, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
			out = append(out, strings.TrimSpace(d))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read SSE: %v", err)
	}
	return out
}
