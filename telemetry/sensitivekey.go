package telemetry

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cloudinfer/cloudinfer/hooks"
)

// Credential names. A key is split into words (keyWords: "X-Api-Key",
// "x_api_key", "xApiKey" and "XApiKey" are the words x, api, key), and the
// words are compared whole, so that "admin_token" is not taken for a count
// of "min" tokens, nor "secretary" for a secret.
var (
	// exactKeys are names that are credentials as they stand, compared
	// with their words run together: every credential header cloudinfer
	// knows (hooks.SensitiveHeaders), and a few short names of secrets.
	exactKeys = func() []string {
		ks := []string{"sig", "auth", "bearer", "jwt", "pwd", "passwd", "basicauth", "proxyauth"}
		for _, h := range hooks.SensitiveHeaders {
			ks = append(ks, strings.Join(keyWords(h, nil), ""))
		}
		return ks
	}()
	// credentialWords make a name a credential wherever they stand in it
	// ("client_secret", "secretAccessKey", "x-goog-api-key", "db_password",
	// "Set-Cookie"), as a whole word, its plural, two words run together
	// ("api_key", "apiKey", "private-key"), or at the end of a word
	// ("dbpassword", "xapikey"); unless the words that follow only name
	// or describe the secret (harmlessTails: "secret_name", "apiKeyId",
	// "cookies_enabled", "authorization_endpoint").
	credentialWords = []string{"secret", "password", "passwd", "passphrase", "apikey", "credential", "signature",
		"authorization", "privatekey", "cookie"}
	// credentialTails, run together after a credential word in one word,
	// keep it a credential ("secretkey", "passwordvalue"); any other
	// continuation makes another word ("secretary", "passwordless").
	credentialTails = map[string]bool{"key": true, "keys": true, "token": true, "tokens": true, "value": true,
		"accesskey": true}
	// harmlessTails are the words (run together) that, after a credential
	// word, make a name that only names or describes a credential.
	harmlessTails = map[string]bool{
		"name": true, "names": true, "type": true, "id": true, "ids": true, "source": true, "file": true,
		"path": true, "process": true, "provider": true, "version": true, "ref": true, "arn": true,
		"expiry": true, "expiration": true, "expiresat": true, "expiresin": true, "ttl": true, "length": true,
		"len": true, "count": true, "method": true, "algorithm": true, "enabled": true, "disabled": true,
		"required": true, "endpoint": true, "url": true, "uri": true, "policy": true, "format": true,
	}
	// credentialSuffixes make a name whose last word ends with them a
	// credential, for run-together spellings ("storageaccountkey").
	credentialSuffixes = []string{"accesskey", "accountkey", "subscriptionkey", "signingkey", "masterkey",
		"sharedkey", "encryptionkey", "hmackey"}
	// countWords are the words that, right before "token" or "tokens",
	// make a name a count or a position of tokens rather than a credential
	// ("max_tokens", "time_to_first_token", "itl-token", "eos_token",
	// "max_new_tokens"); run together before "token", a run of them does
	// too ("maxnewtokens"). Any other word before "token" ("access_token",
	// "admin_token", "X-Auth-Token") makes a credential.
	countWords = []string{"max", "min", "input", "output", "prompt", "completion", "completions", "total",
		"num", "first", "last", "next", "new", "per", "itl", "eos", "bos", "pad", "unk", "sep", "cls", "mask",
		"special", "stop", "cached", "generated", "reasoning", "avg", "mean", "image", "thinking", "audio",
		"text", "prediction", "accepted", "rejected", "candidates", "thoughts", "budget", "remaining", "limit",
		"reset"}
	// harmlessKeyWords are the words that, right before a final "key" or
	// "keys", name a key that is not a credential: a cache, partition,
	// sort or routing key, a database's foreign key, a map's key, a public
	// key. Any other word ("primaryKey", "openai_key", "ssh_key",
	// "x-functions-key"), or none ("key"), makes a credential.
	harmlessKeyWords = map[string]bool{
		"cache": true, "partition": true, "sort": true, "range": true, "idempotency": true, "routing": true,
		"ordering": true, "dedup": true, "dedupe": true, "foreign": true, "lookup": true, "map": true, "hash": true,
		"group": true, "shard": true, "row": true, "sequence": true, "object": true, "public": true,
	}
)

