package httpadapter

import (
	"net"
	"net/url"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// PlainHTTP says where a credential may go over plain http.
type PlainHTTP int

// Plain-http policies.
const (
	// PlainHTTPNever refuses plain http to every host. The refusal points
	// at the adapter's AllowInsecureHTTP option.
	PlainHTTPNever PlainHTTP = iota
	// PlainHTTPLoopback permits plain http to this machine only
	// (IsLoopbackHost), where the credential crosses no network: the CLI's
	// policy, whose users set no adapter option.
	PlainHTTPLoopback
	// PlainHTTPAnywhere permits plain http to any host: an adapter's
	// AllowInsecureHTTP, for a local emulator.
	PlainHTTPAnywhere
)

// Insecure returns the policy of an adapter's AllowInsecureHTTP option:
// PlainHTTPAnywhere when it is set, else PlainHTTPNever.
func Insecure(allow bool) PlainHTTP {
	if allow {
		return PlainHTTPAnywhere
	}
	return PlainHTTPNever
}

// CheckPlainHTTP is the one rule for credentials over plain http. It
// returns nil when credential may be sent to u: u is not a plain-http URL,
// credential is "" (nothing secret is sent), or policy permits it.
// Otherwise it returns an ERR_INVALID_PARAM error of provider that names
// the credential (credential is its name in the message, "the API key",
// never its value) and the host, and says what to do.
func CheckPlainHTTP(provider string, u *url.URL, credential string, policy PlainHTTP) error {
	if u == nil || u.Scheme != "http" || credential == "" {
		return nil
	}
	var e *errcodes.Error
	switch {
	case policy == PlainHTTPAnywhere:
		return nil
	case policy == PlainHTTPLoopback && IsLoopbackHost(u.Hostname()):
		return nil
	case policy == PlainHTTPLoopback:
		e = errcodes.Errorf(errcodes.InvalidParam, "refusing to send %s over plain http to %s, which is not this machine; use https", credential, u.Host)
	default:
		e = errcodes.Errorf(errcodes.InvalidParam, "refusing to send %s over plain http to %s; use https, or set AllowInsecureHTTP for a local emulator", credential, u.Host)
	}
	e.Provider = provider
	return e
}

// IsLoopbackHost reports whether a host name or address is this machine:
// localhost, or an address in 127.0.0.0/8 or ::1.
func IsLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
