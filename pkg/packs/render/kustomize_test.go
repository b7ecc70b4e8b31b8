package render

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  template:
    spec:
      containers:
      - name: web
        image: nginx:1.27
`

func TestKustomize(t *testing.T) {
	files := map[string][]byte{
		"base/kustomization.yaml": []byte("resources:\n- deployment.yaml\n- role.yaml\n"),
		"base/deployment.yaml":    []byte(deployment),
		"base/role.yaml":          []byte("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: reader\nrules: []\n"),
		"prod/kustomization.yaml": []byte(`resources:
- ../base
- service.yaml
patches:
- path: replicas.yaml
labels:
- pairs:
    env: prod
`),
		"prod/replicas.yaml": []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 5\n"),
		"prod/service.yaml":  []byte("apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: edge\nspec:\n  ports:\n  - port: 80\n"),
	}
	res, err := New().Render(context.Background(), Source{Kustomize: &Kustomize{Files: files, Path: "prod"}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	// kustomize's legacy order: cluster-wide RBAC before Services before Deployments.
	want := "ClusterRole reader,Service edge/web,Deployment apps/web"
	if got := strings.Join(names(res.Objects), ","); got != want {
		t.Errorf("objects %s, want %s", got, want)
	}
	deploy := find(t, res.Objects, "Deployment", "web")
	if r, _, _ := unstructured.NestedInt64(deploy.Object, "spec", "replicas"); r != 5 {
		t.Errorf("replicas %d, want the patch's 5", r)
	}
	if deploy.GetLabels()["env"] != "prod" {
		t.Errorf("labels %v", deploy.GetLabels())
	}
	if res.HelmVersion != "" || res.ChartVersion != "" {
		t.Errorf("chart fields set: %+v", res)
	}

	// The root directory, spelled "" or ".".
	for _, p := range []string{"", "."} {
		res, err := New().Render(context.Background(), Source{Kustomize: &Kustomize{Files: map[string][]byte{
			"kustomization.yaml": []byte("namespace: tools\nresources:\n- d.yaml\n"),
			"d.yaml":             []byte(deployment),
		}, Path: p}}, opts)
		if err != nil {
			t.Fatalf("path %q: %v", p, err)
		}
		if got := strings.Join(names(res.Objects), ","); got != "Deployment tools/web" {
			t.Errorf("path %q: %s", p, got)
		}
	}
}

func TestKustomizeErrors(t *testing.T) {
	ok := []byte(deployment)
	for name, k := range map[string]*Kustomize{
		"no kustomization":   {Files: map[string][]byte{"d.yaml": ok}},
		"missing resource":   {Files: map[string][]byte{"kustomization.yaml": []byte("resources:\n- nothere.yaml\n")}},
		"not YAML":           {Files: map[string][]byte{"kustomization.yaml": []byte("resources: [\n")}},
		"path outside":       {Files: map[string][]byte{"kustomization.yaml": []byte("resources: []\n")}, Path: "../x"},
		"absolute file":      {Files: map[string][]byte{"/etc/kustomization.yaml": []byte("resources: []\n")}},
		"file outside":       {Files: map[string][]byte{"../kustomization.yaml": []byte("resources: []\n")}},
		"load outside root":  {Files: map[string][]byte{"a/kustomization.yaml": []byte("patches:\n- path: ../p.yaml\n"), "p.yaml": ok}, Path: "a"},
		"helm chart":         {Files: map[string][]byte{"kustomization.yaml": []byte("helmCharts:\n- name: web\n  repo: https://charts.example.com\n")}},
		"remote https":       {Files: map[string][]byte{"kustomization.yaml": []byte("resources:\n- https://example.com/d.yaml\n")}},
		"remote github":      {Files: map[string][]byte{"kustomization.yaml": []byte("resources:\n- github.com/org/repo//deploy?ref=v1\n")}},
		"remote scp":         {Files: map[string][]byte{"kustomization.yaml": []byte("resources:\n- git@gitlab.com:org/repo.git\n")}},
		"remote git::":       {Files: map[string][]byte{"kustomization.yaml": []byte("resources:\n- git::https://example.com/repo\n")}},
		"remote in a base":   {Files: map[string][]byte{"kustomization.yaml": []byte("resources:\n- base\n"), "base/kustomization.yaml": []byte("components:\n- ssh://git@example.com/c\n")}},
		"remote patch":       {Files: map[string][]byte{"kustomization.yaml": []byte("resources:\n- d.yaml\npatches:\n- path: http://example.com/p.yaml\n"), "d.yaml": ok}},
		"remote generator":   {Files: map[string][]byte{"kustomization.yaml": []byte("configMapGenerator:\n- name: c\n  files:\n  - k=https://example.com/f\n")}},
		"remote env":         {Files: map[string][]byte{"kustomization.yaml": []byte("secretGenerator:\n- name: s\n  env: https://example.com/e\n")}},
		"remote plugin path": {Files: map[string][]byte{"kustomization.yaml": []byte("transformers:\n- t.yaml\n"), "t.yaml": []byte("apiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: p\npath: https://example.com/p.yaml\n")}},
		"remote inline plugin": {Files: map[string][]byte{"kustomization.yaml": []byte(
			"transformers:\n- |\n  apiVersion: builtin\n  kind: PatchTransformer\n  metadata:\n    name: p\n  path: https://example.com/p.yaml\n")}},
	} {
		_, err := New().Render(context.Background(), Source{Kustomize: k}, opts)
		e := contentError(t, err)
		if strings.HasPrefix(name, "remote") && !strings.Contains(e.Message, "outside the pack") {
			t.Errorf("%s: %v, want a refusal before the build", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
}

func TestRemote(t *testing.T) {
	for ref, want := range map[string]bool{
		"base":                            false,
		"../base":                         false,
		"github.com.yaml":                 false,
		"my.app/base":                     false,
		"team@example":                    true,
		"HTTPS://example.com/x":           true,
		"github.com/org/repo":             true,
		"git::ssh://git@example.com/r":    true,
		"file:///etc":                     true,
		"apiVersion: v1\nkind: ConfigMap": false,
	} {
		if got := remote(ref); got != want {
			t.Errorf("remote(%q) = %v, want %v", ref, got, want)
		}
	}
}
