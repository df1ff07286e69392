package bench

import (
	"fmt"
	"io"
	"os"
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
