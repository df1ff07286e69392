package bench

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// A small SVG plotter for the HTML report: scatter, line, step and bar
// series on linear axes with "nice" ticks. The report must open offline
// with no script or CDN, and Go has no maintained SVG charting package
// that works without JavaScript, so the few primitives needed are here.

// palette holds colour-blind-safe series colours (Okabe–Ito).
var palette = []string{"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"}

func color(i int) string { return palette[i%len(palette)] }

type seriesKind int

const (
	kindPoints seriesKind = iota
	kindLine
	kindStep
	kindBars
)

type series struct {
	name   string
	color  string
	kind   seriesKind
	xs, ys []float64
	// width is the bar width in x units (bars).
	width float64
	dash  bool
	// base, when set, holds each bar's bottom (stacked bars: ys are the
	// tops).
	base []float64
}

type chart struct {
	title, xlabel, ylabel string
	w, h                  int
	series                []series
	// categories, when set, label bar positions 0, 1, 2… on the x axis.
	categories []string
	yFromZero  bool
	// xRange, when its ends differ, fixes the x axis (charts aligned on
	// one time axis).
	xRange [2]float64
}

const (
	padL, padR, padT, padB = 64, 16, 48, 46
)

func (c *chart) bounds() (x0, x1, y0, y1 float64, ok bool) {
	x0, y0 = math.Inf(1), math.Inf(1)
	x1, y1 = math.Inf(-1), math.Inf(-1)
	for _, s := range c.series {
		for i := range s.xs {
			x, y := s.xs[i], s.ys[i]
			if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
				continue
			}
			lo, hi := x, x
			if s.kind == kindBars {
				lo, hi = x-s.width/2, x+s.width/2
				y0 = min(y0, 0)
			}
			x0, x1 = min(x0, lo), max(x1, hi)
			y0, y1 = min(y0, y), max(y1, y)
		}
	}
	if math.IsInf(x0, 1) {
		return 0, 0, 0, 0, false
	}
	if c.xRange[0] < c.xRange[1] {
		x0, x1 = c.xRange[0], c.xRange[1]
	}
	if c.yFromZero {
		y0 = min(y0, 0)
	}
	if x1 == x0 {
		x0, x1 = x0-0.5, x1+0.5
	}
	if y1 == y0 {
		y0, y1 = y0-0.5, y1+0.5
		if y0 < 0 && c.yFromZero {
			y0 = 0
		}
	}
	return x0, x1, y0, y1, true
}

// niceTicks returns about n round tick values covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	span := hi - lo
	if !(span > 0) {
		return []float64{lo}
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ts []float64
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9 && len(ts) < 50; v += step {
		ts = append(ts, v)
	}
	return ts
}

func tickLabel(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// svg renders the chart.
func (c *chart) svg() string {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`,
		c.w, c.h, c.w, c.h, html.EscapeString(c.title))
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`, c.w, c.h)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`, padL, html.EscapeString(c.title))
	x0, x1, y0, y1, ok := c.bounds()
	pw, ph := float64(c.w-padL-padR), float64(c.h-padT-padB)
	if !ok {
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#888">no data</text></svg>`, c.w/2-25, c.h/2)
		return b.String()
	}
	y1 += (y1 - y0) * 0.05
	px := func(x float64) float64 { return float64(padL) + (x-x0)/(x1-x0)*pw }
	py := func(y float64) float64 { return float64(padT) + ph - (y-y0)/(y1-y0)*ph }
	// Grid and axes.
	b.WriteString(`<g font-size="11" fill="#333">`)
	for _, t := range niceTicks(y0, y1, 5) {
		y := py(t)
		fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e5e5e5"/>`, padL, float64(padL)+pw, y, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`, padL-6, y+4, tickLabel(t))
	}
	if len(c.categories) > 0 {
		for i, cat := range c.categories {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, px(float64(i)), float64(padT)+ph+16, html.EscapeString(cat))
		}
	} else {
		for _, t := range niceTicks(x0, x1, 8) {
			x := px(t)
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%.1f" stroke="#f0f0f0"/>`, x, x, padT, float64(padT)+ph)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, x, float64(padT)+ph+16, tickLabel(t))
		}
	}
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%.1f" stroke="#333"/>`, padL, padL, padT, float64(padT)+ph)
	fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#333"/>`, padL, float64(padL)+pw, float64(padT)+ph, float64(padT)+ph)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, float64(padL)+pw/2, c.h-8, html.EscapeString(c.xlabel))
	fmt.Fprintf(&b, `<text transform="translate(14 %.1f) rotate(-90)" text-anchor="middle">%s</text>`, float64(padT)+ph/2, html.EscapeString(c.ylabel))
	b.WriteString(`</g>`)
	// Series.
	for _, s := range c.series {
		col := s.color
		switch s.kind {
		case kindPoints:
			fmt.Fprintf(&b, `<g fill="%s" fill-opacity="0.55">`, col)
			for i := range s.xs {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5"/>`, px(s.xs[i]), py(s.ys[i]))
			}
			b.WriteString(`</g>`)
		case kindLine, kindStep:
			var pts []string
			for i := range s.xs {
				if math.IsNaN(s.ys[i]) {
					continue
				}
				if s.kind == kindStep && i > 0 && len(pts) > 0 {
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.xs[i]), py(s.ys[i-1])))
				}
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.xs[i]), py(s.ys[i])))
			}
			dash := ""
			if s.dash {
				dash = ` stroke-dasharray="6 4"`
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`, col, dash, strings.Join(pts, " "))
		case kindBars:
			fmt.Fprintf(&b, `<g fill="%s" fill-opacity="0.75">`, col)
			for i := range s.xs {
				l, r := px(s.xs[i]-s.width/2), px(s.xs[i]+s.width/2)
				top, base := py(s.ys[i]), py(max(y0, 0))
				if s.base != nil {
					base = py(s.base[i])
				}
				fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`, l, min(top, base), max(r-l-1, 0.5), math.Abs(base-top))
			}
			b.WriteString(`</g>`)
		}
	}
	// Legend.
	lx := float64(c.w - padR)
	b.WriteString(`<g font-size="11">`)
	for i := len(c.series) - 1; i >= 0; i-- {
		s := c.series[i]
		if s.name == "" {
			continue
		}
		wdt := float64(7*len([]rune(s.name)) + 22)
		lx -= wdt
		fmt.Fprintf(&b, `<rect x="%.1f" y="27" width="12" height="10" fill="%s"/><text x="%.1f" y="36">%s</text>`, lx, s.color, lx+16, html.EscapeString(s.name))
	}
	b.WriteString(`</g></svg>`)
	return b.String()
}
