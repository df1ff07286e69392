// Package httpadapter holds the HTTP plumbing the net/http and azcore
// provider adapters share: bounded reads of response and error bodies,
// plain-text and HTML error messages, the server's cold-start report,
// response metadata, a cloudreq.ChunkStream over an SSE, NUL-delimited,
// raw or whole response body, and the transport an adapter builds for
// itself when the caller gives it no HTTP client (NewTransport: a
// connection pool sized for concurrent calls and a response header
// timeout).
package httpadapter
