package pendingadoption_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
	gt "github.com/plinth-dev/plinth/pkg/registry/governance/governancetest"
)

const ns = "team-a"

// found is a registry with a VM found on Cluster local as instance 7 of redis.
func found(t *testing.T, etcd *gt.Etcd) *gt.Env {
	env := etcd.New(t)
	env.SeedService(ns, "shop", "redis", governance.EnvironmentTest)
	env.SeedCluster("local")
	vm := gt.VM("", "redis")
	candidate := &governance.PendingAdoption{
		ObjectMeta: metav1.ObjectMeta{Name: "local-team-a-shop-redis-07"},
		Spec: governance.PendingAdoptionSpec{Cluster: "local", VMName: "team-a-shop-redis-07", SystemServiceRef: vm.Spec.SystemServiceRef,
			Instance: 7, VMSpec: vm.Spec},
	}
	if _, err := env.Stores.Adoptions.Create(gt.As(ns, gt.RuntimeUser), candidate, rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return env
}

// adoptions lists the candidates left in the namespace.
func adoptions(t *testing.T, env *gt.Env) int {
	t.Helper()
	obj, err := env.Stores.Adoptions.List(gt.As(ns, "admin"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return len(obj.(*governance.PendingAdoptionList).Items)
}

// TestAdoptRunsAdmission checks that an adoption passes validating admission before it takes
// effect, and that a dry run answers with the ManagedVM it would create and changes nothing.
func TestAdoptRunsAdmission(t *testing.T) {
	etcd := gt.RunEtcd(t)
	dana := gt.As(ns, "dana", "platform:admins")
	req := &governance.AdoptionRequest{VMName: "cache-7", Reason: "found running"}

	t.Run("denied", func(t *testing.T) {
		env := found(t, etcd)
		before := env.Snapshot(ns)
		denied := apierrors.NewForbidden(governance.Resource("pendingadoptions"), "", errors.New("adoptions are frozen"))
		var seen []runtime.Object
		deny := func(_ context.Context, obj runtime.Object) error { seen = append(seen, obj); return denied }
		if _, err := env.Adopt.Create(dana, "local-team-a-shop-redis-07", req, deny, &metav1.CreateOptions{}); !errors.Is(err, denied) {
			t.Fatalf("a denied adoption: %v", err)
		}
		if diff := cmp.Diff([]runtime.Object{req}, seen); diff != "" {
			t.Errorf("admission was not shown the request (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(before, env.Snapshot(ns)); diff != "" || adoptions(t, env) != 1 {
			t.Errorf("a denied adoption changed state (-before +after):\n%s", diff)
		}
	})

	t.Run("dry run", func(t *testing.T) {
		env := found(t, etcd)
		before := env.Snapshot(ns)
		obj, err := env.Adopt.Create(dana, "local-team-a-shop-redis-07", req, rest.ValidateAllObjectFunc, &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatalf("a dry-run adoption: %v", err)
		}
		want := gt.VMView{Name: "cache-7", InstanceType: "u1.medium", Instance: 7, InstanceName: "team-a-shop-redis-07", Phase: governance.VMPhaseCreating,
			Cluster: "local", ApprovedRevision: 1, Approved: "True/Adopted", Finalizers: []string{"governance.plinth.dev/delete-approval"}}
		if diff := cmp.Diff(want, gt.ViewVM(obj.(*governance.ManagedVM))); diff != "" {
			t.Errorf("the response is not the VM the adoption would create (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(before, env.Snapshot(ns)); diff != "" || adoptions(t, env) != 1 {
			t.Errorf("a dry-run adoption changed state (-before +after):\n%s", diff)
		}
		// What the dry run showed is what the adoption does.
		obj, err = env.Adopt.Create(dana, "local-team-a-shop-redis-07", req, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("adoption: %v", err)
		}
		if diff := cmp.Diff(want, gt.ViewVM(obj.(*governance.ManagedVM))); diff != "" || adoptions(t, env) != 0 || env.NextInstance(ns, "redis") != 8 {
			t.Errorf("the adoption differs from its dry run (-want +got):\n%s", diff)
		}
	})
}

// TestAdoptMatchesURLName checks that admission judges the candidate the flow adopts: a body
// whose metadata.name names another candidate is refused before admission and changes
// nothing, and an unnamed body is shown to admission with the URL's name.
func TestAdoptMatchesURLName(t *testing.T) {
	etcd := gt.RunEtcd(t)
	dana := gt.As(ns, "dana", "platform:admins")
	const candidate = "local-team-a-shop-redis-07"
	env := found(t, etcd)
	before := env.Snapshot(ns)
	var seen []runtime.Object
	watch := func(_ context.Context, obj runtime.Object) error { seen = append(seen, obj); return nil }

	other := &governance.AdoptionRequest{ObjectMeta: metav1.ObjectMeta{Name: "local-team-a-shop-redis-08"}, VMName: "cache-7"}
	_, err := env.Adopt.Create(dana, candidate, other, watch, &metav1.CreateOptions{})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `"local-team-a-shop-redis-08"`) || !strings.Contains(err.Error(), `"`+candidate+`"`) {
		t.Errorf("a body naming another candidate: %v, want BadRequest naming both", err)
	}
	if len(seen) != 0 {
		t.Errorf("admission was shown a body naming another candidate: %v", seen)
	}
	if diff := cmp.Diff(before, env.Snapshot(ns)); diff != "" || adoptions(t, env) != 1 {
		t.Errorf("a refused body changed state (-before +after):\n%s", diff)
	}

	if _, err := env.Adopt.Create(dana, candidate, &governance.AdoptionRequest{VMName: "cache-7"}, watch, &metav1.CreateOptions{}); err != nil {
		t.Fatalf("an unnamed body: %v", err)
	}
	if len(seen) != 1 || seen[0].(*governance.AdoptionRequest).Name != candidate {
		t.Errorf("admission was not shown the body named %s: %v", candidate, seen)
	}
}
