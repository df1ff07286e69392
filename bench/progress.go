package bench

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// NewProgress returns a live progress bar on w (rate, errors, p95 so far)
// when w is a terminal, and nil — no progress output — otherwise, so that
// logs and pipes stay clean.
func NewProgress(w *os.File) Progress {
	if w == nil || !term.IsTerminal(int(w.Fd())) {
		return nil
	}
	return &barProgress{w: w}
}

// barProgress draws a schollz/progressbar: a bar of requests when the run
// is bounded by a count, of seconds when it is bounded by a duration.
type barProgress struct {
	w       io.Writer
	bar     *progressbar.ProgressBar
	total   int
	dur     time.Duration
	byCount bool
}

func (p *barProgress) Begin(target string, total int, d time.Duration) {
	p.total, p.dur = total, d
	p.byCount = total > 0 && (d == 0 || total < 1_000_000)
	max := int64(-1)
	switch {
	case p.byCount:
		max = int64(total)
	case d > 0:
		max = int64(d / (100 * time.Millisecond))
	}
	p.bar = progressbar.NewOptions64(max,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(target),
		progressbar.OptionSetWidth(24),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionShowDescriptionAtLineEnd(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionClearOnFinish(),
	)
}

func (p *barProgress) Update(s Snapshot) {
	if p.bar == nil {
		return
	}
	desc := fmt.Sprintf("%s  %d sent  %.1f/s  %d err  p95 %v", s.Target, s.Sent, s.Rate, s.Errors, s.P95.Round(100*time.Microsecond))
	if s.Scheduled > 0 {
		desc += fmt.Sprintf("  (scheduled %.4g/s)", s.Scheduled)
	}
	p.bar.Describe(desc)
	switch {
	case p.byCount:
		_ = p.bar.Set64(min(s.Done, int64(p.total)))
	case p.dur > 0:
		_ = p.bar.Set64(int64(min(s.Elapsed, p.dur) / (100 * time.Millisecond)))
	default:
		_ = p.bar.Set64(s.Done)
	}
}

func (p *barProgress) End() {
	if p.bar != nil {
		_ = p.bar.Finish()
		_ = p.bar.Clear()
		p.bar = nil
	}
}

// allTargets shows targets that run at once as one: it sums their
// requests, rates and errors, shows the worst p95, and forwards that to the
// inner Progress, which it begins with the first target (expecting n
// targets of that target's size) and ends in finish, once every target is
// over (some may never begin: their client could not start).
type allTargets struct {
	inner Progress
	n     int

	mu      sync.Mutex
	begun   bool
	started time.Time
	last    map[string]Snapshot
}

func (a *allTargets) Begin(_ string, total int, d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.begun {
		a.begun, a.started = true, time.Now()
		a.inner.Begin(fmt.Sprintf("%d targets", a.n), total*a.n, d)
	}
}

func (a *allTargets) Update(s Snapshot) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.begun {
		return
	}
	a.last[s.Target] = s
	sum := Snapshot{Target: fmt.Sprintf("%d targets", a.n), Elapsed: time.Since(a.started)}
	for _, t := range a.last {
		sum.Sent += t.Sent
		sum.Done += t.Done
		sum.Errors += t.Errors
		sum.Rate += t.Rate
		sum.Scheduled += t.Scheduled
		sum.P95 = max(sum.P95, t.P95)
	}
	a.inner.Update(sum)
}

// End is the end of one target: the bar ends in finish.
func (a *allTargets) End() {}

func (a *allTargets) finish() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.begun {
		a.inner.End()
		a.begun = false
	}
}
