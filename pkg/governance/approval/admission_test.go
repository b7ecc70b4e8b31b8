package approval_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
	gt "github.com/plinth-dev/plinth/pkg/registry/governance/governancetest"
)

// admission stands for the server's validating admission chain (webhooks and
// ValidatingAdmissionPolicies) on ManagedVM writes: it records the names of the objects it is
// shown and answers with err.
type admission struct {
	seen []string
	err  error
}

func (a *admission) validate(_ context.Context, obj runtime.Object) error {
	a.seen = append(a.seen, obj.(*governance.ManagedVM).Name)
	return a.err
}

func (a *admission) validateUpdate(_ context.Context, obj, _ runtime.Object) error {
	a.seen = append(a.seen, obj.(*governance.ManagedVM).Name)
	return a.err
}

var frozen = apierrors.NewForbidden(governance.Resource("managedvms"), "cache-1", errors.New("VM changes are frozen"))

// TestAdmissionBeforeSideEffects checks that validating admission refuses a VM's create,
// update or delete before the flow writes anything for it (VM status, ticket, audit record,
// event, instance number), and that an admitted write is shown to admission once.
func TestAdmissionBeforeSideEffects(t *testing.T) {
	etcd := gt.RunEtcd(t)
	alice := gt.As(ns, "alice")
	free := func(ops ...governance.Operation) governance.ApprovalPolicySpec {
		return governance.ApprovalPolicySpec{Environment: governance.EnvironmentTest, Operations: ops, ApprovalRequired: false, RequiredApprovals: 1}
	}
	deleteVM := func(f *fixture, a *admission) error {
		_, _, err := f.env.Flow.DeleteVM(alice, "cache-1", a.validate, &metav1.DeleteOptions{})
		return err
	}

	for name, tc := range map[string]struct {
		seed func(*fixture)
		act  func(*fixture, *admission) error
	}{
		"a delete that needs approval": {
			seed: func(f *fixture) { f.approved("cache-1") },
			act:  deleteVM,
		},
		"a delete that needs no approval": {
			seed: func(f *fixture) {
				f.approved("cache-1")
				f.env.SeedPolicy("test-deletes-free", free(governance.OperationDelete))
			},
			act: deleteVM,
		},
		"a delete of a VM never approved": {
			seed: func(f *fixture) { f.request("cache-1") },
			act:  deleteVM,
		},
		"a create that needs approval": {
			act: func(f *fixture, a *admission) error {
				_, err := f.env.Flow.CreateVM(alice, gt.VM("cache-1", "redis"), a.validate, &metav1.CreateOptions{})
				return err
			},
		},
		"a create that needs no approval": {
			seed: func(f *fixture) { f.env.SeedPolicy("test-creates-free", free(governance.OperationCreate)) },
			act: func(f *fixture, a *admission) error {
				_, err := f.env.Flow.CreateVM(alice, gt.VM("cache-1", "redis"), a.validate, &metav1.CreateOptions{})
				return err
			},
		},
		"an update that needs approval": {
			seed: func(f *fixture) { f.approved("cache-1") },
			act: func(f *fixture, a *admission) error {
				vm := f.env.GetVM(ns, "cache-1")
				vm.Spec.InstanceType = "u1.large"
				_, _, err := f.env.Flow.UpdateVM(alice, "cache-1", rest.DefaultUpdatedObjectInfo(vm), a.validate, a.validateUpdate, false, &metav1.UpdateOptions{})
				return err
			},
		},
		"an update that needs no approval": {
			seed: func(f *fixture) {
				f.approved("cache-1")
				f.env.SeedPolicy("test-modifies-free", free(governance.OperationModify))
			},
			act: func(f *fixture, a *admission) error {
				vm := f.env.GetVM(ns, "cache-1")
				vm.Spec.InstanceType = "u1.large"
				_, _, err := f.env.Flow.UpdateVM(alice, "cache-1", rest.DefaultUpdatedObjectInfo(vm), a.validate, a.validateUpdate, false, &metav1.UpdateOptions{})
				return err
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, etcd)
			if tc.seed != nil {
				tc.seed(f)
			}
			before := f.env.Snapshot(ns)
			deny := &admission{err: frozen}
			if err := tc.act(f, deny); !errors.Is(err, frozen) {
				t.Fatalf("a refused write: %v", err)
			}
			if diff := cmp.Diff([]string{"cache-1"}, deny.seen); diff != "" {
				t.Errorf("admission was not shown the VM once (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, f.env.Snapshot(ns)); diff != "" {
				t.Errorf("a refused write left a trace (-before +after):\n%s", diff)
			}

			allow := &admission{}
			if err := tc.act(f, allow); err != nil {
				t.Fatalf("an admitted write: %v", err)
			}
			if diff := cmp.Diff([]string{"cache-1"}, allow.seen); diff != "" {
				t.Errorf("admission was not shown the VM once (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, f.env.Snapshot(ns)); diff == "" {
				t.Errorf("an admitted write changed nothing")
			}
		})
	}
}
