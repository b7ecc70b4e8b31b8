package message

import (
	"errors"
	"testing"
)

func TestSentence(t *testing.T) {
	for in, want := range map[string]string{
		"":                           "",
		"  ":                         "",
		"registry down":              "Registry down.",
		"Registry down.":             "Registry down.",
		" über alles ":               "Über alles.",
		"listen tcp: address in use": "Listen tcp: address in use.",
	} {
		if got := Sentence(in); got != want {
			t.Errorf("Sentence(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestError(t *testing.T) {
	if got := Error(errors.New("dial tcp: refused")); got != "Dial tcp: refused." {
		t.Errorf("Error = %q", got)
	}
	if got := Error(nil); got != "" {
		t.Errorf("Error(nil) = %q", got)
	}
}
