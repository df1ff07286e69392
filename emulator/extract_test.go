package emulator_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/cloudreq/cloudreqtest"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/hooks"
	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/providers/openai"
)

// reported runs StartReport on a response with header h.
func reported(t *testing.T, h http.Header) *cloudreq.CloudResponse {
	t.Helper()
	resp := &cloudreq.CloudResponse{Header: h}
	require.NoError(t, emulator.StartReport().PostDeserialize(context.Background(), &cloudreq.CloudRequest{}, resp, nil))
	return resp
}

func TestStartReportServerStart(t *testing.T) {
	tests := []struct {
		flag, ms string
		want     *cloudreq.ServerStart
	}{
		{"", "", nil},
		{"maybe", "1", nil},
		{"true", "", &cloudreq.ServerStart{Cold: true}},
		{"true", "250", &cloudreq.ServerStart{Cold: true, Setup: 250 * time.Millisecond}},
		{"true", "1500.25", &cloudreq.ServerStart{Cold: true, Setup: 1500250 * time.Microsecond}},
		{" TRUE ", "0.001", &cloudreq.ServerStart{Cold: true, Setup: time.Microsecond}},
		{"1", " 12.5 ", &cloudreq.ServerStart{Cold: true, Setup: 12500 * time.Microsecond}},
		{"false", "-3", &cloudreq.ServerStart{}},
		{"false", "0", &cloudreq.ServerStart{}},
		{"true", "NaN", &cloudreq.ServerStart{Cold: true}},
		{"true", "1e300", &cloudreq.ServerStart{Cold: true}},
		{"true", "1e12", &cloudreq.ServerStart{Cold: true}},
		{"true", "9223372036854775807", &cloudreq.ServerStart{Cold: true}},
		{"true", "86400000", &cloudreq.ServerStart{Cold: true, Setup: 24 * time.Hour}},
	}
	for _, tt := range tests {
		h := http.Header{}
		if tt.flag != "" {
			h.Set(emulator.HeaderColdStart, tt.flag)
		}
		if tt.ms != "" {
			h.Set(emulator.HeaderColdStartMs, tt.ms)
		}
		assert.Equal(t, tt.want, reported(t, h).ServerStart, "%q %q", tt.flag, tt.ms)
	}
}

// TestStartReportOtherServerAllocs: a response from a server that is not
// the emulator (no emulator headers, a request id of its own) costs the
// report hook no allocation: it runs on every response of a load run.
func TestStartReportOtherServerAllocs(t *testing.T) {
	h := http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"abc"}, "Content-Length": {"120"}}
	hook := emulator.StartReport()
	ctx, req := context.Background(), &cloudreq.CloudRequest{}
	resp := &cloudreq.CloudResponse{Header: h}
	allocs := testing.AllocsPerRun(100, func() {
		resp.ServerStart, resp.RequestID = nil, ""
		_ = hook.PostDeserialize(ctx, req, resp, nil)
	})
	assert.Zero(t, allocs)
	assert.Nil(t, resp.ServerStart)
	assert.Nil(t, resp.Metadata)
}

func TestStartReportMetadataAndID(t *testing.T) {
	h := http.Header{}
	h.Set(emulator.HeaderRequestID, "emu-1")
	h.Set(emulator.HeaderTTFTMs, "3.25")
	h.Set("X-Request-Id", "srv-1")
	h.Set("Authorization", "secret")
	h["x-emulator-endpoint"] = []string{"phi"} // a key as gRPC metadata spells it
	h["X-Emulator-Empty"] = nil
	resp := reported(t, h)
	assert.Equal(t, map[string]string{
		emulator.HeaderRequestID: "emu-1", emulator.HeaderTTFTMs: "3.25", emulator.HeaderEndpoint: "phi",
	}, resp.Metadata, "the emulator's headers only, under canonical names")
	assert.Equal(t, "emu-1", resp.RequestID, "the emulator's id where the adapter found none")
	assert.Nil(t, resp.ServerStart)

	resp = &cloudreq.CloudResponse{Header: h, RequestID: "srv-1", Metadata: map[string]string{"X-Request-Id": "srv-1"}}
	require.NoError(t, emulator.StartReport().PostDeserialize(context.Background(), nil, resp, nil))
	assert.Equal(t, "srv-1", resp.RequestID, "the provider's id is kept")
	assert.Equal(t, "srv-1", resp.Metadata["X-Request-Id"])
	assert.Equal(t, "emu-1", resp.Metadata[emulator.HeaderRequestID])

	// A response with no report, or none at all, is left as it is.
	resp = reported(t, http.Header{"X-Request-Id": {"r"}})
	assert.Equal(t, &cloudreq.CloudResponse{Header: http.Header{"X-Request-Id": {"r"}}}, resp)
	assert.Equal(t, &cloudreq.CloudResponse{}, reported(t, nil))
	assert.NoError(t, emulator.StartReport().PostDeserialize(context.Background(), nil, nil, assert.AnError), "never a veto")
}

