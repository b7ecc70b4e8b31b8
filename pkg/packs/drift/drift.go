// Package drift finds what changed on a target cluster in the objects an infrastructure pack
// applied there with server-side apply: objects deleted, and fields the pack set that someone
// changed or removed. Fields only other managers set (a label a person added, a controller's
// annotation) and status are not drift.
//
// # Method
//
// A Check reads the live objects with one request per resource and namespace: a list, narrowed
// by the labels all expected objects of that resource and namespace share (a pack's own labels,
// when it sets some), with a GET for an object the list lacks (someone may have removed such a
// label), or a GET when only one object is expected there. A kind the target does not serve
// makes its objects missing.
//
// Deciding whether a present object drifted needs the set of fields the pack's object sets, in
// the server's terms (lists by merge key, say a container by name), and the values the
// server would store for them (defaults, normalised quantities). A server-side apply dry-run
// of the expected object with the pack's field manager and force gives both at once: the
// answer is the object as it would be after re-applying, and its managedFields entry of the
// pack's manager holds exactly the fields the apply sets. Every leaf of that set whose value
// the live object lacks is a removed field (reported at its shortest missing prefix, so a
// removed container is one path); every one whose value differs is a changed field, and the
// live object's managedFields name the managers that own it now. Forcing is why one request
// suffices: without force, a field another manager took over answers 409 with the conflicting
// fields and managers but without the object, so removed fields would need a second request.
// Paths are in the API server's own notation (".spec.replicas",
// `.spec.template.spec.containers[name="web"].image`), as in its conflict messages.
//
// A dry-run costs a request and the server's apply work, too much for every object on every
// pass. So after a clean check the Checker keeps a baseline of the object: the live UID, a
// digest of the applied object, and a digest of the pack's Apply entry in managedFields (API
// version and fieldsV1). While all three are unchanged, the object is clean without a dry-run,
// because server-side apply records every change to a field the pack owns in that entry: an
// update by another manager that changes the field's value moves its ownership to that
// manager, a forced apply by another manager does the same, a removal drops it from every
// manager's set, and a delete and re-create changes the UID. Only a baseline from a check in
// which the pack owned every field it sets is kept: a field another manager took over, even
// at the same value, is not in the pack's entry any more, so a later change of it would not
// show there, and such an object is dry-run on every pass. A drifted object keeps no baseline
// either. What escapes the baseline is a write that hands in managedFields of its own making,
// or another client applying with the pack's field manager name.
//
// Steady state is then one list per resource and namespace and a digest per object; the first
// pass, and objects that changed, pay a dry-run each. Baselines are kept per object across
// Checks, so one Checker should serve a target cluster for as long as its clients do; Forget
// drops those of objects a pack no longer has, and baselines unused for an hour go by
// themselves.
package drift

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// workers is how many requests a Check has in flight at once.
const workers = 8

// Checker compares the objects a pack applied with what a target cluster holds now. One
// Checker serves one target cluster; it is safe for concurrent use.
type Checker struct {
	client       dynamic.Interface
	mapper       meta.RESTMapper
	fieldManager string
	baselines    baselines
	now          func() time.Time
}

// NewChecker returns a Checker of the objects applied with server-side apply as fieldManager
// on the cluster client and mapper reach.
func NewChecker(client dynamic.Interface, mapper meta.RESTMapper, fieldManager string) *Checker {
	return &Checker{client: client, mapper: mapper, fieldManager: fieldManager, now: time.Now}
}

// item is one expected object during a Check.
type item struct {
	want *unstructured.Unstructured
	key  objectKey
	// resource reaches the object's collection; nil when the target does not serve its kind.
	resource dynamic.ResourceInterface
	// live is the object on the target, nil when it is missing.
	live *unstructured.Unstructured
	// applied is the digest of want.
	applied fingerprint
	drift   *ObjectDrift
	err     error
}

// collection is the expected objects of one resource in one namespace.
type collection struct {
	gvr       schema.GroupVersionResource
	namespace string
	items     []*item
}

