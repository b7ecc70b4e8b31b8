// Package applytest gives controller tests a fake Plinth clientset that writes as
// plinth-apiserver does where status writers depend on it: server-side apply with the API's
// OpenAPI models (conditions merge by type, each field manager owns what it applied), a new
// resourceVersion on every write, a conflict (409) for an update based on another version, and
// status updates that change only the status (updates of the object, only the rest).
//
// The generated fake.NewClientset cannot apply Plinth's kinds: its models are deduced, untyped
// ones, because applyconfiguration-gen names Plinth's types after their Go packages and
// openapi-gen after +k8s:openapi-model-package, so none of them is found.
package applytest

import (
	"errors"
	"reflect"
	"strconv"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/kube-openapi/pkg/schemaconv"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/scheme"
	"github.com/plinth-dev/plinth/pkg/generated/openapi"
)

// Clientset returns a fake clientset holding objects. Its Tracker is not the one that holds
// them: read them through the clientset.
func Clientset(t testing.TB, objects ...runtime.Object) *fake.Clientset {
	t.Helper()
	tracker := &versioned{ObjectTracker: clienttesting.NewFieldManagedObjectTracker(scheme.Scheme, scheme.Codecs.UniversalDecoder(), typeConverter(t))}
	for _, obj := range objects {
		if err := tracker.Add(obj.DeepCopyObject()); err != nil {
			t.Fatal(err)
		}
	}
	cs := fake.NewSimpleClientset()
	cs.PrependReactor("*", "*", clienttesting.ObjectReaction(tracker))
	cs.PrependReactor("update", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		update := action.(clienttesting.UpdateActionImpl)
		obj, err := tracker.update(update.GetResource(), update.GetNamespace(), update.GetObject(), update.GetSubresource() == "status", update.UpdateOptions)
		return true, obj, err
	})
	cs.PrependWatchReactor("*", func(action clienttesting.Action) (bool, watch.Interface, error) {
		w, err := tracker.Watch(action.GetResource(), action.GetNamespace())
		return err == nil, w, err
	})
	return cs
}

// versioned stamps every write with the next resourceVersion, as one etcd would.
type versioned struct {
	clienttesting.ObjectTracker
	mu      sync.Mutex
	version int
}

func (v *versioned) stamp(obj runtime.Object) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	v.version++
	m.SetResourceVersion(strconv.Itoa(v.version))
	return nil
}

func (v *versioned) Add(obj runtime.Object) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.stamp(obj); err != nil {
		return err
	}
	return v.ObjectTracker.Add(obj)
}

func (v *versioned) Create(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.CreateOptions) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.stamp(obj); err != nil {
		return err
	}
	return v.ObjectTracker.Create(gvr, obj, ns, opts...)
}

func (v *versioned) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.stamp(obj); err != nil {
		return err
	}
	return v.ObjectTracker.Patch(gvr, obj, ns, opts...)
}

func (v *versioned) Apply(gvr schema.GroupVersionResource, config runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.ObjectTracker.Apply(gvr, config, ns, opts...); err != nil {
		return err
	}
	m, err := meta.Accessor(config)
	if err != nil {
		return err
	}
	applied, err := v.ObjectTracker.Get(gvr, ns, m.GetName())
	if err != nil {
		return err
	}
	if err := v.stamp(applied); err != nil {
		return err
	}
	return v.ObjectTracker.Update(gvr, applied, ns)
}

// update is an update of the object (status false) or of its status: refused when obj is
// based on another version than the stored one, and changing only its part of the object.
func (v *versioned) update(gvr schema.GroupVersionResource, ns string, obj runtime.Object, status bool, opts metav1.UpdateOptions) (runtime.Object, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	stored, err := v.ObjectTracker.Get(gvr, ns, m.GetName())
	if err != nil {
		return nil, err
	}
	storedMeta, err := meta.Accessor(stored)
	if err != nil {
		return nil, err
	}
	if rv := m.GetResourceVersion(); rv != "" && rv != storedMeta.GetResourceVersion() {
		return nil, apierrors.NewConflict(gvr.GroupResource(), m.GetName(), errors.New("the object has been modified"))
	}
	next, err := withStatus(obj, stored, status)
	if err != nil {
		return nil, err
	}
	if err := v.stamp(next); err != nil {
		return nil, err
	}
	if err := v.ObjectTracker.Update(gvr, next, ns, opts); err != nil {
		return nil, err
	}
	return v.ObjectTracker.Get(gvr, ns, m.GetName())
}

// withStatus is obj with stored's status (fromObj false) or stored with obj's status and
// resourceVersion (fromObj true).
func withStatus(obj, stored runtime.Object, fromObj bool) (runtime.Object, error) {
	o, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	s, err := runtime.DefaultUnstructuredConverter.ToUnstructured(stored)
	if err != nil {
		return nil, err
	}
	into := o
	if fromObj {
		into, s = s, o
		into["metadata"].(map[string]any)["resourceVersion"] = o["metadata"].(map[string]any)["resourceVersion"]
	}
	if status, ok := s["status"]; ok {
		into["status"] = status
	} else {
		delete(into, "status")
	}
	out := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(runtime.Object)
	return out, runtime.DefaultUnstructuredConverter.FromUnstructured(into, out)
}

// parser holds the models plinth-apiserver serves (pkg/generated/openapi), named as the scheme
// names them; building it takes a while, so every test shares it.
var parser = sync.OnceValues(func() (*typed.Parser, error) {
	defs := openapi.GetOpenAPIDefinitions(func(name string) spec.Ref { return spec.MustCreateRef("#/definitions/" + name) })
	models := make(map[string]*spec.Schema, len(defs))
	for name, def := range defs {
		models[name] = &def.Schema
	}
	s, err := schemaconv.ToSchemaFromOpenAPI(models, false)
	if err != nil {
		return nil, err
	}
	p := &typed.Parser{}
	s.CopyInto(&p.Schema)
	return p, nil
})

func typeConverter(t testing.TB) managedfields.TypeConverter {
	t.Helper()
	p, err := parser()
	if err != nil {
		t.Fatal(err)
	}
	return managedfields.NewSchemeTypeConverter(scheme.Scheme, p)
}
