package drift

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

const manager = "plinth-packs"

var (
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// configMap is a ConfigMap as a pack applies it.
func configMap(name string, data, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap"}}
	u.SetName(name)
	u.SetNamespace("demo")
	if len(labels) > 0 {
		u.SetLabels(labels)
	}
	d := map[string]interface{}{}
	for k, v := range data {
		d[k] = v
	}
	u.Object["data"] = d
	return u
}

// fieldsOf is the fieldsV1 an apply of a ConfigMap records: its data keys and labels.
func fieldsOf(u *unstructured.Unstructured) map[string]interface{} {
	fields := map[string]interface{}{}
	data, _, _ := unstructured.NestedStringMap(u.Object, "data")
	if len(data) > 0 {
		f := map[string]interface{}{}
		for k := range data {
			f["f:"+k] = map[string]interface{}{}
		}
		fields["f:data"] = f
	}
	if len(u.GetLabels()) > 0 {
		f := map[string]interface{}{".": map[string]interface{}{}}
		for k := range u.GetLabels() {
			f["f:"+k] = map[string]interface{}{}
		}
		fields["f:metadata"] = map[string]interface{}{"f:labels": f}
	}
	return fields
}

// entry is a managedFields entry as unstructured holds it.
func entry(manager string, op metav1.ManagedFieldsOperationType, fields map[string]interface{}) interface{} {
	return map[string]interface{}{"manager": manager, "operation": string(op), "apiVersion": "v1",
		"fieldsType": "FieldsV1", "fieldsV1": fields}
}

// live is want as the target holds it after the pack applied it: with a UID and the pack's
// Apply entry.
func live(want *unstructured.Unstructured, uid string) *unstructured.Unstructured {
	u := want.DeepCopy()
	u.SetUID(types.UID(uid))
	u.Object["metadata"].(map[string]interface{})["managedFields"] = []interface{}{entry(manager, metav1.ManagedFieldsOperationApply, fieldsOf(want))}
	return u
}

// fakeTarget is a fake cluster whose apply dry-runs behave as server-side apply does for
// ConfigMaps: the applied data and labels over the live object, and the pack's entry holding
// exactly the applied fields.
type fakeTarget struct {
	client  *dynamicfake.FakeDynamicClient
	mapper  meta.RESTMapper
	dryRuns []string
	// failDryRun makes the dry-run of these names fail.
	failDryRun map[string]error
	// noEntry makes the dry-run answer without the pack's entry.
	noEntry bool
}

func newFakeTarget(t *testing.T, objects ...*unstructured.Unstructured) *fakeTarget {
	t.Helper()
	var objs []runtime.Object
	for _, o := range objects {
		objs = append(objs, o)
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configMaps: "ConfigMapList", namespaces: "NamespaceList"}, objs...)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	f := &fakeTarget{client: client, mapper: mapper, failDryRun: map[string]error{}}
	client.PrependReactor("patch", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchActionImpl)
		opts := p.GetPatchOptions()
		if p.GetPatchType() != types.ApplyPatchType || len(opts.DryRun) != 1 || opts.DryRun[0] != metav1.DryRunAll ||
			opts.Force == nil || !*opts.Force || opts.FieldManager != manager {
			t.Errorf("not a forced apply dry-run as %s: %s %+v", manager, p.GetPatchType(), opts)
		}
		f.dryRuns = append(f.dryRuns, p.GetName())
		if err := f.failDryRun[p.GetName()]; err != nil {
			return true, nil, err
		}
		applied := &unstructured.Unstructured{}
		if err := json.Unmarshal(p.GetPatch(), &applied.Object); err != nil {
			t.Fatal(err)
		}
		current, err := client.Tracker().Get(configMaps, p.GetNamespace(), p.GetName())
		if err != nil {
			return true, nil, err
		}
		answer := current.(*unstructured.Unstructured).DeepCopy()
		data, _, _ := unstructured.NestedStringMap(answer.Object, "data")
		if data == nil {
			data = map[string]string{}
		}
		appliedData, _, _ := unstructured.NestedStringMap(applied.Object, "data")
		for k, v := range appliedData {
			data[k] = v
		}
		_ = unstructured.SetNestedStringMap(answer.Object, data, "data")
		labels := answer.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		for k, v := range applied.GetLabels() {
			labels[k] = v
		}
		answer.SetLabels(labels)
		entries := []interface{}{}
		if !f.noEntry {
			entries = append(entries, entry(manager, metav1.ManagedFieldsOperationApply, fieldsOf(applied)))
		}
		answer.Object["metadata"].(map[string]interface{})["managedFields"] = entries
		return true, answer, nil
	})
	return f
}

