package bench

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// Trace formats ReadTrace tells apart by their header or first record.
const (
	// TraceAzure is the Azure LLM inference trace, 2023 and 2024 (CSV:
	// TIMESTAMP,ContextTokens,GeneratedTokens; timestamps like
	// 2023-11-16 18:17:03.9799600).
	TraceAzure = "azure"
	// TraceBurstGPT is BurstGPT (CSV: Timestamp, [Session ID, Elapsed
	// time,] Model, Request tokens, Response tokens, Total tokens, Log
	// Type; timestamps in seconds from the trace's start).
	TraceBurstGPT = "burstgpt"
	// TraceMooncake is Mooncake's (JSONL: timestamp in milliseconds,
	// input_length, output_length, hash_ids of 512-token blocks).
	TraceMooncake = "mooncake"
	// TraceBailian is Qwen Bailian's (JSONL: chat_id, parent_chat_id,
	// timestamp in seconds, input_length, output_length, type, turn,
	// hash_ids of 16-token blocks).
	TraceBailian = "bailian"
)

// Block sizes of the formats' hash_ids, in tokens.
const (
	MooncakeBlockTokens = 512
	BailianBlockTokens  = 16
)

// Trace bounds: a trace is read whole, so it is bounded.
const (
	MaxTraceRecords = 10_000_000
	maxTraceLine    = 1 << 22
	// maxTraceHashIDs bounds one record's hash_ids.
	maxTraceHashIDs = 1 << 16
)

// TraceRecord is one request of a trace.
type TraceRecord struct {
	// At is the request's arrival, from the trace's start (its first
	// record, or the window's start).
	At time.Duration
	// InputTokens and OutputTokens are the prompt's and the answer's
	// lengths.
	InputTokens, OutputTokens int
	// HashIDs name the prompt's blocks of Trace.BlockTokens tokens, in
	// order (Mooncake, Bailian): records that share a block id share that
	// block, and every block before it, of their prompts.
	HashIDs []int64
}

// Trace is a request trace: arrival times and lengths, in arrival order.
type Trace struct {
	// Format is the format it was read from (TraceAzure, …).
	Format string
	// BlockTokens is the size of the HashIDs' blocks (0: no hash ids).
	BlockTokens int
	// Records are the requests, by arrival.
	Records []TraceRecord
}

// ReadTraceFile reads a trace file (see ReadTrace).
func ReadTraceFile(path string) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errcodes.Wrap(err, errcodes.InvalidParam, "bench: trace: "+err.Error())
	}
	defer f.Close()
	return ReadTrace(f)
}

// ReadTrace reads a trace in one of the public formats, told apart by its
// header (CSV) or first record (JSONL): the Azure LLM inference trace
// 2023/2024, BurstGPT, Mooncake and Qwen Bailian (see the Trace*
// constants). Records are sorted by arrival (stably), and their times made
// offsets from the first. A record with no output (BurstGPT's failed
// requests) keeps 0; the run sends it with one output token.
func ReadTrace(r io.Reader) (*Trace, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	b, err := peekNonSpace(br)
	if err != nil {
		return nil, errcodes.New(errcodes.InvalidParam, "bench: trace is empty")
	}
	var t *Trace
	if b == '{' {
		t, err = readTraceJSONL(br)
	} else {
		t, err = readTraceCSV(br)
	}
	if err != nil {
		return nil, err
	}
	if len(t.Records) == 0 {
		return nil, errcodes.New(errcodes.InvalidParam, "bench: trace has no records")
	}
	slices.SortStableFunc(t.Records, func(a, b TraceRecord) int {
		switch {
		case a.At < b.At:
			return -1
		case a.At > b.At:
			return 1
		}
		return 0
	})
	t0 := t.Records[0].At
	for i := range t.Records {
		t.Records[i].At -= t0
	}
	return t, nil
}

func traceErr(line int, format string, args ...any) error {
	return errcodes.Errorf(errcodes.InvalidParam, "bench: trace line %d: "+format, append([]any{line}, args...)...)
}

