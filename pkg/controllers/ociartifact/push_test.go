package ociartifact

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

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
	if _, _, found, err := artifact.Lookup(context.Background(), h.reg.Endpoint, "team-a/app", tag); err != nil || found {
		h.t.Fatalf("tag %s still there: %v %v", tag, found, err)
	}
}

// A pushed version whose tag disappears from the registry is pushed again at the next resync,
// not on every poll: the status alone does not say the registry still holds it.
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
	digest, revision, found, err := artifact.Lookup(context.Background(), h.reg.Endpoint, "team-a/app", "1.0.0")
	if err != nil || !found {
		t.Fatalf("tag 1.0.0 not pushed again: %v %v", found, err)
	}
	st := art.Status
	if revision != pushed.Revision || st.Revision != pushed.Revision || st.Digest != digest {
		t.Errorf("status revision %s digest %s, registry %s %s, pushed first %s", st.Revision, st.Digest, revision, digest, pushed.Revision)
	}
	if want := start.Add(DefaultResyncPeriod); st.PushedAt == nil || !st.PushedAt.Time.Equal(want) {
		t.Errorf("pushedAt %v, want %v (the second push)", st.PushedAt, want)
	}
	expectCondition(t, art, gitopsv1alpha1.ConditionPushed, metav1.ConditionTrue, ReasonPushed)
	expectCondition(t, art, gitopsv1alpha1.ConditionReady, metav1.ConditionTrue, ReasonDelivered)
	if evs := h.events(); !slices.ContainsFunc(evs, func(e string) bool {
		return strings.HasPrefix(e, "Normal Pushed Version 1.0.0 was missing from oci://"+h.reg.Endpoint+"/team-a/app:1.0.0") &&
			strings.HasSuffix(e, "pushed again as "+digest+".")
	}) {
		t.Errorf("events %v, want the push again", evs)
	}

	// After a start, the first reconcile looks (nothing in memory says when it last did).
	h.deleteTag("1.0.0")
	h.c.checked = nil
	h.step()
	if tags := h.tags(); !slices.Equal(tags, []string{"1.0.0"}) {
		t.Errorf("tags %v after a start, want 1.0.0 pushed again", tags)
	}
}

// A check that finds the tag as pushed changes nothing; one that finds other content under
// the tag refuses it as a push would (VersionImmutable), and delivers nothing.
func TestRecheckFindsOtherContent(t *testing.T) {
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

	other := map[string][]byte{"000-configmap-other.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n  namespace: shop\n")}
	otherRevision := artifact.Revision("1.0.0", other)
	if _, err := artifact.Push(context.Background(), h.reg.Endpoint, "team-a/app", "1.0.0", other,
		artifact.Metadata{Source: "someone", Revision: otherRevision}); err != nil {
		t.Fatal(err)
	}
	h.clock.Step(DefaultResyncPeriod)
	art = h.step()
	c := expectCondition(t, art, gitopsv1alpha1.ConditionPushed, metav1.ConditionFalse, ReasonVersionImmutable)
	if !strings.Contains(c.Message, "with other content (revision "+otherRevision+")") {
		t.Errorf("message %q", c.Message)
	}
	if len(h.kubectl.took()) != 0 {
		t.Error("delivered although the registry holds other content")
	}
	if _, revision, _, _ := artifact.Lookup(context.Background(), h.reg.Endpoint, "team-a/app", "1.0.0"); revision != otherRevision {
		t.Errorf("the tag was overwritten: %s", revision)
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
	expectCondition(t, art, gitopsv1alpha1.ConditionPushed, metav1.ConditionTrue, ReasonPushed)
	expectCondition(t, art, gitopsv1alpha1.ConditionReady, metav1.ConditionTrue, ReasonDelivered)
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
	began := expectCondition(t, art, gitopsv1alpha1.ConditionPushed, metav1.ConditionTrue, ReasonPushed).LastTransitionTime
	if art.Status.PushedAt == nil || !art.Status.PushedAt.After(began.Time) {
		t.Errorf("pushedAt %v, want after the reconcile began (%v)", art.Status.PushedAt, began)
	}
}