// Check compares each expected object, placed as the pack applied it (namespace set for
// namespaced kinds), with the live one on the target. On error the report covers the objects
// that could be checked, and the error names the first that could not.
func (c *Checker) Check(ctx context.Context, expected []*unstructured.Unstructured) (Report, error) {
	now := c.now()
	c.baselines.expire(now.Add(-baselineRetention))

	items, collections, err := c.resolve(expected)
	if err != nil {
		return Report{}, err
	}
	parallel(len(collections), func(i int) { c.read(ctx, collections[i]) })

	var dryRuns []*item
	for _, it := range items {
		switch {
		case it.err != nil:
		case it.live == nil:
			c.baselines.forget(it.key)
			it.drift = &ObjectDrift{APIVersion: it.want.GetAPIVersion(), Kind: it.want.GetKind(),
				Namespace: it.want.GetNamespace(), Name: it.want.GetName(), Missing: true}
		default:
			if it.applied, err = appliedFingerprint(it.want); err != nil {
				it.err = err
				continue
			}
			owned := ownedFingerprint(c.applyEntry(it.live.GetManagedFields()))
			if !c.baselines.clean(it.key, it.live.GetUID(), it.applied, owned, now) {
				dryRuns = append(dryRuns, it)
			}
		}
	}
	parallel(len(dryRuns), func(i int) { c.compare(ctx, dryRuns[i], now) })

	report := Report{Checked: len(items)}
	var failed []*item
	for _, it := range items {
		if it.err != nil {
			failed = append(failed, it)
		} else if it.drift != nil {
			report.Drifted = append(report.Drifted, *it.drift)
		}
	}
	if len(failed) > 0 {
		first := failed[0]
		err := fmt.Errorf("checking %s for drift failed: %w", describe(first.want), first.err)
		if len(failed) > 1 {
			err = fmt.Errorf("checking %d objects for drift failed; the first, %s: %w", len(failed), describe(first.want), first.err)
		}
		return report, err
	}
	return report, nil
}

// Forget drops what the Checker keeps about objects: those a pack no longer applies, so that
// their baselines do not stay until they expire.
func (c *Checker) Forget(objects ...*unstructured.Unstructured) {
	keys := make([]objectKey, 0, len(objects))
	for _, o := range objects {
		keys = append(keys, keyOf(o))
	}
	c.baselines.forget(keys...)
}

// resolve maps the expected objects to their resources and groups them by resource and
// namespace. A later object with the key of an earlier one replaces it. An object whose kind
// the target does not serve gets no resource; one without a name, or namespaced without a
// namespace, is an error, as is a failure to read the target's kinds.
func (c *Checker) resolve(expected []*unstructured.Unstructured) ([]*item, []*collection, error) {
	var items []*item
	byKey := map[objectKey]*item{}
	for _, want := range expected {
		key := keyOf(want)
		if it, ok := byKey[key]; ok {
			it.want = want
			continue
		}
		it := &item{want: want, key: key}
		byKey[key] = it
		items = append(items, it)
	}
	type at struct {
		gvr       schema.GroupVersionResource
		namespace string
	}
	index := map[at]*collection{}
	var collections []*collection
	// A pack has many objects of few kinds; the mapper is asked once per kind.
	mappings := map[schema.GroupVersionKind]*meta.RESTMapping{}
	for _, it := range items {
		if it.want.GetName() == "" {
			return nil, nil, fmt.Errorf("a %s to check for drift has no name", it.want.GetKind())
		}
		gvk := it.want.GroupVersionKind()
		mapping, known := mappings[gvk]
		if !known {
			var err error
			mapping, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			switch {
			case meta.IsNoMatchError(err):
				mapping = nil // the target does not serve the kind
			case err != nil:
				return nil, nil, fmt.Errorf("reading the kinds the target serves failed: %w", err)
			}
			mappings[gvk] = mapping
		}
		if mapping == nil {
			continue
		}
		namespace := ""
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			if namespace = it.want.GetNamespace(); namespace == "" {
				return nil, nil, fmt.Errorf("%s has no namespace", describe(it.want))
			}
			it.resource = c.client.Resource(mapping.Resource).Namespace(namespace)
		} else {
			it.resource = c.client.Resource(mapping.Resource)
		}
		k := at{mapping.Resource, namespace}
		col, ok := index[k]
		if !ok {
			col = &collection{gvr: mapping.Resource, namespace: namespace}
			index[k] = col
			collections = append(collections, col)
		}
		col.items = append(col.items, it)
	}
	return items, collections, nil
}

