package cloudreq_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/cloudreq/cloudreqtest"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/hooks"
)

// validating is a fake adapter that is a cloudreq.Validator.
type validating struct {
	*cloudreqtest.Adapter
	validate func(*cloudreq.CloudRequest) error
	seen     []*cloudreq.CloudRequest
	ids      []string // each seen request's RequestID when Validate ran
}

func (v *validating) Validate(r *cloudreq.CloudRequest) error {
	v.seen = append(v.seen, r)
	v.ids = append(v.ids, r.RequestID)
	return v.validate(r)
}

// needsEndpoint refuses a request without Target.Endpoint, as the
// SageMaker adapter does.
func needsEndpoint(r *cloudreq.CloudRequest) error {
	if r.Target.Endpoint == "" {
		return errors.New("fake needs Target.Endpoint")
	}
	return nil
}

func validatingClient(t *testing.T, v *validating, set *hooks.Set) *cloudreq.Client {
	t.Helper()
	c, err := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{v}, CallOptions: cloudreq.CallOptions{Hooks: set}},
		func(o *cloudreq.Options) { o.Retry.BaseDelay = 1 })
	require.NoError(t, err)
	return c
}

func modelOnly() *cloudreq.CloudRequest {
	return &cloudreq.CloudRequest{Provider: "openai", Service: "openai-compatible", Action: "invoke",
		Target: cloudreq.Target{Model: "m"}, Payload: cloudreq.Payload{Body: []byte(`{"prompt":"hi"}`)}}
}

// TestValidatorRefusesBeforeHooks: the adapter's Validate runs after
// routing and before the client's checks and the PreValidate hooks; its
// error is final, ERR_INVALID_PARAM of the request's provider, and nothing
// is sent.
func TestValidatorRefusesBeforeHooks(t *testing.T) {
	v := &validating{Adapter: &cloudreqtest.Adapter{}, validate: needsEndpoint}
	set := hooks.Default()
	hookRan := 0
	require.NoError(t, set.Validate.Add("spy", hooks.PreValidateFunc(func(context.Context, *cloudreq.CloudRequest) error {
		hookRan++
		return nil
	})))
	c := validatingClient(t, v, set)

	for _, stream := range []bool{false, true} {
		var err error
		if stream {
			_, err = c.Stream(context.Background(), modelOnly())
		} else {
			_, err = c.Invoke(context.Background(), modelOnly())
		}
		var e *errcodes.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, errcodes.InvalidParam, e.Code)
		assert.Equal(t, "openai", e.Provider)
		assert.False(t, e.Retryable)
		assert.Contains(t, e.Message, "fake needs Target.Endpoint")
	}
	assert.Zero(t, hookRan, "PreValidate hooks run after the adapter's Validate")
	assert.Empty(t, v.Calls(), "nothing sent")
	assert.Len(t, v.seen, 2, "once per call")

	// A request the adapter accepts goes on through the hooks.
	r := modelOnly()
	r.Target.Endpoint = "e"
	_, err := c.Invoke(context.Background(), r)
	require.NoError(t, err)
	assert.Equal(t, 1, hookRan)
	require.Len(t, v.Calls(), 1)
	assert.Equal(t, "e", v.seen[2].Target.Endpoint, "Validate sees the call's request")
	assert.NotSame(t, r, v.seen[2], "the call's copy, not the caller's")
	assert.Empty(t, v.ids[2], "before the PreSerialize hooks")
	assert.NotEmpty(t, v.Calls()[0].Request.RequestID, "which ran after it")
}

// TestValidatorRunsAfterRouting: a request the adapter does not serve
// never reaches its Validate.
func TestValidatorRunsAfterRouting(t *testing.T) {
	v := &validating{Adapter: &cloudreqtest.Adapter{Actions: []string{cloudreq.ActionInvoke}}, validate: needsEndpoint}
	c := validatingClient(t, v, nil)
	r := modelOnly()
	r.Action = cloudreq.ActionGenerate
	_, err := c.Invoke(context.Background(), r)
	assert.ErrorContains(t, err, "unsupported action")
	r.Provider = "aws"
	_, err = c.Invoke(context.Background(), r)
	assert.ErrorContains(t, err, "unsupported provider/service")
	assert.Empty(t, v.seen)
}

// TestValidatorErrors: a Validator's *errcodes.Error keeps its code but is
// never retried; a panic is ERR_INTERNAL; a typed nil is no error.
func TestValidatorErrors(t *testing.T) {
	var typedNil *errcodes.Error
	for name, tc := range map[string]struct {
		err   func(*cloudreq.CloudRequest) error
		code  errcodes.Code
		prov  string
		inMsg string
	}{
		"retryable code": {func(*cloudreq.CloudRequest) error {
			e := errcodes.New(errcodes.Unavailable, "no such region here")
			e.Retryable = true
			return e
		}, errcodes.Unavailable, "openai", "no such region here"},
		"own provider": {func(*cloudreq.CloudRequest) error {
			e := errcodes.New(errcodes.InvalidParam, "fake needs Target.Endpoint")
			e.Provider = "fake"
			return e
		}, errcodes.InvalidParam, "fake", "fake needs Target.Endpoint"},
		"bare code": {func(*cloudreq.CloudRequest) error { return errcodes.PermissionDenied }, errcodes.PermissionDenied, "openai", ""},
		"panic":     {func(*cloudreq.CloudRequest) error { panic("boom") }, errcodes.Internal, "", "panic"},
		"typed nil": {func(*cloudreq.CloudRequest) error { return typedNil }, "", "", ""},
	} {
		t.Run(name, func(t *testing.T) {
			v := &validating{Adapter: &cloudreqtest.Adapter{}, validate: tc.err}
			_, err := validatingClient(t, v, nil).Invoke(context.Background(), modelOnly())
			if tc.code == "" {
				require.NoError(t, err)
				assert.Len(t, v.Calls(), 1)
				return
			}
			var e *errcodes.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tc.code, e.Code)
			if tc.prov != "" {
				assert.Equal(t, tc.prov, e.Provider)
			}
			assert.False(t, e.Retryable, "a Validate error is final")
			assert.Contains(t, e.Message, tc.inMsg)
			assert.Empty(t, v.Calls(), "nothing sent")
		})
	}
}

// TestValidatorErrorIsNotWrittenTo: a Validator may return one error value
// from every call; the client changes a copy.
func TestValidatorErrorIsNotWrittenTo(t *testing.T) {
	shared := errcodes.New(errcodes.InvalidParam, "shared")
	shared.Retryable = true
	v := &validating{Adapter: &cloudreqtest.Adapter{}, validate: func(*cloudreq.CloudRequest) error { return shared }}
	_, err := validatingClient(t, v, nil).Invoke(context.Background(), modelOnly())
	require.Error(t, err)
	assert.True(t, errors.Is(err, shared))
	assert.True(t, shared.Retryable)
	assert.Empty(t, shared.Provider)
}
