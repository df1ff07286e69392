// Package errcodes defines cloudinfer's closed set of portable error codes and
// the error type every provider adapter returns.
//
// Whatever a cloud said — an X-Amzn-ErrorType header, a google.rpc.Status, an
// Azure ML status code or a plain-text PAI-EAS body — the caller sees one of
// the codes below, plus the native details for diagnosis:
//
//	resp, err := client.Invoke(ctx, req)
//	if errors.Is(err, errcodes.Throttled) { ... }
//	var e *errcodes.Error
//	if errors.As(err, &e) { log.Print(e.Provider, e.ProviderCode, e.HTTPStatus) }
//
// The native error (an SDK's own type) stays reachable with errors.As through
// *Error's Unwrap: the escape hatch when the portable view is not enough.
package errcodes