// SensitiveKey reports whether a log attribute or span attribute named k
// holds a credential by its name alone. The name is split into words, lower
// case, at '_', '-', '.' and any other punctuation, at camelCase boundaries
// ("APIKey" is api, key) and before digits; a trailing number ("key1") and
// a trailing "value" ("token_value") are left out. Then k is a
// credential when:
//   - it is a credential header's name (hooks.SensitiveHeaders) or sig,
//     auth, bearer, jwt, pwd, passwd;
//   - it holds a credential word — secret, password, passwd, passphrase,
//     api key, credential, signature, authorization, private key, cookie —
//     whole, in the plural or ending a word ("dbpassword"), unless the
//     words after it only name or describe it ("secret_name", "apiKeyId",
//     "cookies_enabled"); "secretary" and "passwordless" are not;
//   - its last word is "token" or "tokens" ("access_token", "authToken",
//     "X-Amz-Security-Token", "admin_token"), unless the word before it
//     counts or places tokens (max, input, output, first, new, eos, …:
//     "max_new_tokens", "time_to_first_token"); "tokens" alone is a
//     count, "token" alone a credential, and names that end in another
//     word ("token_count", "tokens_per_second", "pad_token_id") are not;
//   - its last word is "key" or "keys" ("openai_key", "primaryKey",
//     "x-functions-key", "key"), unless the word before it names a harmless
//     key (cache, partition, sort, range, idempotency, routing, ordering,
//     dedup, foreign, lookup, map, hash, group, shard, row, sequence,
//     object, public); "monkey", "keyboard", "key_count" and "keyspace"
//     are not.
func SensitiveKey(k string) bool {
	var buf [16]string
	ws := keyWords(k, buf[:0])
	for len(ws) > 0 && isDigits(ws[len(ws)-1]) {
		ws = ws[:len(ws)-1]
	}
	if len(ws) > 1 && (ws[len(ws)-1] == "value" || ws[len(ws)-1] == "values") {
		ws = ws[:len(ws)-1]
	}
	if len(ws) == 0 {
		return false
	}
	for _, e := range exactKeys {
		if joinedEquals(ws, e) {
			return true
		}
	}
	for i := range ws {
		for j := i; j < len(ws) && j < i+2; j++ {
			if isCredentialWord(ws[i:j+1]) && !isHarmlessTail(ws[j+1:]) {
				return true
			}
		}
	}
	last := ws[len(ws)-1]
	for _, s := range credentialSuffixes {
		if strings.HasSuffix(last, s) {
			return true
		}
	}
	switch last {
	case "token", "tokens":
		if len(ws) == 1 {
			return last == "token"
		}
		// The word before, past numbers ("per_1k_tokens").
		i := len(ws) - 2
		for i > 0 && isNumber(ws[i]) {
			i--
		}
		return !isCount(ws[i]) && !isNumber(ws[i])
	case "key", "keys":
		return len(ws) == 1 || !harmlessKeyWords[ws[len(ws)-2]]
	}
	if head, ok := strings.CutSuffix(last, "tokens"); ok && head != "" {
		return !isCount(head)
	}
	if head, ok := strings.CutSuffix(last, "token"); ok && head != "" {
		return !isCount(head)
	}
	return false
}

