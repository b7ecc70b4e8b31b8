package drift

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestBaselines(t *testing.T) {
	var b baselines
	key := objectKey{kind: "ConfigMap", namespace: "demo", name: "cfg"}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	applied, owned := fingerprint{1}, fingerprint{2}
	if b.clean(key, "u1", applied, owned, t0) {
		t.Fatal("clean without a baseline")
	}
	b.record(key, baseline{uid: "u1", applied: applied, owned: owned, used: t0})
	if !b.clean(key, "u1", applied, owned, t0.Add(time.Minute)) {
		t.Error("not clean with the same UID and digests")
	}
	for name, ok := range map[string]bool{
		"another UID":            b.clean(key, "u2", applied, owned, t0),
		"another applied object": b.clean(key, "u1", fingerprint{3}, owned, t0),
		"other owned fields":     b.clean(key, "u1", applied, fingerprint{3}, t0),
		"another object":         b.clean(objectKey{kind: "ConfigMap", namespace: "demo", name: "other"}, "u1", applied, owned, t0),
	} {
		if ok {
			t.Errorf("clean with %s", name)
		}
	}

	// clean marked the baseline used a minute in: it outlives a cut-off before that.
	b.expire(t0.Add(30 * time.Second))
	if b.len() != 1 {
		t.Fatal("a baseline used after the cut-off expired")
	}
	b.expire(t0.Add(2 * time.Minute))
	if b.len() != 0 {
		t.Fatal("a baseline unused since before the cut-off stayed")
	}

	b.record(key, baseline{uid: "u1", applied: applied, owned: owned, used: t0})
	b.forget(objectKey{name: "unrelated"}, key)
	if b.len() != 0 {
		t.Error("forget kept the baseline")
	}
}

func TestAppliedFingerprint(t *testing.T) {
	a := &unstructured.Unstructured{Object: map[string]interface{}{"kind": "ConfigMap", "data": map[string]interface{}{"a": "1", "b": "2"}}}
	b := &unstructured.Unstructured{Object: map[string]interface{}{"data": map[string]interface{}{"b": "2", "a": "1"}, "kind": "ConfigMap"}}
	c := &unstructured.Unstructured{Object: map[string]interface{}{"kind": "ConfigMap", "data": map[string]interface{}{"a": "1", "b": "3"}}}
	fa, err := appliedFingerprint(a)
	if err != nil {
		t.Fatal(err)
	}
	fb, _ := appliedFingerprint(b)
	fc, _ := appliedFingerprint(c)
	if fa != fb || fa == fc {
		t.Errorf("equal objects %v, different objects %v", fa == fb, fa != fc)
	}
	if _, err := appliedFingerprint(&unstructured.Unstructured{Object: map[string]interface{}{"bad": func() {}}}); err == nil {
		t.Error("no error for an object JSON cannot hold")
	}
}

func TestOwnedFingerprint(t *testing.T) {
	entry := func(apiVersion, fields string) *metav1.ManagedFieldsEntry {
		return &metav1.ManagedFieldsEntry{APIVersion: apiVersion, FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
	}
	base := ownedFingerprint(entry("v1", `{"f:data":{}}`))
	if base != ownedFingerprint(entry("v1", `{"f:data":{}}`)) {
		t.Error("equal entries digest differently")
	}
	for name, other := range map[string]fingerprint{
		"no entry":          ownedFingerprint(nil),
		"another version":   ownedFingerprint(entry("v2", `{"f:data":{}}`)),
		"other fields":      ownedFingerprint(entry("v1", `{"f:spec":{}}`)),
		"no fields":         ownedFingerprint(&metav1.ManagedFieldsEntry{APIVersion: "v1"}),
		"version in fields": ownedFingerprint(entry("", `v1{"f:data":{}}`)),
	} {
		if other == base {
			t.Errorf("%s digests like the entry", name)
		}
	}
	// The time of the entry is not part of it: a re-apply that changes nothing keeps the digest.
	withTime := entry("v1", `{"f:data":{}}`)
	withTime.Time = &metav1.Time{Time: time.Now()}
	withTime.Manager, withTime.Operation = "plinth-packs", metav1.ManagedFieldsOperationApply
	if ownedFingerprint(withTime) != base {
		t.Error("the entry's time or manager changed the digest")
	}
}
