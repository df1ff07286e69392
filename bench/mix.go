package bench

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency/stats"
)

// Mix is a weighted request mix: classes picked in proportion to their
// weights, and orthogonal tag dimensions (region, device, time of day…)
// whose values are applied in their own proportions.
type Mix struct {
	Classes    []Class     `json:"classes" yaml:"classes"`
	Dimensions []Dimension `json:"dimensions,omitempty" yaml:"dimensions,omitempty"`
}

// Class is one kind of request in a mix.
type Class struct {
	// Name labels the class in reports (default: Path).
	Name string `json:"name,omitempty" yaml:"name,omitempty"`
	// Weight is the class's share; weights need not sum to 1.
	Weight float64 `json:"weight" yaml:"weight"`
	// Method and Path describe the class as the traffic log saw it.
	Method string `json:"method,omitempty" yaml:"method,omitempty"`
	Path   string `json:"path,omitempty" yaml:"path,omitempty"`
	// TargetPath, when set, is sent as the request's Target.Path (a
	// sub-path under the endpoint, as PAI-EAS takes).
	TargetPath string `json:"target_path,omitempty" yaml:"target_path,omitempty"`
	// Header holds headers sent with the class's requests.
	Header map[string]string `json:"headers,omitempty" yaml:"headers,omitempty"`
	// Payload overrides the target's payload for this class.
	Payload *Payload `json:"payload,omitempty" yaml:"payload,omitempty"`
	// SLAs are the class's own SLAs (their class is set to the class's
	// label), in stats.SLA's text form.
	SLAs []stats.SLA `json:"slas,omitempty" yaml:"slas,omitempty"`
	// Observed is what a traffic log recorded for the class, if it was
	// built from one.
	Observed *Observed `json:"observed,omitempty" yaml:"observed,omitempty"`
}

// Observed summarizes the latencies a traffic log recorded for a class.
type Observed struct {
	Count int `json:"count" yaml:"count"`
	// Latencies are the observed latencies, in milliseconds, as logged.
	Latencies []float64 `json:"-" yaml:"-"`
}

// Dimension is a tag applied to every request with values in proportion to
// their weights, independently of the class.
type Dimension struct {
	Name   string  `json:"name" yaml:"name"`
	Values []Value `json:"values" yaml:"values"`
}

// Value is one weighted value of a Dimension.
type Value struct {
	Value  string  `json:"value" yaml:"value"`
	Weight float64 `json:"weight" yaml:"weight"`
}

// Label returns the class's name for reports.
func (c *Class) Label() string {
	if c.Name != "" {
		return c.Name
	}
	return c.Path
}

// Validate reports a mix that cannot be used.
func (m *Mix) Validate() error {
	bad := func(format string, args ...any) error {
		return errcodes.Errorf(errcodes.InvalidParam, "bench: mix: "+format, args...)
	}
	if len(m.Classes) == 0 {
		return bad("no classes")
	}
	if err := checkWeights(len(m.Classes), func(i int) (string, float64) { return m.Classes[i].Label(), m.Classes[i].Weight }); err != nil {
		return bad("classes: %v", err)
	}
	seen := map[string]bool{}
	for i := range m.Classes {
		l := m.Classes[i].Label()
		if l == "" {
			return bad("class %d has no name or path", i)
		}
		if seen[l] {
			return bad("two classes named %q", l)
		}
		seen[l] = true
		for _, s := range m.Classes[i].SLAs {
			s.Class = ""
			if err := s.Validate(); err != nil {
				return err
			}
		}
		if strings.ContainsAny(l, " \t\n") && len(m.Classes[i].SLAs) > 0 {
			return bad("class %q has SLAs, so its name cannot hold spaces; give it a name", l)
		}
	}
	dims := map[string]bool{}
	for _, d := range m.Dimensions {
		if d.Name == "" || len(d.Values) == 0 {
			return bad("a dimension needs a name and values")
		}
		if dims[d.Name] {
			return bad("two dimensions named %q", d.Name)
		}
		dims[d.Name] = true
		if err := checkWeights(len(d.Values), func(i int) (string, float64) { return d.Values[i].Value, d.Values[i].Weight }); err != nil {
			return bad("dimension %q: %v", d.Name, err)
		}
	}
	return nil
}

