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
	Tools             []geminiTool      `json:"tools,omitempty"`
	ToolConfig        *toolConfig       `json:"toolConfig,omitempty"`
	GenerationConfig  *generationConfig `json:"generationConfig,omitempty"`
}

type content struct {
	Role  string `json:"role,omitempty"`
	Parts []part `json:"parts"`
}

// part is one Part: text, inline data, file data, a function call or a
// function response.
type part struct {
	Text             *string           `json:"text,omitempty"`
	InlineData       *blob             `json:"inlineData,omitempty"`
	FileData         *fileData         `json:"fileData,omitempty"`
	FunctionCall     *functionCall     `json:"functionCall,omitempty"`
	FunctionResponse *functionResponse `json:"functionResponse,omitempty"`
}

type generationConfig struct {
	MaxOutputTokens    int             `json:"maxOutputTokens,omitempty"`
	Temperature        *float64        `json:"temperature,omitempty"`
	TopP               *float64        `json:"topP,omitempty"`
	TopK               *float64        `json:"topK,omitempty"`
	StopSequences      []string        `json:"stopSequences,omitempty"`
	Seed               *int            `json:"seed,omitempty"`
	CandidateCount     int             `json:"candidateCount,omitempty"`
	PresencePenalty    *float64        `json:"presencePenalty,omitempty"`
	FrequencyPenalty   *float64        `json:"frequencyPenalty,omitempty"`
	ResponseLogprobs   *bool           `json:"responseLogprobs,omitempty"`
	Logprobs           *int            `json:"logprobs,omitempty"`
	ResponseMimeType   string          `json:"responseMimeType,omitempty"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
	ThinkingConfig     *thinkingConfig `json:"thinkingConfig,omitempty"`
}

// Encode writes the generateContent request body for req.Generate: user and
// assistant messages become contents (roles "user" and "model"; images
// inlineData or fileData parts, tool calls functionCall parts, tool
// results functionResponse parts), system messages become
// systemInstruction parts, tools functionDeclarations (with
// parametersJsonSchema) and toolConfig, and the limits, sampling, JSON
// output (responseMimeType, responseJsonSchema), logprobs and thinking
// settings generationConfig; Generate.Extra is merged at the top level.
// The body is the same whether or not the call streams.
func (a *Adapter) Encode(req *cloudreq.CloudRequest, _ bool) (cloudreq.Payload, error) {
	g := req.Generate
	if g == nil || len(g.Messages) == 0 {
		return cloudreq.Payload{}, invalid("action generate needs Generate.Messages")
	}
	var gr generateRequest
	if err := geminiContents(g.Messages, &gr); err != nil {
		return cloudreq.Payload{}, err
	}
	if len(gr.Contents) == 0 {
		return cloudreq.Payload{}, invalid("action generate needs at least one user or assistant message")
	}
	if err := geminiConfig(g, &gr); err != nil {
		return cloudreq.Payload{}, err
	}
	b, err := json.Marshal(gr)
	if err == nil {
		b, err = cloudreq.MergeExtra(b, g.Extra)
	}
	if err != nil {
		return cloudreq.Payload{}, invalid("%s: encoding generateContent request: %v", geminiDialect, err)
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