// isCredentialWord reports whether ws, one word or two, is a credential
// word: whole or in the plural, two words run together ("api", "key"), or,
// for one word, ending it ("dbpassword") or followed in it by a
// credentialTail ("secretkey").
func isCredentialWord(ws []string) bool {
	for _, c := range credentialWords {
		if len(ws) == 2 {
			if rest, ok := strings.CutPrefix(c, ws[0]); ok && rest != "" && (ws[1] == rest || ws[1] == rest+"s") {
				return true
			}
			continue
		}
		w := ws[0]
		if strings.HasSuffix(w, c) || strings.HasSuffix(w, c+"s") {
			return true
		}
		if tail, ok := strings.CutPrefix(w, c); ok && credentialTails[tail] {
			return true
		}
	}
	return false
}

// isHarmlessTail reports whether the words after a credential word only
// name or describe the credential.
func isHarmlessTail(ws []string) bool {
	switch len(ws) {
	case 0:
		return false
	case 1:
		return harmlessTails[ws[0]]
	}
	return harmlessTails[strings.Join(ws, "")]
}

// isCount reports whether w is a count word, or several run together
// ("maxnew"), so that w before "token" names a count of tokens.
func isCount(w string) bool {
	if w == "" || len(w) > 64 {
		return false
	}
	var ok [65]bool // ok[i]: w[:i] is a run of count words
	ok[0] = true
	for i := 1; i <= len(w); i++ {
		for _, c := range countWords {
			if len(c) <= i && ok[i-len(c)] && w[i-len(c):i] == c {
				ok[i] = true
				break
			}
		}
	}
	return ok[len(w)]
}

// joinedEquals reports whether the words ws, run together, are s.
func joinedEquals(ws []string, s string) bool {
	for _, w := range ws {
		rest, ok := strings.CutPrefix(s, w)
		if !ok {
			return false
		}
		s = rest
	}
	return s == ""
}

// isNumber reports whether w is a number, maybe with a unit letter:
// "100", "1k", "4m".
func isNumber(w string) bool {
	if n := len(w); n > 1 && (w[n-1] == 'k' || w[n-1] == 'm' || w[n-1] == 'b') {
		w = w[:n-1]
	}
	return isDigits(w)
}

func isDigits(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < '0' || w[i] > '9' {
			return false
		}
	}
	return w != ""
}

// keyWords appends to buf the words of k, lower case: k is cut at every
// character that is neither a letter nor a digit, before a digit that
// follows a letter ("key1": key, 1), before an upper-case letter that
// follows a lower-case one or a digit ("apiKey", "s3Key"), and before the
// last of a run of upper-case letters when a lower-case one follows
// ("APIKey": api, key). A lower-case letter after a digit stays with it
// ("1k").
func keyWords(k string, buf []string) []string {
	lk := strings.ToLower(k)
	sameOffsets := len(lk) == len(k)
	add := func(from, to int) {
		if from >= to {
			return
		}
		if sameOffsets {
			buf = append(buf, lk[from:to])
		} else {
			buf = append(buf, strings.ToLower(k[from:to]))
		}
	}
	const (
		other = iota
		lower
		upper
		digit
	)
	class := func(r rune) int {
		switch {
		case r < utf8.RuneSelf:
			switch {
			case 'a' <= r && r <= 'z':
				return lower
			case 'A' <= r && r <= 'Z':
				return upper
			case '0' <= r && r <= '9':
				return digit
			}
			return other
		case unicode.IsUpper(r):
			return upper
		case unicode.IsLetter(r):
			return lower
		case unicode.IsDigit(r):
			return digit
		}
		return other
	}
	start, prev, prevAt := -1, other, 0 // start < 0: between words
	for i, r := range k {
		c := class(r)
		switch {
		case c == other:
			if start >= 0 {
				add(start, i)
			}
			start = -1
		case start < 0:
			start = i
		case c == digit && prev != digit, c == upper && (prev == lower || prev == digit):
			add(start, i)
			start = i
		case c == lower && prev == upper && prevAt > start:
			// "APIKey": the last upper-case letter begins the next word.
			add(start, prevAt)
			start = prevAt
		}
		prev, prevAt = c, i
	}
	if start >= 0 {
		add(start, len(k))
	}
	return buf
}
