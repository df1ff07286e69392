package hooks_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/cloudreq/cloudreqtest"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/hooks"
)

func recorder(log *[]string, name string) hooks.PreValidator {
	return hooks.PreValidateFunc(func(context.Context, *cloudreq.CloudRequest) error {
		*log = append(*log, name)
		return nil
	})
}

func TestChainOrderInsertRemove(t *testing.T) {
	var c hooks.Chain[hooks.PreValidator]
	var log []string
	require.NoError(t, c.Add("a", recorder(&log, "a")))
	require.NoError(t, c.Add("c", recorder(&log, "c")))
	require.NoError(t, c.InsertBefore("c", "b", recorder(&log, "b")))
	require.NoError(t, c.InsertAfter("c", "d", recorder(&log, "d")))
	require.NoError(t, c.InsertBefore("a", "first", recorder(&log, "first")))
	assert.Equal(t, []string{"first", "a", "b", "c", "d"}, c.Names())

	assert.Error(t, c.Add("a", recorder(&log, "dup")), "duplicate name")
	assert.Error(t, c.InsertAfter("missing", "x", recorder(&log, "x")))
	assert.True(t, c.Remove("b"))
	assert.False(t, c.Remove("b"))
	assert.Equal(t, []string{"first", "a", "c", "d"}, c.Names())
	assert.Equal(t, 4, c.Len())

	s := &hooks.Set{}
	for _, n := range c.Names() {
		require.NoError(t, s.Validate.Add(n, recorder(&log, n)))
	}
	require.NoError(t, s.PreValidate(context.Background(), &cloudreq.CloudRequest{}))
	assert.Equal(t, []string{"first", "a", "c", "d"}, log, "first registered runs first")
}

func newClient(t *testing.T, set *hooks.Set, fake *cloudreqtest.Adapter) *cloudreq.Client {
	t.Helper()
	c, err := cloudreq.New(cloudreq.Options{
		Adapters:    []cloudreq.Adapter{fake},
		CallOptions: cloudreq.CallOptions{Hooks: set},
	},
		func(o *cloudreq.Options) { o.Retry.BaseDelay = 1 })
	require.NoError(t, err)
	return c
}

func invokeReq() *cloudreq.CloudRequest {
	return &cloudreq.CloudRequest{Provider: "openai", Service: "openai-compatible", Action: "invoke",
		Target: cloudreq.Target{Model: "m"}, Payload: cloudreq.Payload{Body: []byte(`{"x":1}`)}}
}

func TestPreValidateErrorIsFinal(t *testing.T) {
	set := hooks.Default()
	calls := 0
	require.NoError(t, set.Validate.Add("deny", hooks.PreValidateFunc(func(context.Context, *cloudreq.CloudRequest) error {
		calls++
		return errors.New("tenant not allowed")
	})))
	fake := &cloudreqtest.Adapter{}
	_, err := newClient(t, set, fake).Invoke(context.Background(), invokeReq())
	require.Error(t, err)
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
	assert.Contains(t, err.Error(), "hook deny: tenant not allowed")
	assert.Equal(t, 1, calls, "never retried")
	assert.Empty(t, fake.Calls(), "nothing sent")
}

func TestPreSerializeErrorIsFinalAndKeepsCode(t *testing.T) {
	set := &hooks.Set{}
	require.NoError(t, set.Serialize.Add("quota", hooks.PreSerializeFunc(func(context.Context, *cloudreq.CloudRequest) error {
		return errcodes.New(errcodes.QuotaExceeded, "local quota spent")
	})))
	fake := &cloudreqtest.Adapter{}
	_, err := newClient(t, set, fake).Invoke(context.Background(), invokeReq())
	assert.Equal(t, errcodes.QuotaExceeded, errcodes.Of(err))
	assert.Empty(t, fake.Calls())
}