// update replaces the live object.
func (f *fakeTarget) update(t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	if err := f.client.Tracker().Update(configMaps, u, u.GetNamespace()); err != nil {
		t.Fatal(err)
	}
}

// reads lists the verbs of the reads the client saw since the last call, as "list configmaps
// demo app=x" and "get configmaps demo name".
func (f *fakeTarget) reads() []string {
	var out []string
	for _, a := range f.client.Actions() {
		switch a := a.(type) {
		case k8stesting.ListActionImpl:
			out = append(out, strings.TrimSpace(fmt.Sprintf("list %s %s %s", a.GetResource().Resource, a.GetNamespace(), a.GetListRestrictions().Labels)))
		case k8stesting.GetActionImpl:
			out = append(out, fmt.Sprintf("get %s %s %s", a.GetResource().Resource, a.GetNamespace(), a.GetName()))
		}
	}
	f.client.ClearActions()
	return out
}

func (f *fakeTarget) takeDryRuns() []string {
	d := f.dryRuns
	f.dryRuns = nil
	return d
}

func check(t *testing.T, c *Checker, expected ...*unstructured.Unstructured) Report {
	t.Helper()
	r, err := c.Check(context.Background(), expected)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCheckCleanObjectsKeepBaselines(t *testing.T) {
	part := map[string]string{"part-of": "pack"}
	a := configMap("a", map[string]string{"k": "1"}, part)
	b := configMap("b", map[string]string{"k": "2"}, part)
	f := newFakeTarget(t, live(a, "ua"), live(b, "ub"), configMap("unrelated", nil, nil))
	c := NewChecker(f.client, f.mapper, manager)

	r := check(t, c, a, b)
	if r.Checked != 2 || len(r.Drifted) != 0 {
		t.Fatalf("report %+v", r)
	}
	if got := f.takeDryRuns(); len(got) != 2 {
		t.Errorf("first pass dry-runs %v", got)
	}
	// One list, narrowed by the labels both objects share.
	if diff := cmp.Diff([]string{"list configmaps demo part-of=pack"}, f.reads()); diff != "" {
		t.Errorf("reads (-want +got):\n%s", diff)
	}
	if r := check(t, c, a, b); len(r.Drifted) != 0 {
		t.Fatalf("second pass %+v", r)
	}
	if got := f.takeDryRuns(); len(got) != 0 {
		t.Errorf("second pass dry-runs %v", got)
	}

	// What invalidates a baseline: a new applied object, a new UID, other owned fields.
	changedA := configMap("a", map[string]string{"k": "1", "new": "x"}, part)
	f.update(t, live(changedA, "ua"))
	recreatedB := live(b, "ub2")
	f.update(t, recreatedB)
	check(t, c, changedA, b)
	if diff := cmp.Diff([]string{"a", "b"}, f.takeDryRuns(), cmpopts.SortSlices(func(x, y string) bool { return x < y })); diff != "" {
		t.Errorf("dry-runs after changes (-want +got):\n%s", diff)
	}
	other := live(b, "ub2")
	other.Object["metadata"].(map[string]interface{})["managedFields"] = []interface{}{
		entry(manager, metav1.ManagedFieldsOperationApply, map[string]interface{}{}),
		entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, fieldsOf(b))}
	f.update(t, other)
	check(t, c, changedA, b)
	if diff := cmp.Diff([]string{"b"}, f.takeDryRuns()); diff != "" {
		t.Errorf("dry-runs after an ownership change (-want +got):\n%s", diff)
	}
	// b is clean (same values) but the pack owns none of its fields now: no baseline, so it
	// is dry-run on every pass.
	check(t, c, changedA, b)
	if diff := cmp.Diff([]string{"b"}, f.takeDryRuns()); diff != "" {
		t.Errorf("dry-runs of an object others own (-want +got):\n%s", diff)
	}

	c.Forget(changedA)
	check(t, c, changedA)
	if diff := cmp.Diff([]string{"a"}, f.takeDryRuns()); diff != "" {
		t.Errorf("dry-runs after Forget (-want +got):\n%s", diff)
	}
}

