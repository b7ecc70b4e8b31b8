// Package message makes the one-sentence messages Plinth writes in conditions, statuses and
// events from texts and errors: a capital first letter and one final full stop, whatever the
// text came with, so that messages from Plinth and from the libraries it calls read alike.
package message

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Sentence makes s one sentence: surrounding space trimmed, the first letter upper-case and a
// final full stop. An empty text stays empty.
func Sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	first, size := utf8.DecodeRuneInString(s)
	s = string(unicode.ToUpper(first)) + s[size:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// Error is an error's text as one sentence.
func Error(err error) string {
	if err == nil {
		return ""
	}
	return Sentence(err.Error())
}
