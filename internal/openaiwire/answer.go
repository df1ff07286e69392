package openaiwire

import (
	"net/http"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
)

// Answers returns the httpadapter.AnswerDecoder of a dialect whose whole
// answers decode reads (Decode, or a provider's own reader of the same
// Result): the answer's text, finish reason and usage (and its reasoning,
// tool calls, logprobs and choices, set on out directly), or its error
// object as bodyError maps it (the adapter's error table for an error
// object in a 2xx body).
func Answers(decode func([]byte) (Result, error), bodyError func(resp *http.Response, eb ErrorBody, requestID string) *errcodes.Error) httpadapter.AnswerDecoder {
	return func(resp *http.Response, out *cloudreq.CloudResponse) (httpadapter.Answer, error) {
		r, err := decode(out.Data)
		if err != nil {
			return httpadapter.Answer{}, err
		}
		a := httpadapter.Answer{Text: r.Text, FinishReason: r.FinishReason, Usage: r.Usage}
		out.Reasoning, out.ToolCalls, out.Logprobs, out.Choices = r.Reasoning, r.ToolCalls, r.Logprobs, r.Choices
		if r.Error != nil {
			a.Err = bodyError(resp, *r.Error, out.RequestID)
		}
		return a, nil
	}
}