// read sets each item's live object: from one list of the collection narrowed by the labels
// its objects share, then a GET of each the list lacked when the labels narrowed it; a single
// object is read with a GET alone. A failure is the error of every item it leaves unread.
func (c *Checker) read(ctx context.Context, col *collection) {
	get := func(it *item) {
		live, err := it.resource.Get(ctx, it.want.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			it.err = fmt.Errorf("reading it failed: %w", err)
		default:
			it.live = live
		}
	}
	if len(col.items) == 1 {
		get(col.items[0])
		return
	}
	selector := sharedLabels(col.items)
	list, err := col.items[0].resource.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		for _, it := range col.items {
			it.err = fmt.Errorf("listing %s failed: %w", describeCollection(col), err)
		}
		return
	}
	live := make(map[string]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		live[list.Items[i].GetName()] = &list.Items[i]
	}
	for _, it := range col.items {
		if it.live = live[it.want.GetName()]; it.live == nil && selector != "" {
			get(it)
		}
	}
}

// sharedLabels is the label selector of the labels (key and value) every item's object has;
// "" when there are none.
func sharedLabels(items []*item) string {
	shared := labels.Set(items[0].want.GetLabels())
	for _, it := range items[1:] {
		own := it.want.GetLabels()
		for k, v := range shared {
			if own[k] != v {
				delete(shared, k)
			}
		}
	}
	if len(shared) == 0 {
		return ""
	}
	selector, err := labels.ValidatedSelectorFromSet(shared)
	if err != nil {
		return "" // the labels could not have been applied; list everything instead
	}
	return selector.String()
}

// compare dry-runs the apply of it's expected object and compares the answer with the live
// object (see the package documentation). A clean object that the pack owns entirely gets a
// baseline; any other loses its baseline.
func (c *Checker) compare(ctx context.Context, it *item, now time.Time) {
	c.baselines.forget(it.key)
	want, err := it.resource.Apply(ctx, it.want.GetName(), it.want, metav1.ApplyOptions{
		FieldManager: c.fieldManager, Force: true, DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		it.err = fmt.Errorf("the server-side apply dry-run failed: %w", err)
		return
	}
	wantEntry := c.applyEntry(want.GetManagedFields())
	if wantEntry == nil {
		it.err = errors.New("the server-side apply dry-run answered without the field manager's fields")
		return
	}
	applied, err := parseFieldSet(wantEntry.FieldsV1)
	if err != nil {
		it.err = fmt.Errorf("reading the fields the apply sets failed: %w", err)
		return
	}
	liveEntries := it.live.GetManagedFields()
	changes := diffFields(applied, want.Object, it.live.Object)
	if len(changes) > 0 {
		others, err := parseOwnership(liveEntries, c.isApplyEntry)
		if err != nil {
			it.err = fmt.Errorf("reading the object's managed fields failed: %w", err)
			return
		}
		d := newObjectDrift(it.want.GetAPIVersion(), it.want.GetKind(), it.want.GetNamespace(), it.want.GetName(), changes,
			func(ch fieldChange) []string { return owners(others, ch.path) })
		it.drift = &d
		return
	}
	liveEntry := c.applyEntry(liveEntries)
	if liveEntry == nil || liveEntry.APIVersion != wantEntry.APIVersion {
		return
	}
	owned, err := parseFieldSet(liveEntry.FieldsV1)
	if err != nil || !applied.Difference(owned).Empty() {
		return // fields the pack sets that others own: dry-run again next time
	}
	c.baselines.record(it.key, baseline{uid: it.live.GetUID(), applied: it.applied, owned: ownedFingerprint(liveEntry), used: now})
}

// isApplyEntry says whether e is the pack's Apply entry of the object itself (not of a
// subresource).
func (c *Checker) isApplyEntry(e metav1.ManagedFieldsEntry) bool {
	return e.Manager == c.fieldManager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == ""
}

// applyEntry is the pack's Apply entry among entries, nil if there is none.
func (c *Checker) applyEntry(entries []metav1.ManagedFieldsEntry) *metav1.ManagedFieldsEntry {
	for i := range entries {
		if c.isApplyEntry(entries[i]) {
			return &entries[i]
		}
	}
	return nil
}

// parallel runs f for 0..n-1 with at most workers at once and returns when all are done.
func parallel(n int, f func(i int)) {
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			f(i)
		}()
	}
	wg.Wait()
}

// describe names an object as people read it: "Deployment demo/web", "ClusterRole view".
func describe(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetKind() + " " + u.GetName()
	}
	return u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
}

// describeCollection names a resource in a namespace: "configmaps in namespace demo".
func describeCollection(col *collection) string {
	name := col.gvr.Resource
	if col.gvr.Group != "" {
		name += "." + col.gvr.Group
	}
	if col.namespace == "" {
		return name
	}
	return name + " in namespace " + col.namespace
}
