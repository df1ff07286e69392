package bench

import (
	"maps"
	"net/http"
	"strings"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

// promptWords are common English words, for generated prompts.
var promptWords = strings.Fields(`the of and to in is was for on are with as be at by this had not
are but from or have an they which one you were her all she there would their we him been has when
who will more no if out so said what up its about into than them can only other new some could time
these two may then do first any my now such like our over man me even most made after also did
many before must through back years where much your way well down should because each just those
people how too little state good very make world still own see men work long get here between both
life being under never day same another know while last might us great old year off come since
against go came right used take three`)

// CharsPerToken is the usual estimate of English text per token, which
// the emulator also assumes; Prompt(n) is 4n bytes long.
const CharsPerToken = 4

// Prompt returns a prompt of about n tokens: common words, CharsPerToken
// × n bytes, the same for the same n, so every request of a run (and of a
// rerun) sends the same text.
func Prompt(n int) string {
	size := n * CharsPerToken
	var b strings.Builder
	b.Grow(size + 16)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(promptWords[(i*7+i/len(promptWords))%len(promptWords)])
	}
	return b.String()[:size]
}

// buildRequest returns the request a target sends, for class c (nil: no
// mix). Requests of a run share it and copy it shallowly; the client
// never modifies a caller's request.
func buildRequest(t *Target, c *Class) *cloudreq.CloudRequest {
	r := &cloudreq.CloudRequest{
		Provider: t.Provider, Service: t.Service, Action: t.Action,
		Target:     cloudreq.Target{Endpoint: t.Endpoint, Variant: t.Variant, Model: t.Model, Path: t.Path},
		Attributes: cloudreq.Attributes{Method: t.Method},
	}
	pl := &t.Payload
	if c != nil {
		r.Class = c.Label()
		if c.Payload != nil {
			pl = c.Payload
		}
		if c.TargetPath != "" {
			r.Target.Path = c.TargetPath
		}
	}
	h := http.Header{}
	for k, v := range t.Header {
		h.Set(k, v)
	}
	if c != nil {
		for k, v := range c.Header {
			h.Set(k, v)
		}
	}
	if len(h) > 0 {
		r.Header = maps.Clone(h)
	}
	switch {
	case len(pl.body) > 0:
		if r.Action == cloudreq.ActionGenerate {
			r.Action = cloudreq.ActionInvoke
		}
		r.Payload = cloudreq.Payload{Body: pl.body, ContentType: pl.ContentType}
	default:
		r.Action = cloudreq.ActionGenerate
		prompt := pl.Prompt
		if prompt == "" {
			prompt = Prompt(pl.PromptTokens)
		}
		r.Generate = &cloudreq.GenerateInput{
			Messages:  []cloudreq.Message{{Role: "user", Content: prompt}},
			MaxTokens: pl.OutputTokens,
			IgnoreEOS: pl.IgnoreEOS,
		}
	}
	return r
}

// Request returns the request a run sends to t (without a class), for
// callers that send one by hand. Call Plan.Prepare first: it reads payload
// files and fills defaults.
func (t *Target) Request() *cloudreq.CloudRequest { return buildRequest(t, nil) }
