package emulator

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
)

// maxTopNTokens is TGI's default bound on top_n_tokens (its launcher's
// --max-top-n-tokens).
const maxTopNTokens = 5

// tgiOptions are the members of TGI's parameters that shape the answer's
// details.
type tgiOptions struct {
	// prefill is decoder_input_details: details.prefill lists the
	// prompt's tokens.
	prefill bool
	// seed is parameters.seed, reported in details; sampled is
	// do_sample, which reports a drawn seed when none is given.
	seed    *uint64
	sampled bool
}

// setTGI checks and sets the details members: top_n_tokens (0 to
// maxTopNTokens), decoder_input_details (not on a stream), seed. TGI
// returns each token's logprob in every stream event and in details.
func (g *genRequest) setTGI(topN intField, prefill, sampled bool, seed intField) error {
	if topN.set {
		if topN.n < 0 || topN.n > maxTopNTokens {
			return fmt.Errorf("`top_n_tokens` must be >= 0 and <= %d. Given: %d", maxTopNTokens, topN.n)
		}
		g.topLogprobs = topN.n
	}
	if prefill && g.stream {
		return errors.New("`decoder_input_details` == true is not supported when streaming tokens")
	}
	g.logprobs = true
	g.tgi.prefill, g.tgi.sampled = prefill, sampled
	if seed.set {
		if seed.n < 0 {
			return errors.New("`seed` must be a non-negative integer")
		}
		s := uint64(seed.n)
		g.tgi.seed = &s
	}
	return nil
}

// tgiToken is one token as TGI reports it.
type tgiToken struct {
	ID      int      `json:"id"`
	Text    string   `json:"text"`
	Logprob *float64 `json:"logprob"`
	Special bool     `json:"special"`
}

// tgiPrefillToken is a prompt token of details.prefill (the first has
// no logprob).
type tgiPrefillToken struct {
	ID      int      `json:"id"`
	Text    string   `json:"text"`
	Logprob *float64 `json:"logprob"`
}

// tgiDetails is a whole answer's details.
type tgiDetails struct {
	FinishReason    string            `json:"finish_reason"`
	GeneratedTokens int               `json:"generated_tokens"`
	Seed            *uint64           `json:"seed"`
	Prefill         []tgiPrefillToken `json:"prefill"`
	Tokens          []tgiToken        `json:"tokens"`
	TopTokens       [][]tgiToken      `json:"top_tokens,omitempty"`
}

// tgiStreamDetails is the last stream event's details.
type tgiStreamDetails struct {
	FinishReason    string  `json:"finish_reason"`
	GeneratedTokens int     `json:"generated_tokens"`
	Seed            *uint64 `json:"seed"`
	InputLength     int     `json:"input_length"`
}

type tgiEvent struct {
	Index         int               `json:"index"`
	Token         tgiToken          `json:"token"`
	TopTokens     []tgiToken        `json:"top_tokens,omitempty"`
	GeneratedText *string           `json:"generated_text"`
	Details       *tgiStreamDetails `json:"details"`
}

// tgiAnswer makes a TGI call's token events and details: each token's
// drawn logprob and, with top_n_tokens k, the k most likely tokens.
type tgiAnswer struct {
	draws *choiceDraws
}

func (a *tgiAnswer) logprobs(c *call) []tokenLogprob {
	if a.draws == nil {
		a.draws = drawChoices(c)
	}
	return a.draws.logprobs[0]
}

// tokenID is a token's id in the emulated vocabulary.
func tokenID(s string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return int(h.Sum32()%32000) + 100
}

func (a *tgiAnswer) token(c *call, i int) (tgiToken, []tgiToken) {
	lp := a.logprobs(c)[i]
	w := c.words[i]
	t := tgiToken{ID: tokenID(w), Text: w, Logprob: &lp.logprob}
	var top []tgiToken
	for _, alt := range lp.top {
		top = append(top, tgiToken{ID: tokenID(alt.token), Text: alt.token, Logprob: &alt.logprob})
	}
	return t, top
}

// seed is the seed details report: the request's, or with do_sample a
// drawn one; nil for greedy decoding.
func tgiSeed(c *call) *uint64 {
	if s := c.gen.tgi.seed; s != nil {
		return s
	}
	if !c.gen.tgi.sampled {
		return nil
	}
	s := rand.New(rand.NewPCG(c.ep.seed^0x5EED, c.rec.Seq)).Uint64() >> 1
	return &s
}

// event is token i's stream event; the last carries generated_text and
// the details.
func (a *tgiAnswer) event(c *call, i int) tgiEvent {
	t, top := a.token(c, i)
	ev := tgiEvent{Index: i + 1, Token: t, TopTokens: top}
	if i == c.n-1 {
		text := c.text()
		ev.GeneratedText = &text
		ev.Details = &tgiStreamDetails{FinishReason: tgiFinish(c.finish), GeneratedTokens: c.n, Seed: tgiSeed(c), InputLength: c.gen.promptTokens}
	}
	return ev
}

// details is a whole answer's details: finish reason, token count, seed,
// every token with its logprob (and top tokens), and with
// decoder_input_details the prompt's tokens.
func (a *tgiAnswer) details(c *call) *tgiDetails {
	d := &tgiDetails{FinishReason: tgiFinish(c.finish), GeneratedTokens: c.n, Seed: tgiSeed(c),
		Prefill: []tgiPrefillToken{}, Tokens: make([]tgiToken, c.n)}
	k := c.gen.topLogprobs
	if k > 0 {
		d.TopTokens = make([][]tgiToken, c.n)
	}
	for i := range c.n {
		t, top := a.token(c, i)
		d.Tokens[i] = t
		if k > 0 {
			d.TopTokens[i] = top
		}
	}
	if c.gen.tgi.prefill && c.gen.prompt != "" {
		r := rand.New(rand.NewPCG(c.ep.seed^0x9F11, c.rec.Seq))
		for j, p := range split(c.gen.prompt, c.gen.promptTokens) {
			pt := tgiPrefillToken{ID: tokenID(p), Text: p}
			if j > 0 {
				lp := round4(-r.ExpFloat64() * 2)
				pt.Logprob = &lp
			}
			d.Prefill = append(d.Prefill, pt)
		}
	}
	return d
}
