package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

const regressSecret = "SECRET123"

// attrText returns RedactAttr(a) as the text handler prints it, or the
// panic's message if redaction panicked.
func attrText(a slog.Attr) (out string, panicked string) {
	defer func() {
		if r := recover(); r != nil {
			panicked = fmt.Sprint(r)
		}
	}()
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey {
			return slog.Attr{}
		}
		return a
	}}))
	l.LogAttrs(context.Background(), slog.LevelInfo, "", RedactAttr(nil, a))
	return strings.TrimSpace(buf.String()), ""
}

// anyText returns what RedactAttr makes of x as a string value (JSON for
// composites), failing the test if it panicked.
func anyText(t *testing.T, x any) string {
	t.Helper()
	var out slog.Attr
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("RedactAttr(%T) panicked", x)
			}
		}()
		out = RedactAttr(nil, slog.Any("v", x))
	}()
	return out.Value.String()
}

type derefStringer struct{ name string }

func (d *derefStringer) String() string { return "name=" + d.name }

type derefError struct{ msg string }

func (e *derefError) Error() string { return e.msg }

type valueStringer struct{ n int }

func (v valueStringer) String() string { return fmt.Sprint("n=", v.n) }

type panicStringer struct{}

func (panicStringer) String() string { panic("api_key=" + regressSecret) }

type panicError struct{}

func (panicError) Error() string { panic("token=" + regressSecret) }

type panicJSON struct{ A int }

func (panicJSON) MarshalJSON() ([]byte, error) { panic("password=" + regressSecret) }

// TestRedactNilAndPanickingValues (defect 1): a typed-nil Stringer or error
// prints "<nil>" as plain slog does, and a String, Error or MarshalJSON
// method that panics is replaced by a placeholder, instead of crashing the
// logger.
func TestRedactNilAndPanickingValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   any
		want string
	}{
		{"nil pointer Stringer", (*derefStringer)(nil), "v=<nil>"},
		{"nil pointer error", (*derefError)(nil), "v=<nil>"},
		{"nil pointer to value-receiver Stringer", (*valueStringer)(nil), "v=<nil>"},
		{"nil *errcodes.Error", (*errcodes.Error)(nil), "v=<nil>"},
		{"wrapped nil *errcodes.Error", fmt.Errorf("call: %w", (*errcodes.Error)(nil)), ""},
		{"panicking String", panicStringer{}, `v="<telemetry.panicStringer: unprintable>"`},
		{"panicking Error", panicError{}, `v="<telemetry.panicError: unprintable>"`},
		{"panicking MarshalJSON", panicJSON{}, `v="<telemetry.panicJSON: unprintable>"`},
		{"struct holding a panicking MarshalJSON", struct{ P panicJSON }{}, ""},
		{"non-nil Stringer", &derefStringer{name: "x"}, `v="name=x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, p := attrText(slog.Any("v", tc.in))
			require.Empty(t, masked(p, regressSecret), "RedactAttr panicked")
			if tc.want != "" {
				assert.Equal(t, tc.want, masked(out, regressSecret))
			}
			assert.NotContains(t, masked(out, regressSecret), "<LEAKED")
		})
	}

	// Through RedactHandler, as an attribute and in WithAttrs.
	var buf bytes.Buffer
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("RedactHandler panicked")
			}
		}()
		l := slog.New(RedactHandler(slog.NewJSONHandler(&buf, nil))).With("w", (*derefError)(nil))
		l.Info("m", "s", (*derefStringer)(nil), "e", (*derefError)(nil))
	}()
	var m map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &m))
	assert.Equal(t, "<nil>", m["s"])
	assert.Equal(t, "<nil>", m["e"])
	assert.Equal(t, "<nil>", m["w"])
}

// TestRedactCompositeJSON (defect 2): composite values are redacted as a
// tree, not as their JSON text: '&' is not escaped away from the
// key=value patterns, a string field holding JSON is redacted as JSON, and
// the output keeps field order and unescaped HTML characters.
func TestRedactCompositeJSON(t *testing.T) {
	type call struct {
		URL   string
		Query []string
		Body  string
		N     int
		Rate  float64
		Note  string
	}
	for _, tc := range []struct {
		name string
		in   any
		want string
	}{
		{"query in a struct field", struct{ URL string }{"/p?a=1&sig=" + regressSecret},
			`{"URL":"/p?a=1&sig=[REDACTED]"}`},
		{"key after & in a slice", []string{"a=1&key=" + regressSecret, "x"},
			`["a=1&key=[REDACTED]","x"]`},
		{"code after & in a map", map[string]any{"cb": "/cb?state=s&code=" + regressSecret},
			`{"cb":"/cb?state=s&code=[REDACTED]"}`},
		{"JSON in a string field", struct{ Body string }{`{"api_key":"` + regressSecret + `","model":"m"}`},
			`{"Body":"{\"api_key\":\"[REDACTED]\",\"model\":\"m\"}"}`},
		{"order, numbers and HTML characters kept", call{URL: "https://h/x?a=1&b=<2>", Query: []string{"token=" + regressSecret},
			N: 3, Rate: 0.5, Note: "a & b"},
			`{"URL":"https://h/x?a=1&b=<2>","Query":["token=[REDACTED]"],"Body":"","N":3,"Rate":0.5,"Note":"a & b"}`},
		{"sensitive member holding an object", map[string]any{"credentials": map[string]string{"user": "u", "x": regressSecret}, "n": 1},
			`{"credentials":"[REDACTED]","n":1}`},
		{"Azure ML keys", struct {
			PrimaryKey   string `json:"primaryKey"`
			SecondaryKey string `json:"secondaryKey"`
		}{regressSecret, regressSecret}, `{"primaryKey":"[REDACTED]","secondaryKey":"[REDACTED]"}`},
		// encoding/json writes bytes as base64, which redaction cannot read.
		{"bytes in a struct field", struct{ Body []byte }{[]byte(`{"api_key":"` + regressSecret + `"}`)},
			`{"Body":"{\"api_key\":\"[REDACTED]\"}"}`},
		{"bytes in a map of any", map[string]any{"body": []byte("token=" + regressSecret), "n": 1},
			`{"body":"token=[REDACTED]","n":1}`},
		{"bytes in a slice of structs", []struct{ B []byte }{{[]byte("a=1&sig=" + regressSecret)}},
			`[{"B":"a=1&sig=[REDACTED]"}]`},
		{"bytes behind a text marshaler kept", struct{ IP net.IP }{net.IPv4(10, 0, 0, 1)},
			`{"IP":"10.0.0.1"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := anyText(t, tc.in)
			assert.Equal(t, tc.want, masked(got, regressSecret))
		})
	}
}