func checkWeights(n int, at func(int) (string, float64)) error {
	sum := 0.0
	for i := range n {
		name, w := at(i)
		if !(w >= 0) || math.IsInf(w, 0) {
			return errcodes.Errorf(errcodes.InvalidParam, "weight of %q is %g; want a non-negative number", name, w)
		}
		sum += w
	}
	if !(sum > 0) || math.IsInf(sum, 0) {
		return errcodes.New(errcodes.InvalidParam, "weights must sum to a positive number")
	}
	return nil
}

// Pick is one draw from a Mix.
type Pick struct {
	Class *Class
	Tags  map[string]string
}

// Picker draws classes and tags from a Mix. It deals from shuffled decks:
// each deck holds every class in proportion to its weight (rounded by
// largest remainder, carrying the rounding over to the next deck), so the
// shares are exact to within one request at every deck's end while the
// order stays random. Each dimension has its own deck, so tags are
// independent of the class. A Picker is not safe for concurrent use.
type Picker struct {
	mix     *Mix
	classes *deck
	dims    []*deck
}

// DeckSize is the number of draws in one deck of a Picker.
const DeckSize = 100

// NewPicker returns a Picker for m, which must be valid. The same seed
// gives the same sequence.
func NewPicker(m *Mix, seed uint64) *Picker { return newPicker(m, seed, DeckSize) }

// newPicker deals decks of size draws (at least one per class and
// value); a run shorter than DeckSize uses its length, so that even a short
// run has its shares.
func newPicker(m *Mix, seed uint64, size int) *Picker {
	p := &Picker{mix: m}
	w := make([]float64, len(m.Classes))
	for i, c := range m.Classes {
		w[i] = c.Weight
	}
	p.classes = newDeck(w, seed, 0, size)
	for j, d := range m.Dimensions {
		w := make([]float64, len(d.Values))
		for i, v := range d.Values {
			w[i] = v.Weight
		}
		p.dims = append(p.dims, newDeck(w, seed, uint64(j+1), size))
	}
	return p
}

// Next draws the next request's class and tags.
func (p *Picker) Next() Pick {
	pk := Pick{Class: &p.mix.Classes[p.classes.next()]}
	if len(p.dims) > 0 {
		pk.Tags = make(map[string]string, len(p.dims))
		for j, d := range p.dims {
			dim := &p.mix.Dimensions[j]
			pk.Tags[dim.Name] = dim.Values[d.next()].Value
		}
	}
	return pk
}

// deck deals indexes in proportion to weights.
type deck struct {
	w     []float64 // normalized
	dealt []int
	total int
	cards []int
	size  int
	rng   *rand.Rand
}

func newDeck(weights []float64, seed, stream uint64, size int) *deck {
	sum := 0.0
	for _, w := range weights {
		sum += w
	}
	d := &deck{w: make([]float64, len(weights)), dealt: make([]int, len(weights)),
		size: max(size, len(weights)), rng: rand.New(rand.NewPCG(seed, stream))}
	for i, w := range weights {
		d.w[i] = w / sum
	}
	return d
}

func (d *deck) next() int {
	if len(d.cards) == 0 {
		d.refill()
	}
	c := d.cards[len(d.cards)-1]
	d.cards = d.cards[:len(d.cards)-1]
	return c
}

// refill deals the next deck: each index gets its share of the running
// total minus what it was already dealt, rounded by largest remainder.
func (d *deck) refill() {
	n := d.total + d.size
	counts := make([]int, len(d.w))
	rest := make([]float64, len(d.w))
	sum := 0
	for i, w := range d.w {
		want := w*float64(n) - float64(d.dealt[i])
		counts[i] = max(0, int(math.Floor(want)))
		rest[i] = want - float64(counts[i])
		sum += counts[i]
	}
	order := make([]int, len(d.w))
	for i := range order {
		order[i] = i
	}
	// Largest remainders first get the cards left; with clamped negative
	// wants the deck may be over-full, and the smallest remainders give back.
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(rest[b], rest[a]) })
	for k := 0; sum < d.size; k = (k + 1) % len(order) {
		if d.w[order[k]] > 0 {
			counts[order[k]]++
			sum++
		}
	}
	for k := len(order) - 1; sum > d.size; k = (k - 1 + len(order)) % len(order) {
		if counts[order[k]] > 0 {
			counts[order[k]]--
			sum--
		}
	}
	d.cards = d.cards[:0]
	for i, c := range counts {
		for range c {
			d.cards = append(d.cards, i)
		}
		d.dealt[i] += c
	}
	d.total = n
	d.rng.Shuffle(len(d.cards), func(i, j int) { d.cards[i], d.cards[j] = d.cards[j], d.cards[i] })
}