// seen is a PostDeserialize hook that records the ServerStart it sees.
type seen struct{ starts []*cloudreq.ServerStart }

func (s *seen) PostDeserialize(_ context.Context, _ *cloudreq.CloudRequest, resp *cloudreq.CloudResponse, _ error) error {
	if resp != nil {
		s.starts = append(s.starts, resp.ServerStart)
	}
	return nil
}

// TestWithStartReport checks that the option runs the report before the
// client's own hooks, for calls and for streams (at open), and that the
// start is then classified on the server's word.
func TestWithStartReport(t *testing.T) {
	head := &cloudreq.CloudResponse{StatusCode: 200, Header: http.Header{
		emulator.HeaderColdStart: {"true"}, emulator.HeaderColdStartMs: {"40"}, emulator.HeaderRequestID: {"emu-7"},
	}}
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{
		Response: head, Chunks: []cloudreq.StreamChunk{{Text: "a"}, {Text: "b"}},
	}}}
	req := func() *cloudreq.CloudRequest {
		return &cloudreq.CloudRequest{
			Provider: cloudreq.ProviderOpenAI, Service: cloudreq.ServiceOpenAICompatible, Action: cloudreq.ActionGenerate,
			Target: cloudreq.Target{Model: "m"}, Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "hi"}}},
		}
	}
	ctx := context.Background()
	want := &cloudreq.ServerStart{Cold: true, Setup: 40 * time.Millisecond}

	user := &seen{}
	set := hooks.Default()
	require.NoError(t, set.Deserialize.Add("user", user))
	opts := cloudreq.Options{Adapters: []cloudreq.Adapter{fake}}
	opts.Hooks = set
	c, err := cloudreq.New(opts, emulator.WithStartReport(), emulator.WithStartReport())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	assert.Same(t, set, opts.Hooks, "the caller's options are not changed")
	assert.Equal(t, []string{"user"}, set.Deserialize.Names(), "nor its hook set")

	resp, err := c.Invoke(ctx, req())
	require.NoError(t, err)
	assert.Equal(t, want, resp.ServerStart)
	assert.Equal(t, latency.Cold, resp.Start.Kind)
	assert.Equal(t, latency.ReasonServerReported, resp.Start.Reason)
	assert.Equal(t, 40*time.Millisecond, resp.Start.Overhead)
	assert.Equal(t, "emu-7", resp.Metadata[emulator.HeaderRequestID])
	assert.Equal(t, "emu-7", resp.RequestID)

	s, err := c.Stream(ctx, req())
	require.NoError(t, err)
	for s.Next() {
	}
	require.NoError(t, s.Err())
	sr := s.Response()
	assert.Equal(t, want, sr.ServerStart)
	assert.Equal(t, latency.ReasonServerReported, sr.Start.Reason)
	assert.Equal(t, "emu-7", sr.RequestID)
	assert.Equal(t, []*cloudreq.ServerStart{want, want}, user.starts, "the client's hooks run after the report, once per attempt")

	// Without the option, nothing reads the report.
	plain, err := cloudreq.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = plain.Close() })
	resp, err = plain.Invoke(ctx, req())
	require.NoError(t, err)
	assert.Nil(t, resp.ServerStart)
	assert.NotEqual(t, latency.ReasonServerReported, resp.Start.Reason)
	assert.Empty(t, resp.RequestID)

	// With no hooks of its own, the client runs the report alone.
	alone, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{fake}}, emulator.WithStartReport())
	require.NoError(t, err)
	t.Cleanup(func() { _ = alone.Close() })
	resp, err = alone.Invoke(ctx, req())
	require.NoError(t, err)
	assert.Equal(t, want, resp.ServerStart)
}

