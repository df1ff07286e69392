// Package hooks holds cloudinfer's hook phases, their named and ordered
// chains, and the built-in hooks.
//
// A call passes three phases (see cloudreq.Hooks):
//
//   - PreValidate: read-only checks before anything is sent. An error is
//     final (never retried) and normalized to ERR_INVALID_PARAM unless it is
//     already an *errcodes.Error.
//   - PreSerialize: runs once, before the adapter writes the wire form; it
//     may rewrite the request (defaults, headers, ids). An error is final, as
//     for PreValidate.
//   - PostDeserialize: runs after every attempt with the normalized response
//     or error. It may enrich the response; returning an error replaces the
//     outcome (a veto), and the retry loop retries it if it is retryable.
//
// Each phase is a one-method interface with a func adapter. A Chain keeps
// named entries in order — the first registered runs first — and supports
// Add, InsertBefore, InsertAfter, Remove and Names. A Set holds one chain
// per phase and is what cloudreq.Options.Hooks takes.
//
// Default returns the payload limit and the request id hook. The fields a
// provider requires are its adapter's to check (cloudreq.Validator), before
// any hook runs; RequiredFields is for rules of one's own. Logging is
// not a hook: it is an observer (telemetry.WithLogging). RedactHeaders
// copies a header with the values of the credential headers
// (cloudreq.CredentialHeaders, the one list of them) hidden, for code that
// keeps a request for diagnosis.
package hooks
