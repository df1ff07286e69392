package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// LogRecord is one request of a traffic log.
type LogRecord struct {
	Path   string            `json:"path"`
	Method string            `json:"method"`
	Header map[string]string `json:"headers"`
	// LatencyMS is the observed latency in milliseconds (0 if not logged).
	LatencyMS float64 `json:"latency_ms"`
	// Tags are the record's other dimensions (region, device, …).
	Tags map[string]string `json:"tags"`
}

// Traffic log limits: a log is read whole, so it is bounded.
const (
	maxLogRecords = 10_000_000
	maxLogLine    = 1 << 20
)

// ReadTrafficLog reads a traffic log in CSV or JSONL (format "csv",
// "jsonl", or "" to tell by the first byte).
//
// CSV needs a header row naming at least path; method, headers and
// latency_ms (or latency, duration_ms) are optional, and every other
// column is a tag dimension (region, device, hour…). The headers column
// holds a JSON object or "Name: value; Name: value".
//
// JSONL holds one object per line: {"path":…, "method":…, "headers":{…},
// "latency_ms":…, "tags":{…}}.
//
// Credential headers (Authorization, cookies, API keys) are dropped: a
// mix never replays a logged secret, and results never show one. So are
// the logged connection's own headers (Host, Content-Length, Connection,
// Transfer-Encoding, Accept-Encoding, Proxy-*…), which would not fit the
// new one.
func ReadTrafficLog(r io.Reader, format string) ([]LogRecord, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if format == "" {
		format = "csv"
		if b, err := peekNonSpace(br); err == nil && b == '{' {
			format = "jsonl"
		}
	}
	var recs []LogRecord
	var err error
	switch strings.ToLower(format) {
	case "csv":
		recs, err = readLogCSV(br)
	case "jsonl", "ndjson", "json":
		recs, err = readLogJSONL(br)
	default:
		return nil, errcodes.Errorf(errcodes.InvalidParam, "bench: traffic log format %q: want csv or jsonl", format)
	}
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, errcodes.New(errcodes.InvalidParam, "bench: traffic log has no records")
	}
	return recs, nil
}

func peekNonSpace(br *bufio.Reader) (byte, error) {
	for n := 1; n <= 4096; n++ {
		b, err := br.Peek(n)
		if len(b) < n {
			return 0, cmp.Or(err, io.EOF)
		}
		if c := b[n-1]; c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != 0xEF && c != 0xBB && c != 0xBF {
			return c, nil
		}
	}
	return 0, io.EOF
}

func logErr(line int, format string, args ...any) error {
	return errcodes.Errorf(errcodes.InvalidParam, "bench: traffic log line %d: "+format, append([]any{line}, args...)...)
}

func readLogCSV(r io.Reader) ([]LogRecord, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = 0
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return nil, errcodes.Wrap(err, errcodes.InvalidParam, "bench: traffic log: no CSV header")
	}
	col := map[string]int{}
	var tagCols []int
	names := make([]string, len(head))
	for i, h := range head {
		h = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		names[i] = h
		switch h {
		case "path", "method", "headers":
			col[h] = i
		case "latency_ms", "latency", "duration_ms", "observed_latency_ms":
			col["latency"] = i
		default:
			if h != "" {
				tagCols = append(tagCols, i)
			}
		}
	}
	if _, ok := col["path"]; !ok {
		return nil, errcodes.New(errcodes.InvalidParam, "bench: traffic log: CSV header has no path column")
	}
	var recs []LogRecord
	for {
		row, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return recs, nil
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, logErr(pe.StartLine, "%v", pe.Err)
			}
			return nil, errcodes.Wrap(err, errcodes.InvalidParam, "bench: traffic log: "+err.Error())
		}
		line, _ := cr.FieldPos(0) // the record's own line: blank lines and quoted line breaks count
		if len(recs) >= maxLogRecords {
			return nil, logErr(line, "more than %d records", maxLogRecords)
		}
		rec := LogRecord{Path: strings.TrimSpace(row[col["path"]])}
		if i, ok := col["method"]; ok {
			rec.Method = strings.ToUpper(strings.TrimSpace(row[i]))
		}
		if i, ok := col["headers"]; ok {
			if rec.Header, err = parseHeaderField(row[i]); err != nil {
				return nil, logErr(line, "headers: %v", err)
			}
		}
		if i, ok := col["latency"]; ok && strings.TrimSpace(row[i]) != "" {
			if rec.LatencyMS, err = parseLatency(row[i]); err != nil {
				return nil, logErr(line, "%v", err)
			}
		}
		for _, i := range tagCols {
			if v := strings.TrimSpace(row[i]); v != "" {
				if rec.Tags == nil {
					rec.Tags = map[string]string{}
				}
				rec.Tags[names[i]] = v
			}
		}
		if err := rec.check(); err != nil {
			return nil, logErr(line, "%v", err)
		}
		recs = append(recs, rec)
	}
}

