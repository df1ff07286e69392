package emulator

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// easStatus is PAI-EAS's status for a fault (bodies are plain text):
//
//	throttle, quota       429 Too Many Requests
//	queue-full            450 request is discarded because the queue is full
//	model-not-ready       503 no ready instance (e.g. scaling from zero)
//	model-error           500 processor exception
//	invalid               400 Bad Request
//	not-found             404 service not found
//	unauthenticated       401 Authorization Failed
//	forbidden             401 Authorization Failed (EAS has no 403)
//	internal              500 Internal Server Error
//	unavailable           503 Service Unavailable
//	timeout               408 Request Timeout (includes queue time)
//	payload-too-large     413 Request Entity Too Large
//	model-overloaded      429 Too Many Requests (the model server's back-pressure)
//	model-unavailable     503 Service Unavailable (the model server's own 503)
//	gateway-overflow      503 upstream connect error or disconnect/reset before
//	                      headers. reset reason: overflow (the gateway's Envoy)
//
// Of the 503s, only model-not-ready's says that no instance is ready.
func easStatus(f Fault) (int, string) {
	switch f {
	case FaultThrottle:
		return 429, "Too Many Requests: the service is rate limited"
	case FaultQuota:
		return 429, "Too Many Requests: quota exceeded"
	case FaultQueueFull:
		return 450, "request is discarded because the queue is full"
	case FaultModelNotReady:
		return 503, "Service Unavailable: no ready instance"
	case FaultModelError:
		return 500, "processor exception: the model raised an error while generating"
	case FaultInvalid:
		return 400, "Bad Request"
	case FaultNotFound:
		return 404, "service not found"
	case FaultUnauthenticated, FaultForbidden:
		return 401, "Authorization Failed"
	case FaultUnavailable:
		return 503, "Service Unavailable"
	case FaultTimeout:
		return 408, "Request Timeout"
	case FaultPayloadTooLarge:
		return 413, "Request Entity Too Large"
	case FaultModelOverloaded:
		return 429, "Too Many Requests: the model is overloaded"
	case FaultModelUnavailable:
		return 503, "Service Unavailable: the model server is unavailable"
	case FaultGatewayOverflow:
		return 503, gatewayOverflowText
	}
	return 500, "Internal Server Error"
}

// writeEASError is the errorWriter of PAI-EAS: plain-text bodies.
func writeEASError(w http.ResponseWriter, f Fault, _, msg string) {
	status, text := easStatus(f)
	if msg != "" && f == FaultInvalid {
		text = text + ": " + msg
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set(headerContentLength, itoa(int64(len(text))))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, text)
}

// servePAIEAS serves /api/predict/{service}[/sub/path]: the legacy LLM
// body at the service root, OpenAI-compatible bodies under /v1/.
func (s *Server) servePAIEAS(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/api/predict/")
	name, sub, _ := strings.Cut(rest, "/")
	sub = "/" + sub
	ep := s.lookup(name, PAIEAS)
	if ep == nil {
		writeEASError(w, FaultNotFound, name, "")
		return
	}
	switch sub {
	case "/v1/chat/completions", "/v1/completions":
		// authorized() needs the body for signatures: serveOpenAIGen checks it.
		s.serveOpenAIGen(w, r, ep, PAIEAS, sub == "/v1/chat/completions", writeEASError)
		return
	case "/v1/models":
		if r.Method != http.MethodGet {
			methodNotAllowed(w, PAIEAS, http.MethodGet)
			return
		}
		if !s.authorized(ep, PAIEAS, r, nil) {
			writeEASError(w, FaultUnauthenticated, name, "")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []map[string]any{{"id": name, "object": "model", "owned_by": "pai-eas"}}})
		return
	case "/":
	default:
		writeEASError(w, FaultNotFound, name, "")
		return
	}
	if r.Method != http.MethodPost {
		methodNotAllowed(w, PAIEAS, http.MethodPost)
		return
	}
	body, tooLarge, err := s.readBody(w, r, maxBody)
	if err != nil {
		return
	}
	if tooLarge {
		writeEASError(w, FaultPayloadTooLarge, name, "")
		return
	}
	if !s.authorized(ep, PAIEAS, r, body) {
		writeEASError(w, FaultUnauthenticated, name, "")
		return
	}
	gen, perr := parseEASPrompt(body)
	if perr != nil {
		writeEASError(w, FaultInvalid, name, perr.Error())
		return
	}
	c, err := s.newCall(ep, PAIEAS, "predict", gen, r.Header.Get, arrivalOf(r))
	if err != nil {
		c.end(http.StatusBadRequest, "error")
		writeEASError(w, FaultInvalid, name, err.Error())
		return
	}
	sse := strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	s.serveGen(w, r, c, &easWire{sse: sse})
}

// easWire answers the legacy LLM body: {"response": text, "history": []};
// streamed (use_stream_chat) as NUL-separated JSON chunks, or as SSE when
// the client accepts text/event-stream. Each chunk's "response" holds the
// text so far (cumulative), as the EAS LLM web demo streams it.
type easWire struct{ sse bool }

type easChunk struct {
	Response string `json:"response"`
	History  []any  `json:"history"`
}

func (e *easWire) writeError(w http.ResponseWriter, c *call, f Fault) {
	writeEASError(w, f, c.ep.Name, "")
}

func (e *easWire) streamContentType() string {
	if e.sse {
		return "text/event-stream"
	}
	return "application/octet-stream"
}

func (e *easWire) begin(io.Writer, *call) error { return nil }

func (e *easWire) chunk(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if e.sse {
		_, err = w.Write(append(append([]byte("data: "), b...), "\n\n"...))
		return err
	}
	_, err = w.Write(append(b, 0))
	return err
}

func (e *easWire) token(w io.Writer, c *call, i int) error {
	return e.chunk(w, easChunk{Response: strings.Join(c.words[:i+1], ""), History: []any{}})
}

func (e *easWire) end(io.Writer, *call) error { return nil }

func (e *easWire) streamError(w io.Writer, _ *call) error {
	return e.chunk(w, map[string]string{"error": "processor exception: generation failed"})
}

// streamErrorFirst: a legacy stream has no error record before content
// that says "rate limited"; EAS refuses such a request at its gateway,
// with 429, before any stream.
func (e *easWire) streamErrorFirst(io.Writer, *call) error { return errNoInBandError }

func (e *easWire) malformed(w io.Writer, _ *call) error {
	_, err := io.WriteString(w, "{\"response\": \"\x00")
	return err
}

func (e *easWire) whole(c *call) (string, []byte) {
	b, _ := json.Marshal(easChunk{Response: c.text(), History: []any{}})
	return "application/json", b
}
