package reconciliationrequest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/pkg/registry/store/storetest"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/gitops"
	"github.com/plinth-dev/plinth/pkg/registry/gitops/gitopstest"
)

func request(name string, mode gitops.ReconciliationMode) *gitops.ReconciliationRequest {
	return &gitops.ReconciliationRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: gitops.ReconciliationRequestSpec{
			Targets: []gitops.ReconciliationTarget{
				{Cluster: "local", Kind: gitops.TargetKindOCIRepository, Name: "app", Namespace: "flux-system"},
				{Cluster: "local", Kind: gitops.TargetKindKustomization, Name: "app", Namespace: "flux-system"},
			},
			Mode:    mode,
			Timeout: &metav1.Duration{Duration: 5 * time.Minute},
		},
	}
}

// update updates name through r as an update request does.
var update = storetest.Update[*gitops.ReconciliationRequest]

// A request is stored Pending and requested at the server's time unless the client said when;
// its spec never changes after; plinth-controller records the outcome through the status
// subresource; lists select on the mode and the phase.
func TestRequestLifecycle(t *testing.T) {
	main, status, err := NewREST(gitopstest.Scheme, gitopstest.RunEtcd(t).OptionsGetter())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(main.Destroy)
	ctx := gitopstest.As("plinth-system", "dana", "platform:admins")
	create := func(r *gitops.ReconciliationRequest) *gitops.ReconciliationRequest {
		t.Helper()
		out, err := main.Create(ctx, r, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating %s: %v", r.Name, err)
		}
		return out.(*gitops.ReconciliationRequest)
	}

	before := time.Now().Truncate(time.Microsecond)
	now := create(request("now", gitops.ReconciliationModeManual))
	after := time.Now()
	if at := now.Spec.RequestedAt; at == nil || at.Time.Before(before) || at.Time.After(after) {
		t.Errorf("requestedAt %v, want the time of the create, between %v and %v", at, before, after)
	}
	if now.Status.Phase != gitops.ReconciliationPending {
		t.Errorf("phase %q, want Pending", now.Status.Phase)
	}
	asked := metav1.NewMicroTime(time.Now().Add(-time.Minute).Truncate(time.Microsecond))
	auto := request("after-push", gitops.ReconciliationModeAutomatic)
	auto.Spec.RequestedAt = &asked
	auto.Status.Phase = gitops.ReconciliationSucceeded // the client's status is dropped
	auto = create(auto)
	if !auto.Spec.RequestedAt.Equal(&asked) || auto.Status.Phase != gitops.ReconciliationPending {
		t.Errorf("a request with its own time: requestedAt %v phase %s", auto.Spec.RequestedAt, auto.Status.Phase)
	}

	// A time far off the server's clock would drive the targets' annotation and the deadline.
	for _, off := range []time.Duration{time.Hour, -time.Hour} {
		skewed := request("skewed", gitops.ReconciliationModeManual)
		skewed.Spec.RequestedAt = ptr.To(metav1.NewMicroTime(time.Now().Add(off)))
		if _, err := main.Create(ctx, skewed, rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.requestedAt") {
			t.Fatalf("requestedAt %s off the server's time: %v", off, err)
		}
	}

	bad := request("bad", gitops.ReconciliationModeManual)
	bad.Spec.Targets[1].Kind = gitops.TargetKindOCIRepository
	if _, err := main.Create(ctx, bad, rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.targets[1]") {
		t.Fatalf("a duplicate target: %v", err)
	}

	for what, mutate := range map[string]func(*gitops.ReconciliationRequest){
		"requestedAt": func(r *gitops.ReconciliationRequest) { r.Spec.RequestedAt = ptr.To(metav1.NewMicroTime(time.Now())) },
		"targets":     func(r *gitops.ReconciliationRequest) { r.Spec.Targets = r.Spec.Targets[:1] },
		"mode":        func(r *gitops.ReconciliationRequest) { r.Spec.Mode = gitops.ReconciliationModeAutomatic },
	} {
		if _, err := update(ctx, main, "now", mutate); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec: Forbidden") {
			t.Errorf("changing %s: %v", what, err)
		}
	}
	// Metadata may change: the record is the spec.
	if _, err := update(ctx, main, "now", func(r *gitops.ReconciliationRequest) { r.Labels = map[string]string{"by": "dana"} }); err != nil {
		t.Fatalf("labelling a request: %v", err)
	}

	done, err := update(ctx, status, "now", func(r *gitops.ReconciliationRequest) {
		r.Status.Phase = gitops.ReconciliationSucceeded
		r.Status.Targets = []gitops.ReconciliationTargetStatus{
			{Cluster: "local", Kind: gitops.TargetKindOCIRepository, Name: "app", Namespace: "flux-system", HandledAt: ptr.To(metav1.Now()), Ready: true},
			{Cluster: "local", Kind: gitops.TargetKindKustomization, Name: "app", Namespace: "flux-system", HandledAt: ptr.To(metav1.Now()), Ready: true},
		}
		r.Spec.Mode = gitops.ReconciliationModeAutomatic // the status subresource keeps the spec
	})
	if err != nil {
		t.Fatal(err)
	}
	if done.Status.Phase != gitops.ReconciliationSucceeded || done.Spec.Mode != gitops.ReconciliationModeManual {
		t.Errorf("after the status update: mode %s phase %s", done.Spec.Mode, done.Status.Phase)
	}

	for selector, want := range map[string]string{
		"spec.mode=Automatic":    "after-push",
		"spec.mode=Manual":       "now",
		"status.phase=Pending":   "after-push",
		"status.phase=Succeeded": "now",
	} {
		list, err := main.List(ctx, &metainternalversion.ListOptions{FieldSelector: fields.ParseSelectorOrDie(selector)})
		if err != nil {
			t.Fatal(err)
		}
		if items := list.(*gitops.ReconciliationRequestList).Items; len(items) != 1 || items[0].Name != want {
			t.Errorf("%s: %d items, want %s", selector, len(items), want)
		}
	}
}

func TestTable(t *testing.T) {
	r := request("now", gitops.ReconciliationModeManual)
	r.Spec.RequestedAt = ptr.To(metav1.NewMicroTime(time.Now().Add(-30 * time.Hour)))
	for name, tt := range map[string]struct {
		status gitops.ReconciliationRequestStatus
		want   string
	}{
		"new": {gitops.ReconciliationRequestStatus{}, "[Manual <none> 0/2 30h]"},
		"one handled": {gitops.ReconciliationRequestStatus{Phase: gitops.ReconciliationInProgress, Targets: []gitops.ReconciliationTargetStatus{
			{Cluster: "local", Kind: gitops.TargetKindOCIRepository, Name: "app", HandledAt: ptr.To(metav1.Now())},
			{Cluster: "local", Kind: gitops.TargetKindKustomization, Name: "app"},
		}}, "[Manual InProgress 1/2 30h]"},
	} {
		obj := r.DeepCopy()
		obj.Status = tt.status
		tbl, err := Table.ConvertToTable(context.Background(), obj, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(tbl.Rows[0].Cells[1:5]); got != tt.want {
			t.Errorf("%s: %s, want %s", name, got, tt.want)
		}
		var headers []string
		for _, c := range tbl.ColumnDefinitions {
			headers = append(headers, c.Name+":"+c.Type)
		}
		if got := strings.Join(headers, ","); got != "Name:string,Mode:string,Phase:string,Targets:string,Requested:date,Age:date" {
			t.Errorf("columns %s", got)
		}
	}
}
