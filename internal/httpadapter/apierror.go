package httpadapter

import "strconv"

// APIError is the error an OpenAI-style HTTP server returned, as parsed
// from its body: the native error that the HTTP and in-stream
// *errcodes.Error of the openai and paieas adapters wrap (reach it with
// errors.As; each of those packages names it APIError).
type APIError struct {
	// Provider is the cloudreq provider of the adapter that read it
	// ("openai", "alibaba").
	Provider string
	// StatusCode is the HTTP status, or the status the body states for an
	// in-stream error (0 if none).
	StatusCode int
	// Code is a string error code ("insufficient_quota"), Type the error
	// type ("BadRequestError", "invalid_request_error"), Param the
	// offending parameter.
	Code, Type, Param string
	// Message is the server's message (or an HTML page's title).
	Message string
}

// Error implements error: "openai: HTTP 429 rate_limit_exceeded: …".
func (e *APIError) Error() string {
	s := e.Provider + ": HTTP " + strconv.Itoa(e.StatusCode)
	if e.StatusCode == 0 {
		s = e.Provider + ": in-stream error"
	}
	if c := e.Code; c != "" {
		s += " " + c
	} else if e.Type != "" {
		s += " " + e.Type
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}
