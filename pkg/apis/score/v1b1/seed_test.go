package v1b1

import (
	"bufio"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
)

// seedFile is the Score Orchestrator CRD spec, in the shared seeds beside the repository.
const seedFile = "../shared/seeds/004_96868551032755fd.txt"

var seedKey = regexp.MustCompile(`^\s*([a-zA-Z][a-zA-Z0-9]*):`)

// TestEveryFieldNameOfTheSeedIsServed reads every field name of the seed's spec and status
// blocks and checks that the served types have a field of that JSON name, so a name the seed
// uses (as env once was) is never refused as an unknown field again.
func TestEveryFieldNameOfTheSeedIsServed(t *testing.T) {
	root, err := filepath.Abs("../../../..")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, seedFile))
	if os.IsNotExist(err) {
		t.Skipf("%s is not beside the repository", seedFile)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seed := sets.New[string]()
	inBlock := false
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		line := scanner.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inBlock = !inBlock
			continue
		}
		if m := seedKey.FindStringSubmatch(line); inBlock && m != nil {
			seed.Insert(m[1])
		}
	}
	if seed.Len() < 50 {
		t.Fatalf("read only %d field names from the seed: %v", seed.Len(), sets.List(seed))
	}

	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	served := sets.New[string]()
	visited := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || visited[typ] {
			return
		}
		visited[typ] = true
		for i := 0; i < typ.NumField(); i++ {
			field := typ.Field(i)
			if name := strings.Split(field.Tag.Get("json"), ",")[0]; name != "" && name != "-" {
				served.Insert(name)
			}
			walk(field.Type)
		}
	}
	for _, typ := range scheme.KnownTypes(SchemeGroupVersion) {
		walk(typ)
	}
	if missing := seed.Difference(served); missing.Len() > 0 {
		t.Errorf("field names of the seed no served type has: %v", sets.List(missing))
	}
}
