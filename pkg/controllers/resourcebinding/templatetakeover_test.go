package resourcebinding

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

// A template's manifest naming an object someone else made is refused: the forced apply would
// add the binding to the object's owners, and the garbage collector would delete the object
// with the binding. The object is left as it was.
func TestTemplateManifestsTakeOverNothing(t *testing.T) {
	ctx := context.Background()
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shop-settings", Namespace: "team-a"},
		Data: map[string]string{"mode": "theirs"}}
	dyn := dynamicfake.NewSimpleDynamicClient(scheme.Scheme, theirs)
	p := &templateProvisioner{env: Env{Dynamic: dyn, Mapper: mapper}}
	manifest := map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{"name": "shop-settings"}, "data": map[string]interface{}{"mode": "ours"}}

	_, err := p.apply(ctx, binding(""), []map[string]interface{}{manifest})
	var taken *ForeignObjectError
	if !errors.As(err, &taken) || err.Error() != `ConfigMap "shop-settings" already exists and was not created for resource "db".` {
		t.Fatalf("apply over a ConfigMap someone else made: %v, want a ForeignObjectError naming it", err)
	}
	live, err := dyn.Resource(configMaps).Namespace("team-a").Get(ctx, "shop-settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mode, _, _ := unstructured.NestedString(live.Object, "data", "mode"); mode != "theirs" || len(live.GetOwnerReferences()) != 0 {
		t.Errorf("the ConfigMap changed: %v", live.Object)
	}

	// An object a binding's template applied (here another binding's, as shared objects are)
	// is the templates' to apply again; a missing one is created.
	shared := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: "team-a",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: v1b1.SchemeGroupVersion.String(), Kind: "ResourceBinding", Name: "other-db", UID: "other"}}}}
	dyn = dynamicfake.NewSimpleDynamicClient(scheme.Scheme, shared)
	for _, name := range []string{"shared", "missing"} {
		if err := madeByABinding(ctx, binding(""), dyn.Resource(configMaps).Namespace("team-a"), "ConfigMap", name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
