package ociartifact

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/crane"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/oci/artifact"
)

// deleteTag deletes the artifact's tag behind the controller's back, as a person or a lost
// registry volume would.
func (h *harness) deleteTag(tag string) {
	h.t.Helper()
	if err := artifact.DeleteTag(context.Background(), h.reg.Endpoint, "team-a/app", tag); err != nil {
		h.t.Fatal(err)
	}
	if _, found, err := artifact.Lookup(context.Background(), h.reg.Endpoint, "team-a/app", tag); err != nil || found {
		h.t.Fatalf("tag %s still there: %v %v", tag, found, err)
	}
}

// A pushed version whose tag disappears from the registry is put back at the next resync, not
// on every poll: the status alone does not say the registry still holds it. The pushed
// manifest goes back under the tag, the same digest; a registry that lost the manifest too
// gets the version pushed again.
func TestPushesAgainWhatTheRegistryLost(t *testing.T) {
	h := newHarness(t, newArtifact(t))
	pushed := h.step().Status
	h.events()
	h.deleteTag("1.0.0")

	// A poll before the resync period trusts what it checked last.
	h.clock.Step(DefaultResyncPeriod - time.Second)
	h.step()
	if tags := h.tags(); len(tags) != 0 {
		t.Fatalf("tags %v: looked at the registry before the resync period", tags)
	}

	h.clock.Step(time.Second)
	art := h.step()
	tagged, found, err := artifact.Lookup(context.Background(), h.reg.Endpoint, "team-a/app", "1.0.0")
	if err != nil || !found {
		t.Fatalf("tag 1.0.0 not put back: %v %v", found, err)
	}
	st := art.Status
	if tagged.Digest != pushed.Digest || st.Digest != pushed.Digest || st.Revision != pushed.Revision {
		t.Errorf("status digest %s revision %s, registry %s; pushed first %s", st.Digest, st.Revision, tagged.Digest, pushed.Digest)
	}
	if st.PushedAt == nil || !st.PushedAt.Equal(pushed.PushedAt) {
		t.Errorf("pushedAt %v, want %v (the same manifest as pushed then)", st.PushedAt, pushed.PushedAt)
	}
	expectCondition(t, art, gitopsv1alpha1.ConditionPushed, metav1.ConditionTrue, gitopsv1alpha1.ReasonPushed)
	expectCondition(t, art, gitopsv1alpha1.ConditionReady, metav1.ConditionTrue, gitopsv1alpha1.ReasonDelivered)
	if meta.FindStatusCondition(art.Status.Conditions, gitopsv1alpha1.ConditionTagMoved) != nil {
		t.Error("a deleted tag is reported as moved")
	}
	if evs := h.events(); !slices.Contains(evs, "Normal Pushed Version 1.0.0 was missing from oci://"+h.reg.Endpoint+
		"/team-a/app:1.0.0 (deleted from the registry); put back as "+pushed.Digest+".") {
		t.Errorf("events %v, want the tag put back", evs)
	}

	// After a start, the first reconcile looks (nothing in memory says when it last did); a
	// registry that lost the manifest itself gets the version pushed again, as a new digest.
	h.deleteTag("1.0.0")
	h.deleteManifest(pushed.Digest)
	h.c.checked = nil
	art = h.step()
	if tags := h.tags(); !slices.Equal(tags, []string{"1.0.0"}) {
		t.Errorf("tags %v after a start, want 1.0.0 pushed again", tags)
	}
	tagged, _, _ = artifact.Lookup(context.Background(), h.reg.Endpoint, "team-a/app", "1.0.0")
	if art.Status.Digest != tagged.Digest || art.Status.Digest == pushed.Digest || art.Status.Revision != pushed.Revision {
		t.Errorf("status digest %s, registry %s, first push %s", art.Status.Digest, tagged.Digest, pushed.Digest)
	}
	if evs := h.events(); !slices.Contains(evs, "Normal Pushed Version 1.0.0 was missing from oci://"+h.reg.Endpoint+
		"/team-a/app:1.0.0 (deleted from the registry); pushed again as "+art.Status.Digest+".") {
		t.Errorf("events %v, want the push again", evs)
	}
}

// deleteManifest deletes a manifest by digest behind the controller's back, as a lost
// registry volume would.
func (h *harness) deleteManifest(digest string) {
	h.t.Helper()
	if err := crane.Delete(h.reg.Endpoint + "/team-a/app@" + digest); err != nil {
		h.t.Fatal(err)
	}
}

