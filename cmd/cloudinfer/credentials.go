package main

import (
	"net"
	"net/url"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
)

// inClear is the CLI's rule for a credential (what) that would go to the
// server at rawURL over plain http: refused unless the server is this
// machine (httpadapter.CheckPlainHTTP, PlainHTTPLoopback), with words a
// CLI user can act on. It returns nil when nothing secret is sent.
func inClear(t *bench.Target, rawURL, what string, sends bool) error {
	u, err := url.Parse(rawURL)
	if err != nil || !sends {
		return nil // an unparsable URL is the adapter's to refuse
	}
	return httpadapter.CheckPlainHTTP(t.Provider, u, what, httpadapter.PlainHTTPLoopback)
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

func loopbackHost(h string) bool { return httpadapter.IsLoopbackHost(h) }
