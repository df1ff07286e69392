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

// FuzzRedactString checks that a credential placed after an authorization
// scheme, in a URL's query, in a key=value or "key: value" pair, in a
// header line, in a JSON member (escaped or not, or in an array) or in a
// Python dict member is hidden whatever text surrounds it.
func FuzzRedactString(f *testing.F) {
	f.Add("calling", "0123456789abcdef", "now")
	f.Add("", "SeNtInEl42424242", "")
	f.Add("PAI-EAS", "c2lnbmF0dXJl", ", then")
	f.Fuzz(func(t *testing.T, prefix, tok, suffix string) {
		if len(tok) < 8 || strings.Trim(tok, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != "" {
			return
		}
		if strings.Contains(prefix, tok) || strings.Contains(suffix, tok) {
			return
		}
		for _, form := range []string{
			prefix + " Bearer " + tok + " " + suffix,
			prefix + " EAS " + tok + " " + suffix,
			prefix + " https://h.example/p?sig=" + tok + " " + suffix,
			prefix + " api_key=" + tok + " " + suffix,
			prefix + " x-amz-security-token=" + tok + "&" + suffix,
			prefix + " client_secret=" + tok + "&" + suffix,
			prefix + " accessToken=" + tok + " " + suffix,
			prefix + "\nAuthorization: " + tok + "\n" + suffix,
			prefix + "\nX-Api-Key: " + tok + "\r\n" + suffix,
			prefix + ` {"api_key": "` + tok + `"} ` + suffix,
			prefix + " /cb?code=" + tok + "&" + suffix,
			prefix + "\nX-Auth-Token: " + tok + "\n" + suffix,
			prefix + " api_key: " + tok + " " + suffix,
			prefix + " aws_session_token = " + tok + " " + suffix,
			prefix + ` {\"api_key\":\"` + tok + `\"} ` + suffix,
			prefix + ` {'api-key': '` + tok + `'} ` + suffix,
			prefix + ` {"api_keys": ["x", "` + tok + `"]} ` + suffix,
			prefix + ` {"primaryKey":"` + tok + `"} ` + suffix,
		} {
			if out := redactString(form); strings.Contains(out, tok) {
				t.Fatalf("redactString(%q) = %q", masked(form, tok), masked(out, tok))
			}
		}
	})
}
