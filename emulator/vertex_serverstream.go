package emulator

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
	"google.golang.org/protobuf/encoding/protojson"
)

// serverStreamingPredict: Vertex AI's streaming online prediction for LLMs,
// StreamingPredictRequest{inputs: [Tensor], parameters: Tensor} in,
// one StreamingPredictResponse{outputs: [{structVal: {content:
// {stringVal: [token]}}}]} per token out. The emulator reads the inputs as
// the instances of a predict request ({"prompt": …, "max_tokens": …}
// structs) and the parameters as its parameters (maxOutputTokens, …).
//
// Over REST (POST …:serverStreamingPredict) the reference says only that
// the body is "a stream of StreamingPredictResponse instances"; the
// emulator sends Google's JSON-array stream, as for streamGenerateContent
// without alt=sse (`[{…}\n,\r\n{…}]`), and `data:` events with alt=sse.

// tensorValue turns a Tensor into the JSON value it stands for: a struct
// an object, a list an array, one scalar of a typed list the scalar, more
// an array of them.
func tensorValue(t *aiplatformpb.Tensor) any {
	if t == nil {
		return nil
	}
	if sv := t.GetStructVal(); len(sv) > 0 {
		m := make(map[string]any, len(sv))
		for k, v := range sv {
			m[k] = tensorValue(v)
		}
		return m
	}
	if lv := t.GetListVal(); len(lv) > 0 {
		out := make([]any, len(lv))
		for i, v := range lv {
			out[i] = tensorValue(v)
		}
		return out
	}
	var vals []any
	vals = appendValues(vals, t.GetStringVal())
	vals = appendValues(vals, t.GetBoolVal())
	vals = appendValues(vals, t.GetIntVal())
	vals = appendValues(vals, t.GetInt64Val())
	vals = appendValues(vals, t.GetUintVal())
	vals = appendValues(vals, t.GetUint64Val())
	vals = appendValues(vals, t.GetFloatVal())
	vals = appendValues(vals, t.GetDoubleVal())
	switch len(vals) {
	case 0:
		return nil
	case 1:
		return vals[0]
	}
	return vals
}

// appendValues appends a typed list's scalars to vals.
func appendValues[T any](vals []any, list []T) []any {
	for _, v := range list {
		vals = append(vals, v)
	}
	return vals
}

// parseStreamingPredict reads a StreamingPredictRequest as predict
// instances.
func parseStreamingPredict(r *aiplatformpb.StreamingPredictRequest) (genRequest, error) {
	if len(r.GetInputs()) == 0 {
		return genRequest{}, errors.New("\"inputs\" must be a non-empty list")
	}
	body := map[string]any{}
	inst := make([]any, len(r.GetInputs()))
	for i, t := range r.GetInputs() {
		inst[i] = tensorValue(t)
	}
	body["instances"] = inst
	if p := r.GetParameters(); p != nil {
		body["parameters"] = tensorValue(p)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return genRequest{}, err
	}
	return parseInstances(b)
}

// parseStreamingPredictJSON reads the REST body of serverStreamingPredict.
func parseStreamingPredictJSON(body []byte) (genRequest, error) {
	r := &aiplatformpb.StreamingPredictRequest{}
	if err := protojson.Unmarshal(body, r); err != nil {
		return genRequest{}, err
	}
	return parseStreamingPredict(r)
}

// sspProto is the StreamingPredictResponse of one token.
func sspProto(text string) *aiplatformpb.StreamingPredictResponse {
	return &aiplatformpb.StreamingPredictResponse{Outputs: []*aiplatformpb.Tensor{{
		StructVal: map[string]*aiplatformpb.Tensor{"content": {Dtype: aiplatformpb.Tensor_STRING, StringVal: []string{text}}},
	}}}
}

// ServerStreamingPredict sends one StreamingPredictResponse per token.
func (v *vertexGRPC) ServerStreamingPredict(req *aiplatformpb.StreamingPredictRequest, stream aiplatformpb.PredictionService_ServerStreamingPredictServer) error {
	return v.serveStream(stream, func(ctx context.Context, out *stallSender) error {
		c, t, err := v.prepare(ctx, req.GetEndpoint(), "ServerStreamingPredict", true, func() (genRequest, error) {
			return parseStreamingPredict(req)
		})
		if err != nil {
			return err
		}
		return v.run(ctx, c, t, out, func(i int) (any, error) {
			return sspProto(c.words[i]), nil
		})
	})
}

// vertexSSPWire answers serverStreamingPredict over REST, one
// StreamingPredictResponse per token, in vertexRESTStream's framing.
type vertexSSPWire struct {
	vertexRESTStream
}

func (v *vertexSSPWire) token(w io.Writer, c *call, i int) error {
	b, err := protojson.Marshal(sspProto(c.words[i]))
	if err != nil {
		return err
	}
	return v.element(w, b)
}

func (v *vertexSSPWire) malformed(w io.Writer, _ *call) error {
	if v.sse {
		_, err := io.WriteString(w, "data: {\"outputs\": [{\"structVal\r\n\r\n")
		return err
	}
	_, err := io.WriteString(w, "\n,\r\n{\"outputs\": [{\"structVal\"")
	return err
}

func (v *vertexSSPWire) whole(c *call) (string, []byte) {
	b, _ := protojson.Marshal(sspProto(c.text()))
	return "application/json; charset=UTF-8", append(append([]byte("["), b...), ']')
}
