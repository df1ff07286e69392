package sagemaker

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

// TestTGILogprobsOnlyWhenAsked: every TGI event carries its token's
// logprob; a chunk reads it (and the top tokens) only when the request
// asked for logprobs, and so does a whole answer's details.
func TestTGILogprobsOnlyWhenAsked(t *testing.T) {
	ev := []byte(`{"index":1,"token":{"id":7,"text":" hi","logprob":-0.25,"special":false},"top_tokens":[{"id":7,"text":" hi","logprob":-0.25,"special":false},{"id":9,"text":" yo","logprob":-1.5,"special":false}],"generated_text":null,"details":null}`)
	ch := cloudreq.StreamChunk{Data: ev}
	richChunk(&ch, false)
	assert.Nil(t, ch.Logprobs)
	richChunk(&ch, true)
	require.Len(t, ch.Logprobs, 1)
	assert.Equal(t, cloudreq.TokenLogprob{Token: " hi", Logprob: -0.25, Top: []cloudreq.TopLogprob{{Token: " hi", Logprob: -0.25}, {Token: " yo", Logprob: -1.5}}}, ch.Logprobs[0])

	body := []byte(`[{"generated_text":" hi yo","details":{"finish_reason":"length","generated_tokens":2,"seed":null,"prefill":[],
		"tokens":[{"id":7,"text":" hi","logprob":-0.25,"special":false},{"id":9,"text":" yo","logprob":-0.5,"special":false}],
		"top_tokens":[[{"id":7,"text":" hi","logprob":-0.25,"special":false}],[{"id":9,"text":" yo","logprob":-0.5,"special":false}]]}}]`)
	resp := &cloudreq.CloudResponse{Data: body}
	richAnswer(resp, false)
	assert.Nil(t, resp.Logprobs)
	richAnswer(resp, true)
	assert.Equal(t, []cloudreq.TokenLogprob{
		{Token: " hi", Logprob: -0.25, Top: []cloudreq.TopLogprob{{Token: " hi", Logprob: -0.25}}},
		{Token: " yo", Logprob: -0.5, Top: []cloudreq.TopLogprob{{Token: " yo", Logprob: -0.5}}},
	}, resp.Logprobs)
}