func TestPreSerializeRewritesACopy(t *testing.T) {
	set := hooks.Default()
	require.NoError(t, set.Serialize.Add("hdr", hooks.PreSerializeFunc(func(_ context.Context, r *cloudreq.CloudRequest) error {
		if r.Header == nil {
			r.Header = http.Header{}
		}
		r.Header.Set("X-Tenant", "t1")
		// Appending is safe: the copy's body is clipped, so this cannot
		// write into the spare capacity of the caller's array.
		r.Payload.Body = append(r.Payload.Body, '\n')
		return nil
	})))
	fake := &cloudreqtest.Adapter{}
	req := invokeReq()
	req.Header = http.Header{"X-Keep": {"1"}}
	backing := make([]byte, 0, 64)
	backing = append(backing, req.Payload.Body...)
	req.Payload.Body = backing
	_, err := newClient(t, set, fake).Invoke(context.Background(), req)
	require.NoError(t, err)
	sent := fake.Calls()[0]
	assert.Equal(t, "t1", sent.Request.Header.Get("X-Tenant"))
	assert.NotEmpty(t, sent.Request.RequestID, "request-id built-in filled it")
	assert.Equal(t, "{\"x\":1}\n", string(sent.Body))
	// The caller's request is untouched, its array's spare capacity too.
	assert.Empty(t, req.Header.Get("X-Tenant"))
	assert.Empty(t, req.RequestID)
	assert.Equal(t, `{"x":1}`, string(req.Payload.Body))
	assert.Equal(t, byte(0), backing[:len(backing)+1][len(backing)], "the append reached the caller's array")
}

func TestPostDeserializeVetoIsRetriedWhenRetryable(t *testing.T) {
	set := &hooks.Set{}
	seen := 0
	require.NoError(t, set.Deserialize.Add("veto-empty", hooks.PostDeserializeFunc(func(_ context.Context, _ *cloudreq.CloudRequest, resp *cloudreq.CloudResponse, err error) error {
		seen++
		if err == nil && len(resp.Data) == 0 {
			return errcodes.New(errcodes.Unavailable, "empty body")
		}
		return nil
	})))
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{
		{Response: &cloudreq.CloudResponse{StatusCode: 200}},
		{Response: &cloudreq.CloudResponse{StatusCode: 200, Data: []byte("ok")}},
	}}
	resp, err := newClient(t, set, fake).Invoke(context.Background(), invokeReq())
	require.NoError(t, err)
	assert.Equal(t, "ok", string(resp.Data))
	assert.Equal(t, 2, seen)
	require.Len(t, resp.Errors, 1)
	assert.Equal(t, errcodes.Unavailable, resp.Errors[0].Code)
}

func TestPostDeserializeSeesNormalizedError(t *testing.T) {
	set := &hooks.Set{}
	var got []errcodes.Code
	require.NoError(t, set.Deserialize.Add("spy", hooks.PostDeserializeFunc(func(_ context.Context, _ *cloudreq.CloudRequest, _ *cloudreq.CloudResponse, err error) error {
		got = append(got, errcodes.Of(err))
		return nil
	})))
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Err: errcodes.New(errcodes.NotFound, "no such endpoint")}}}
	_, err := newClient(t, set, fake).Invoke(context.Background(), invokeReq())
	assert.Equal(t, errcodes.NotFound, errcodes.Of(err))
	assert.Equal(t, []errcodes.Code{errcodes.NotFound}, got)
}

// TestDefaultBuiltIns: Default holds the payload limit and the request id
// hook, and no required-fields rule: those are the adapters' to check.
func TestDefaultBuiltIns(t *testing.T) {
	s := hooks.Default()
	assert.Equal(t, []string{hooks.NamePayloadLimit}, s.Validate.Names())
	assert.Equal(t, []string{hooks.NameRequestID}, s.Serialize.Names())
	assert.Empty(t, s.Deserialize.Names())
	// A request an adapter may accept without an endpoint (a Vertex
	// publisher model) passes Default's checks.
	req := &cloudreq.CloudRequest{Provider: "gcp", Service: "vertex", Action: "invoke",
		Target: cloudreq.Target{Model: "publishers/google/models/gemini-2.0-flash"}, Payload: cloudreq.Payload{Body: []byte("{}")}}
	assert.NoError(t, s.PreValidate(context.Background(), req))
}

