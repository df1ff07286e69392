package errcodes_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

type nativeErr struct{ code string }

func (n *nativeErr) Error() string { return "native " + n.code }

func TestIsAndAsThroughWrapping(t *testing.T) {
	native := &nativeErr{code: "ModelNotReadyException"}
	e := errcodes.Wrap(native, errcodes.ModelNotReady, "model loading")
	wrapped := fmt.Errorf("call failed: %w", e)

	assert.True(t, errors.Is(wrapped, errcodes.ModelNotReady))
	assert.False(t, errors.Is(wrapped, errcodes.Throttled))
	var got *nativeErr
	require.True(t, errors.As(wrapped, &got))
	assert.Equal(t, "ModelNotReadyException", got.code)
	var ce *errcodes.Error
	require.True(t, errors.As(wrapped, &ce))
	assert.Equal(t, errcodes.ModelNotReady, ce.Code)
	assert.Equal(t, errcodes.ModelNotReady, errcodes.Of(wrapped))
	assert.Equal(t, "ERR_MODEL_NOT_READY", ce.ErrorType())
}

func TestOf(t *testing.T) {
	tests := []struct {
		err  error
		want errcodes.Code
	}{
		{nil, ""},
		{errors.New("x"), errcodes.Unknown},
		{context.Canceled, errcodes.Canceled},
		{fmt.Errorf("w: %w", context.DeadlineExceeded), errcodes.Timeout},
		{errcodes.Throttled, errcodes.Throttled},
		{errcodes.New(errcodes.NotFound, "no"), errcodes.NotFound},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, errcodes.Of(tt.err), "%v", tt.err)
	}
}

func TestDefaultRetryability(t *testing.T) {
	retryable := map[errcodes.Code]bool{
		errcodes.Throttled: true, errcodes.ModelNotReady: true, errcodes.Timeout: true,
		errcodes.Unavailable: true, errcodes.Internal: true,
	}
	for _, c := range errcodes.All {
		assert.Equal(t, retryable[c], c.Retryable(), c)
		assert.Equal(t, retryable[c], errcodes.New(c, "m").Retryable, c)
		assert.True(t, c.Valid())
	}
	assert.Len(t, errcodes.All, 15)
	assert.False(t, errcodes.Code("ERR_BOGUS").Valid())
}

