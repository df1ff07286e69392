package main

import (
	"net"
	"net/url"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// plainHTTP reports whether u is a plain-http URL.
func plainHTTP(u string) bool {
	pu, err := url.Parse(u)
	return err == nil && pu.Scheme == "http"
}

// inClear is the refusal of a credential (what) that would go over plain
// http to another host than this machine.
func inClear(t *bench.Target, what string) error {
	host := serverURL(t)
	if pu, err := url.Parse(host); err == nil {
		host = pu.Host
	}
	return errcodes.Errorf(errcodes.InvalidParam, "%s: refusing to send %s over plain http to %s, which is not this machine; use https", t.Provider, what, host)
}

// loopbackHTTP reports whether u is a plain-http URL on this machine
// (127.0.0.0/8, ::1 or localhost): a local emulator or server, which
// credentials may reach without TLS.
func loopbackHTTP(u string) bool {
	pu, err := url.Parse(u)
	return err == nil && pu.Scheme == "http" && loopbackHost(pu.Hostname())
}

// loopbackAddr reports whether a host:port address is on this machine.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && loopbackHost(host)
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
