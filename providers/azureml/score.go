package azureml

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
	"github.com/cloudinfer/cloudinfer/internal/openaiwire"
)

type inputData struct {
	InputData struct {
		InputString []openaiwire.Message `json:"input_string"`
		Parameters  inputParameters      `json:"parameters"`
	} `json:"input_data"`
}

type inputParameters struct {
	MaxNewTokens int      `json:"max_new_tokens,omitempty"`
	Temperature  *float64 `json:"temperature,omitempty"`
	TopP         *float64 `json:"top_p,omitempty"`
	TopK         int      `json:"top_k,omitempty"`
	DoSample     *bool    `json:"do_sample,omitempty"`
}

// inputDataDialect names the model catalog's /score form in refusals.
const inputDataDialect = "azureml /score input_data"

// refuseInputData refuses what the model catalog's input_data form cannot
// carry: it is text messages and Hugging Face generation parameters.
func refuseInputData(g *cloudreq.GenerateInput) error {
	return openaiwire.RefuseFixedFields(g, inputDataDialect, "use ScoreMessages for a chat deployment", true)
}

// encodeInputData writes the model catalog's /score body. Stop sequences
// have no field there and are refused. The catalog's containers run
// Hugging Face generation, which samples only with do_sample true (a
// temperature alone is ignored) and refuses a temperature of 0 while
// sampling: a positive temperature or a top_p sets do_sample true, a
// temperature of 0 becomes greedy decoding (do_sample false, no
// temperature).
func encodeInputData(g *cloudreq.GenerateInput) ([]byte, error) {
	if err := refuseInputData(g); err != nil {
		return nil, err
	}
	var b inputData
	b.InputData.InputString = openaiwire.Messages(g.Messages)
	p := inputParameters{MaxNewTokens: g.MaxTokens, Temperature: g.Temperature, TopP: g.TopP, TopK: g.TopK}
	switch {
	case g.Temperature != nil && *g.Temperature == 0:
		p.Temperature, p.DoSample = nil, new(bool)
	case g.Temperature != nil || g.TopP != nil:
		sample := true
		p.DoSample = &sample
	}
	b.InputData.Parameters = p
	out, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	return cloudreq.MergeExtra(out, g.Extra)
}

// errNoText is returned for a /score body that holds no generated text.
var errNoText = errors.New(`expected an OpenAI completion, {"output":…}, [{"0":…}] or a JSON string`)

// decodeScore reads a /score (or chat) response: an OpenAI completion (or
// error object), {"output":"…"}, [{"0":"…"}] or a JSON string.
func decodeScore(body []byte) (openaiwire.Result, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return openaiwire.Result{}, errNoText
	}
	switch body[0] {
	case '{':
		var out struct {
			Output *string `json:"output"`
		}
		if err := json.Unmarshal(body, &out); err != nil {
			return openaiwire.Result{}, err
		}
		if out.Output != nil {
			return openaiwire.Result{Text: *out.Output, Content: *out.Output != ""}, nil
		}
		r, err := openaiwire.Decode(body)
		if err != nil {
			return r, err
		}
		if r.Error == nil && r.Text == "" && r.FinishReason == "" && r.Usage == nil && !bytes.Contains(body, []byte(`"choices"`)) {
			return openaiwire.Result{}, errNoText
		}
		return r, nil
	case '[':
		var out []map[string]json.RawMessage
		if err := json.Unmarshal(body, &out); err != nil || len(out) == 0 {
			return openaiwire.Result{}, errNoText
		}
		var s string
		if err := json.Unmarshal(out[0]["0"], &s); err != nil {
			return openaiwire.Result{}, errNoText
		}
		return openaiwire.Result{Text: s, Content: s != ""}, nil
	case '"':
		var s string
		if err := json.Unmarshal(body, &s); err != nil {
			return openaiwire.Result{}, err
		}
		return openaiwire.Result{Text: s, Content: s != ""}, nil
	}
	return openaiwire.Result{}, errNoText
}

// unreadableMsg begins the error of a 2xx generate body that does not
// parse or holds no generated text: the model (or its scoring script)
// answered what no client can read, ERR_MODEL_ERROR, not retryable
// (httpadapter.Malformed).
const unreadableMsg = "azureml: the response holds no generated text"

// wholeDecoder turns a whole JSON response, sent where a stream was asked
// for, into one chunk.
type wholeDecoder struct{ errDec openaiwire.StreamDecoder }

// Decode implements httpadapter.Decoder.
func (d *wholeDecoder) Decode(frame []byte) (cloudreq.StreamChunk, bool, error) {
	r, err := decodeScore(frame)
	if err == nil && r.Error != nil {
		// An error object: let the OpenAI stream decoder map it.
		d.errDec.Provider, d.errDec.Native, d.errDec.Class = cloudreq.ProviderAzure, native(0), streamClass
		return d.errDec.Decode(frame)
	}
	if err != nil {
		// As for Invoke: a JSON body that holds no generated text (cut or
		// malformed) is an error, not text.
		return cloudreq.StreamChunk{}, false, httpadapter.Malformed(cloudreq.ProviderAzure, unreadableMsg, err)
	}
	return cloudreq.StreamChunk{Text: r.Text, Content: r.Content, FinishReason: r.FinishReason, Usage: r.Usage}, false, nil
}

// Complete implements httpadapter.Decoder: a whole body is complete.
func (d *wholeDecoder) Complete() error { return nil }

// refuseServerless refuses what the model inference API's chat
// completions do not define (n, logprobs, top_k, parallel_tool_calls,
// reasoning_effort, max_completion_tokens, extras): it refuses such
// members with 422, or drops them under "extra-parameters: drop", which
// the adapter sends with usage-reporting streams. With the caller's own
// "extra-parameters: pass-through" header they go to the model as they
// are.
func refuseServerless(req *cloudreq.CloudRequest) error {
	if strings.EqualFold(req.Header.Get(HeaderExtraParameters), "pass-through") {
		return nil
	}
	g := req.Generate
	r := func(f string) error {
		return &openaiwire.Refusal{Dialect: "azureml serverless chat", Feature: f,
			Hint: `the model inference API does not define it; send the header "extra-parameters: pass-through" to pass it to the model`}
	}
	switch {
	case g.N > 1:
		return r("N > 1")
	case g.Logprobs:
		return r("Logprobs")
	case g.TopK > 0:
		return r("TopK")
	case g.ParallelToolCalls != nil:
		return r("ParallelToolCalls")
	case g.Reasoning != nil:
		return r("Reasoning")
	case g.TokenLimit == cloudreq.TokenLimitMaxCompletionTokens:
		return r("TokenLimit max_completion_tokens")
	case len(g.Extra) > 0:
		return r("Generate.Extra")
	}
	return nil
}