func readLogJSONL(r io.Reader) ([]LogRecord, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLogLine)
	var recs []LogRecord
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if line == 1 {
			b = bytes.TrimPrefix(b, []byte("\ufeff")) // a byte order mark
		}
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		if len(recs) >= maxLogRecords {
			return nil, logErr(line, "more than %d records", maxLogRecords)
		}
		var rec LogRecord
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, logErr(line, "%v", err)
		}
		rec.Method = strings.ToUpper(strings.TrimSpace(rec.Method))
		rec.Path = strings.TrimSpace(rec.Path)
		if err := rec.check(); err != nil {
			return nil, logErr(line, "%v", err)
		}
		rec.Header = dropSecrets(rec.Header)
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, errcodes.Wrap(err, errcodes.InvalidParam, "bench: traffic log: "+err.Error())
	}
	return recs, nil
}

func (r *LogRecord) check() error {
	if r.Path == "" {
		return errors.New("empty path")
	}
	if !(r.LatencyMS >= 0) || r.LatencyMS > 1e9 {
		return errors.New("latency must be a non-negative number of milliseconds")
	}
	return nil
}

func parseLatency(s string) (float64, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(s, "ms")
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, errors.New("latency " + strconv.Quote(s) + " is not a number of milliseconds")
	}
	return v, nil
}

// parseHeaderField reads a JSON object or "Name: value; Name: value".
func parseHeaderField(s string) (map[string]string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	h := map[string]string{}
	if s[0] == '{' {
		if err := json.Unmarshal([]byte(s), &h); err != nil {
			return nil, err
		}
		return dropSecrets(h), nil
	}
	for part := range strings.SplitSeq(s, ";") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, v, ok := strings.Cut(part, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, errors.New("want Name: value pairs separated by ';'")
		}
		h[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return dropSecrets(h), nil
}

// transportHeaders are logged headers that belong to the logged
// connection, not to the request: replaying them would break the new one
// (a stale length or host) or turn off the client's own handling (an
// Accept-Encoding stops Go's transparent decompression).
var transportHeaders = []string{"Host", "Content-Length", "Connection", "Keep-Alive", "Transfer-Encoding",
	"Te", "Trailer", "Upgrade", "Accept-Encoding"}

func dropSecrets(h map[string]string) map[string]string {
	for k := range h {
		ck := http.CanonicalHeaderKey(k)
		if slices.Contains(transportHeaders, ck) || strings.HasPrefix(ck, "Proxy-") {
			delete(h, k)
			continue
		}
		if cloudreq.IsCredentialHeader(ck) {
			delete(h, k)
		}
	}
	if len(h) == 0 {
		return nil
	}
	return h
}

// MixFromLog builds a Mix from traffic log records: one class per method
// and path (named by the path, or "METHOD:path" when a path is logged
// with several methods), weighted by its share of the records, with its headers (those
// of its first record) and observed latencies; and one dimension per tag,
// its values weighted by their shares. An empty tag value counts as the
// tag missing, in every log format; the records that miss a tag leave
// its dimension, whose weights are shares of the records that have it.
func MixFromLog(recs []LogRecord) *Mix {
	m := &Mix{}
	methods := map[string]map[string]bool{}
	for _, r := range recs {
		if methods[r.Path] == nil {
			methods[r.Path] = map[string]bool{}
		}
		methods[r.Path][r.Method] = true
	}
	idx := map[string]int{}
	dims := map[string]map[string]int{}
	for _, r := range recs {
		key := r.Path
		if len(methods[r.Path]) > 1 {
			key = r.Method + ":" + r.Path
		}
		i, ok := idx[key]
		if !ok {
			i = len(m.Classes)
			idx[key] = i
			m.Classes = append(m.Classes, Class{Name: key, Method: r.Method, Path: r.Path, Header: r.Header, Observed: &Observed{}})
		}
		c := &m.Classes[i]
		c.Weight++
		c.Observed.Count++
		if r.LatencyMS > 0 {
			c.Observed.Latencies = append(c.Observed.Latencies, r.LatencyMS)
		}
		for k, v := range r.Tags {
			if v == "" {
				continue // as a CSV reader leaves out an empty cell
			}
			if dims[k] == nil {
				dims[k] = map[string]int{}
			}
			dims[k][v]++
		}
	}
	n := float64(len(recs))
	for i := range m.Classes {
		m.Classes[i].Weight /= n
	}
	slices.SortStableFunc(m.Classes, func(a, b Class) int { return cmp.Compare(b.Weight, a.Weight) })
	for name, vals := range dims {
		d := Dimension{Name: name}
		total := 0
		for _, c := range vals {
			total += c
		}
		for v, c := range vals {
			d.Values = append(d.Values, Value{Value: v, Weight: float64(c) / float64(total)})
		}
		slices.SortFunc(d.Values, func(a, b Value) int {
			return cmp.Or(cmp.Compare(b.Weight, a.Weight), strings.Compare(a.Value, b.Value))
		})
		m.Dimensions = append(m.Dimensions, d)
	}
	slices.SortFunc(m.Dimensions, func(a, b Dimension) int { return strings.Compare(a.Name, b.Name) })
	return m
}