func TestTextAndJSON(t *testing.T) {
	for _, c := range errcodes.All {
		b, err := c.MarshalText()
		require.NoError(t, err)
		var back errcodes.Code
		require.NoError(t, back.UnmarshalText(b))
		assert.Equal(t, c, back)
	}
	var bad errcodes.Code
	assert.Error(t, bad.UnmarshalText([]byte("ERR_NOPE")))

	e := &errcodes.Error{Code: errcodes.Throttled, Provider: "aws", ProviderCode: "ThrottlingException",
		HTTPStatus: 429, Message: "slow down", RequestID: "r1", Retryable: true,
		RetryAfter: 1500 * time.Millisecond, Details: map[string]string{"k": "v"}, Err: errors.New("native")}
	b, err := json.Marshal(e)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"code":"ERR_THROTTLED"`)
	assert.NotContains(t, string(b), "native")
	var back errcodes.Error
	require.NoError(t, json.Unmarshal(b, &back))
	e.Err = nil
	assert.Equal(t, *e, back)

	// Round trips that lost data: sub-millisecond and saturated delays, and
	// an Error with no code.
	for _, ra := range []time.Duration{1500 * time.Microsecond, time.Nanosecond, time.Duration(math.MaxInt64)} {
		b, err := json.Marshal(&errcodes.Error{Code: errcodes.Throttled, RetryAfter: ra})
		require.NoError(t, err)
		var back errcodes.Error
		require.NoError(t, json.Unmarshal(b, &back), string(b))
		assert.Equal(t, ra, back.RetryAfter, string(b))
	}
	b, err = json.Marshal(&errcodes.Error{Message: "no code"})
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &back), string(b))
	assert.Equal(t, errcodes.Unknown, back.Code)
}

func TestErrorString(t *testing.T) {
	e := &errcodes.Error{Code: errcodes.Throttled, Provider: "alibaba", ProviderCode: "450", HTTPStatus: 450,
		Message: "queue full", RequestID: "abc"}
	assert.Equal(t, "ERR_THROTTLED: alibaba 450 (HTTP 450): queue full [request id abc]", e.Error())
	assert.Equal(t, "ERR_CANCELED", errcodes.Wrap(errors.New("secret-ish native text"), errcodes.Canceled, "").Error(),
		"the native error's text is never printed")
	assert.Equal(t, "ERR_CANCELED: boom", errcodes.New(errcodes.Canceled, "boom").Error())
}

func TestFromContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	assert.Nil(t, errcodes.FromContext(ctx))
	cancel()
	assert.Equal(t, errcodes.Canceled, errcodes.FromContext(ctx).Code)
	dctx, dcancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer dcancel()
	e := errcodes.FromContext(dctx)
	assert.Equal(t, errcodes.Timeout, e.Code)
	assert.False(t, e.Retryable)
}

func TestFromTransport(t *testing.T) {
	secretURL := "https://example.invalid/path?key=SECRET123&sig=SIG"
	tests := []struct {
		name      string
		err       error
		code      errcodes.Code
		retryable bool
	}{
		{"refused", &url.Error{Op: "Post", URL: secretURL, Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}, errcodes.Unavailable, true},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), errcodes.Unavailable, true},
		{"eof", &url.Error{Op: "Post", URL: secretURL, Err: io.EOF}, errcodes.Unavailable, true},
		{"cert", &url.Error{Op: "Post", URL: secretURL, Err: x509.UnknownAuthorityError{}}, errcodes.Unauthenticated, false},
		{"tls alert", &url.Error{Op: "Post", URL: secretURL, Err: &net.OpError{Op: "remote error", Err: errors.New("tls: protocol version not supported")}}, errcodes.Unavailable, false},
		{"not tls", &url.Error{Op: "Post", URL: secretURL, Err: tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}}, errcodes.Unavailable, false},
		{"timeout", &url.Error{Op: "Post", URL: secretURL, Err: timeoutErr{}}, errcodes.Timeout, true},
		{"canceled", context.Canceled, errcodes.Canceled, false},
		{"other", errors.New("weird"), errcodes.Unknown, false},
		{"unparsable url", &url.Error{Op: "Post", URL: "https://[::1/p?key=SECRET123&sig=SIG", Err: io.EOF}, errcodes.Unavailable, true},
		{"bare code", errcodes.Throttled, errcodes.Throttled, true},
		{"wrapped code", fmt.Errorf("adapter: %w", errcodes.NotFound), errcodes.NotFound, false},
		{"code over transport", fmt.Errorf("%w: %w", errcodes.PermissionDenied, io.EOF), errcodes.PermissionDenied, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := errcodes.FromTransport(tt.err)
			assert.Equal(t, tt.code, e.Code)
			assert.Equal(t, tt.retryable, e.Retryable)
			assert.NotContains(t, e.Error(), "SECRET123")
			assert.NotContains(t, e.Error(), "SIG")
		})
	}
	already := errcodes.New(errcodes.NotFound, "x")
	assert.Same(t, already, errcodes.FromTransport(already))
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestForHTTPStatus(t *testing.T) {
	tests := map[int]errcodes.Code{
		200: "", 400: errcodes.InvalidParam, 401: errcodes.Unauthenticated, 403: errcodes.PermissionDenied,
		404: errcodes.NotFound, 408: errcodes.Timeout, 413: errcodes.PayloadTooLarge, 422: errcodes.InvalidParam,
		424: errcodes.ModelError, 429: errcodes.Throttled, 499: errcodes.Canceled, 500: errcodes.Internal,
		502: errcodes.Unavailable, 503: errcodes.Unavailable, 504: errcodes.Timeout, 530: errcodes.Unavailable,
		418: errcodes.InvalidParam,
	}
	for status, want := range tests {
		assert.Equal(t, want, errcodes.ForHTTPStatus(status), "status %d", status)
	}
}

func ExampleOf() {
	err := fmt.Errorf("calling endpoint: %w", errcodes.New(errcodes.Throttled, "rate limited"))
	fmt.Println(errcodes.Of(err), errors.Is(err, errcodes.Throttled), errcodes.Of(err).Retryable())
	// Output: ERR_THROTTLED true true
}

// TestEmptyCodeIsUnknown: an *Error built without a Code (a literal, a
// JSON object without "code") is ERR_UNKNOWN everywhere: in Of, errors.Is,
// its text and its JSON, which round-trips.
func TestEmptyCodeIsUnknown(t *testing.T) {
	e := &errcodes.Error{Message: "no code"}
	assert.Equal(t, errcodes.Unknown, errcodes.Of(e))
	assert.Equal(t, errcodes.Unknown, errcodes.Of(fmt.Errorf("wrapped: %w", e)))
	assert.True(t, errors.Is(e, errcodes.Unknown))
	assert.Equal(t, "ERR_UNKNOWN: no code", e.Error())
	assert.Equal(t, "ERR_UNKNOWN", e.ErrorType())

	var back errcodes.Error
	require.NoError(t, json.Unmarshal([]byte(`{"message":"no code","retryable":false}`), &back))
	assert.Equal(t, errcodes.Unknown, errcodes.Of(&back))
	b, err := json.Marshal(&back)
	require.NoError(t, err)
	var again errcodes.Error
	require.NoError(t, json.Unmarshal(b, &again))
	assert.Equal(t, errcodes.Unknown, again.Code)
	assert.Equal(t, back.Error(), again.Error())
}