// pushOver pushes files under tag straight to the registry, with the revision annotation
// given, as any process that can write to the registry could.
func (h *harness) pushOver(tag string, files map[string][]byte, revision string) string {
	h.t.Helper()
	digest, err := artifact.Push(context.Background(), h.reg.Endpoint, "team-a/app", tag, files,
		artifact.Metadata{Source: artifact.Source("team-a", "app"), Revision: revision})
	if err != nil {
		h.t.Fatal(err)
	}
	return digest
}

var evilFiles = map[string][]byte{"000-configmap-evil.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: evil\n  namespace: shop\n")}

// A check that finds the tag as pushed changes nothing. One that finds the tag moved to
// another manifest — here other files under the very revision annotation of the pushed
// version, which anyone who can write to the registry can copy — never takes it for the
// version: the pushed manifest goes back under the tag (the same digest), TagMoved says so,
// a Warning event names the tag, and only the pushed version is delivered.
func TestRecheckFindsTheTagMoved(t *testing.T) {
	h := newHarness(t, newArtifact(t))
	pushed := h.step().Status
	h.kubectl.took()
	h.events()

	h.clock.Step(DefaultResyncPeriod)
	h.plinth.ClearActions()
	art := h.step()
	if art.Status.Digest != pushed.Digest || len(h.events()) != 0 {
		t.Errorf("found as pushed: digest %s (was %s), events %v", art.Status.Digest, pushed.Digest, h.events())
	}
	for _, a := range h.plinth.Actions() {
		if a.GetVerb() == "update" {
			t.Errorf("found as pushed: %s %s", a.GetVerb(), a.GetSubresource())
		}
	}
	h.kubectl.took()

	foreign := h.pushOver("1.0.0", evilFiles, pushed.Revision)
	if tagged, _, _ := artifact.Lookup(context.Background(), h.reg.Endpoint, "team-a/app", "1.0.0"); tagged.Revision != pushed.Revision {
		t.Fatalf("the foreign push has revision %s, want the pushed %s", tagged.Revision, pushed.Revision)
	}
	h.clock.Step(DefaultResyncPeriod)
	art = h.step()
	if art.Status.Digest != pushed.Digest || art.Status.Revision != pushed.Revision || !art.Status.PushedAt.Equal(pushed.PushedAt) {
		t.Errorf("status %s %s %v, want the pushed %s %s %v", art.Status.Digest, art.Status.Revision, art.Status.PushedAt,
			pushed.Digest, pushed.Revision, pushed.PushedAt)
	}
	if tagged, _, _ := artifact.Lookup(context.Background(), h.reg.Endpoint, "team-a/app", "1.0.0"); tagged.Digest != pushed.Digest {
		t.Errorf("the tag points to %s, want the pushed %s back", tagged.Digest, pushed.Digest)
	}
	url := "oci://" + h.reg.Endpoint + "/team-a/app:1.0.0"
	want := "Tag 1.0.0 in " + url + " pointed to " + foreign + " instead of the pushed " + pushed.Digest + "; the pushed version is back under the tag."
	if c := expectCondition(t, art, gitopsv1alpha1.ConditionTagMoved, metav1.ConditionTrue, gitopsv1alpha1.ReasonRestored); c.Message != want {
		t.Errorf("TagMoved message %q, want %q", c.Message, want)
	}
	expectCondition(t, art, gitopsv1alpha1.ConditionPushed, metav1.ConditionTrue, gitopsv1alpha1.ReasonPushed)
	expectCondition(t, art, gitopsv1alpha1.ConditionReady, metav1.ConditionTrue, gitopsv1alpha1.ReasonDelivered)
	if evs := h.events(); !slices.Contains(evs, "Warning TagMoved "+want) || slices.ContainsFunc(evs, func(e string) bool { return strings.Contains(e, "Adopted") }) {
		t.Errorf("events %v, want the TagMoved warning and no adoption", evs)
	}
	for _, d := range h.kubectl.took() {
		if d.Digest != pushed.Digest {
			t.Errorf("delivered %s, want only the pushed %s", d.Digest, pushed.Digest)
		}
	}

	// The condition stays while the version does (the report outlives the repair) and goes
	// with the next version.
	h.clock.Step(DefaultResyncPeriod)
	art = h.step()
	expectCondition(t, art, gitopsv1alpha1.ConditionTagMoved, metav1.ConditionTrue, gitopsv1alpha1.ReasonRestored)
	h.edit(true, func(a *gitopsv1alpha1.OCIArtifact) { a.Spec.Version, a.Spec.Tag = "1.1.0", "" })
	art = h.step()
	if c := meta.FindStatusCondition(art.Status.Conditions, gitopsv1alpha1.ConditionTagMoved); c != nil {
		t.Errorf("TagMoved after another version was pushed: %+v", c)
	}
}

