package manifests

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestFromFilesParsesDocumentsInOrder(t *testing.T) {
	objs, err := FromFiles(map[string][]byte{
		"b.yaml":    []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: second\n"),
		"a.yml":     []byte("---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: app\n---\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\n"),
		"notes.txt": []byte("not a manifest"),
		"x.json":    []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"ignored"}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.File+" "+KeyOf(o.Unstructured).String())
	}
	want := []string{"a.yml#1 app_web_apps_Deployment", "a.yml#2 _web__Service", "b.yaml#1 _second__ConfigMap"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("objects = %v, want %v (the .json and .txt files are not manifests)", got, want)
	}
}

func TestFromFilesRefusesBadInput(t *testing.T) {
	for name, tc := range map[string]struct {
		files map[string][]byte
		want  string
	}{
		"no objects":         {map[string][]byte{"a.yaml": []byte("---\n")}, "no Kubernetes object"},
		"not yaml":           {map[string][]byte{"a.yaml": []byte("kind: [\n")}, "file a.yaml, document 1"},
		"no kind":            {map[string][]byte{"a.yaml": []byte("apiVersion: v1\nmetadata:\n  name: x\n")}, "a.yaml#1.kind: Required value"},
		"no apiVersion":      {map[string][]byte{"a.yaml": []byte("kind: ConfigMap\nmetadata:\n  name: x\n")}, "a.yaml#1.apiVersion: Required value"},
		"bad apiVersion":     {map[string][]byte{"a.yaml": []byte("apiVersion: a/b/c\nkind: ConfigMap\nmetadata:\n  name: x\n")}, "a.yaml#1.apiVersion: Invalid value"},
		"no name":            {map[string][]byte{"a.yaml": []byte("apiVersion: v1\nkind: ConfigMap\n")}, "a.yaml#1.metadata.name: Required value"},
		"bad name":           {map[string][]byte{"a.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Not_OK\n")}, "a.yaml#1.metadata.name: Invalid value"},
		"bad namespace":      {map[string][]byte{"a.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: a.b\n")}, "a.yaml#1.metadata.namespace: Invalid value"},
		"list kind":          {map[string][]byte{"a.yaml": []byte("apiVersion: v1\nkind: ConfigMapList\nmetadata:\n  name: x\n")}, "List kinds are not applied"},
		"metadata not a map": {map[string][]byte{"a.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: 3\n")}, "a.yaml#1.metadata: Invalid value"},
		"duplicate": {map[string][]byte{
			"a.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"),
			"b.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"),
		}, "b.yaml#1: Duplicate value"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := FromFiles(tc.files)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestValidateObjectsKeysIncludeTheGroup(t *testing.T) {
	objs, err := FromFiles(map[string][]byte{"a.yaml": []byte(
		"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\n---\napiVersion: extensions/v1beta1\nkind: Deployment\nmetadata:\n  name: x\n")})
	if err != nil || len(objs) != 2 {
		t.Fatalf("two Deployments of different groups are different objects: %v, %d", err, len(objs))
	}
}

func TestValidateObjectsCapsTheCount(t *testing.T) {
	objs := make([]Object, MaxObjects+1)
	errs := ValidateObjects(objs, func(i int) *field.Path { return field.NewPath("spec", "manifests").Index(i) })
	if len(errs) != 1 || errs[0].Type != field.ErrorTypeTooMany {
		t.Fatalf("errs = %v, want one TooMany", errs)
	}
}

func TestIsManifestFile(t *testing.T) {
	for name, want := range map[string]bool{"a.yaml": true, "A.YML": true, "a.json": false, "a": false, "kustomize.txt": false} {
		if got := IsManifestFile(name); got != want {
			t.Errorf("IsManifestFile(%q) = %v, want %v", name, got, want)
		}
	}
}
