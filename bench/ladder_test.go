package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLadderNextRate(t *testing.T) {
	l := Ladder{}.WithDefaults() // floor 10, +50, ×0.7, target 500, 200/120 ms
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tests := []struct {
		name    string
		rate    float64
		p95     time.Duration
		ok      bool
		want    float64
		wantAct LadderAction
	}{
		{"over high water backs off", 100, ms(250), true, 70, BackOff},
		{"back-off stops at the floor", 12, ms(900), true, 10, BackOff},
		{"no completions backs off", 200, 0, false, 140, BackOff},
		{"under low water climbs", 100, ms(80), true, 150, Climb},
		{"climb stops at the target", 480, ms(80), true, 500, Climb},
		{"at the target holds", 500, ms(80), true, 500, Hold},
		{"between the marks holds", 300, ms(150), true, 300, Hold},
		{"exactly at high water holds", 300, ms(200), true, 300, Hold},
		{"exactly at low water holds", 300, ms(120), true, 300, Hold},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, act := l.NextRate(tt.rate, tt.p95, tt.ok)
			assert.InDelta(t, tt.want, got, 1e-9)
			assert.Equal(t, tt.wantAct, act)
		})
	}
}

func TestLadderDefaultsAndValidate(t *testing.T) {
	l := Ladder{}.WithDefaults()
	require.NoError(t, l.Validate())
	assert.Equal(t, 10.0, l.Start)
	assert.Equal(t, Duration(10*time.Second), l.Step)
	assert.Equal(t, MetricE2E, l.Metric)

	bad := []func(*Ladder){
		func(l *Ladder) { l.Floor = -1 },
		func(l *Ladder) { l.Target = 5 },
		func(l *Ladder) { l.Start = 1000 },
		func(l *Ladder) { l.Backoff = 1.5 },
		func(l *Ladder) { l.LowWater = l.HighWater + 1 },
		func(l *Ladder) { l.Metric = "tpot" },
		func(l *Ladder) { l.Step = -1 },
	}
	for i, f := range bad {
		c := l
		f(&c)
		assert.Error(t, c.Validate(), "case %d", i)
	}
}

func TestLadderHighestHeld(t *testing.T) {
	tr := LadderTrace{Config: Ladder{}.WithDefaults(), Steps: []LadderStep{
		{Rate: 10, Completed: 5, P95Known: true, P95: Duration(50 * time.Millisecond)},
		{Rate: 60, Completed: 5, P95Known: true, P95: Duration(199 * time.Millisecond)},
		{Rate: 110, Completed: 5, P95Known: true, P95: Duration(300 * time.Millisecond)},
		{Rate: 200, Completed: 0},
		{Rate: 300, Completed: 2, P95Known: true, P95: Duration(10 * time.Millisecond), Action: End, Length: Duration(time.Second)},
	}}
	r, ok := tr.HighestHeld()
	assert.True(t, ok)
	assert.Equal(t, 60.0, r)
	_, ok = (&LadderTrace{Config: tr.Config}).HighestHeld()
	assert.False(t, ok)
}