// readTraceCSV reads the Azure or BurstGPT CSV formats.
func readTraceCSV(r io.Reader) (*Trace, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return nil, errcodes.Wrap(err, errcodes.InvalidParam, "bench: trace: header: "+err.Error())
	}
	col := map[string]int{}
	for i, h := range head {
		h = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		col[h] = i
	}
	t := &Trace{}
	var ts, in, out int
	var parseAt func(string) (time.Duration, error)
	switch {
	case has(col, "timestamp", "contexttokens", "generatedtokens"):
		t.Format = TraceAzure
		ts, in, out = col["timestamp"], col["contexttokens"], col["generatedtokens"]
		var base time.Time
		parseAt = func(s string) (time.Duration, error) {
			at, err := parseAzureTime(s)
			if err != nil {
				return 0, err
			}
			if base.IsZero() {
				base = at
			}
			return at.Sub(base), nil
		}
	case has(col, "timestamp", "request tokens", "response tokens"):
		t.Format = TraceBurstGPT
		ts, in, out = col["timestamp"], col["request tokens"], col["response tokens"]
		parseAt = parseSeconds
	default:
		return nil, errcodes.New(errcodes.InvalidParam, "bench: trace: unknown CSV header (want the Azure LLM inference trace's TIMESTAMP,ContextTokens,GeneratedTokens or BurstGPT's Timestamp,…,Request tokens,Response tokens,…)")
	}
	need := max(ts, in, out)
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, traceErr(line, "%v", err)
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if len(rec) <= need {
			return nil, traceErr(line, "%d fields, want at least %d", len(rec), need+1)
		}
		at, err := parseAt(strings.TrimSpace(rec[ts]))
		if err != nil {
			return nil, traceErr(line, "timestamp %q: %v", rec[ts], err)
		}
		ni, err1 := tokenCount(rec[in])
		no, err2 := tokenCount(rec[out])
		if err := errors.Join(err1, err2); err != nil {
			return nil, traceErr(line, "%v", err)
		}
		if len(t.Records) >= MaxTraceRecords {
			return nil, traceErr(line, "more than %d records", MaxTraceRecords)
		}
		t.Records = append(t.Records, TraceRecord{At: at, InputTokens: ni, OutputTokens: no})
	}
	return t, nil
}

func has(col map[string]int, names ...string) bool {
	for _, n := range names {
		if _, ok := col[n]; !ok {
			return false
		}
	}
	return true
}

// parseAzureTime parses the Azure trace's timestamps ("2023-11-16
// 18:17:03.9799600", any number of fractional digits, optionally with a
// zone).
func parseAzureTime(s string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02 15:04:05", "2006-01-02 15:04:05Z07:00", "2006-01-02T15:04:05", time.RFC3339Nano, "2006-01-02 15:04:05 -0700 MST"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("not a date and time like 2023-11-16 18:17:03.9799600")
}

// parseSeconds parses a count of seconds (fractions allowed).
func parseSeconds(s string) (time.Duration, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) || v > maxTraceSeconds {
		return 0, fmt.Errorf("want seconds in [0, %g]", float64(maxTraceSeconds))
	}
	return time.Duration(math.Round(v * float64(time.Second))), nil
}

// maxTraceSeconds bounds a trace's times (about 290 years, within a
// time.Duration).
const maxTraceSeconds = 9e9

// tokenCount parses a token count (an integer, or a float with no
// fraction as some exports write it).
func tokenCount(s string) (int, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil && n >= 0 && n <= MaxPromptTokens {
		return n, nil
	}
	if v, err := strconv.ParseFloat(s, 64); err == nil && v >= 0 && v <= MaxPromptTokens && v == math.Trunc(v) {
		return int(v), nil
	}
	return 0, fmt.Errorf("token count %q: want an integer in [0, %d]", s, MaxPromptTokens)
}

// traceJSON is a Mooncake or Bailian record.
type traceJSON struct {
	Timestamp    *json.Number `json:"timestamp"`
	InputLength  *json.Number `json:"input_length"`
	OutputLength *json.Number `json:"output_length"`
	HashIDs      []int64      `json:"hash_ids"`
	ChatID       *json.Number `json:"chat_id"`
	ParentChatID *json.Number `json:"parent_chat_id"`
}

