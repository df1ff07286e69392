package emulator

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
)

// wire is one provider route's response form for a generation.
type wire interface {
	// writeError answers fault f (an error fault) before any token.
	writeError(w http.ResponseWriter, c *call, f Fault)
	// streamContentType is the Content-Type of a streamed response.
	streamContentType() string
	// begin writes what precedes the first token (it is called when the first token is due).
	begin(w io.Writer, c *call) error
	// token writes token i.
	token(w io.Writer, c *call, i int) error
	// end writes what follows the last token.
	end(w io.Writer, c *call) error
	// streamError writes the in-stream error event.
	streamError(w io.Writer, c *call) error
	// malformed writes a body that is not valid for the protocol.
	malformed(w io.Writer, c *call) error
	// whole returns the content type and body of the non-streamed answer.
	whole(c *call) (string, []byte)
}

// headerer is implemented by wires that add provider headers to successful answers.
type headerer interface {
	successHeaders(h http.Header, c *call)
}

// serveGen runs one generation over HTTP: admission, then the answer in
// wire's form, with the call's fault, if any, applied on the way.
func (s *Server) serveGen(w http.ResponseWriter, r *http.Request, c *call, wr wire) {
	ctx := r.Context()
	status, outcome := 0, "ok"
	defer func() { c.end(status, outcome) }()

	err := c.admit(ctx)
	if err == nil || errors.Is(err, errStateFault) {
		if herr := c.waitHold(ctx); herr != nil {
			err = herr
		}
	}
	if err != nil {
		if !errors.Is(err, errStateFault) {
			outcome = "canceled"
			return
		}
		f := c.fault()
		switch f {
		case FaultResetBeforeHeaders:
			outcome = "fault"
			abortConn(w, true)
			return
		case FaultHTML502:
			outcome, status = "fault", http.StatusBadGateway
			c.setTruth(w.Header())
			writeHTML502(w)
			return
		}
		outcome = "error"
		c.setTruth(w.Header())
		retryAfterHeaders(w.Header(), c.retryIn)
		sw := &statusWriter{ResponseWriter: w}
		wr.writeError(sw, c, f)
		status = sw.status
		return
	}
	f := c.fault()
	h := w.Header()
	c.setTruth(h)
	if hh, ok := wr.(headerer); ok {
		hh.successHeaders(h, c)
	}

	if !c.gen.stream {
		status, outcome = s.serveWhole(ctx, w, c, wr, f)
		return
	}

	h.Set("Content-Type", wr.streamContentType())
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	status = http.StatusOK
	flush(w)
	// Each token's bytes are made before it is due, so that it is written
	// when due rather than after its encoding.
	var next bytes.Buffer
	for i := range c.n {
		fault := f.midStream() && i == c.breakAt
		next.Reset()
		if !fault {
			err := error(nil)
			if i == 0 {
				err = wr.begin(&next, c)
			}
			if err == nil {
				err = wr.token(&next, c, i)
			}
			if err != nil {
				outcome = "canceled"
				return
			}
		}
		if err := c.waitToken(ctx, i); err != nil {
			outcome = "canceled"
			return
		}
		if fault {
			outcome = "fault"
			switch f {
			case FaultCloseMidStream:
				abortConn(w, false)
			case FaultStallMidStream:
				c.stall(ctx)
				abortConn(w, false)
			case FaultMalformedBody:
				_ = wr.malformed(w, c)
				flush(w)
			case FaultStreamError:
				_ = wr.streamError(w, c)
				flush(w)
			}
			return
		}
		if _, err := w.Write(next.Bytes()); err != nil {
			outcome = "canceled"
			return
		}
		flush(w)
		c.sent(i)
	}
	if f.midStream() {
		// A one-token answer meets its fault after its only token.
		outcome = "fault"
		switch f {
		case FaultCloseMidStream:
			abortConn(w, false)
			return
		case FaultStallMidStream:
			c.stall(ctx)
			abortConn(w, false)
			return
		case FaultMalformedBody:
			_ = wr.malformed(w, c)
			return
		case FaultStreamError:
			_ = wr.streamError(w, c)
			return
		}
	}
	if err := wr.end(w, c); err != nil {
		outcome = "canceled"
		return
	}
	flush(w)
}

// serveWhole answers a non-streamed generation when its last token is due.
func (s *Server) serveWhole(ctx context.Context, w http.ResponseWriter, c *call, wr wire, f Fault) (int, string) {
	if f == FaultStreamError {
		f = FaultModelError
		if err := s.sleepUntil(ctx, c.firstAt); err != nil {
			return 0, "canceled"
		}
		c.setFault(FaultModelError)
		c.setTruth(w.Header())
		sw := &statusWriter{ResponseWriter: w}
		wr.writeError(sw, c, f)
		return sw.status, "error"
	}
	if err := s.sleepUntil(ctx, c.lastAt()); err != nil {
		return 0, "canceled"
	}
	ct, body := wr.whole(c)
	h := w.Header()
	h.Set("Content-Type", ct)
	switch f {
	case FaultMalformedBody:
		body = body[:len(body)/2]
		h.Set(headerContentLength, itoa(int64(len(body))))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
		return http.StatusOK, "fault"
	case FaultCloseMidStream, FaultStallMidStream:
		h.Set(headerContentLength, itoa(int64(len(body))))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body[:len(body)/2])
		flush(w)
		if f == FaultStallMidStream {
			c.stall(ctx)
		}
		abortConn(w, false)
		return http.StatusOK, "fault"
	}
	h.Set(headerContentLength, itoa(int64(len(body))))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	c.sentAll()
	return http.StatusOK, "ok"
}

// statusWriter remembers the status written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
