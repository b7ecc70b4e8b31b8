package tenantcompute

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/plinth-dev/plinth/pkg/apis/compute"
	"github.com/plinth-dev/plinth/pkg/registry/compute/computetest"
)

// env is the tenantcomputes storage over a fresh key prefix of a shared etcd.
type env struct {
	t    *testing.T
	rest *REST
}

func newEnv(t *testing.T) *env {
	t.Helper()
	etcd := computetest.RunEtcd(t)
	r, _, err := NewREST(computetest.Scheme, etcd.OptionsGetter())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Destroy)
	return &env{t: t, rest: r}
}

func tenant(name, tenantID string) *compute.TenantCompute {
	return &compute.TenantCompute{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: compute.TenantComputeSpec{
			TenantID: tenantID, ProviderType: "kubernetes",
			Containers: []compute.ContainerSpec{{Name: "web", Image: "nginx:1.27"}},
			Resources:  compute.ResourceRequirements{CPU: 250, Memory: 256},
		},
	}
}

func (e *env) create(ns string, tc *compute.TenantCompute, opts *metav1.CreateOptions) (*compute.TenantCompute, error) {
	if opts == nil {
		opts = &metav1.CreateOptions{}
	}
	out, err := e.rest.Create(computetest.As(ns, "alice"), tc, rest.ValidateAllObjectFunc, opts)
	if err != nil {
		return nil, err
	}
	return out.(*compute.TenantCompute), nil
}

func (e *env) mustCreate(ns string, tc *compute.TenantCompute) *compute.TenantCompute {
	e.t.Helper()
	out, err := e.create(ns, tc, nil)
	if err != nil {
		e.t.Fatalf("creating %s/%s: %v", ns, tc.Name, err)
	}
	return out
}

// holder returns who holds tenantID, or "" when nobody does.
func (e *env) holder(tenantID string) string {
	e.t.Helper()
	c, err := e.rest.claims.Get(context.Background(), tenantID)
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return c.HolderNamespace + "/" + c.HolderName + "/" + c.HolderUID
}

func (e *env) delete(ns, name string, opts *metav1.DeleteOptions) {
	e.t.Helper()
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	if _, _, err := e.rest.Delete(computetest.As(ns, "alice"), name, rest.ValidateAllObjectFunc, opts); err != nil {
		e.t.Fatalf("deleting %s/%s: %v", ns, name, err)
	}
}

// expectTenantIDTaken checks a 409 AlreadyExists naming spec.tenantID.
func expectTenantIDTaken(t *testing.T, err error) *metav1.Status {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != http.StatusConflict || status.Status().Reason != metav1.StatusReasonAlreadyExists {
		t.Fatalf("got %v, want 409 AlreadyExists", err)
	}
	s := status.Status()
	if s.Details == nil || len(s.Details.Causes) != 1 || s.Details.Causes[0].Field != "spec.tenantID" ||
		s.Details.Causes[0].Type != metav1.CauseTypeFieldValueDuplicate {
		t.Fatalf("%v: details %+v, want one duplicate cause on spec.tenantID", err, s.Details)
	}
	return &s
}

func TestCreateStartsRequestedAndClaimsTheTenantID(t *testing.T) {
	e := newEnv(t)
	tc := e.mustCreate("team-a", tenant("shop", "acme"))
	if tc.Status.Phase != compute.PhaseRequested {
		t.Errorf("phase %q, want Requested", tc.Status.Phase)
	}
	if got, want := e.holder("acme"), "team-a/shop/"+string(tc.UID); got != want {
		t.Errorf("claim held by %q, want %q", got, want)
	}
}