// readTraceJSONL reads Mooncake or Bailian JSONL.
func readTraceJSONL(r *bufio.Reader) (*Trace, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxTraceLine)
	t := &Trace{}
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var j traceJSON
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&j); err != nil {
			return nil, traceErr(line, "%v", err)
		}
		if t.Format == "" {
			t.Format, t.BlockTokens = TraceMooncake, MooncakeBlockTokens
			if j.ChatID != nil || j.ParentChatID != nil {
				t.Format, t.BlockTokens = TraceBailian, BailianBlockTokens
			}
		}
		if j.Timestamp == nil || j.InputLength == nil || j.OutputLength == nil {
			return nil, traceErr(line, "a %s record needs timestamp, input_length and output_length", t.Format)
		}
		secs, err := j.Timestamp.Float64()
		if err == nil && t.Format == TraceMooncake {
			secs /= 1000 // milliseconds
		}
		var at time.Duration
		if err == nil {
			at, err = parseSeconds(strconv.FormatFloat(secs, 'g', -1, 64))
		}
		if err != nil {
			return nil, traceErr(line, "timestamp %s: %v", j.Timestamp, err)
		}
		ni, err1 := tokenCount(j.InputLength.String())
		no, err2 := tokenCount(j.OutputLength.String())
		if err := errors.Join(err1, err2); err != nil {
			return nil, traceErr(line, "%v", err)
		}
		if len(j.HashIDs) > maxTraceHashIDs {
			return nil, traceErr(line, "more than %d hash_ids", maxTraceHashIDs)
		}
		if len(j.HashIDs) > 0 && ni > len(j.HashIDs)*t.BlockTokens {
			return nil, traceErr(line, "input_length %d exceeds its %d hash_ids of %d tokens", ni, len(j.HashIDs), t.BlockTokens)
		}
		if len(t.Records) >= MaxTraceRecords {
			return nil, traceErr(line, "more than %d records", MaxTraceRecords)
		}
		t.Records = append(t.Records, TraceRecord{At: at, InputTokens: ni, OutputTokens: no, HashIDs: j.HashIDs})
	}
	if err := sc.Err(); err != nil {
		return nil, errcodes.Wrap(err, errcodes.InvalidParam, "bench: trace: "+err.Error())
	}
	return t, nil
}

// Window returns the records that arrive in [start, start+length) (length
// 0: to the end), their times made offsets from start. The records are
// shared with t.
func (t *Trace) Window(start, length time.Duration) *Trace {
	out := &Trace{Format: t.Format, BlockTokens: t.BlockTokens}
	i, _ := slices.BinarySearchFunc(t.Records, start, func(r TraceRecord, at time.Duration) int {
		if r.At < at {
			return -1
		}
		return 1
	})
	for _, r := range t.Records[i:] {
		if length > 0 && r.At-start >= length {
			break
		}
		r.At -= start
		out.Records = append(out.Records, r)
	}
	return out
}

// Shard returns part i of n of the trace, for n machines that replay it
// together: record j goes to shard j mod n (TraceShard), its time kept,
// so that the shards' schedules, run at once, add up to the trace's.
// It panics unless 0 ≤ i < n.
func (t *Trace) Shard(i, n int) *Trace {
	if n < 1 || i < 0 || i >= n {
		panic(fmt.Sprintf("bench: trace shard %d of %d", i, n))
	}
	out := &Trace{Format: t.Format, BlockTokens: t.BlockTokens}
	for j := i; j < len(t.Records); j += n {
		out.Records = append(out.Records, t.Records[j])
	}
	return out
}

// TraceShard returns the shard of n that record j of a trace goes to:
// j mod n (see Trace.Shard).
func TraceShard(j, n int) int { return j % n }

// Span returns the time from the first record to the last.
func (t *Trace) Span() time.Duration {
	if len(t.Records) == 0 {
		return 0
	}
	return t.Records[len(t.Records)-1].At - t.Records[0].At
}

// traceSchedule replays a trace's arrival times, divided by a speed
// factor: the open loop's Schedule of a trace load.
type traceSchedule struct {
	at []time.Duration
	i  int
}

var _ Schedule = (*traceSchedule)(nil)

func newTraceSchedule(t *Trace, speed float64) *traceSchedule {
	s := &traceSchedule{at: make([]time.Duration, len(t.Records))}
	for i, r := range t.Records {
		s.at[i] = time.Duration(math.Round(float64(r.At) / speed))
	}
	return s
}

// Peek implements Schedule.
func (s *traceSchedule) Peek() time.Duration {
	if s.i >= len(s.at) {
		return Never
	}
	return s.at[s.i]
}

// Next implements Schedule.
func (s *traceSchedule) Next() time.Duration {
	off := s.Peek()
	if s.i < len(s.at) {
		s.i++
	}
	return off
}

// SkipBefore implements Schedule.
func (s *traceSchedule) SkipBefore(end time.Duration, most int) int {
	n := 0
	for s.i < len(s.at) && s.at[s.i] < end && (most < 0 || n < most) {
		s.i++
		n++
	}
	return n
}