// TestStartReportOnEmulator reads the report of the emulator's own answers,
// through an adapter that knows nothing of it, whole and streamed.
func TestStartReportOnEmulator(t *testing.T) {
	srv, err := emulator.New(emulator.Options{TimeScale: 0.01, Seed: 3})
	require.NoError(t, err)
	require.NoError(t, srv.Start("127.0.0.1:0", ""))
	t.Cleanup(func() { _ = srv.Close() })
	ad, err := openai.New(openai.Options{BaseURL: srv.URL()})
	require.NoError(t, err)
	opts := cloudreq.Options{Adapters: []cloudreq.Adapter{ad}}
	opts.Hooks = hooks.Default()
	c, err := cloudreq.New(opts, emulator.WithStartReport())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := func(cold bool) *cloudreq.CloudRequest {
		r := &cloudreq.CloudRequest{
			Provider: cloudreq.ProviderOpenAI, Service: cloudreq.ServiceOpenAICompatible, Action: cloudreq.ActionGenerate,
			Target:   cloudreq.Target{Model: "phi-3-mini"},
			Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "hi"}}, MaxTokens: 4},
		}
		if cold {
			r.Header = http.Header{emulator.HeaderCold: {"1"}}
		}
		return r
	}
	check := func(t *testing.T, resp *cloudreq.CloudResponse) {
		t.Helper()
		id := resp.Metadata[emulator.HeaderRequestID]
		require.NotEmpty(t, id)
		rec, ok := srv.Record(id)
		require.True(t, ok, "the emulator's record of %s", id)
		require.NotNil(t, resp.ServerStart)
		assert.Equal(t, rec.Cold, resp.ServerStart.Cold)
		assert.Equal(t, resp.Header.Get(emulator.HeaderOutputTokens), resp.Metadata[emulator.HeaderOutputTokens])
		if rec.Cold {
			assert.Positive(t, resp.ServerStart.Setup)
			assert.Equal(t, latency.Cold, resp.Start.Kind)
		} else {
			assert.Equal(t, latency.Warm, resp.Start.Kind)
		}
		assert.Equal(t, latency.ReasonServerReported, resp.Start.Reason)
	}
	for _, cold := range []bool{true, false} {
		t.Run("invoke/cold="+strconv.FormatBool(cold), func(t *testing.T) {
			resp, err := c.Invoke(ctx, req(cold))
			require.NoError(t, err)
			check(t, resp)
			assert.Equal(t, cold, resp.ServerStart.Cold)
		})
		t.Run("stream/cold="+strconv.FormatBool(cold), func(t *testing.T) {
			s, err := c.Stream(ctx, req(cold))
			require.NoError(t, err)
			defer s.Close()
			var text strings.Builder
			for s.Next() {
				text.WriteString(s.Chunk().Text)
			}
			require.NoError(t, s.Err())
			assert.NotEmpty(t, text.String())
			check(t, s.Response())
			assert.Equal(t, cold, s.Response().ServerStart.Cold)
		})
	}
}

// FuzzServerStart checks that any cold-start header pair gives a report
// exactly when the flag reads as a bool, with a setup time in bounds.
func FuzzServerStart(f *testing.F) {
	f.Add("true", "12.5")
	f.Add("false", "")
	f.Fuzz(func(t *testing.T, flag, ms string) {
		h := http.Header{emulator.HeaderColdStart: {flag}, emulator.HeaderColdStartMs: {ms}}
		resp := &cloudreq.CloudResponse{Header: h}
		if err := emulator.StartReport().PostDeserialize(context.Background(), nil, resp, nil); err != nil {
			t.Fatal(err)
		}
		ss := resp.ServerStart
		if ss != nil && (ss.Setup < 0 || ss.Setup >= time.Duration(1e12)*time.Millisecond) {
			t.Fatalf("setup %v out of bounds", ss.Setup)
		}
		if _, err := strconv.ParseBool(strings.TrimSpace(flag)); (err == nil) != (ss != nil) {
			t.Fatalf("flag %q gave %+v", flag, ss)
		}
	})
}
