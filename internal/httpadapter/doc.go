// Package httpadapter holds the HTTP plumbing the net/http and azcore
// provider adapters share: bounded reads of response and error bodies,
// plain-text and HTML error messages, the server's cold-start report,
// response metadata, and a cloudreq.ChunkStream over an SSE, NUL-delimited,
// raw or whole response body.
package httpadapter
