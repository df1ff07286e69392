package vertex

import (
	"context"
	"encoding/json"
	"testing"

	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

// TestEncodeGeminiMatchesProto: the generateContent body of a rich input
// is a GenerateContentRequest as aiplatformpb reads it (protojson refuses
// unknown members), with each field where Gemini documents it.
func TestEncodeGeminiMatchesProto(t *testing.T) {
	seed := int64(9)
	temp := 0.3
	g := &cloudreq.GenerateInput{
		Messages: []cloudreq.Message{
			{Role: "system", Content: "be brief"},
			{Role: "user", Parts: []cloudreq.Part{
				{Type: "text", Text: "look"},
				{Type: "image", ImageURL: "gs://b/cat.jpg"},
				{Type: "image", Data: []byte{1, 2}, MediaType: "image/png"},
			}},
			{Role: "assistant", ToolCalls: []cloudreq.ToolCall{{ID: "c1", Name: "weather", Arguments: `{"city":"Oslo"}`}}},
			{Role: "tool", ToolCallID: "c1", Content: `{"temp":3}`},
		},
		MaxTokens: 32, Temperature: &temp, Seed: &seed, TopK: 20, N: 2, Logprobs: true, TopLogprobs: 3,
		Tools:          []cloudreq.Tool{{Name: "weather", Description: "d", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}},
		ToolChoice:     &cloudreq.ToolChoice{Mode: cloudreq.ToolChoiceFunction, Name: "weather"},
		ResponseFormat: &cloudreq.ResponseFormat{Type: cloudreq.FormatJSONSchema, Schema: json.RawMessage(`{"type":"object"}`)},
		Reasoning:      &cloudreq.Reasoning{BudgetTokens: 512, IncludeThoughts: true},
		Extra:          map[string]any{"labels": map[string]string{"team": "a"}, "safetySettings": []map[string]string{{"category": "HARM_CATEGORY_HATE_SPEECH", "threshold": "BLOCK_NONE"}}},
	}
	a := &Adapter{}
	p, err := a.Encode(&cloudreq.CloudRequest{Generate: g}, false)
	require.NoError(t, err)
	var gr aiplatformpb.GenerateContentRequest
	require.NoError(t, protojson.Unmarshal(p.Body, &gr), "%s", p.Body)
	assert.Equal(t, "be brief", gr.GetSystemInstruction().GetParts()[0].GetText())
	require.Len(t, gr.GetContents(), 3)
	user := gr.GetContents()[0].GetParts()
	assert.Equal(t, "gs://b/cat.jpg", user[1].GetFileData().GetFileUri())
	assert.Equal(t, "image/jpeg", user[1].GetFileData().GetMimeType())
	assert.Equal(t, []byte{1, 2}, user[2].GetInlineData().GetData())
	assert.Equal(t, "model", gr.GetContents()[1].GetRole())
	assert.Equal(t, "Oslo", gr.GetContents()[1].GetParts()[0].GetFunctionCall().GetArgs().AsMap()["city"])
	fr := gr.GetContents()[2].GetParts()[0].GetFunctionResponse()
	assert.Equal(t, "weather", fr.GetName(), "the result names the function of the call it answers")
	assert.InDelta(t, 3, fr.GetResponse().AsMap()["temp"], 0)
	fd := gr.GetTools()[0].GetFunctionDeclarations()[0]
	assert.Equal(t, "weather", fd.GetName())
	assert.NotNil(t, fd.GetParametersJsonSchema())
	fc := gr.GetToolConfig().GetFunctionCallingConfig()
	assert.Equal(t, aiplatformpb.FunctionCallingConfig_ANY, fc.GetMode())
	assert.Equal(t, []string{"weather"}, fc.GetAllowedFunctionNames())
	gc := gr.GetGenerationConfig()
	assert.Equal(t, int32(32), gc.GetMaxOutputTokens())
	assert.Equal(t, int32(9), gc.GetSeed())
	assert.Equal(t, float32(20), gc.GetTopK())
	assert.Equal(t, int32(2), gc.GetCandidateCount())
	assert.True(t, gc.GetResponseLogprobs())
	assert.Equal(t, int32(3), gc.GetLogprobs())
	assert.Equal(t, "application/json", gc.GetResponseMimeType())
	assert.NotNil(t, gc.GetResponseJsonSchema())
	assert.Equal(t, int32(512), gc.GetThinkingConfig().GetThinkingBudget())
	assert.True(t, gc.GetThinkingConfig().GetIncludeThoughts())
	assert.Equal(t, map[string]string{"team": "a"}, gr.GetLabels())
	assert.Len(t, gr.GetSafetySettings(), 1)

	// What Gemini cannot say is refused, naming the dialect.
	no := false
	g.ParallelToolCalls = &no
	_, err = a.Encode(&cloudreq.CloudRequest{Generate: g}, false)
	assert.ErrorContains(t, err, "vertex gemini cannot express ParallelToolCalls")
}

// TestRawGemini: ActionInvoke with Attributes.Method generateContent
// sends the caller's own body (with members Generate does not type) to
// generateContent, and reads the answer as a generation; the stream
// method streams it.
func TestRawGemini(t *testing.T) {
	_, c := startEmulator(t)
	body := `{"contents":[{"role":"user","parts":[{"text":"Say hello."}]}],"safetySettings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_ONLY_HIGH"}],"labels":{"k":"v"},"generationConfig":{"maxOutputTokens":8}}`
	r := emuInvoke(body)
	r.Attributes.Method = MethodGenerateContent
	resp, err := c.Invoke(context.Background(), r)
	require.NoError(t, err)
	assert.NotEmpty(t, resp.Text)
	assert.Positive(t, resp.Usage.OutputTokens)
	assert.LessOrEqual(t, resp.Usage.OutputTokens, 8)

	r.Attributes.Method = MethodStreamGenerateContent
	s, err := c.Stream(context.Background(), r)
	require.NoError(t, err)
	defer s.Close()
	text := ""
	for s.Next() {
		text += s.Chunk().Text
	}
	require.NoError(t, s.Err())
	assert.NotEmpty(t, text)
	assert.NotEmpty(t, s.Response().FinishReason)
}