func TestTenantIDIsUniqueAcrossNamespaces(t *testing.T) {
	e := newEnv(t)
	first := e.mustCreate("team-a", tenant("shop", "acme"))

	_, err := e.create("team-b", tenant("store", "acme"), nil)
	s := expectTenantIDTaken(t, err)
	// Another namespace's tenant learns the ID is taken, not by whom.
	if strings.Contains(s.Message, "team-a") || strings.Contains(s.Message, "shop") || !strings.Contains(s.Message, "another namespace") {
		t.Errorf("message %q names the holder across namespaces", s.Message)
	}
	// In the holder's own namespace, the holder is named.
	_, err = e.create("team-a", tenant("shop-2", "acme"), nil)
	if s := expectTenantIDTaken(t, err); !strings.Contains(s.Message, "TenantCompute shop in this namespace") {
		t.Errorf("message %q does not name the holder in its namespace", s.Message)
	}
	// Creating the same object again is the usual AlreadyExists.
	var again apierrors.APIStatus
	if _, err := e.create("team-a", tenant("shop", "acme"), nil); !apierrors.IsAlreadyExists(err) || !errors.As(err, &again) || len(again.Status().Details.Causes) > 0 {
		t.Errorf("creating team-a/shop again: %v, want the plain AlreadyExists", err)
	}
	if got, want := e.holder("acme"), "team-a/shop/"+string(first.UID); got != want {
		t.Errorf("after refused creates the claim is %q, want %q", got, want)
	}
	// Another ID is free.
	e.mustCreate("team-b", tenant("store", "globex"))
}

func TestRefusedAndFailedCreatesLeaveNoClaim(t *testing.T) {
	e := newEnv(t)
	// Refused by admission (createValidation): nothing is claimed.
	refuse := func(context.Context, runtime.Object) error {
		return apierrors.NewForbidden(compute.Resource("tenantcomputes"), "x", errors.New("no"))
	}
	if _, err := e.rest.Create(computetest.As("team-a", "alice"), tenant("shop", "acme"), refuse, &metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("create refused by admission: %v", err)
	}
	// Refused by validation.
	bad := tenant("shop", "acme")
	bad.Spec.Containers = nil
	if _, err := e.create("team-a", bad, nil); !apierrors.IsInvalid(err) {
		t.Fatalf("invalid create: %v", err)
	}
	if h := e.holder("acme"); h != "" {
		t.Fatalf("refused creates left a claim: %s", h)
	}
	// Failed in storage (the name is taken, by a TenantCompute with another ID): the claim
	// written for the request is released.
	e.mustCreate("team-a", tenant("shop", "globex"))
	if _, err := e.create("team-a", tenant("shop", "acme"), nil); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create of an existing name: %v", err)
	}
	if h := e.holder("acme"); h != "" {
		t.Fatalf("a create that failed in storage left its claim: %s", h)
	}
	e.mustCreate("team-b", tenant("other", "acme"))
}

