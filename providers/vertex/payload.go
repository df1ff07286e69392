package vertex

import (
	"bytes"
	"encoding/json"
	"mime"
	"strings"

	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// Values of cloudreq.Attributes.Method, which forces the RPC of an invoke
// call; when it is empty the body decides (see the package doc).
const (
	MethodPredict    = "predict"
	MethodRawPredict = "rawPredict"
)

// invokeMethod picks the RPC of a non-streaming invoke call and, for
// predict, decodes the body into the request.
func invokeMethod(req *cloudreq.CloudRequest, p cloudreq.Payload) (string, *aiplatformpb.PredictRequest, *errcodes.Error) {
	forced := req.Attributes.Method
	switch forced {
	case MethodRawPredict:
		return MethodRawPredict, nil, nil
	case MethodPredict:
		pr, err := decodePredict(p.Body)
		if err != nil {
			return "", nil, invalid("Attributes.Method %q needs a JSON body {\"instances\":[…],\"parameters\":…}: %v", MethodPredict, err)
		}
		return MethodPredict, pr, nil
	case "":
	default:
		return "", nil, invalid("unknown Attributes.Method %q: want %q or %q", forced, MethodPredict, MethodRawPredict)
	}
	if isPredictBody(p.Body, p.ContentType) {
		if pr, err := decodePredict(p.Body); err == nil {
			return MethodPredict, pr, nil
		}
	}
	return MethodRawPredict, nil, nil
}

// isPredictBody reports whether body is a predict request: a JSON object
// whose members are "instances" (an array) and, optionally, "parameters",
// sent with a JSON media type or none.
func isPredictBody(body []byte, contentType string) bool {
	if !isJSONType(contentType) {
		return false
	}
	b := bytes.TrimLeft(body, " \t\r\n")
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	inst, ok := m["instances"]
	if !ok {
		return false
	}
	for k := range m {
		if k != "instances" && k != "parameters" {
			return false
		}
	}
	inst = bytes.TrimLeft(inst, " \t\r\n")
	return len(inst) > 0 && inst[0] == '['
}

// isJSONType reports whether a media type is JSON (application/json or
// any +json type); an empty type counts as JSON, the cloudreq default.
func isJSONType(ct string) bool {
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// decodePredict decodes a {"instances":…,"parameters":…} body.
func decodePredict(body []byte) (*aiplatformpb.PredictRequest, error) {
	pr := &aiplatformpb.PredictRequest{}
	if err := protojson.Unmarshal(body, pr); err != nil {
		return nil, err
	}
	return pr, nil
}

// rawBody returns the content type a raw body is sent with.
func rawContentType(p cloudreq.Payload) string {
	if p.ContentType != "" {
		return p.ContentType
	}
	return "application/json"
}

// generateRequest is the JSON form of a GenerateContentRequest (the body of
// the REST :generateContent call, without the model, which the target
// names). The Encoder writes it with encoding/json, whose output is stable,
// so every attempt replays the same bytes; Invoke decodes it with
// protojson into the proto the GAPIC call sends.
type generateRequest struct {
	Contents          []content         `json:"contents"`
	SystemInstruction *content          `json:"systemInstruction,omitempty"`
	GenerationConfig  *generationConfig `json:"generationConfig,omitempty"`
}

type content struct {
	Role  string `json:"role,omitempty"`
	Parts []part `json:"parts"`
}

type part struct {
	Text string `json:"text"`
}

type generationConfig struct {
	MaxOutputTokens int      `json:"maxOutputTokens,omitempty"`
	Temperature     *float64 `json:"temperature,omitempty"`
	TopP            *float64 `json:"topP,omitempty"`
	StopSequences   []string `json:"stopSequences,omitempty"`
}

// Encode writes the generateContent request body for req.Generate: user and
// assistant messages become contents (roles "user" and "model"), system
// messages become systemInstruction parts, and the limits become
// generationConfig. The body is the same whether or not the call streams.
func (a *Adapter) Encode(req *cloudreq.CloudRequest, _ bool) (cloudreq.Payload, error) {
	g := req.Generate
	if g == nil || len(g.Messages) == 0 {
		return cloudreq.Payload{}, invalid("action generate needs Generate.Messages")
	}
	var gr generateRequest
	for i, m := range g.Messages {
		switch m.Role {
		case "system":
			if gr.SystemInstruction == nil {
				gr.SystemInstruction = &content{}
			}
			gr.SystemInstruction.Parts = append(gr.SystemInstruction.Parts, part{Text: m.Content})
		case "user", "":
			gr.Contents = append(gr.Contents, content{Role: "user", Parts: []part{{Text: m.Content}}})
		case "assistant", "model":
			gr.Contents = append(gr.Contents, content{Role: "model", Parts: []part{{Text: m.Content}}})
		default:
			return cloudreq.Payload{}, invalid("message %d has role %q: want system, user or assistant", i, m.Role)
		}
	}
	if len(gr.Contents) == 0 {
		return cloudreq.Payload{}, invalid("action generate needs at least one user or assistant message")
	}
	if g.MaxTokens > 0 || g.Temperature != nil || g.TopP != nil || len(g.Stop) > 0 {
		gr.GenerationConfig = &generationConfig{
			MaxOutputTokens: g.MaxTokens, Temperature: g.Temperature, TopP: g.TopP, StopSequences: g.Stop,
		}
	}
	b, err := json.Marshal(gr)
	if err != nil {
		return cloudreq.Payload{}, invalid("encoding generateContent request: %v", err)
	}
	return cloudreq.Payload{Body: b, ContentType: "application/json"}, nil
}

// decodeGenerate decodes a generateContent body (what Encode wrote, or a
// caller's own REST body) into the proto request.
func decodeGenerate(body []byte, model string) (*aiplatformpb.GenerateContentRequest, *errcodes.Error) {
	gr := &aiplatformpb.GenerateContentRequest{}
	if err := protojson.Unmarshal(body, gr); err != nil {
		return nil, invalid("generateContent body is not a GenerateContentRequest: %v", err)
	}
	gr.Model = model
	return gr, nil
}

// invalid returns an ERR_INVALID_PARAM error of provider gcp.
func invalid(format string, args ...any) *errcodes.Error {
	e := errcodes.Errorf(errcodes.InvalidParam, format, args...)
	e.Provider = cloudreq.ProviderGCP
	return e
}
