package emulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
)

// Bounds of the OpenAI sampling members the emulator honours (vLLM's
// defaults: max_logprobs 20).
const (
	maxChoices  = 128
	maxLogprobs = 20
)

// intField is an optional integer member.
type intField struct {
	set bool
	n   int
}

// UnmarshalJSON accepts null or an integer.
func (f *intField) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return errors.New("must be an integer")
	}
	v, err := n.Int64()
	if err != nil || v < -1<<31 || v > 1<<31 {
		return errors.New("must be an integer")
	}
	f.set, f.n = true, int(v)
	return nil
}

// setChoices sets the number of choices and the logprobs asked for:
// n (1 to maxChoices, default 1); on chat, logprobs true with top_logprobs
// k (0 to maxLogprobs, and only with logprobs); on completions, logprobs k
// (0 to maxLogprobs). It returns the error a server gives for values out
// of range.
func (g *genRequest) setChoices(n intField, chatLogprobs bool, k intField) error {
	g.choices = 1
	if n.set {
		if n.n < 1 || n.n > maxChoices {
			return fmt.Errorf("\"n\" must be between 1 and %d (got %d)", maxChoices, n.n)
		}
		g.choices = n.n
	}
	name := "logprobs"
	if g.dialect == dialectChat {
		name = "top_logprobs"
		if k.set && !chatLogprobs {
			return errors.New("\"top_logprobs\" needs \"logprobs\": true")
		}
		g.logprobs = chatLogprobs
	} else {
		g.logprobs = k.set
	}
	if k.set && (k.n < 0 || k.n > maxLogprobs) {
		return fmt.Errorf("%q must be between 0 and %d (got %d)", name, maxLogprobs, k.n)
	}
	g.topLogprobs = k.n
	return nil
}

// tokenLogprob is one sampled token's log probability and the most
// likely tokens at its place (the sampled one first).
type tokenLogprob struct {
	logprob float64
	top     []altToken
}

type altToken struct {
	token   string
	logprob float64
}

// choiceDraws are what each choice of a call says: choice 0 the call's
// own words, each other choice words from its own generator, and, when
// asked, every token's log probabilities. They come from the seed and the
// request's sequence number, and leave the call's own draws as they are:
// an answer with one choice and no logprobs is the same as without them.
type choiceDraws struct {
	words    [][]string
	logprobs [][]tokenLogprob // nil unless asked
}

// drawChoices draws c's choices.
func drawChoices(c *call) *choiceDraws {
	n := max(c.gen.choices, 1)
	d := &choiceDraws{words: make([][]string, n)}
	if c.gen.logprobs {
		d.logprobs = make([][]tokenLogprob, n)
	}
	for j := range n {
		if j == 0 && d.logprobs == nil {
			d.words[0] = c.words // nothing to draw
			continue
		}
		r := rand.New(rand.NewPCG(c.ep.seed+uint64(j+1)*0x9E3779B97F4A7C15, c.rec.Seq))
		words := c.words
		if j > 0 && !c.structured && c.reasoningN == 0 {
			words = make([]string, c.n)
			for i := range words {
				words[i] = vocabulary[r.IntN(len(vocabulary))]
			}
		}
		d.words[j] = words
		if d.logprobs == nil {
			continue
		}
		lps := make([]tokenLogprob, len(words))
		for i, w := range words {
			lps[i] = drawLogprob(r, w, c.gen.topLogprobs)
		}
		d.logprobs[j] = lps
	}
	return d
}

// drawLogprob draws the log probability of the sampled token w and the k
// most likely tokens at its place, w first, each less likely than the one
// before.
func drawLogprob(r *rand.Rand, w string, k int) tokenLogprob {
	lp := round4(-r.ExpFloat64() * 0.4)
	t := tokenLogprob{logprob: lp}
	if k == 0 {
		return t
	}
	t.top = make([]altToken, 0, k)
	t.top = append(t.top, altToken{w, lp})
	used := map[string]bool{w: true}
	for len(t.top) < k {
		alt := vocabulary[r.IntN(len(vocabulary))]
		if used[alt] {
			continue
		}
		used[alt] = true
		lp = round4(lp - 0.5 - 2*r.Float64())
		t.top = append(t.top, altToken{alt, lp})
	}
	return t
}

func round4(v float64) float64 { return float64(int64(v*1e4)) / 1e4 }

// Chat logprobs: choices[i].logprobs = {"content":[{token, logprob,
// bytes, top_logprobs:[{token, logprob, bytes}]}]}.
type chatLogprobs struct {
	Content []chatTokenLogprob `json:"content"`
}

type chatTokenLogprob struct {
	Token       string         `json:"token"`
	Logprob     float64        `json:"logprob"`
	Bytes       []int          `json:"bytes"`
	TopLogprobs []chatTopToken `json:"top_logprobs"`
}

type chatTopToken struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

func tokenBytes(s string) []int {
	b := make([]int, len(s))
	for i := range len(s) {
		b[i] = int(s[i])
	}
	return b
}

// chatLogprobsOf returns the chat logprobs of tokens words[from:to].
func chatLogprobsOf(words []string, lps []tokenLogprob, from, to int) *chatLogprobs {
	out := &chatLogprobs{Content: make([]chatTokenLogprob, 0, to-from)}
	for i := from; i < to; i++ {
		e := chatTokenLogprob{Token: words[i], Logprob: lps[i].logprob, Bytes: tokenBytes(words[i]), TopLogprobs: []chatTopToken{}}
		for _, a := range lps[i].top {
			e.TopLogprobs = append(e.TopLogprobs, chatTopToken{Token: a.token, Logprob: a.logprob, Bytes: tokenBytes(a.token)})
		}
		out.Content = append(out.Content, e)
	}
	return out
}

// Completions logprobs, the legacy form: parallel lists of tokens, their
// logprobs, the top tokens at each place (a map; the sampled token is
// always in it) and each token's offset in the text.
type completionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float64            `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// completionLogprobsOf returns the completions logprobs of tokens
// words[from:to]; offset is the text offset of words[from].
func completionLogprobsOf(words []string, lps []tokenLogprob, from, to, offset int) *completionLogprobs {
	out := &completionLogprobs{
		Tokens: make([]string, 0, to-from), TokenLogprobs: make([]float64, 0, to-from),
		TopLogprobs: make([]map[string]float64, 0, to-from), TextOffset: make([]int, 0, to-from),
	}
	for i := from; i < to; i++ {
		out.Tokens = append(out.Tokens, words[i])
		out.TokenLogprobs = append(out.TokenLogprobs, lps[i].logprob)
		top := map[string]float64{words[i]: lps[i].logprob}
		for _, a := range lps[i].top {
			top[a.token] = a.logprob
		}
		out.TopLogprobs = append(out.TopLogprobs, top)
		out.TextOffset = append(out.TextOffset, offset)
		offset += len(words[i])
	}
	return out
}