// traceRateWindow is how many sends Rate looks ahead.
const traceRateWindow = 16

// Rate implements Schedule: the rate of the next few sends.
func (s *traceSchedule) Rate() float64 {
	j := min(s.i+traceRateWindow, len(s.at)-1)
	if s.i >= len(s.at) || j <= s.i {
		return 0
	}
	d := s.at[j] - s.at[s.i]
	if d <= 0 {
		return MaxRate
	}
	return float64(j-s.i) / d.Seconds()
}

// TraceLoad is the trace model: a trace file's requests replayed at their
// times (divided by Speed), each with a prompt of its input length and
// its output length as max tokens. The trace's times are the intended
// sends: schedule lag and the corrected latencies start there.
type TraceLoad struct {
	// File is the trace (see ReadTrace for the formats).
	File string `json:"file" yaml:"file"`
	// Speed divides the trace's times: 10 replays it ten times as fast
	// (default 1).
	Speed float64 `json:"speed,omitempty" yaml:"speed,omitempty"`
	// Start and Length are the window of the trace replayed, in the
	// trace's own time from its first record (Length 0: to its end).
	Start  Duration `json:"start,omitempty" yaml:"start,omitempty"`
	Length Duration `json:"length,omitempty" yaml:"length,omitempty"`
	// Shard and Shards replay part Shard of Shards (0 ≤ Shard < Shards):
	// record j of the window goes to part j mod Shards (Trace.Shard), so
	// that Shards machines replay the trace together. 0 Shards: all.
	Shard  int `json:"shard,omitempty" yaml:"shard,omitempty"`
	Shards int `json:"shards,omitempty" yaml:"shards,omitempty"`

	trace *Trace // the window's records (this shard's), read by prepare
}

// MaxTraceSpeed bounds TraceLoad.Speed.
const MaxTraceSpeed = 1e6

// prepare reads the trace and cuts its window; without a request limit,
// the limit is the window's record count (with one, at most that).
func (tl *TraceLoad) prepare(lim *Limits) error {
	bad := func(format string, args ...any) error {
		return errcodes.Errorf(errcodes.InvalidParam, "bench: trace: "+format, args...)
	}
	if tl.Speed == 0 {
		tl.Speed = 1
	}
	switch {
	case tl.File == "" && tl.trace == nil:
		return bad("no file")
	case !(tl.Speed > 0 && tl.Speed <= MaxTraceSpeed):
		return bad("speed %g must lie in (0, %g]", tl.Speed, float64(MaxTraceSpeed))
	case tl.Start < 0 || tl.Length < 0:
		return bad("start and length must not be negative")
	case tl.Shards < 0 || tl.Shard < 0 || (tl.Shards > 0 && tl.Shard >= tl.Shards) || (tl.Shards == 0 && tl.Shard > 0):
		return bad("shard %d of %d: want 0 ≤ shard < shards", tl.Shard, tl.Shards)
	}
	if tl.trace == nil {
		t, err := ReadTraceFile(tl.File)
		if err != nil {
			return err
		}
		t = t.Window(tl.Start.D(), tl.Length.D())
		if tl.Shards > 1 {
			t = t.Shard(tl.Shard, tl.Shards)
		}
		if len(t.Records) == 0 {
			return bad("%s: no records in the window from %v for %v", tl.File, tl.Start, tl.Length)
		}
		tl.trace = t
	}
	if n := len(tl.trace.Records); lim.Requests == 0 || lim.Requests > n {
		lim.Requests = n
	}
	return nil
}

// SetTrace replays t (a trace read, cut or generated by the caller)
// instead of File; Plan.Prepare then leaves File unread and applies no
// window or shard of its own.
func (tl *TraceLoad) SetTrace(t *Trace) { tl.trace = t }

// String describes the trace load.
func (tl *TraceLoad) String() string {
	s := "trace"
	if tl.trace != nil {
		s += fmt.Sprintf(" %s, %d requests over %v", tl.trace.Format, len(tl.trace.Records), tl.trace.Span().Round(time.Millisecond))
	}
	if tl.Speed != 1 {
		s += fmt.Sprintf(", ×%.4g speed", tl.Speed)
	}
	if tl.Shards > 1 {
		s += fmt.Sprintf(", shard %d of %d", tl.Shard, tl.Shards)
	}
	return s
}
