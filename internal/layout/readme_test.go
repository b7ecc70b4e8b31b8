package layout

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// binaries are the two commands, built as the Makefile's build target builds them: the tag
// changes what plinth-controller links (kustomize's plugin support), so go list must use it too.
var binaries = []struct {
	name, dir string
	tags      string
}{
	{name: "plinth-apiserver", dir: "./cmd/apiserver"},
	{name: "plinth-controller", dir: "./cmd/controller", tags: "kustomize_disable_go_plugin_support"},
}

// claims are what pkg/README.md may say of a package, by which binaries import it.
var claims = map[string][2]bool{
	"apiserver":  {true, false},
	"controller": {false, true},
	"both":       {true, true},
	"neither":    {false, false},
}

// claimOf is the claim that matches which binaries import a package.
func claimOf(imported [2]bool) string {
	for claim, want := range claims {
		if want == imported {
			return claim
		}
	}
	panic("unreachable")
}

// readmeRow is a table row naming a package: | `pkg/...` | claim | what it holds |
var readmeRow = regexp.MustCompile("^\\|\\s*`((?:pkg|internal)/[^`]+)`\\s*\\|\\s*([a-z]*)\\s*\\|")

// TestPackageREADME fails when pkg/README.md misses a package under pkg/ or internal/, lists
// one that does not exist, or says the wrong binaries import it.
func TestPackageREADME(t *testing.T) {
	root := moduleRoot(t)
	module := goList(t, root, "-m")[0]
	rel := func(importPath string) string { return strings.TrimPrefix(importPath, module+"/") }

	var imported [2]map[string]bool
	for i, b := range binaries {
		args := []string{"-deps"}
		if b.tags != "" {
			args = append(args, "-tags", b.tags)
		}
		imported[i] = map[string]bool{}
		for _, p := range goList(t, root, append(args, b.dir)...) {
			imported[i][rel(p)] = true
		}
	}
	packages := map[string]bool{}
	for _, p := range goList(t, root, "./pkg/...", "./internal/...") {
		packages[rel(p)] = true
	}

	said, errs := readREADME(t, filepath.Join(root, "pkg", "README.md"))
	for _, e := range errs {
		t.Error(e)
	}
	for _, pkg := range slices.Sorted(maps.Keys(packages)) {
		truth := claimOf([2]bool{imported[0][pkg], imported[1][pkg]})
		claim, listed := said[pkg]
		_, known := claims[claim]
		switch {
		case !listed:
			t.Errorf("%s is missing from pkg/README.md: add a line saying %q (%s)", pkg, truth, importers(truth))
		case !known:
			// readREADME has reported the claim it cannot read.
		case claim != truth:
			t.Errorf("%s: pkg/README.md says %q, but it is %q (%s)", pkg, claim, truth, importers(truth))
		}
	}
	for _, pkg := range slices.Sorted(maps.Keys(said)) {
		if !packages[pkg] {
			t.Errorf("pkg/README.md lists %s, which is not a package under pkg/ or internal/ (moved or removed?)", pkg)
		}
	}
}

// readREADME returns the claim pkg/README.md makes for each package it lists, and a message
// for each row it cannot read or package it lists twice.
func readREADME(t *testing.T, path string) (map[string]string, []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	said := map[string]string{}
	var errs []string
	scanner := bufio.NewScanner(f)
	for n := 1; scanner.Scan(); n++ {
		line := scanner.Text()
		m := readmeRow.FindStringSubmatch(line)
		if m == nil {
			if strings.HasPrefix(line, "| `pkg/") || strings.HasPrefix(line, "| `internal/") {
				errs = append(errs, fmt.Sprintf("pkg/README.md:%d: cannot read the row; want | `path` | claim | what it holds |", n))
			}
			continue
		}
		pkg, claim := m[1], m[2]
		if _, ok := claims[claim]; !ok {
			errs = append(errs, fmt.Sprintf("pkg/README.md:%d: %s is claimed %q; say apiserver, controller, both or neither", n, pkg, claim))
		}
		if _, dup := said[pkg]; dup {
			errs = append(errs, fmt.Sprintf("pkg/README.md:%d: %s is listed twice", n, pkg))
		}
		said[pkg] = claim
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	return said, errs
}

// importers spells a claim out in binaries.
func importers(claim string) string {
	switch claim {
	case "both":
		return "plinth-apiserver and plinth-controller import it"
	case "neither":
		return "neither binary imports it"
	case "apiserver":
		return "only plinth-apiserver imports it"
	default:
		return "only plinth-controller imports it"
	}
}
