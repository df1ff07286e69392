// Package impair adds network impairment to a client's connections:
// delay, jitter, loss and bandwidth, per direction, from a seeded random
// source, so that a latency experiment can be run again with the same
// draws. It is how cloudinfer answers "and over a WAN?" without a second
// machine: `cloudinfer bench --network "delay=20ms,jitter=2ms"` runs
// every target's connections through it.
//
// A Profile wraps a net.Conn (Profile.Conn), a dial function
// (Profile.Dialer, for http.Transport.DialContext or
// grpc.WithContextDialer) or a whole http.Transport (Profile.Transport).
// Its text form, read by Parse, is close to tc-netem's:
//
//	delay=20ms,jitter=2ms,loss=0.1%,rate=100mbit,down.delay=30ms,seed=7
//
// The model is that of one TCP connection seen from its ends: bytes keep
// their order, in segments of at most SegmentSize bytes (cut at multiples
// of SegmentSize in the stream, and where a write starts); a segment is
// sent at the link's rate behind the bytes before it, then takes the delay
// (± jitter); a lost segment is not missing bytes but late by a
// retransmission timeout, and holds back the bytes behind it, not those
// before it; losses within a timeout of one another cost it once. The end
// of the stream takes the delay too. Loss is drawn by segment position in
// the byte stream, so the same seed loses the same segments however the
// bytes are split into writes and reads. Timing comes from the runtime's
// timers, which wake up to about 1 ms late on Linux, so short delays come
// out slightly longer than asked (see BenchmarkAddedDelay).
package impair