func TestDryRunChecksButNeverClaims(t *testing.T) {
	e := newEnv(t)
	dryRun := &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	if _, err := e.create("team-a", tenant("shop", "acme"), dryRun); err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if h := e.holder("acme"); h != "" {
		t.Fatalf("a dry run claimed the ID: %s", h)
	}
	e.mustCreate("team-a", tenant("shop", "acme"))
	_, err := e.create("team-b", tenant("store", "acme"), dryRun)
	expectTenantIDTaken(t, err)
	// A dry-run delete keeps the claim.
	e.delete("team-a", "shop", &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
	if e.holder("acme") == "" {
		t.Fatal("a dry-run delete released the claim")
	}
}

func TestDeleteFreesTheTenantID(t *testing.T) {
	e := newEnv(t)
	e.mustCreate("team-a", tenant("shop", "acme"))
	e.delete("team-a", "shop", nil)
	if h := e.holder("acme"); h != "" {
		t.Fatalf("deleted, the ID is still held: %s", h)
	}
	e.mustCreate("team-b", tenant("store", "acme"))
}

// While plinth-controller's finalizer holds a deleted TenantCompute, its ID stays taken; the
// update that removes the last finalizer frees it.
func TestTheIDIsFreedWhenTheLastFinalizerGoes(t *testing.T) {
	e := newEnv(t)
	tc := tenant("shop", "acme")
	tc.Finalizers = []string{compute.Finalizer}
	e.mustCreate("team-a", tc)
	e.delete("team-a", "shop", nil)
	if _, err := e.create("team-b", tenant("store", "acme"), nil); err == nil {
		t.Fatal("the ID of a TenantCompute being deleted was given away")
	}
	ctx := computetest.As("team-a", "plinth-controller")
	_, _, err := e.rest.Update(ctx, "shop", rest.DefaultUpdatedObjectInfo(nil, func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
		tc := old.DeepCopyObject().(*compute.TenantCompute)
		tc.Finalizers = nil
		return tc, nil
	}), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.rest.Get(ctx, "shop", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the TenantCompute is still there: %v", err)
	}
	if h := e.holder("acme"); h != "" {
		t.Fatalf("the ID is still held: %s", h)
	}
	e.mustCreate("team-b", tenant("store", "acme"))
}

// Twenty tenants create the same tenant ID at once, each in their own namespace: exactly one
// gets it, every other gets 409, and the claim names the winner.
func TestConcurrentCreatesOfOneTenantID(t *testing.T) {
	e := newEnv(t)
	const n = 20
	var wg sync.WaitGroup
	results := make([]error, n)
	created := make([]*compute.TenantCompute, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			created[i], results[i] = e.create(fmt.Sprintf("team-%d", i), tenant("shop", "acme"), nil)
		}()
	}
	wg.Wait()
	winners := 0
	var winner *compute.TenantCompute
	for i, err := range results {
		if err == nil {
			winners++
			winner = created[i]
			continue
		}
		expectTenantIDTaken(t, err)
	}
	if winners != 1 {
		t.Fatalf("%d creates succeeded, want exactly 1", winners)
	}
	if got, want := e.holder("acme"), winner.Namespace+"/shop/"+string(winner.UID); got != want {
		t.Fatalf("claim %q, want the winner %q", got, want)
	}
	list, err := e.rest.List(computetest.As("", "admin"), &metainternalversion.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.tenantID", "acme"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if items := list.(*compute.TenantComputeList).Items; len(items) != 1 {
		t.Fatalf("%d TenantComputes stored with the ID, want 1", len(items))
	}
	// The winner's delete frees it for the next.
	e.delete(winner.Namespace, "shop", nil)
	e.mustCreate("team-new", tenant("shop", "acme"))
}

