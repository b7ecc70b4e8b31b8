package docsection

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var section = Section{Begin: "<!-- x:begin -->", End: "<!-- x:end -->", Heading: "## Figures"}

func TestReplaceAddsThenReplaces(t *testing.T) {
	added, err := section.Replace("# Page\n\ntext\n", "FIGURES\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "# Page\n\ntext\n\n## Figures\n\n<!-- x:begin -->\nFIGURES\n<!-- x:end -->\n"; added != want {
		t.Errorf("added:\n%s\nwant:\n%s", added, want)
	}
	replaced, err := section.Replace(added+"\nafter\n", "NEW\n")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(replaced, "FIGURES") || !strings.Contains(replaced, "<!-- x:begin -->\nNEW\n<!-- x:end -->") ||
		!strings.HasSuffix(replaced, "\nafter\n") || strings.Count(replaced, "## Figures") != 1 {
		t.Errorf("replaced:\n%s", replaced)
	}
}

func TestReplaceRefusesBrokenMarkers(t *testing.T) {
	for name, bad := range map[string]string{
		"only begin": "x\n<!-- x:begin -->\n",
		"only end":   "x\n<!-- x:end -->\n",
		"reversed":   "<!-- x:end -->\n<!-- x:begin -->\n",
	} {
		if _, err := section.Replace(bad, "NEW\n"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	noHeading := Section{Begin: section.Begin, End: section.End}
	if _, err := noHeading.Replace("# Page\n", "NEW\n"); err == nil || !strings.Contains(err.Error(), "no ") {
		t.Errorf("a page without the section, no heading to add it under: %v", err)
	}
}

func TestWriteFileNamesThePage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "page.md")
	if err := os.WriteFile(path, []byte("<!-- x:end -->\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := section.WriteFile(path, "NEW\n"); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("want an error naming %s, got %v", path, err)
	}
	if err := section.WriteFile(filepath.Join(t.TempDir(), "missing.md"), "NEW\n"); err == nil {
		t.Error("a missing page was accepted")
	}
}