func TestRequiredFields(t *testing.T) {
	v := hooks.RequiredFields(map[string][]hooks.Field{
		"aws/sagemaker/invoke":              {hooks.FieldEndpoint, hooks.FieldBody},
		"openai/openai-compatible/generate": {hooks.FieldModel, hooks.FieldMessages},
	})
	req := &cloudreq.CloudRequest{Provider: "aws", Service: "sagemaker", Action: "invoke"}
	err := v.PreValidate(context.Background(), req)
	require.Error(t, err)
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
	assert.Contains(t, err.Error(), "Target.Endpoint, Payload.Body")
	req.Target.Endpoint = "e"
	req.Payload.Body = []byte("x")
	assert.NoError(t, v.PreValidate(context.Background(), req))

	gen := &cloudreq.CloudRequest{Provider: "openai", Service: "openai-compatible", Action: "generate",
		Target: cloudreq.Target{Model: "m"}}
	assert.ErrorContains(t, v.PreValidate(context.Background(), gen), "Generate.Messages")
	// Back to the first kind of request: its own fields again.
	assert.ErrorContains(t, v.PreValidate(context.Background(), &cloudreq.CloudRequest{Provider: "aws", Service: "sagemaker", Action: "invoke"}),
		"Target.Endpoint, Payload.Body")
	// An unknown kind needs nothing.
	assert.NoError(t, v.PreValidate(context.Background(), &cloudreq.CloudRequest{Provider: "x", Service: "y", Action: "invoke"}))
}

func TestPayloadLimit(t *testing.T) {
	v := hooks.PayloadLimit(10)
	ok := &cloudreq.CloudRequest{Payload: cloudreq.Payload{Body: []byte("0123456789")}}
	assert.NoError(t, v.PreValidate(context.Background(), ok))
	big := &cloudreq.CloudRequest{Payload: cloudreq.Payload{Body: []byte("0123456789A")}}
	err := v.PreValidate(context.Background(), big)
	assert.Equal(t, errcodes.PayloadTooLarge, errcodes.Of(err))
	gen := &cloudreq.CloudRequest{Generate: &cloudreq.GenerateInput{Messages: []cloudreq.Message{{Content: strings.Repeat("x", 11)}}}}
	assert.Equal(t, errcodes.PayloadTooLarge, errcodes.Of(v.PreValidate(context.Background(), gen)))
}

// TestRedaction: RedactHeaders hides the value of every header of
// cloudreq.CredentialHeaders, whatever its case, and keeps the others.
func TestRedaction(t *testing.T) {
	const secret = "sentinel-7f3a"
	h := http.Header{}
	for _, k := range cloudreq.CredentialHeaders {
		h.Set(k, "Bearer "+secret)
	}
	h.Set("Content-Type", "application/json")
	lower := []string{"api-key", "x-goog-api-key", "cookie"} // as gRPC metadata spells them
	for _, k := range lower {
		h[k] = []string{secret} // not canonicalized
	}
	r := hooks.RedactHeaders(h)
	for _, k := range lower {
		assert.Equal(t, []string{cloudreq.Redacted}, r[k], k)
	}
	for _, k := range []string{"Cookie", "Set-Cookie", "Authorization", "Ocp-Apim-Subscription-Key"} {
		assert.Equal(t, []string{cloudreq.Redacted}, r[k], k)
	}
	for k, vs := range r {
		for _, v := range vs {
			assert.NotContains(t, v, secret, k)
		}
	}
	assert.Equal(t, "application/json", r.Get("Content-Type"))
	assert.Equal(t, "Bearer "+secret, h.Get("Authorization"), "input untouched")
}

