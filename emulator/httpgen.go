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
	// token writes token i, or nothing for a token the answer leaves out.
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

// errorFirstWriter is implemented by wires whose stream opens with an
// in-band error of its own under FaultStreamErrorFirst (a rate-limit error
// where the wire form can say so). A wire without it opens the stream with
// its streamError event.
type errorFirstWriter interface {
	// streamErrorFirst writes the in-band error that is the stream's first
	// and only event, and whatever the server sends after it. It returns
	// errNoInBandError, having written nothing, when the wire's stream
	// cannot carry an error before content: the call then gets the
	// throttle answer, as its server would refuse it.
	streamErrorFirst(w io.Writer, c *call) error
}

// errNoInBandError is streamErrorFirst's answer for a stream form that
// carries no error before content.
var errNoInBandError = errors.New("the stream form has no in-band error before content")

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
		retryAfterHeaders(w.Header(), c.rec.Provider, c.retryIn)
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

	var first bytes.Buffer // the in-band error that opens the stream
	if f == FaultStreamErrorFirst {
		outcome = "error"
		var err error
		if ef, ok := wr.(errorFirstWriter); ok {
			err = ef.streamErrorFirst(&first, c)
		} else {
			err = wr.streamError(&first, c)
		}
		if errors.Is(err, errNoInBandError) {
			status = throttleInstead(w, c, wr)
			return
		}
	}
	h.Set("Content-Type", wr.streamContentType())
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	status = http.StatusOK
	flush(w)
	if f == FaultStreamErrorFirst {
		// The in-band error is the whole answer: no token goes before it.
		_, _ = w.Write(first.Bytes())
		flush(w)
		return
	}
	// Each token's bytes are made before it is due, so that it is written
	// when due rather than after its encoding.
	var next bytes.Buffer
	for i := range c.n {
		fault := f.midStream() && i == c.breakAt
		next.Reset()
		opening := 0 // bytes of begin's, before the token's
		if !fault {
			err := error(nil)
			if i == 0 {
				err = wr.begin(&next, c)
				opening = next.Len()
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
		if next.Len() == 0 {
			continue // a token the wire does not send (a hidden thought)
		}
		if _, err := w.Write(next.Bytes()); err != nil {
			outcome = "canceled"
			return
		}
		flush(w)
		if next.Len() > opening {
			c.sent(i)
		}
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
// The stream faults that a whole answer cannot carry become error answers:
// stream-error the model-error answer when the first token is due,
// stream-error-first the throttle answer at once.
func (s *Server) serveWhole(ctx context.Context, w http.ResponseWriter, c *call, wr wire, f Fault) (int, string) {
	if f == FaultStreamErrorFirst {
		return throttleInstead(w, c, wr), "error"
	}
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

// throttleInstead answers FaultStreamErrorFirst where no in-band error can
// carry it (a whole answer, a stream form without error events): the
// throttle answer, with its Retry-After. It returns the status written.
func throttleInstead(w http.ResponseWriter, c *call, wr wire) int {
	c.setFault(FaultThrottle)
	c.setTruth(w.Header())
	retryAfterHeaders(w.Header(), c.rec.Provider, c.ep.scaled(1000))
	sw := &statusWriter{ResponseWriter: w}
	wr.writeError(sw, c, FaultThrottle)
	return sw.status
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
