package httpadapter

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzErrorText(f *testing.F) {
	for _, s := range []string{
		"Authorization Failed",
		"<html><head><title>502 Bad Gateway</title></head></html>",
		"<!DOCTYPE html><html><body><h1>Service Unavailable</h1></body></html>",
		"<HTML><TITLE>\xff\xfeoops</TITLE></HTML>",
		"\xff\xfe\x00",
		"a     é",
	} {
		f.Add([]byte(s), "text/html")
		f.Add([]byte(s), "")
	}
	// The first 2 KiB end inside a rune, and the message is short.
	f.Add([]byte("a"+strings.Repeat(" ", 4*MaxErrorMessage-2)+"é and more"), "text/plain")
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		got := ErrorText(body, contentType)
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8: %q", got)
		}
		if len(got) > MaxErrorMessage+len("…") {
			t.Fatalf("message of %d bytes", len(got))
		}
	})
}