func TestCheckBaselinesExpire(t *testing.T) {
	a := configMap("a", map[string]string{"k": "1"}, nil)
	f := newFakeTarget(t, live(a, "ua"))
	c := NewChecker(f.client, f.mapper, manager)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return now }
	check(t, c, a)
	now = now.Add(baselineRetention - time.Second)
	check(t, c, a)
	if got := f.takeDryRuns(); len(got) != 1 {
		t.Fatalf("dry-runs within the retention %v", got)
	}
	now = now.Add(baselineRetention + time.Second)
	check(t, c, a)
	if got := f.takeDryRuns(); len(got) != 1 {
		t.Errorf("dry-runs after the retention %v, want one", got)
	}
}

func TestCheckDrift(t *testing.T) {
	a := configMap("a", map[string]string{"k": "1", "gone": "x"}, nil)
	edited := live(a, "ua")
	_ = unstructured.SetNestedStringMap(edited.Object, map[string]string{"k": "2", "extra": "by hand"}, "data")
	edited.Object["metadata"].(map[string]interface{})["managedFields"] = []interface{}{
		entry(manager, metav1.ManagedFieldsOperationApply, map[string]interface{}{}),
		entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, map[string]interface{}{"f:data": map[string]interface{}{"f:k": map[string]interface{}{}, "f:extra": map[string]interface{}{}}})}
	f := newFakeTarget(t, edited)
	ns := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]interface{}{"name": "demo"}}}
	widget := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]interface{}{"name": "w", "namespace": "demo"}}}
	missing := configMap("missing", map[string]string{"k": "1"}, nil)
	c := NewChecker(f.client, f.mapper, manager)

	r := check(t, c, ns, a, widget, missing)
	want := Report{Checked: 4, Drifted: []ObjectDrift{
		{APIVersion: "v1", Kind: "Namespace", Name: "demo", Missing: true},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "demo", Name: "a", Fields: []string{".data.gone", ".data.k"},
			Removed: []string{".data.gone"}, Managers: []string{"kubectl-edit"}},
		{APIVersion: "example.com/v1", Kind: "Widget", Namespace: "demo", Name: "w", Missing: true},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "demo", Name: "missing", Missing: true},
	}}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// Each single object of its collection is read with a GET; the Widget not at all.
	if diff := cmp.Diff([]string{"get namespaces  demo", "list configmaps demo"}, f.reads(), cmpopts.SortSlices(func(x, y string) bool { return x < y })); diff != "" {
		t.Errorf("reads (-want +got):\n%s", diff)
	}
	// A drifted object keeps no baseline: the next pass reports it again.
	if r := check(t, c, ns, a, widget, missing); len(r.Drifted) != 4 {
		t.Errorf("second pass %+v", r)
	}
	if got := f.takeDryRuns(); len(got) != 2 {
		t.Errorf("dry-runs %v, want a's in each pass", got)
	}
}

