package localplatform

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

const testCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %s
  labels: {existing: kept}
spec: {group: source.toolkit.fluxcd.io}
`

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestFluxCRDsAreLabelledWithControllerAndVersion: every CRD gets the labels plinth-controller
// reads Flux's version from, keeping its own.
func TestFluxCRDsAreLabelledWithControllerAndVersion(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"VERSION": "v1.9.6\n",
		"b.yaml":  strings.Replace(testCRD, "%s", "ocirepositories.source.toolkit.fluxcd.io", 1),
		"a.yaml":  strings.Replace(testCRD, "%s", "buckets.source.toolkit.fluxcd.io", 1),
		"notes":   "not a manifest",
	})
	manifest, names, err := fluxCRDs(dir, "source-controller")
	if err != nil {
		t.Fatal(err)
	}
	if want := "buckets.source.toolkit.fluxcd.io ocirepositories.source.toolkit.fluxcd.io"; strings.Join(names, " ") != want {
		t.Errorf("names %v, want %s", names, want)
	}
	var docs int
	for _, doc := range strings.Split(manifest, "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		docs++
		var crd unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(doc), &crd.Object); err != nil {
			t.Fatalf("document %d: %v", docs, err)
		}
		want := map[string]string{"existing": "kept", "app.kubernetes.io/component": "source-controller",
			"app.kubernetes.io/version": "v1.9.6", "app.kubernetes.io/part-of": "flux"}
		got, _ := json.Marshal(crd.GetLabels())
		wanted, _ := json.Marshal(want)
		if string(got) != string(wanted) {
			t.Errorf("%s labels %s, want %s", crd.GetName(), got, wanted)
		}
	}
	if docs != 2 {
		t.Errorf("%d documents, want 2", docs)
	}
}

func TestFluxCRDsRefusesWhatBuildToolsDidNotWrite(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"no directory":    nil,
		"no VERSION":      {"a.yaml": strings.Replace(testCRD, "%s", "a.b", 1)},
		"empty VERSION":   {"VERSION": "\n", "a.yaml": strings.Replace(testCRD, "%s", "a.b", 1)},
		"no CRDs":         {"VERSION": "v1.9.6"},
		"not a CRD":       {"VERSION": "v1.9.6", "a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"},
		"unnamed CRD":     {"VERSION": "v1.9.6", "a.yaml": "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"},
		"not YAML at all": {"VERSION": "v1.9.6", "a.yaml": "{["},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "missing")
			if files != nil {
				dir = writeFiles(t, files)
			}
			if _, _, err := fluxCRDs(dir, "source-controller"); err == nil {
				t.Error("no error")
			} else if strings.Contains(name, "VERSION") || name == "no directory" || name == "no CRDs" {
				if !strings.Contains(err.Error(), "hack/build-tools.sh source-controller") {
					t.Errorf("error %q does not say how to get the CRDs", err)
				}
			}
		})
	}
}

// TestLocalClusterHasEngineFluxAndARegistry: Cluster local's registration names Flux, the
// registry port and the interval; other Clusters get no spec.gitOps unless given one.
func TestLocalClusterHasEngineFluxAndARegistry(t *testing.T) {
	local, err := GitOpsClusterManifest("local", "d", []byte("kubeconfig"), LocalGitOps(5123))
	if err != nil {
		t.Fatal(err)
	}
	if want := `"gitOps":{"engine":"Flux","registryEnabled":true,"registryPort":5123,"fluxInterval":"1m0s"}`; !strings.Contains(local, want) {
		t.Errorf("Cluster local: %s, want it to contain %s", local, want)
	}
	other, err := ClusterManifest("edge", "d", []byte("kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(other, "gitOps") {
		t.Errorf("a Cluster without GitOps settings: %s", other)
	}
}
