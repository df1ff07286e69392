package telemetry

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzServerOf checks that the server attributes derived from an endpoint
// never hold its URL's query, fragment or password.
func FuzzServerOf(f *testing.F) {
	for _, s := range []string{
		"my-endpoint", "https://u:pw@h.example.com:8443/score?key=abc&sig=def#frag",
		"http://127.0.0.1:9000", "http://[::1]/v1", "http://%zz", "grpcs://x/y?token=zzzzzz",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ep string) {
		s := serverOf(ep)
		if !strings.Contains(ep, "://") {
			if s.endpoint != ep || s.address != "" {
				t.Fatalf("a name stays as it is: %+v", s)
			}
			return
		}
		u, err := url.Parse(ep)
		if err != nil || u.Host == "" {
			return
		}
		pw, _ := u.User.Password()
		visible := u.Scheme + "://" + u.Host + u.EscapedPath()
		for _, secret := range []string{u.RawQuery, u.Fragment, pw} {
			if len(secret) < 4 || strings.Contains(visible, secret) {
				continue
			}
			if strings.Contains(s.endpoint, secret) || strings.Contains(s.address, secret) {
				t.Fatalf("serverOf(%q) = %+v holds %q", ep, s, secret)
			}
		}
	})
}

// FuzzParseOTLPEndpoint checks that parsing never panics, accepts only
// what it can use, and never quotes a URL's query in its errors.
func FuzzParseOTLPEndpoint(f *testing.F) {
	for _, s := range []string{"localhost:4318", "http://127.0.0.1:4318", "https://otlp.example.com/base/",
		"", "collector", "grpc://x:4317", "https://h?api-key=secret123"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ep string) {
		host, _, _, err := parseOTLPEndpoint(ep)
		if err != nil {
			if u, perr := url.Parse(ep); perr == nil && len(u.RawQuery) >= 4 && strings.Contains(err.Error(), u.RawQuery) {
				t.Fatalf("error %q quotes the query", err)
			}
			return
		}
		if host == "" {
			t.Fatalf("%q accepted without a host", ep)
		}
	})
}

// FuzzPathValue checks that a logged request path never holds the query,
// the fragment or the password of the reference it was given.
func FuzzPathValue(f *testing.F) {
	for _, s := range []string{"/v1/x", "/cb?code=abcdefgh&state=s", "//me:pw123456@host/x#frag", "v1/p%zz?token=abcdefgh",
		"me:pw123456@host/x", "https://u:pw123456@h.example/p?sig=abcdefgh"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		out := pathValue(p)
		u, err := url.Parse(p)
		if err != nil {
			if out != unparsable && out != "" {
				t.Fatalf("pathValue(%q) = %q, want %q", p, out, unparsable)
			}
			return
		}
		pw, _ := u.User.Password()
		visible := u.Host + u.EscapedPath() + u.Path
		for _, secret := range []string{u.RawQuery, u.Fragment, pw, u.Opaque} {
			if len(secret) < 4 || strings.Contains(visible, secret) {
				continue
			}
			if strings.Contains(out, secret) {
				t.Fatalf("pathValue(%q) = %q holds %q", p, out, secret)
			}
		}
	})
}