// An object the list narrowed by shared labels lacks (someone removed the label) is read
// with a GET, not reported missing.
func TestCheckReadsWhatTheLabelsMiss(t *testing.T) {
	part := map[string]string{"part-of": "pack"}
	a := configMap("a", map[string]string{"k": "1"}, part)
	b := configMap("b", map[string]string{"k": "2"}, part)
	unlabelled := live(b, "ub")
	unlabelled.SetLabels(nil)
	f := newFakeTarget(t, live(a, "ua"), unlabelled)
	r := check(t, NewChecker(f.client, f.mapper, manager), a, b)
	want := []ObjectDrift{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "demo", Name: "b",
		Fields: []string{".metadata.labels"}, Removed: []string{".metadata.labels"}}}
	if diff := cmp.Diff(want, r.Drifted); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"list configmaps demo part-of=pack", "get configmaps demo b"}, f.reads()); diff != "" {
		t.Errorf("reads (-want +got):\n%s", diff)
	}
}

func TestCheckDuplicatesCountOnce(t *testing.T) {
	a := configMap("a", map[string]string{"k": "1"}, nil)
	f := newFakeTarget(t, live(a, "ua"))
	newer := configMap("a", map[string]string{"k": "2"}, nil)
	r := check(t, NewChecker(f.client, f.mapper, manager), a, newer)
	if r.Checked != 1 || len(r.Drifted) != 1 || r.Drifted[0].Fields[0] != ".data.k" {
		t.Errorf("report %+v: the later object should be compared, once", r)
	}
}

func TestCheckErrors(t *testing.T) {
	a := configMap("a", map[string]string{"k": "1"}, nil)
	b := configMap("b", map[string]string{"k": "1"}, nil)
	cc := configMap("c", map[string]string{"k": "1"}, nil)
	changedB := configMap("b", map[string]string{"k": "2"}, nil)
	unnamed := configMap("", nil, nil)
	noNamespace := configMap("x", nil, nil)
	noNamespace.SetNamespace("")

	t.Run("bad objects", func(t *testing.T) {
		f := newFakeTarget(t)
		for obj, want := range map[*unstructured.Unstructured]string{
			unnamed:     "a ConfigMap to check for drift has no name",
			noNamespace: "ConfigMap x has no namespace",
		} {
			if _, err := NewChecker(f.client, f.mapper, manager).Check(context.Background(), []*unstructured.Unstructured{a, obj}); err == nil || err.Error() != want {
				t.Errorf("err %v, want %s", err, want)
			}
		}
	})
	t.Run("the mapper fails", func(t *testing.T) {
		f := newFakeTarget(t)
		_, err := NewChecker(f.client, failingMapper{f.mapper}, manager).Check(context.Background(), []*unstructured.Unstructured{a})
		if err == nil || !strings.Contains(err.Error(), "reading the kinds the target serves failed: discovery is down") {
			t.Errorf("err %v", err)
		}
	})
	t.Run("dry-runs fail", func(t *testing.T) {
		f := newFakeTarget(t, live(a, "ua"), live(b, "ub"), live(cc, "uc"))
		f.failDryRun["a"] = apierrors.NewForbidden(configMaps.GroupResource(), "a", errors.New("no"))
		f.failDryRun["c"] = errors.New("connection reset")
		r, err := NewChecker(f.client, f.mapper, manager).Check(context.Background(), []*unstructured.Unstructured{a, changedB, cc})
		if err == nil || !strings.HasPrefix(err.Error(), "checking 2 objects for drift failed; the first, ConfigMap demo/a: the server-side apply dry-run failed:") {
			t.Errorf("err %v", err)
		}
		// The object that could be checked is in the report.
		if r.Checked != 3 || len(r.Drifted) != 1 || r.Drifted[0].Name != "b" {
			t.Errorf("report %+v", r)
		}
		f.failDryRun["c"] = nil
		_, err = NewChecker(f.client, f.mapper, manager).Check(context.Background(), []*unstructured.Unstructured{a})
		if err == nil || !strings.HasPrefix(err.Error(), "checking ConfigMap demo/a for drift failed: the server-side apply dry-run failed: ") {
			t.Errorf("err %v", err)
		}
	})
	t.Run("the answer lacks the pack's fields", func(t *testing.T) {
		f := newFakeTarget(t, live(a, "ua"))
		f.noEntry = true
		_, err := NewChecker(f.client, f.mapper, manager).Check(context.Background(), []*unstructured.Unstructured{a})
		if err == nil || !strings.Contains(err.Error(), "answered without the field manager's fields") {
			t.Errorf("err %v", err)
		}
	})
	t.Run("reads fail", func(t *testing.T) {
		f := newFakeTarget(t, live(a, "ua"), live(b, "ub"))
		f.client.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("timeout")
		})
		f.client.PrependReactor("get", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("timeout")
		})
		ns := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]interface{}{"name": "demo"}}}
		_, err := NewChecker(f.client, f.mapper, manager).Check(context.Background(), []*unstructured.Unstructured{a, b, ns})
		want := "checking 3 objects for drift failed; the first, ConfigMap demo/a: listing configmaps in namespace demo failed: timeout"
		if err == nil || err.Error() != want {
			t.Errorf("err %v\nwant %s", err, want)
		}
		_, err = NewChecker(f.client, f.mapper, manager).Check(context.Background(), []*unstructured.Unstructured{ns})
		if want := "checking Namespace demo for drift failed: reading it failed: timeout"; err == nil || err.Error() != want {
			t.Errorf("err %v\nwant %s", err, want)
		}
	})
}

