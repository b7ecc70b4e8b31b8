package layout

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/plinth-dev/plinth/pkg/apiserver"
)

var (
	// mapGroup is a group's heading: ## `group/version`
	mapGroup = regexp.MustCompile("^##\\s+`([a-z0-9.-]+/[a-z0-9]+)`\\s*$")
	// mapRow is a kind's row: its first cell is the kind (the header row's is "kind").
	mapRow = regexp.MustCompile(`^\|\s*([A-Z][A-Za-z0-9]*)\s*\|`)
	// quoted is anything written as code.
	quoted = regexp.MustCompile("`([^`]+)`")
	// repoPath is code that names a file or directory of the repository.
	repoPath = regexp.MustCompile(`^(pkg|cmd|internal|test|docs|artifacts|hack)/[A-Za-z0-9_./-]*$`)
	// testName is code that names a Go test.
	testName = regexp.MustCompile(`^Test[A-Z][A-Za-z0-9_]*$`)
	// testFunc finds the tests a _test.go file declares.
	testFunc = regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]*)\(`)
)

// metaPackages hold the types every group version gets from metav1.AddToGroupVersion
// (options, WatchEvent): they are no kind of the group's own.
var metaPackages = []string{"k8s.io/apimachinery/pkg/apis/meta/v1", "k8s.io/apimachinery/pkg/apis/meta/internalversion"}

// installed is what plinth-apiserver's scheme installs for one group version: the kinds of
// its resources (those with a List kind) and the other kinds of the group, which are the
// request and response bodies of subresources.
type installed struct {
	resources, bodies []string
}

// installedKinds reads the server's scheme, which every group's install package fills: a kind
// is installed if and only if the server can decode and serve it.
func installedKinds() map[schema.GroupVersion]installed {
	out := map[schema.GroupVersion]installed{}
	for _, gv := range apiserver.Scheme.PrioritizedVersionsAllGroups() {
		if gv.Group == "" {
			continue
		}
		known := apiserver.Scheme.KnownTypes(gv)
		var in installed
		for kind, typ := range known {
			switch {
			case slices.Contains(metaPackages, typ.PkgPath()), strings.HasSuffix(kind, "List") && known[strings.TrimSuffix(kind, "List")] != nil:
			case known[kind+"List"] != nil:
				in.resources = append(in.resources, kind)
			default:
				in.bodies = append(in.bodies, kind)
			}
		}
		slices.Sort(in.resources)
		slices.Sort(in.bodies)
		out[gv] = in
	}
	return out
}

// mapSection is what docs/map.md says of one group version.
type mapSection struct {
	// rows are the kinds with a row, by line.
	rows map[string]int
	// text is the section's text, for the kinds it only names.
	text string
}

// readMap splits docs/map.md into its group sections.
func readMap(t *testing.T, path string) map[string]*mapSection {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sections := map[string]*mapSection{}
	var current *mapSection
	var text strings.Builder
	flush := func() {
		if current != nil {
			current.text = text.String()
		}
		text.Reset()
	}
	scanner := bufio.NewScanner(f)
	for n := 1; scanner.Scan(); n++ {
		line := scanner.Text()
		if strings.HasPrefix(line, "## ") {
			flush()
			current = nil
			if m := mapGroup.FindStringSubmatch(line); m != nil {
				current = &mapSection{rows: map[string]int{}}
				sections[m[1]] = current
			}
			continue
		}
		if current == nil {
			continue
		}
		text.WriteString(line + "\n")
		if m := mapRow.FindStringSubmatch(line); m != nil {
			current.rows[m[1]] = n
		}
	}
	flush()
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	return sections
}

// TestMapCoversEveryKind fails when a kind plinth-apiserver installs has no row in
// docs/map.md, when a subresource body is not named in its group's section, or when the map
// has a group or a kind the server does not install.
func TestMapCoversEveryKind(t *testing.T) {
	sections := readMap(t, filepath.Join(moduleRoot(t), "docs", "map.md"))
	kinds := installedKinds()
	if len(kinds) == 0 {
		t.Fatal("plinth-apiserver's scheme installs no group")
	}
	for gv, in := range kinds {
		section, ok := sections[gv.String()]
		if !ok {
			t.Errorf("docs/map.md has no section \"## `%s`\" for the installed kinds %s", gv, strings.Join(in.resources, ", "))
			continue
		}
		for _, kind := range in.resources {
			if _, ok := section.rows[kind]; !ok {
				t.Errorf("docs/map.md: %s %s is installed but has no row in its group's table", gv, kind)
			}
		}
		for _, kind := range in.bodies {
			if !strings.Contains(section.text, kind) {
				t.Errorf("docs/map.md: %s %s (a subresource's body) is installed but not named in its group's section", gv, kind)
			}
		}
		for kind, line := range section.rows {
			if !slices.Contains(in.resources, kind) {
				t.Errorf("docs/map.md:%d: %s %s is not a kind plinth-apiserver installs", line, gv, kind)
			}
		}
	}
	for group := range sections {
		gv, err := schema.ParseGroupVersion(group)
		if _, ok := kinds[gv]; err != nil || !ok {
			t.Errorf("docs/map.md has a section for %s, which plinth-apiserver does not install", group)
		}
	}
}

// TestMapPathsExist fails when docs/map.md names, as code, a repository path that does not
// exist or a test that no _test.go file declares: the map must follow moves and renames.
func TestMapPathsExist(t *testing.T) {
	root := moduleRoot(t)
	tests := declaredTests(t, root)
	data, err := os.ReadFile(filepath.Join(root, "docs", "map.md"))
	if err != nil {
		t.Fatal(err)
	}
	for n, line := range strings.Split(string(data), "\n") {
		for _, m := range quoted.FindAllStringSubmatch(line, -1) {
			code := m[1]
			switch {
			case repoPath.MatchString(code):
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(code))); err != nil {
					t.Errorf("docs/map.md:%d: %s does not exist", n+1, code)
				}
			case testName.MatchString(code):
				if !tests[code] {
					t.Errorf("docs/map.md:%d: no _test.go file declares %s", n+1, code)
				}
			}
		}
	}
}

// declaredTests are the Test functions of every _test.go file of the repository, outside
// hack/tools (a module of its own) and testdata.
func declaredTests(t *testing.T, root string) map[string]bool {
	t.Helper()
	tests := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == filepath.Join(root, "hack", "tools") || slices.Contains([]string{".git", "_output", ".plinth", "testdata"}, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range testFunc.FindAllSubmatch(src, -1) {
			tests[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(fmt.Errorf("reading the tests: %w", err))
	}
	return tests
}
