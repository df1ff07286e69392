package paieas_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/providers/paieas"
)

const secret = "eas-secret-token"

// emulatorWithKey starts an emulator whose built-in endpoints accept only
// secret.
func emulatorWithKey(t *testing.T) *emulator.Server {
	t.Helper()
	eps := emulator.DefaultEndpoints()
	for i := range eps {
		eps[i].Credentials.Keys = []string{secret}
	}
	srv, err := emulator.New(emulator.Options{TimeScale: 0.01, Seed: 5, Endpoints: eps})
	require.NoError(t, err)
	require.NoError(t, srv.Start("127.0.0.1:0", ""))
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func newClient(t *testing.T, a *paieas.Adapter) *cloudreq.Client {
	t.Helper()
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{a}}, func(o *cloudreq.Options) { o.Retry.MaxAttempts = 1 },
		emulator.WithStartReport())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func genReq(dialect paieas.Dialect) *cloudreq.CloudRequest {
	return &cloudreq.CloudRequest{
		Provider: cloudreq.ProviderAlibaba, Service: cloudreq.ServicePAIEAS, Action: cloudreq.ActionGenerate,
		Target:     cloudreq.Target{Endpoint: "llama-3-8b"},
		Attributes: cloudreq.Attributes{Dialect: string(dialect)},
		Generate:   &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Role: "user", Content: "Tell me a story."}}, MaxTokens: 12},
	}
}

func TestEmulatorAuthModes(t *testing.T) {
	srv := emulatorWithKey(t)
	for _, auth := range []paieas.Auth{paieas.AuthAuto, paieas.AuthToken, paieas.AuthBearer, paieas.AuthSignature} {
		for _, d := range []paieas.Dialect{paieas.DialectOpenAI, paieas.DialectLegacy} {
			a, err := paieas.New(paieas.Options{Endpoint: srv.URL(), Token: secret, Auth: auth, AllowInsecureHTTP: true})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			resp, err := newClient(t, a).Invoke(ctx, genReq(d))
			cancel()
			require.NoError(t, err, "auth %q dialect %s", auth, d)
			assert.NotEmpty(t, resp.Text)
		}
	}
	a, err := paieas.New(paieas.Options{Endpoint: srv.URL(), Token: "wrong", Auth: paieas.AuthSignature, AllowInsecureHTTP: true})
	require.NoError(t, err)
	_, err = newClient(t, a).Invoke(context.Background(), genReq(paieas.DialectLegacy))
	assert.ErrorIs(t, err, errcodes.Unauthenticated)
	assert.NotContains(t, err.Error(), "wrong")
}

func TestEmulatorLegacyStream(t *testing.T) {
	srv := emulatorWithKey(t)
	a, err := paieas.New(paieas.Options{Endpoint: srv.URL(), Token: secret, AllowInsecureHTTP: true})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := newClient(t, a)

	s, err := c.Stream(ctx, genReq(paieas.DialectLegacy))
	require.NoError(t, err)
	defer s.Close()
	var text string
	n := 0
	for s.Next() {
		text += s.Chunk().Text
		if s.Chunk().Content {
			n++
		}
	}
	require.NoError(t, s.Err())
	resp := s.Response()
	assert.NotEmpty(t, text)
	assert.Equal(t, resp.Metadata["X-Emulator-Output-Tokens"], strconv.Itoa(n),
		"cumulative records become one delta per token")
	assert.Len(t, strings.Fields(text), n, "the deltas do not repeat earlier text")
	assert.Equal(t, n, resp.Usage.OutputTokens)
	assert.Equal(t, "counted", s.Response().Usage.Source)
}

func TestEmulatorQueueFullThenRetry(t *testing.T) {
	srv := emulatorWithKey(t)
	a, err := paieas.New(paieas.Options{Endpoint: srv.URL(), Token: secret, AllowInsecureHTTP: true})
	require.NoError(t, err)
	r := genReq(paieas.DialectOpenAI)
	r.Header = map[string][]string{emulator.HeaderInject: {string(emulator.FaultQueueFull)}}
	_, err = newClient(t, a).Invoke(context.Background(), r)
	var e *errcodes.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, errcodes.Throttled, e.Code)
	assert.Equal(t, 450, e.HTTPStatus)
	assert.True(t, e.Retryable)
	assert.Equal(t, "request is discarded because the queue is full", e.Message)
}