// Asking the artifact to reconcile looks at the registry at once, without waiting for the
// resync period.
func TestReconcileRequestLooksAtTheRegistry(t *testing.T) {
	h := newHarness(t, newArtifact(t))
	pushed := h.step().Status
	foreign := h.pushOver("1.0.0", evilFiles, pushed.Revision)
	h.clock.Step(time.Minute)
	h.step()
	if tagged, _, _ := artifact.Lookup(context.Background(), h.reg.Endpoint, "team-a/app", "1.0.0"); tagged.Digest != foreign {
		t.Fatalf("looked at the registry before the resync period without a request")
	}
	h.edit(false, func(a *gitopsv1alpha1.OCIArtifact) {
		a.Annotations = map[string]string{gitopsv1alpha1.ReconcileRequestAnnotation: "now"}
	})
	art := h.step()
	expectCondition(t, art, gitopsv1alpha1.ConditionTagMoved, metav1.ConditionTrue, gitopsv1alpha1.ReasonRestored)
	if tagged, _, _ := artifact.Lookup(context.Background(), h.reg.Endpoint, "team-a/app", "1.0.0"); tagged.Digest != pushed.Digest {
		t.Errorf("the tag points to %s, want the pushed %s back", tagged.Digest, pushed.Digest)
	}
}

// A moved tag whose pushed manifest the registry no longer has gets the version pushed again
// (a new digest, which the targets then get); one the registry refuses to put back is
// PushFailed, retried, with TagMoved saying why.
func TestMovedTagThatCannotBeRestored(t *testing.T) {
	h := newHarness(t, newArtifact(t))
	pushed := h.step().Status
	h.kubectl.took()
	h.events()
	foreign := h.pushOver("1.0.0", evilFiles, pushed.Revision)
	h.deleteManifest(pushed.Digest)
	h.clock.Step(DefaultResyncPeriod)
	art := h.step()
	tagged, _, _ := artifact.Lookup(context.Background(), h.reg.Endpoint, "team-a/app", "1.0.0")
	if art.Status.Digest == pushed.Digest || art.Status.Digest == foreign || tagged.Digest != art.Status.Digest {
		t.Errorf("status digest %s, registry %s; pushed %s, foreign %s", art.Status.Digest, tagged.Digest, pushed.Digest, foreign)
	}
	c := expectCondition(t, art, gitopsv1alpha1.ConditionTagMoved, metav1.ConditionTrue, gitopsv1alpha1.ReasonPushedAgain)
	if !strings.HasSuffix(c.Message, "which the registry no longer has; the version is pushed again as "+art.Status.Digest+".") {
		t.Errorf("message %q", c.Message)
	}
	if d := h.kubectl.took(); len(d) != 1 || d[0].Digest != art.Status.Digest {
		t.Errorf("delivered %+v, want the version pushed again", d)
	}
	h.events()

	h.pushOver("1.0.0", evilFiles, pushed.Revision)
	h.reg.FailWrites(true)
	h.clock.Step(DefaultResyncPeriod)
	if err := h.reconcile(); err == nil {
		t.Error("a failed restore is not retried")
	}
	art = h.get()
	expectCondition(t, art, gitopsv1alpha1.ConditionTagMoved, metav1.ConditionTrue, gitopsv1alpha1.ReasonRestoreFailed)
	expectCondition(t, art, gitopsv1alpha1.ConditionPushed, metav1.ConditionFalse, gitopsv1alpha1.ReasonPushFailed)
	if evs := h.events(); !slices.ContainsFunc(evs, func(e string) bool { return strings.HasPrefix(e, "Warning TagMoved Tag 1.0.0 in") }) {
		t.Errorf("events %v, want a TagMoved warning", evs)
	}
	if len(h.kubectl.took()) != 0 {
		t.Error("delivered while the tag points elsewhere and could not be put back")
	}
	h.reg.FailWrites(false)
	art = h.step()
	expectCondition(t, art, gitopsv1alpha1.ConditionTagMoved, metav1.ConditionTrue, gitopsv1alpha1.ReasonRestored)
	expectCondition(t, art, gitopsv1alpha1.ConditionReady, metav1.ConditionTrue, gitopsv1alpha1.ReasonDelivered)
}

