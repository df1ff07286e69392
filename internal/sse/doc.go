// Package sse reads Server-Sent Events (the WHATWG "text/event-stream"
// format) and NUL-delimited record streams with bounded memory.
//
// Reader follows the event-stream parsing rules of the HTML standard: lines
// end with CR, LF or CRLF (a CRLF split across two reads included), a leading
// UTF-8 byte order mark is skipped, lines starting with ':' are comments,
// "data" lines of one event are joined with LF, the single space after the
// colon is optional, and the event, id and retry fields are honoured. Lines
// and events are bounded: past Limits.MaxLine or Limits.MaxEvent, Next
// returns ErrLineTooLong or ErrEventTooLarge instead of allocating without
// end. A stream that ends inside an event returns io.ErrUnexpectedEOF, so a
// truncated stream is never mistaken for a complete one.
//
// RecordReader splits a stream on NUL bytes, the framing of PAI-EAS legacy
// LLM streams ({"response":…}\x00{"response":…}\x00…), with the same bounds.
//
// Both readers reuse their buffers: once warmed up, reading an event or a
// record allocates nothing, and what Next returns stays valid only until the
// next call to Next.
//
// Why hand-written: bufio.Scanner cannot end a CR-terminated line without
// waiting for the next byte (it must see whether an LF follows), which delays
// every event of a CR-framed stream by one network read and distorts the
// token timings this module measures; and no well-kept Go SSE reader offers
// allocation-free per-event parsing with both line and event size limits.
package sse