// Server-side apply that creates (an update with forceAllowCreate) claims the ID like a
// create; an apply that updates leaves the claim alone.
func TestServerSideApplyCreateClaims(t *testing.T) {
	e := newEnv(t)
	apply := func(ns string, tc *compute.TenantCompute) (bool, error) {
		_, created, err := e.rest.Update(computetest.As(ns, "alice"), tc.Name, rest.DefaultUpdatedObjectInfo(tc),
			rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, true, &metav1.UpdateOptions{})
		return created, err
	}
	if created, err := apply("team-a", tenant("shop", "acme")); err != nil || !created {
		t.Fatalf("apply create: %v %v", created, err)
	}
	obj, err := e.rest.Get(computetest.As("team-a", "alice"), "shop", &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := e.holder("acme"), "team-a/shop/"+string(obj.(*compute.TenantCompute).UID); got != want {
		t.Fatalf("claim %q, want %q", got, want)
	}
	_, err = apply("team-b", tenant("store", "acme"))
	expectTenantIDTaken(t, err)

	changed := tenant("shop", "acme")
	changed.Spec.Containers[0].Image = "nginx:1.28"
	if created, err := apply("team-a", changed); err != nil || created {
		t.Fatalf("apply update: %v %v", created, err)
	}
	if got, want := e.holder("acme"), "team-a/shop/"+string(obj.(*compute.TenantCompute).UID); got != want {
		t.Fatalf("after an update the claim is %q, want %q", got, want)
	}
	// A dry-run apply create claims nothing.
	if _, _, err := e.rest.Update(computetest.As("team-c", "carol"), "x", rest.DefaultUpdatedObjectInfo(tenant("x", "initech")),
		rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, true, &metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	if h := e.holder("initech"); h != "" {
		t.Fatalf("a dry-run apply claimed the ID: %s", h)
	}
}

func TestSelectableFieldsAndTable(t *testing.T) {
	e := newEnv(t)
	e.mustCreate("team-a", tenant("shop", "acme"))
	other := tenant("lab", "globex")
	other.Spec.ProviderType = "kubevirt"
	e.mustCreate("team-a", other)
	for selector, want := range map[string]string{
		"spec.tenantID=globex":         "lab",
		"spec.providerType=kubevirt":   "lab",
		"spec.providerType=kubernetes": "shop",
	} {
		sel := fields.ParseSelectorOrDie(selector)
		list, err := e.rest.List(computetest.As("team-a", "alice"), &metainternalversion.ListOptions{FieldSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		items := list.(*compute.TenantComputeList).Items
		if len(items) != 1 || items[0].Name != want {
			t.Errorf("%s: %d items, want %s", selector, len(items), want)
		}
	}
	list, err := e.rest.List(computetest.As("team-a", "alice"), &metainternalversion.ListOptions{FieldSelector: fields.OneTermEqualSelector("status.phase", "Requested")})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(list.(*compute.TenantComputeList).Items); n != 2 {
		t.Errorf("status.phase=Requested: %d items, want 2", n)
	}
}

func TestTableColumns(t *testing.T) {
	tc := tenant("shop", "acme")
	tc.Status = compute.TenantComputeStatus{Phase: compute.PhaseReady, State: compute.ComputeStateRunning, Health: compute.HealthStatusHealthy}
	for name, tt := range map[string]struct {
		result *compute.ProvisionResult
		want   string
	}{
		"no provision":  {nil, "<none>"},
		"no endpoints":  {&compute.ProvisionResult{}, "<none>"},
		"url first":     {&compute.ProvisionResult{Endpoints: []compute.Endpoint{{URL: "http://shop.example.com", Address: "10.0.0.1", Port: 80}}}, "http://shop.example.com"},
		"address:port":  {&compute.ProvisionResult{Endpoints: []compute.Endpoint{{Address: "10.0.0.1", Port: 8080}, {URL: "http://x"}}}, "10.0.0.1:8080"},
		"ipv6":          {&compute.ProvisionResult{Endpoints: []compute.Endpoint{{Address: "fd00::1", Port: 80}}}, "[fd00::1]:80"},
		"address alone": {&compute.ProvisionResult{Endpoints: []compute.Endpoint{{Address: "shop.tenants"}}}, "shop.tenants"},
	} {
		obj := tc.DeepCopy()
		obj.Status.ProvisionResult = tt.result
		tbl, err := Table.ConvertToTable(context.Background(), obj, nil)
		if err != nil {
			t.Fatal(err)
		}
		var headers []string
		for _, c := range tbl.ColumnDefinitions {
			headers = append(headers, c.Name)
		}
		if got := strings.Join(headers, ","); got != "Name,Tenant,Provider,Phase,State,Health,Endpoint,Age" {
			t.Fatalf("columns %s", got)
		}
		cells := tbl.Rows[0].Cells
		if got := fmt.Sprint(cells[1:7]); got != fmt.Sprintf("[acme kubernetes Ready running healthy %s]", tt.want) {
			t.Errorf("%s: cells %s", name, got)
		}
	}
	empty, err := Table.ConvertToTable(context.Background(), tenant("new", "acme"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(empty.Rows[0].Cells[3:7]); got != "[<none> <none> <none> <none>]" {
		t.Errorf("a TenantCompute without status: %s", got)
	}
}