type nodeWithSecret struct {
	Next  *nodeWithSecret
	Token string
}

// TestRedactCompositeNotJSON (defect 3): a value json cannot encode is
// walked, never printed with %+v: credential-named fields are hidden,
// strings are redacted, funcs and channels are shown by their type.
func TestRedactCompositeNotJSON(t *testing.T) {
	cyc := &nodeWithSecret{Token: regressSecret}
	cyc.Next = cyc
	for _, tc := range []struct {
		name string
		in   any
		want string // "" to check the secret only
	}{
		{"func field", struct {
			APIKey string
			F      func()
		}{regressSecret, func() {}}, `{"APIKey":"[REDACTED]","F":"<func()>"}`},
		{"chan field", &struct {
			Password string
			C        chan int
			Note     string
		}{regressSecret, make(chan int), "sig=" + regressSecret}, `{"Password":"[REDACTED]","C":"<chan int>","Note":"sig=[REDACTED]"}`},
		{"NaN", struct {
			Secret string
			X      float64
		}{regressSecret, math.NaN()}, `{"Secret":"[REDACTED]","X":"NaN"}`},
		{"float map keys", map[float64]string{1.5: "api_key=" + regressSecret}, `{"1.5":"api_key=[REDACTED]"}`},
		{"struct map keys", map[struct{ A string }]string{{"k"}: "token=" + regressSecret}, ``},
		{"cycle", cyc, ``},
		{"a bare chan", make(chan int), `<chan int>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := masked(anyText(t, tc.in), regressSecret)
			if tc.want != "" {
				assert.Equal(t, tc.want, got)
			}
			assert.NotContains(t, got, "<LEAKED")
			assert.NotContains(t, got, "0x", "no addresses")
		})
	}
}

// TestSensitiveKeyTokenWords (defect 4): "token" is compared as a whole
// word: a count word right before it makes a count ("max_new_token"), any
// other word ("admin", "developer") a credential.
func TestSensitiveKeyTokenWords(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{"admin_token", true}, {"adminToken", true}, {"X-Admin-Token", true}, {"developer_token", true},
		{"super_token", true}, {"helper_token", true}, {"sysadmin_token", true}, {"admintoken", true},
		{"X-Auth-Token", true}, {"Private-Token", true}, {"aws_session_token", true}, {"oauth2Token", true},
		{"api_tokens", true}, {"token_value", true}, {"tokenValue", true}, {"token", true},
		{"new_token", false}, {"max_new_token", false}, {"image_token", false}, {"thinking_token", false},
		{"max_new_tokens", false}, {"maxNewTokens", false}, {"maxtokens", false}, {"tokens", false},
		{"output_tokens", false}, {"token_count", false}, {"max_tokens", false}, {"time_to_first_token", false},
		{"itl-token", false}, {"gen_ai.usage.output_tokens", false}, {"max_completion_tokens", false},
		{"tokens_per_second", false}, {"pad_token_id", false}, {"cache_read_input_tokens", false},
		{"budget_tokens", false}, {"x-ratelimit-remaining-tokens", false}, {"promptTokenCount", false},
		{"tokenizer", false}, {"token_type", false}, {"prefill_ms_per_1k_tokens", false}, {"tokens_1k", false},
	} {
		assert.Equal(t, tc.want, SensitiveKey(tc.key), "SensitiveKey(%q)", tc.key)
	}
}

// TestSensitiveKeyKeyWords (defect 6): a name whose last word is "key" or
// "keys" is a credential unless the word before it names a harmless key;
// "key" inside a longer word is not a credential.
func TestSensitiveKeyKeyWords(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{"openaiKey", true}, {"openai_key", true}, {"OPENAI_KEY", true}, {"primaryKey", true},
		{"secondaryKey", true}, {"client_key", true}, {"x-functions-key", true}, {"ssh_key", true},
		{"license_key", true}, {"x-ms-encryption-key", true}, {"key", true}, {"KEY", true}, {"key1", true},
		{"api_keys", true}, {"secret_key", true}, {"s3Key", true}, {"s3_key", true}, {"private_key_pem", true}, {"APIKey", true},
		{"cache_key", false}, {"partition_key", false}, {"sort_key", false}, {"idempotency_key", false},
		{"routing_key", false}, {"dedup_key", false}, {"foreign_key", false}, {"hash_key", false},
		{"object_key", false}, {"public_key", false}, {"private_key_id", false}, {"monkey", false}, {"keyboard", false}, {"key_count", false},
		{"keyspace", false}, {"key_id", false}, {"apiKeyId", false}, {"aws_access_key_id", false},
	} {
		assert.Equal(t, tc.want, SensitiveKey(tc.key), "SensitiveKey(%q)", tc.key)
	}
}

// TestSensitiveKeyWholeWords: credential words are whole words (or their
// plurals, or run together with a credential word), so that ordinary names
// that contain them are not hidden.
func TestSensitiveKeyWholeWords(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{"secretary", false}, {"passwordless", false}, {"cookies_enabled", false},
		{"authorization_endpoint", false}, {"secret_name", false}, {"credential_source", false},
		{"secrets", true}, {"secret", true}, {"dbPassword", true}, {"DB_PASSWORD", true}, {"dbpassword", true},
		{"clientsecret", true}, {"client-secret", true}, {"passwords", true}, {"cookies", true}, {"Set-Cookie", true},
		{"x_api_key", true}, {"apikey", true}, {"secretkey", true},
	} {
		assert.Equal(t, tc.want, SensitiveKey(tc.key), "SensitiveKey(%q)", tc.key)
	}
}

// TestRedactStringHeaderLines (defect 5): a header line whose name is a
// credential's (SensitiveKey) is hidden to the end of the line, quotes
// included; a line whose name is not stays.
func TestRedactStringHeaderLines(t *testing.T) {
	s := regressSecret
	for _, tc := range []struct{ in, want string }{
		{"X-Auth-Token: " + s, "X-Auth-Token: [REDACTED]"},
		{"Private-Token: " + s, "Private-Token: [REDACTED]"},
		{"x-ms-encryption-key: " + s, "x-ms-encryption-key: [REDACTED]"},
		{"GET / HTTP/1.1\r\nHost: h\r\nX-Functions-Key: " + s + "\r\nAccept: */*\r\n",
			"GET / HTTP/1.1\r\nHost: h\r\nX-Functions-Key: [REDACTED]\r\nAccept: */*\r\n"},
		{`Cookie: theme="dark"; session_id=` + s, "Cookie: [REDACTED]"},
		{`Set-Cookie: a="` + s + `"; Path=/`, "Set-Cookie: [REDACTED]"},
		{"  x-admin-token:" + s + " more", "  x-admin-token:[REDACTED]"},
		{"note: something went wrong", "note: something went wrong"},
		{"status: ok\nmodel: m", "status: ok\nmodel: m"},
		{"Authorization: missing for model x", "Authorization: [REDACTED]"},
	} {
		got := redactString(tc.in)
		assert.Equal(t, tc.want, masked(got, s), masked(tc.in, s))
	}
}

// TestRedactStringFreeForms (defect 7): escaped JSON, Python dict reprs,
// YAML-style "name: value", spaces around '=', and arrays of credentials.
func TestRedactStringFreeForms(t *testing.T) {
	s := regressSecret
	for _, tc := range []struct{ in, want string }{
		{`body: {\"api_key\":\"` + s + `\",\"model\":\"m\"}`, `body: {\"api_key\":\"[REDACTED]\",\"model\":\"m\"}`},
		{`"{\"password\": \"` + s + `\"}"`, `"{\"password\": \"[REDACTED]\"}"`},
		{`{'api-key': '` + s + `', 'model': 'm'}`, `{'api-key': '[REDACTED]', 'model': 'm'}`},
		{`headers={'Authorization': 'Token ` + s + `'}`, `headers={'Authorization': '[REDACTED]'}`},
		{"config loaded, api_key: " + s + " region: us", "config loaded, api_key: [REDACTED] region: us"},
		{"api_key: " + s, "api_key: [REDACTED]"},
		{"aws_session_token = " + s, "aws_session_token = [REDACTED]"},
		{"password =" + s + "; user=u", "password =[REDACTED]; user=u"},
		{`{"api_keys":["` + s + `1","` + s + `2"], "n": 1}`, `{"api_keys":"[REDACTED]", "n": 1}`},
		{`{"api_keys": [ "` + s + `" ]}`, `{"api_keys": "[REDACTED]"}`},
		{`{\"tokens\":[\"Hello\",\"world\"]}`, `{\"tokens\":[\"Hello\",\"world\"]}`}, // a count's name: not a credential
		{`{\"secrets\":[\"` + s + `\"]}`, `{\"secrets\":\"[REDACTED]\"}`},
		{"map[api_key:" + s + " model:m]", "map[api_key:[REDACTED] model:m]"},
		{"{APIKey:" + s + " N:1}", "{APIKey:[REDACTED] N:1}"},
		{"note: api_key=" + s, "note: api_key=[REDACTED]"},
		{"key= api_key: " + s, "key= api_key: [REDACTED]"},
		{`token= "api_key": "` + s + `"`, `token= [REDACTED]: "[REDACTED]"`},
		{"api_key: " + s + " :", "api_key: [REDACTED]"}, // a line "name: value"
		{"0 api_key: " + s + " :", "0 api_key: [REDACTED] :"},
		{"x api_key : " + s, "x api_key : [REDACTED]"},
		{"dial: token=" + s + ": timeout", "dial: token=[REDACTED] timeout"},
		{`{"primaryKey":"` + s + `","secondaryKey":"` + s + `"}`, `{"primaryKey":"[REDACTED]","secondaryKey":"[REDACTED]"}`},
		{"max_tokens: 64, output_tokens = 7", "max_tokens: 64, output_tokens = 7"},
		{`{"model": "m", "stream": true}`, `{"model": "m", "stream": true}`},
	} {
		got := redactString(tc.in)
		assert.Equal(t, tc.want, masked(got, s), masked(tc.in, s))
	}
}

// TestRedactStringBasicProse: "basic" in prose is not an authorization
// scheme unless a credential-looking token follows it.
func TestRedactStringBasicProse(t *testing.T) {
	s := "dXNlcjpwYXNzd29yZA=="
	for _, tc := range []struct{ in, want string }{
		{"the model supports basic completions", "the model supports basic completions"},
		{"Basic Authentication is disabled.", "Basic Authentication is disabled."},
		{"uses basic auth-based access", "uses basic auth-based access"},
		{"sent Basic " + s + " to it", "sent Basic [REDACTED] to it"},
		{"sent basic dXNlcjpwYXNz", "sent basic [REDACTED]"},
		{"basic user:" + regressSecret, "basic [REDACTED]"},
		{"Bearer abcdefghijkl", "Bearer [REDACTED]"},
	} {
		got := redactString(tc.in)
		assert.Equal(t, tc.want, masked(masked(got, s), regressSecret), tc.want)
	}
}

// TestRedactStringSchemeAfterSeparator: a pair whose value is an
// authorization scheme and its credential is hidden whole, with nothing
// of the hidden value's marker left behind.
func TestRedactStringSchemeAfterSeparator(t *testing.T) {
	s := regressSecret
	for _, tc := range []struct{ in, want string }{
		{"Authorization=Bearer " + s, "Authorization=[REDACTED]"},
		{"Authorization=Bearer " + s + " next=1", "Authorization=[REDACTED] next=1"},
		{"header Authorization=EAS c2lnbmF0dXJlLXZhbHVl, x=1", "header Authorization=[REDACTED], x=1"},
		{"auth: Token " + s + " next", "auth: [REDACTED]"},
	} {
		got := redactString(tc.in)
		assert.Equal(t, tc.want, masked(got, s), masked(tc.in, s))
	}
}
