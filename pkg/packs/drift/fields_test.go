package drift

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// fieldSet reads a fieldsV1 document.
func fieldSet(t *testing.T, fieldsV1 string) *fieldpath.Set {
	t.Helper()
	s, err := parseFieldSet(&metav1.FieldsV1{Raw: []byte(fieldsV1)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// deploymentFields is what an apply of deployment() sets, as the API server records it.
const deploymentFields = `{"f:metadata":{"f:labels":{".":{},"f:app":{}},"f:finalizers":{"v:\"keep\"":{}}},
 "f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{
   "k:{\"name\":\"web\"}":{".":{},"f:name":{},"f:image":{},"f:args":{},"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:protocol":{}}}},
   "k:{\"name\":\"sidecar\"}":{".":{},"f:name":{},"f:image":{}}}}}},
 "f:status":{"f:replicas":{}}}`

// deployment is a Deployment as the server stores it; change edits it.
func deployment(change func(obj map[string]interface{})) map[string]interface{} {
	obj := map[string]interface{}{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]interface{}{"name": "web", "namespace": "demo", "resourceVersion": "1",
			"labels": map[string]interface{}{"app": "web"}, "finalizers": []interface{}{"keep"}},
		"spec": map[string]interface{}{
			"replicas": int64(2),
			"template": map[string]interface{}{"spec": map[string]interface{}{"containers": []interface{}{
				map[string]interface{}{"name": "web", "image": "web:1", "args": []interface{}{"--a"},
					"ports": []interface{}{map[string]interface{}{"containerPort": int64(80), "protocol": "TCP"}}},
				map[string]interface{}{"name": "sidecar", "image": "sidecar:1"},
			}}},
		},
		"status": map[string]interface{}{"replicas": int64(2)},
	}
	if change != nil {
		change(obj)
	}
	return obj
}

func spec(obj map[string]interface{}) map[string]interface{} {
	return obj["spec"].(map[string]interface{})
}

func containers(obj map[string]interface{}) []interface{} {
	return spec(obj)["template"].(map[string]interface{})["spec"].(map[string]interface{})["containers"].([]interface{})
}

func setContainers(obj map[string]interface{}, c []interface{}) {
	spec(obj)["template"].(map[string]interface{})["spec"].(map[string]interface{})["containers"] = c
}

func container(obj map[string]interface{}, i int) map[string]interface{} {
	return containers(obj)[i].(map[string]interface{})
}

func metadata(obj map[string]interface{}) map[string]interface{} {
	return obj["metadata"].(map[string]interface{})
}

func TestDiffFields(t *testing.T) {
	applied := fieldSet(t, deploymentFields)
	tests := []struct {
		name string
		live func(map[string]interface{})
		want []string // path, "-" prefixed when removed
	}{
		{name: "identical", want: nil},
		{name: "server-written and unowned fields differ",
			live: func(o map[string]interface{}) {
				metadata(o)["resourceVersion"] = "9"
				o["status"] = map[string]interface{}{"replicas": int64(0)}
				metadata(o)["labels"].(map[string]interface{})["team"] = "blue"
				container(o, 0)["imagePullPolicy"] = "Always"
				setContainers(o, append(containers(o), map[string]interface{}{"name": "extra"}))
			}},
		{name: "containers reordered", live: func(o map[string]interface{}) {
			c := containers(o)
			setContainers(o, []interface{}{c[1], c[0]})
		}},
		{name: "changed scalar and merge-keyed field",
			live: func(o map[string]interface{}) {
				spec(o)["replicas"] = int64(5)
				container(o, 0)["image"] = "web:2"
			},
			want: []string{".spec.replicas", `.spec.template.spec.containers[name="web"].image`}},
		{name: "changed atomic list", live: func(o map[string]interface{}) { container(o, 0)["args"] = []interface{}{"--b"} },
			want: []string{`.spec.template.spec.containers[name="web"].args`}},
		{name: "removed list item is one path",
			live: func(o map[string]interface{}) { setContainers(o, containers(o)[:1]) },
			want: []string{`-.spec.template.spec.containers[name="sidecar"]`}},
		{name: "removed item of a list keyed by two fields",
			live: func(o map[string]interface{}) { container(o, 0)["ports"] = []interface{}{} },
			want: []string{`-.spec.template.spec.containers[name="web"].ports[containerPort=80,protocol="TCP"]`}},
		{name: "removed label, set value and whole spec",
			live: func(o map[string]interface{}) {
				delete(metadata(o)["labels"].(map[string]interface{}), "app")
				metadata(o)["finalizers"] = []interface{}{"other"}
				delete(o, "spec")
			},
			want: []string{`-.metadata.finalizers[="keep"]`, "-.metadata.labels.app", "-.spec"}},
		{name: "a field of another type", live: func(o map[string]interface{}) { spec(o)["template"] = "text" },
			want: []string{`-.spec.template.spec`}},
		{name: "a null value differs from a value", live: func(o map[string]interface{}) { spec(o)["replicas"] = nil },
			want: []string{".spec.replicas"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range diffFields(applied, deployment(nil), deployment(tt.live)) {
				s := c.path.String()
				if c.removed {
					s = "-" + s
				}
				got = append(got, s)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// A leaf of the applied set that the dry-run's answer lacks (the server dropped it) is not
// compared, whatever the live object holds.
func TestDiffFieldsSkipsWhatTheAnswerLacks(t *testing.T) {
	applied := fieldSet(t, `{"f:spec":{"f:replicas":{},"f:paused":{}}}`)
	want := deployment(nil)
	live := deployment(func(o map[string]interface{}) { spec(o)["paused"] = true })
	if got := diffFields(applied, want, live); len(got) != 0 {
		t.Errorf("got %v", got)
	}
}

func TestIgnored(t *testing.T) {
	for path, want := range map[string]bool{
		".status": true, ".status.replicas": true, ".metadata.resourceVersion": true, ".metadata.managedFields": true,
		".metadata.uid": true, ".metadata.generation": true, ".metadata.creationTimestamp": true,
		".metadata.labels": false, ".spec.status": false, ".spec": false, ".data.status": false,
	} {
		var parts []interface{}
		for _, f := range strings.Split(path, ".")[1:] {
			parts = append(parts, f)
		}
		if got := ignored(fieldpath.MakePathOrDie(parts...)); got != want {
			t.Errorf("ignored(%s) = %v", path, got)
		}
	}
	if ignored(fieldpath.Path{}) {
		t.Error("the empty path is ignored")
	}
}

func TestOwners(t *testing.T) {
	entries := []metav1.ManagedFieldsEntry{
		{Manager: "plinth-packs", Operation: metav1.ManagedFieldsOperationApply,
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)}},
		{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)}},
		{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationApply,
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)}},
		{Manager: "autoscaler", Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:image":{}}}}}}}`)}},
		{Manager: "labeller", Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{".":{},"f:team":{}}}}`)}},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)}},
	}
	pack := func(e metav1.ManagedFieldsEntry) bool {
		return e.Manager == "plinth-packs" && e.Operation == metav1.ManagedFieldsOperationApply
	}
	owned, err := parseOwnership(entries, pack)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string][]string{
		// The same manager twice, once; the pack and a status entry never.
		".spec.replicas": {"kubectl-edit"},
		// A child owned counts; so does the exact field.
		".spec.template.spec.containers": {"autoscaler"},
		// Owning the labels map as such is not owning a label.
		".metadata.labels.app":  nil,
		".metadata.labels.team": {"labeller"},
		".data":                 nil,
	} {
		var parts []interface{}
		for _, f := range strings.Split(path, ".")[1:] {
			parts = append(parts, f)
		}
		if diff := cmp.Diff(want, owners(owned, fieldpath.MakePathOrDie(parts...))); diff != "" {
			t.Errorf("owners of %s (-want +got):\n%s", path, diff)
		}
	}
}

func TestParseOwnershipRefusesBadFields(t *testing.T) {
	_, err := parseOwnership([]metav1.ManagedFieldsEntry{{Manager: "x", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:a":`)}}},
		func(metav1.ManagedFieldsEntry) bool { return false })
	if err == nil || !strings.Contains(err.Error(), "managed fields of x") {
		t.Errorf("err %v", err)
	}
}

func TestParseFieldSetOfNothing(t *testing.T) {
	for _, f := range []*metav1.FieldsV1{nil, {}} {
		s, err := parseFieldSet(f)
		if err != nil || !s.Empty() {
			t.Errorf("%v: %v %v", f, s, err)
		}
	}
}
