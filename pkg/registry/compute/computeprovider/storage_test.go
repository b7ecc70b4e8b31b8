package computeprovider

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/plinth-dev/plinth/pkg/apis/compute"
	"github.com/plinth-dev/plinth/pkg/registry/compute/computetest"
)

func provider(controller string) *compute.ComputeProvider {
	return &compute.ComputeProvider{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes"}, Spec: compute.ComputeProviderSpec{Controller: controller}}
}

// A provider name belongs to the controller that registered it: a second controller's create
// finds it taken, and its update (what an apply of the registration does) is refused with the
// owner's name.
func TestASecondControllerCannotTakeAProviderOver(t *testing.T) {
	main, status, err := NewREST(computetest.Scheme, computetest.RunEtcd(t).OptionsGetter())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(main.Destroy)
	ctx := computetest.As("", "plinth-controller")
	if _, err := main.Create(ctx, provider("plinth.dev/plinth-controller"), rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := main.Create(ctx, provider("example.com/other"), rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: %v, want AlreadyExists", err)
	}
	_, _, err = main.Update(ctx, "kubernetes", rest.DefaultUpdatedObjectInfo(provider("example.com/other")),
		rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, true, &metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "the provider is registered by plinth.dev/plinth-controller; another controller cannot take it over") {
		t.Fatalf("takeover by update: %v", err)
	}
	// The owner publishes its status through the status subresource; the spec stays.
	_, _, err = status.Update(ctx, "kubernetes", rest.DefaultUpdatedObjectInfo(nil, func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
		p := old.DeepCopyObject().(*compute.ComputeProvider)
		p.Spec.Controller = "example.com/sneaky"
		p.Status.SupportedSecretSources = []string{compute.SecretSourceKubernetes}
		return p, nil
	}), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	obj, err := main.Get(ctx, "kubernetes", &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := obj.(*compute.ComputeProvider); p.Spec.Controller != "plinth.dev/plinth-controller" || len(p.Status.SupportedSecretSources) != 1 {
		t.Fatalf("after a status update: %+v", p)
	}
}

func TestTable(t *testing.T) {
	p := provider("plinth.dev/plinth-controller")
	for name, tt := range map[string]struct {
		status compute.ComputeProviderStatus
		want   string
	}{
		"new":   {compute.ComputeProviderStatus{}, "[plinth.dev/plinth-controller Unknown <none>]"},
		"ready": {compute.ComputeProviderStatus{SupportedSecretSources: []string{"kubernetes-secret", "vault"}, Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue}}}, "[plinth.dev/plinth-controller True kubernetes-secret,vault]"},
		"down":  {compute.ComputeProviderStatus{Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse}}}, "[plinth.dev/plinth-controller False <none>]"},
	} {
		obj := p.DeepCopy()
		obj.Status = tt.status
		tbl, err := Table.ConvertToTable(context.Background(), obj, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(tbl.Rows[0].Cells[1:4]); got != tt.want {
			t.Errorf("%s: %s, want %s", name, got, tt.want)
		}
		if n := len(tbl.ColumnDefinitions); n != 5 || tbl.ColumnDefinitions[3].Name != "Secret-Sources" {
			t.Errorf("columns %+v", tbl.ColumnDefinitions)
		}
	}
}
