// Package docsection replaces a generated section of a Markdown page: the text between a begin
// and an end marker (HTML comments), which a benchmark or a long test owns and writes again on
// each run, leaving the prose around it alone.
package docsection

import (
	"fmt"
	"os"
	"strings"
)

// Section names the markers of one generated section and the heading put above it when a page
// does not have it yet.
type Section struct {
	Begin, End string
	// Heading is added with the markers at the page's end when neither marker is there; empty:
	// a page without the markers is an error.
	Heading string
}

// Replace returns text with what stands between the markers replaced by content. Markers out of
// order, or only one of them, are an error rather than a guess at what to replace.
func (s Section) Replace(text, content string) (string, error) {
	begin, end := strings.Index(text, s.Begin), strings.Index(text, s.End)
	switch {
	case begin < 0 && end < 0 && s.Heading != "":
		return strings.TrimRight(text, "\n") + "\n\n" + s.Heading + "\n\n" + s.Begin + "\n" + content + s.End + "\n", nil
	case begin < 0 && end < 0:
		return "", fmt.Errorf("no %q … %q section", s.Begin, s.End)
	case begin < 0 || end < 0:
		return "", fmt.Errorf("only one of the markers %q and %q", s.Begin, s.End)
	case end < begin:
		return "", fmt.Errorf("%q comes before %q", s.End, s.Begin)
	}
	return text[:begin+len(s.Begin)] + "\n" + content + text[end:], nil
}

// WriteFile replaces the section in the page at path.
func (s Section) WriteFile(path, content string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	text, err := s.Replace(string(data), content)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, []byte(text), 0o644)
}
