package emulator

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTGIDetails: details: true gives TGI's details (finish reason, token
// count, the seed asked for, every token with its logprob, top_n_tokens
// top tokens, and with decoder_input_details the prompt's tokens); a
// stream's events carry each token's logprob and top tokens, the last
// the stream details. Out-of-range members are refused as TGI refuses
// them.
func TestTGIDetails(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 9})
	c := sageMakerClient(s, "AKIDEXAMPLE", "secret")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	invoke := func(body string) ([]byte, error) {
		out, err := c.InvokeEndpoint(ctx, &sagemakerruntime.InvokeEndpointInput{
			EndpointName: aws.String("llama-3-8b"), ContentType: aws.String("application/json"), Body: []byte(body),
		})
		if err != nil {
			return nil, err
		}
		return out.Body, nil
	}

	b, err := invoke(`{"inputs":"Hello there, model","parameters":{"max_new_tokens":6,"details":true,"decoder_input_details":true,"top_n_tokens":3,"seed":42}}`)
	require.NoError(t, err)
	var gen []struct {
		GeneratedText string     `json:"generated_text"`
		Details       tgiDetails `json:"details"`
	}
	require.NoError(t, json.Unmarshal(b, &gen), "%s", b)
	require.Len(t, gen, 1)
	d := gen[0].Details
	assert.Equal(t, "length", d.FinishReason)
	assert.Equal(t, 6, d.GeneratedTokens)
	require.NotNil(t, d.Seed)
	assert.EqualValues(t, 42, *d.Seed)
	require.Len(t, d.Tokens, 6)
	require.Len(t, d.TopTokens, 6)
	var text strings.Builder
	for i, tk := range d.Tokens {
		text.WriteString(tk.Text)
		require.NotNil(t, tk.Logprob)
		assert.LessOrEqual(t, *tk.Logprob, 0.0)
		require.Len(t, d.TopTokens[i], 3)
		assert.Equal(t, tk.Text, d.TopTokens[i][0].Text, "the chosen token leads")
		assert.Greater(t, *d.TopTokens[i][0].Logprob, *d.TopTokens[i][2].Logprob)
	}
	assert.Equal(t, gen[0].GeneratedText, text.String(), "the tokens are the text")
	require.Len(t, d.Prefill, 5, "the prompt's tokens (4 bytes each)")
	assert.Nil(t, d.Prefill[0].Logprob, "the first prompt token has no logprob")
	assert.NotNil(t, d.Prefill[1].Logprob)
	var prompt strings.Builder
	for _, p := range d.Prefill {
		prompt.WriteString(p.Text)
	}
	assert.Equal(t, "Hello there, model", prompt.String())

	// details without top_n_tokens or decoder_input_details: no top tokens,
	// an empty prefill, no seed for greedy decoding.
	b, err = invoke(`{"inputs":"hi","parameters":{"max_new_tokens":3,"details":true}}`)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "top_tokens")
	assert.Contains(t, string(b), `"prefill":[]`)
	assert.Contains(t, string(b), `"seed":null`)
	// Without details: none.
	b, err = invoke(`{"inputs":"hi","parameters":{"max_new_tokens":3}}`)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "details")

	for _, body := range []string{
		`{"inputs":"hi","parameters":{"top_n_tokens":6}}`,
		`{"inputs":"hi","parameters":{"decoder_input_details":true},"stream":true}`,
	} {
		_, err := invoke(body)
		var me *types.ModelError
		require.ErrorAs(t, err, &me, body)
		assert.EqualValues(t, 422, aws.ToInt32(me.OriginalStatusCode))
	}

	out, err := c.InvokeEndpointWithResponseStream(ctx, &sagemakerruntime.InvokeEndpointWithResponseStreamInput{
		EndpointName: aws.String("llama-3-8b"), ContentType: aws.String("application/json"),
		Body: []byte(`{"inputs":"hello","parameters":{"max_new_tokens":5,"top_n_tokens":2,"do_sample":true},"stream":true}`),
	})
	require.NoError(t, err)
	st := out.GetStream()
	defer st.Close()
	var evs []tgiEvent
	for ev := range st.Events() {
		p := ev.(*types.ResponseStreamMemberPayloadPart)
		var e tgiEvent
		require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(strings.TrimPrefix(string(p.Value.Bytes), "data:"))), &e))
		evs = append(evs, e)
	}
	require.NoError(t, st.Err())
	require.Len(t, evs, 5)
	for i, e := range evs {
		assert.Equal(t, i+1, e.Index)
		require.NotNil(t, e.Token.Logprob)
		require.Len(t, e.TopTokens, 2)
		assert.Equal(t, e.Token.Text, e.TopTokens[0].Text)
	}
	last := evs[4].Details
	require.NotNil(t, last)
	assert.Equal(t, 5, last.GeneratedTokens)
	assert.NotNil(t, last.Seed, "a sampled stream reports its seed")
	assert.Equal(t, 2, last.InputLength)
}