// A tag found holding the version's revision annotation before any status recorded a push
// (a lost status write, or someone else first) is adopted only when it holds the version's
// files: other files under the same annotation are refused as other content, never adopted.
func TestNoAdoptionByAnnotation(t *testing.T) {
	h := newHarness(t, newArtifact(t))
	objects, files, err := newPass(h.c, h.get()).gather()
	if err != nil || len(objects) != 2 {
		t.Fatal(err)
	}
	revision := artifact.Revision("1.0.0", files)
	foreign := h.pushOver("1.0.0", evilFiles, revision)
	art := h.refused()
	c := expectCondition(t, art, gitopsv1alpha1.ConditionPushed, metav1.ConditionFalse, gitopsv1alpha1.ReasonVersionImmutable)
	if !strings.Contains(c.Message, "with other content (manifest "+foreign+")") {
		t.Errorf("message %q", c.Message)
	}
	if art.Status.Digest != "" || len(h.kubectl.took()) != 0 {
		t.Errorf("recorded %q, delivered anyway", art.Status.Digest)
	}
	if evs := h.events(); slices.ContainsFunc(evs, func(e string) bool { return strings.Contains(e, "Adopted") }) {
		t.Errorf("events %v: adopted by its annotation", evs)
	}
}

// A check the registry does not answer keeps the version pushed and delivered, and the next
// reconcile looks again rather than waiting for another resync period.
func TestRecheckWithTheRegistryDown(t *testing.T) {
	h := newHarness(t, newArtifact(t))
	pushed := h.step().Status
	h.kubectl.took()

	h.reg.Stop()
	h.clock.Step(DefaultResyncPeriod)
	art := h.step()
	expectCondition(t, art, gitopsv1alpha1.ConditionPushed, metav1.ConditionTrue, gitopsv1alpha1.ReasonPushed)
	expectCondition(t, art, gitopsv1alpha1.ConditionReady, metav1.ConditionTrue, gitopsv1alpha1.ReasonDelivered)
	if art.Status.Digest != pushed.Digest || len(h.kubectl.took()) != 1 {
		t.Errorf("digest %s, want %s, and a delivery", art.Status.Digest, pushed.Digest)
	}

	h.reg.Restart()
	h.deleteTag("1.0.0")
	h.step()
	if tags := h.tags(); !slices.Equal(tags, []string{"1.0.0"}) {
		t.Errorf("tags %v, want 1.0.0 pushed again on the reconcile after the failed check", tags)
	}
}

// tickingClock moves a second forward every time it is read, as time passes during a push.
type tickingClock struct{ *testingclock.FakeClock }

func (c tickingClock) Now() time.Time {
	c.Step(time.Second)
	return c.FakeClock.Now()
}

// status.pushedAt is when the push completed, not when the reconcile that pushed began.
func TestPushedAtIsWhenThePushCompleted(t *testing.T) {
	h := newHarness(t, newArtifact(t))
	h.c.clock = tickingClock{h.clock}
	art := h.step()
	began := expectCondition(t, art, gitopsv1alpha1.ConditionPushed, metav1.ConditionTrue, gitopsv1alpha1.ReasonPushed).LastTransitionTime
	if art.Status.PushedAt == nil || !art.Status.PushedAt.After(began.Time) {
		t.Errorf("pushedAt %v, want after the reconcile began (%v)", art.Status.PushedAt, began)
	}
}

// Deleting the artifact deletes its tag only while it points to the pushed manifest: a tag
// that points to another manifest, whatever its annotation says, is not the artifact's.
func TestDeletionLeavesAForeignTag(t *testing.T) {
	h := newHarness(t, newArtifact(t))
	pushed := h.step().Status
	foreign := h.pushOver("1.0.0", evilFiles, pushed.Revision)
	h.markDeleted()
	if err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if tagged, found, _ := artifact.Lookup(context.Background(), h.reg.Endpoint, "team-a/app", "1.0.0"); !found || tagged.Digest != foreign {
		t.Errorf("tag found %v as %s, want the foreign %s left alone", found, tagged.Digest, foreign)
	}
}