func TestHookErrorsAreNeverWrittenTo(t *testing.T) {
	// Hooks may return one shared error value from every call.
	denied := errcodes.Wrap(errors.New("tenant blocked"), errcodes.Unknown, "tenant blocked")
	empty := errcodes.New(errcodes.Unavailable, "empty body")
	set := &hooks.Set{}
	require.NoError(t, set.Validate.Add("tenant", hooks.PreValidateFunc(func(_ context.Context, r *cloudreq.CloudRequest) error {
		if r.Class == "blocked" {
			return denied
		}
		return nil
	})))
	require.NoError(t, set.Deserialize.Add("veto-empty", hooks.PostDeserializeFunc(func(_ context.Context, _ *cloudreq.CloudRequest, resp *cloudreq.CloudResponse, err error) error {
		if err == nil && len(resp.Data) == 0 {
			return empty
		}
		return nil
	})))
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Response: &cloudreq.CloudResponse{StatusCode: 200}}}}
	c := newClient(t, set, fake)

	blocked := invokeReq()
	blocked.Class = "blocked"
	_, err := c.Invoke(context.Background(), blocked)
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
	assert.ErrorIs(t, err, denied, "the hook's own error stays reachable")
	assert.Contains(t, err.Error(), "hook tenant: tenant blocked")

	_, err = c.Invoke(context.Background(), invokeReq())
	assert.Equal(t, errcodes.Unavailable, errcodes.Of(err))
	assert.ErrorIs(t, err, empty)
	var ce *errcodes.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "openai", ce.Provider)

	assert.Equal(t, *errcodes.Wrap(denied.Err, errcodes.Unknown, "tenant blocked"), *denied, "PreValidate error untouched")
	assert.Equal(t, *errcodes.New(errcodes.Unavailable, "empty body"), *empty, "PostDeserialize error untouched")
}

func TestPostDeserializeVetoWithABareCode(t *testing.T) {
	set := &hooks.Set{}
	vetoed := false
	require.NoError(t, set.Deserialize.Add("once", hooks.PostDeserializeFunc(func(context.Context, *cloudreq.CloudRequest, *cloudreq.CloudResponse, error) error {
		if !vetoed {
			vetoed = true
			return errcodes.Throttled // a Code is an error too
		}
		return nil
	})))
	fake := &cloudreqtest.Adapter{}
	resp, err := newClient(t, set, fake).Invoke(context.Background(), invokeReq())
	require.NoError(t, err)
	assert.Len(t, fake.Calls(), 2, "ERR_THROTTLED is retried")
	require.Len(t, resp.Errors, 1)
	assert.Equal(t, errcodes.Throttled, resp.Errors[0].Code)
}

// TestNilSetRunsNoHooks: a nil *Set in Options.Hooks runs no hooks, as a
// nil Hooks does, rather than failing every call.
func TestNilSetRunsNoHooks(t *testing.T) {
	var set *hooks.Set
	c, err := cloudreq.New(cloudreq.Options{
		Adapters:    []cloudreq.Adapter{&cloudreqtest.Adapter{}},
		CallOptions: cloudreq.CallOptions{Hooks: set},
	})
	require.NoError(t, err)
	_, err = c.Invoke(context.Background(), invokeReq())
	assert.NoError(t, err)
}

// TestPostDeserializeHooksAfterAVetoSeeIt: the hooks after a veto still
// run and see the veto as the attempt's outcome; the last veto stands.
func TestPostDeserializeHooksAfterAVetoSeeIt(t *testing.T) {
	first := errcodes.New(errcodes.Unavailable, "empty body")
	second := errcodes.New(errcodes.ModelError, "bad body")
	set := &hooks.Set{}
	var seen []error
	record := hooks.PostDeserializeFunc(func(_ context.Context, _ *cloudreq.CloudRequest, _ *cloudreq.CloudResponse, err error) error {
		seen = append(seen, err)
		return nil
	})
	require.NoError(t, set.Deserialize.Add("veto", hooks.PostDeserializeFunc(func(context.Context, *cloudreq.CloudRequest, *cloudreq.CloudResponse, error) error {
		return first
	})))
	require.NoError(t, set.Deserialize.Add("log", record))
	err := set.PostDeserialize(context.Background(), invokeReq(), &cloudreq.CloudResponse{}, nil)
	assert.Same(t, first, err)
	require.Len(t, seen, 1)
	assert.Same(t, first, seen[0], "the hook after the veto sees it")

	require.NoError(t, set.Deserialize.Add("veto-again", hooks.PostDeserializeFunc(func(context.Context, *cloudreq.CloudRequest, *cloudreq.CloudResponse, error) error {
		return second
	})))
	require.NoError(t, set.Deserialize.Add("log-again", record))
	seen = nil
	err = set.PostDeserialize(context.Background(), invokeReq(), &cloudreq.CloudResponse{}, nil)
	assert.Same(t, second, err, "the last veto stands")
	assert.Equal(t, []error{first, second}, seen)
}