// The mapper is asked once per kind in a Check, not once per object.
func TestCheckMapsEachKindOnce(t *testing.T) {
	var objects []*unstructured.Unstructured
	for i := 0; i < 3; i++ {
		objects = append(objects, configMap(fmt.Sprintf("cm-%d", i), map[string]string{"k": "1"}, nil))
	}
	widget := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]interface{}{"namespace": "demo"}}}
	for _, name := range []string{"w1", "w2"} {
		w := widget.DeepCopy()
		w.SetName(name)
		objects = append(objects, w)
	}
	f := newFakeTarget(t)
	m := &countingMapper{RESTMapper: f.mapper}
	if _, err := NewChecker(f.client, m, manager).Check(context.Background(), objects); err != nil {
		t.Fatal(err)
	}
	if m.calls != 2 {
		t.Errorf("%d RESTMapping calls for two kinds", m.calls)
	}
}

type countingMapper struct {
	meta.RESTMapper
	calls int
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.calls++
	return m.RESTMapper.RESTMapping(gk, versions...)
}

// failingMapper fails for every kind with an error other than NoMatch, as when discovery is
// down.
type failingMapper struct{ meta.RESTMapper }

func (failingMapper) RESTMapping(schema.GroupKind, ...string) (*meta.RESTMapping, error) {
	return nil, errors.New("discovery is down")
}

func TestSharedLabels(t *testing.T) {
	items := func(labels ...map[string]string) []*item {
		var out []*item
		for _, l := range labels {
			out = append(out, &item{want: configMap("x", nil, l)})
		}
		return out
	}
	for _, tt := range []struct {
		items []*item
		want  string
	}{
		{items(map[string]string{"a": "1", "b": "2"}, map[string]string{"a": "1", "b": "3"}), "a=1"},
		{items(map[string]string{"a": "1"}, nil), ""},
		{items(map[string]string{"a": "1", "b": "2"}, map[string]string{"b": "2", "a": "1"}), "a=1,b=2"},
		{items(map[string]string{"bad key!": "1"}, map[string]string{"bad key!": "1"}), ""},
	} {
		if got := sharedLabels(tt.items); got != tt.want {
			t.Errorf("sharedLabels = %q, want %q", got, tt.want)
		}
	}
}
