package bench

import (
	"math/rand/v2"
	"strings"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// Prefix makes groups of requests share the start of their prompts, as
// the requests of one application share its system prompt: measured
// request i is in group i mod Groups, and its prompt is its group's
// Tokens-token prefix followed by a part of its own, up to the payload's
// PromptTokens. A server with a prefix cache computes the prefix once
// per group: of R requests, R − Groups find it cached, so the designed
// share of cached prompt tokens is (R − Groups) × Tokens / (R ×
// PromptTokens) (a cache of blocks counts the whole blocks within
// Tokens: the emulator's are 16 tokens). Without a Prefix every
// generated prompt of a trace, a session or a prefix's own part is
// distinct, so that nothing is shared by chance; a run without any of
// them sends the one Prompt(PromptTokens) to every request.
type Prefix struct {
	// Groups is how many distinct prefixes there are (default 1).
	Groups int `json:"groups,omitempty" yaml:"groups,omitempty"`
	// Tokens is each prefix's length, at most the payload's PromptTokens.
	Tokens int `json:"tokens" yaml:"tokens"`
}

func (px *Prefix) validate(targets []Target) error {
	bad := func(format string, args ...any) error {
		return errcodes.Errorf(errcodes.InvalidParam, "bench: prefix: "+format, args...)
	}
	if px.Groups == 0 {
		px.Groups = 1
	}
	if px.Groups < 0 || px.Groups > MaxWorkers {
		return bad("groups %d must lie in [1, %d]", px.Groups, MaxWorkers)
	}
	if px.Tokens < 1 {
		return bad("tokens %d must be at least 1", px.Tokens)
	}
	for _, t := range targets {
		pl := t.Payload
		if t.Action != cloudreq.ActionGenerate || pl.Prompt != "" || len(pl.body) > 0 {
			return bad("target %q: a shared prefix needs a generated prompt (no prompt text, no raw body)", t.Name)
		}
		if px.Tokens > pl.PromptTokens {
			return bad("target %q: prefix of %d tokens is longer than its %d-token prompt", t.Name, px.Tokens, pl.PromptTokens)
		}
	}
	return nil
}

// Seed spaces of the generated text: a trace's blocks, a prefix group's
// prefix, a request's own part, a session's turn.
const (
	seedHashBlock = 0x243f6a8885a308d3
	seedGroup     = 0x13198a2e03707344
	seedOwn       = 0xa4093822299f31d0
	seedTurn      = 0x082efa98ec4e6c89
)

// blockText returns tokens tokens of text (CharsPerToken × tokens bytes,
// words from the prompt vocabulary) drawn from (seed, space): the same
// for the same seed, so that requests that share a block send the same
// bytes, and blocks of whole tokens keep their byte offsets aligned.
func blockText(b *strings.Builder, seed, space uint64, tokens int) {
	size := tokens * CharsPerToken
	r := rand.New(rand.NewPCG(seed, space))
	end := b.Len() + size
	for b.Len() < end {
		w := promptWords[r.IntN(len(promptWords))]
		if left := end - b.Len(); len(w)+1 > left {
			w = (w + " " + strings.Repeat("x", left))[:left]
			b.WriteString(w)
			break
		}
		b.WriteString(w)
		b.WriteByte(' ')
	}
}

// tracePrompt returns the prompt of trace record rec, number i of its run
// seeded seed: its hash ids' blocks of blockTokens tokens, in order, the
// last cut to the input length; without hash ids, text of its own.
func tracePrompt(rec *TraceRecord, blockTokens int, i int, seed uint64) string {
	n := max(rec.InputTokens, 1)
	var b strings.Builder
	b.Grow(n * CharsPerToken)
	if len(rec.HashIDs) == 0 || blockTokens <= 0 {
		blockText(&b, seed^uint64(i)*0x9e3779b97f4a7c15, seedOwn, n)
		return b.String()
	}
	left := n
	for _, h := range rec.HashIDs {
		if left <= 0 {
			break
		}
		k := min(blockTokens, left)
		blockText(&b, uint64(h), seedHashBlock, k)
		left -= k
	}
	if left > 0 { // a record whose input outgrows its blocks (not in the formats)
		blockText(&b, seed^uint64(i)*0x9e3779b97f4a7c15, seedOwn, left)
	}
	return b.String()
}

// prefixPrompt returns measured request i's prompt of tokens tokens under
// px: its group's prefix, then text of its own (seeded by seed and i).
func prefixPrompt(px *Prefix, tokens, i int, seed uint64) string {
	var b strings.Builder
	b.Grow(tokens * CharsPerToken)
	blockText(&b, uint64(i%px.Groups), seedGroup, px.Tokens)
	if own := tokens - px.Tokens; own > 0 {
		blockText(&b, seed^uint64(i+1)*0x9e3779b97f4a7c15, seedOwn, own)
	}
	return b.String()
}

// ignoresEOS reports whether a target's encoder writes IgnoreEOS (the
// OpenAI-compatible wire: the openai provider, PAI-EAS's OpenAI dialect).
func ignoresEOS(t *Target) bool {
	return t.Provider == cloudreq.ProviderOpenAI || t.Provider == cloudreq.ProviderAlibaba
}

// newShaper returns the function that gives each request of target t
// under plan p its own prompt (a trace's record, a prefix group's), or
// nil when every request is the same.
func newShaper(p *Plan, t *Target) func(r *cloudreq.CloudRequest, i int) {
	ld := &p.Load
	if t.Action != cloudreq.ActionGenerate || len(t.Payload.body) > 0 {
		return nil
	}
	seed := p.Seed
	switch {
	case ld.Model == LoadTrace && ld.Trace != nil && ld.Trace.trace != nil:
		tr := ld.Trace.trace
		eos := ignoresEOS(t)
		return func(r *cloudreq.CloudRequest, i int) {
			j := max(i, 0) % len(tr.Records)
			rec := &tr.Records[j]
			g := *r.Generate
			content := ""
			if i < 0 { // the warm-up: the first record's lengths, a prompt of its own
				own := TraceRecord{InputTokens: rec.InputTokens}
				content = tracePrompt(&own, 0, -1, seed^seedTurn)
			} else {
				content = tracePrompt(rec, tr.BlockTokens, j, seed)
			}
			g.Messages = []cloudreq.Message{{Role: "user", Content: content}}
			g.MaxTokens = max(rec.OutputTokens, 1)
			g.IgnoreEOS = g.IgnoreEOS || eos
			r.Generate = &g
		}
	case ld.Prefix != nil && ld.Model != LoadSessions:
		px := ld.Prefix
		n := t.Payload.PromptTokens
		return func(r *cloudreq.CloudRequest, i int) {
			g := *r.Generate
			if i < 0 { // the warm-up shares no group's prefix
				var b strings.Builder
				blockText(&b, seed, seedOwn^1, n)
				g.Messages = []cloudreq.Message{{Role: "user", Content: b.String()}}
			} else {
				g.Messages = []cloudreq.Message{{Role: "user", Content: prefixPrompt(px, n, i, seed)}}
			}
			r.Generate = &g
		}
	}
	return nil
}
