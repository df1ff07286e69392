// Package httpadapter is the HTTP core the net/http and azcore provider
// adapters share, so that an adapter writes only its dialect (URLs,
// bodies, authentication, stream decoders) and its error table.
//
// A Core, built from a Config, owns an adapter's description, its client
// (or the transport it builds for itself when given none, NewTransport: a
// connection pool sized for concurrent calls and a response header
// timeout, which Close closes), its Limits (response, error-body and
// stream-frame bounds), the base-URL check, the sending of an attempt
// (headers, Content-Type, Accept, request id) with the status check and
// the bounded read of an error body handed to the adapter's ErrorTable,
// the bounded read of a whole response, and a cloudreq.ChunkStream over
// an SSE, NUL-delimited, raw or whole body. An adapter on another
// pipeline (azcore) sends itself and hands the response to Check.
//
// CheckPlainHTTP is the one rule for credentials over plain http: refused
// unless the policy permits it (anywhere, with an adapter's
// AllowInsecureHTTP; to this machine only, for the CLI). The package also
// holds the pieces the other adapters use: bounded reads, plain-text and
// HTML error messages, response metadata, the error of a failed response
// (NewError), and APIError, the native error of OpenAI-style bodies.
package httpadapter
