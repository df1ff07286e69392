package vertex

import (
	"strings"

	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// MethodServerStreamingPredict is the value of cloudreq.Attributes.Method
// that sends an invoke stream to serverStreamingPredict: the body is a
// StreamingPredictRequest in its REST JSON form,
// {"inputs":[Tensor…],"parameters":Tensor} (the endpoint comes from the
// target), and each StreamingPredictResponse is one chunk. It streams
// only: Invoke refuses it.
const MethodServerStreamingPredict = "serverStreamingPredict"

// serverStreaming reports whether req goes to serverStreamingPredict.
func serverStreaming(req *cloudreq.CloudRequest) bool {
	return req.Action == cloudreq.ActionInvoke && req.Attributes.Method == MethodServerStreamingPredict
}

// errServerStreamingUnary refuses serverStreamingPredict in Invoke.
func errServerStreamingUnary() *errcodes.Error {
	return invalid("Attributes.Method %q streams: send it with Stream", MethodServerStreamingPredict)
}

// decodeStreamingPredict decodes a serverStreamingPredict body into the
// proto request for endpoint.
func decodeStreamingPredict(body []byte, endpoint string) (*aiplatformpb.StreamingPredictRequest, *errcodes.Error) {
	r := &aiplatformpb.StreamingPredictRequest{}
	if err := protojson.Unmarshal(body, r); err != nil {
		return nil, invalid("Attributes.Method %q needs a JSON body {\"inputs\":[Tensor…],\"parameters\":Tensor}: %v", MethodServerStreamingPredict, err)
	}
	if len(r.GetInputs()) == 0 {
		return nil, invalid("Attributes.Method %q needs at least one of \"inputs\"", MethodServerStreamingPredict)
	}
	r.Endpoint = endpoint
	return r, nil
}

// tensorText is the text of a StreamingPredictResponse: the first
// output's "content" member (structVal.content.stringVal, the form of
// Vertex's LLM streaming outputs), else its own stringVal.
func tensorText(r *aiplatformpb.StreamingPredictResponse) string {
	outs := r.GetOutputs()
	if len(outs) == 0 {
		return ""
	}
	t := outs[0]
	if c, ok := t.GetStructVal()["content"]; ok {
		t = c
	}
	return strings.Join(t.GetStringVal(), "")
}

// recvSSP returns the next serverStreamingPredict message, or the one
// read ahead.
func (s *chunkStream) recvSSP() (*aiplatformpb.StreamingPredictResponse, error) {
	if s.pending {
		s.pending = false
		return s.pendingSSP, s.pendingErr
	}
	return s.ssp.Recv()
}

// sspChunk turns one StreamingPredictResponse into a chunk. Data is the
// message's protobuf encoding, valid until the next call to Next. The
// stream has no finish marker: its clean end is the end of the RPC.
func (s *chunkStream) sspChunk(m *aiplatformpb.StreamingPredictResponse) (cloudreq.StreamChunk, error) {
	s.chunks++
	var err error
	s.buf, err = wireOut.MarshalAppend(s.buf[:0], m)
	if err != nil {
		return cloudreq.StreamChunk{}, s.fail(errcodes.Wrap(err, errcodes.Internal, "vertex: encoding a stream message"))
	}
	text := tensorText(m)
	return cloudreq.StreamChunk{Data: s.buf, Text: text, Content: text != ""}, nil
}
