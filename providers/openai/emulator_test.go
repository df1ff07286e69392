package openai_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/providers/openai"
)

func emulatorClient(t *testing.T) *cloudreq.Client {
	t.Helper()
	srv, err := emulator.New(emulator.Options{TimeScale: 0.01, Seed: 3})
	require.NoError(t, err)
	require.NoError(t, srv.Start("127.0.0.1:0", ""))
	t.Cleanup(func() { _ = srv.Close() })
	a, err := openai.New(openai.Options{BaseURL: srv.URL() + "/v1", APIKey: "k", AllowInsecureHTTP: true})
	require.NoError(t, err)
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{a}}, func(o *cloudreq.Options) { o.Retry.MaxAttempts = 1 },
		emulator.WithStartReport())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func gen(path string) *cloudreq.CloudRequest {
	return &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderOpenAI, Service: cloudreq.ServiceOpenAICompatible, Action: cloudreq.ActionGenerate,
		Target:   cloudreq.Target{Model: "llama-3-8b", Path: path},
		Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "Tell me a story."}}, MaxTokens: 12},
		Header:   http.Header{},
	}
}

func TestEmulatorCompletionsStream(t *testing.T) {
	c := emulatorClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := c.Stream(ctx, gen("/v1/completions"))
	require.NoError(t, err)
	defer s.Close()
	var text string
	content := 0
	for s.Next() {
		text += s.Chunk().Text
		if s.Chunk().Content {
			content++
		}
	}
	require.NoError(t, s.Err())
	resp := s.Response()
	assert.NotEmpty(t, text)
	assert.Equal(t, "server", resp.Usage.Source)
	assert.Equal(t, content, resp.Usage.OutputTokens, "one content chunk per token on the emulator")
	assert.NotEmpty(t, resp.Metadata["X-Emulator-Request-Id"])
}

func TestEmulatorStreamErrorDetails(t *testing.T) {
	c := emulatorClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := gen("")
	r.Header.Set(emulator.HeaderInject, string(emulator.FaultStreamError))
	s, err := c.Stream(ctx, r)
	require.NoError(t, err)
	defer s.Close()
	n := 0
	for s.Next() {
		n++
	}
	var e *errcodes.Error
	require.True(t, errors.As(s.Err(), &e))
	assert.Equal(t, errcodes.StreamInterrupted, e.Code)
	assert.Equal(t, "ERR_INTERNAL", e.Details["code"])
	assert.Equal(t, "InternalServerError", e.ProviderCode)
	assert.Positive(t, n, "chunks before the error")
	var api *openai.APIError
	assert.True(t, errors.As(s.Err(), &api))
}

func TestEmulatorColdStartSetup(t *testing.T) {
	c := emulatorClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := gen("")
	r.Header.Set(emulator.HeaderCold, "1")
	resp, err := c.Invoke(ctx, r)
	require.NoError(t, err)
	require.NotNil(t, resp.ServerStart)
	assert.True(t, resp.ServerStart.Cold)
	assert.Positive(t, resp.ServerStart.Setup)
}

// A stream read to its [DONE] leaves its connection reusable: sequential
// streams after the first reuse one connection.
func TestEmulatorStreamsReuseConnection(t *testing.T) {
	c := emulatorClient(t)
	for i := range 10 {
		s, err := c.Stream(context.Background(), gen(""))
		require.NoError(t, err)
		for s.Next() {
		}
		require.NoError(t, s.Err())
		if i > 0 {
			assert.True(t, s.Response().Timing.LastAttempt().ConnReused, "stream %d opened a new connection", i)
		}
	}
}
