package packinstance

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/pkg/registry/store/storetest"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/plinth-dev/plinth/pkg/apis/infrastructure"
	"github.com/plinth-dev/plinth/pkg/registry/infrastructure/infrastructuretest"
	"github.com/plinth-dev/plinth/pkg/registry/store"
)

const namespace = "seam-tenant-local"

// body is a v1alpha1 instance of pack on cluster local at version, as plinth-controller sends
// it, with a status the store must drop.
func body(pack, version string) string {
	return fmt.Sprintf(`{"apiVersion":"infrastructure.ontai.dev/v1alpha1","kind":"InfrastructurePackInstance",
	"metadata":{"name":"%[1]s-local","namespace":"seam-tenant-local"},
	"spec":{"clusterPackRef":"%[1]s","version":"%[2]s","targetClusterRef":"local","dependencyPolicy":{},
		"chartName":"cert-manager","chartVersion":"1.14.5","chartURL":"oci://localhost:5000/charts","helmVersion":"v3.22.0"},
	"status":{"upgradeDirection":"Rollback","deployedResources":[{"apiVersion":"v1","kind":"Namespace","name":"x"}]}}`, pack, version)
}

type env struct {
	t      *testing.T
	main   *store.REST
	status *store.StatusREST
	ctx    context.Context
}

func newEnv(t *testing.T) *env {
	main, status, err := NewREST(infrastructuretest.Scheme, infrastructuretest.RunEtcd(t).OptionsGetter())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(main.Destroy)
	ctx := infrastructuretest.As(namespace, "system:serviceaccount:plinth-system:plinth-controller")
	return &env{t: t, main: main, status: status, ctx: ctx}
}

func (e *env) create(body string) *infrastructure.InfrastructurePackInstance {
	e.t.Helper()
	return storetest.Create[*infrastructure.InfrastructurePackInstance](e.t, e.ctx, e.main, infrastructuretest.Decode(e.t, body))
}

func (e *env) get(name string) *infrastructure.InfrastructurePackInstance {
	e.t.Helper()
	return storetest.Get[*infrastructure.InfrastructurePackInstance](e.t, e.ctx, e.main, name)
}

// update updates name through r as an update request does.
var update = storetest.Update[*infrastructure.InfrastructurePackInstance]

// An instance is stored with onDrift defaulted to the seed's Warn and without the status its
// client sent.
func TestCreateAppliesDefaults(t *testing.T) {
	e := newEnv(t)
	for _, i := range []*infrastructure.InfrastructurePackInstance{e.create(body("cert-manager", "v1.0.0")), e.get("cert-manager-local")} {
		if i.Spec.DependencyPolicy == nil || i.Spec.DependencyPolicy.OnDrift != infrastructure.OnDriftWarn {
			t.Errorf("dependencyPolicy %+v, want onDrift Warn", i.Spec.DependencyPolicy)
		}
		if i.Status.UpgradeDirection != "" || len(i.Status.DeployedResources) != 0 || i.Generation != 1 {
			t.Errorf("a new instance: generation %d status %+v", i.Generation, i.Status)
		}
		if i.Spec.ChartName != "cert-manager" || i.Spec.HelmVersion != "v3.22.0" {
			t.Errorf("spec %+v", i.Spec)
		}
	}
}

// A bad instance is a 422 naming its fields, and nothing is stored.
func TestBadCreateStoresNothing(t *testing.T) {
	e := newEnv(t)
	for name, tc := range map[string]struct{ body, want string }{
		"named after another cluster": {strings.Replace(body("cert-manager", "v1.0.0"), `"cert-manager-local"`, `"cert-manager-edge"`, 1),
			"metadata.name FieldValueInvalid"},
		"in another cluster's namespace": {strings.Replace(body("cert-manager", "v1.0.0"), `"targetClusterRef":"local"`, `"targetClusterRef":"edge"`, 1),
			"metadata.name FieldValueInvalid metadata.namespace FieldValueInvalid"},
		"without a pack": {strings.Replace(body("cert-manager", "v1.0.0"), `"clusterPackRef":"cert-manager",`, ``, 1),
			"spec.clusterPackRef FieldValueRequired"},
		"bad version and onDrift": {strings.Replace(body("cert-manager", "1.0.0"), `"dependencyPolicy":{}`, `"dependencyPolicy":{"onDrift":"Stop"}`, 1),
			"spec.version FieldValueInvalid spec.dependencyPolicy.onDrift FieldValueNotSupported"},
	} {
		_, err := e.main.Create(e.ctx, infrastructuretest.Decode(t, tc.body), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Errorf("%s: %v, want 422", name, err)
			continue
		}
		var got []string
		for _, c := range err.(apierrors.APIStatus).Status().Details.Causes {
			got = append(got, c.Field+" "+string(c.Type))
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s: causes %q, want %s", name, got, tc.want)
		}
	}
	list, err := e.main.List(e.ctx, &metainternalversion.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if items := list.(*infrastructure.InfrastructurePackInstanceList).Items; len(items) != 0 {
		t.Errorf("stored after refused creates: %+v", items)
	}
}

// What an instance records (its pack and cluster) never changes; a new delivery sets the rest.
func TestRefsAreImmutable(t *testing.T) {
	e := newEnv(t)
	e.create(body("cert-manager", "v1.0.0"))
	for name, mutate := range map[string]func(*infrastructure.InfrastructurePackInstance){
		"clusterPackRef":   func(i *infrastructure.InfrastructurePackInstance) { i.Spec.ClusterPackRef = "issuer" },
		"targetClusterRef": func(i *infrastructure.InfrastructurePackInstance) { i.Spec.TargetClusterRef = "edge" },
	} {
		_, err := update(e.ctx, e.main, "cert-manager-local", mutate)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec."+name) || !strings.Contains(err.Error(), "immutable") {
			t.Errorf("changing %s: %v, want 422 immutable", name, err)
		}
	}
	i, err := update(e.ctx, e.main, "cert-manager-local", func(i *infrastructure.InfrastructurePackInstance) {
		i.Spec.Version, i.Spec.ChartVersion, i.Spec.HelmVersion = "v1.1.0", "1.15.0", "v3.23.0"
		i.Spec.DependsOn = []string{"crds-local"}
	})
	if err != nil {
		t.Fatalf("a new delivery: %v", err)
	}
	if i.Generation != 2 || i.Spec.Version != "v1.1.0" || i.Spec.ClusterPackRef != "cert-manager" {
		t.Errorf("after a new delivery: generation %d spec %+v", i.Generation, i.Spec)
	}
}

// The main resource changes the spec and never the status; the status subresource changes the
// status and never the spec.
func TestSpecAndStatusAreSeparate(t *testing.T) {
	e := newEnv(t)
	e.create(body("cert-manager", "v1.0.0"))
	now := metav1.Now()
	i, err := update(e.ctx, e.status, "cert-manager-local", func(i *infrastructure.InfrastructurePackInstance) {
		i.Spec.Version = "v9.0.0"
		i.Status.UpgradeDirection, i.Status.DeliveredAt, i.Status.Revision = infrastructure.UpgradeDirectionInitial, &now, 1
		i.Status.DeployedResources = []infrastructure.DeployedResource{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "cert-manager", Name: "cert-manager"}}
	})
	if err != nil {
		t.Fatal(err)
	}
	if i.Spec.Version != "v1.0.0" || i.Generation != 1 {
		t.Errorf("the status subresource changed the spec: generation %d version %s", i.Generation, i.Spec.Version)
	}
	if i.Status.UpgradeDirection != infrastructure.UpgradeDirectionInitial || len(i.Status.DeployedResources) != 1 {
		t.Errorf("status not written: %+v", i.Status)
	}
	for name, mutate := range map[string]func(*infrastructure.InfrastructurePackInstanceStatus){
		"direction Sideways":         func(s *infrastructure.InfrastructurePackInstanceStatus) { s.UpgradeDirection = "Sideways" },
		"deployed object of no kind": func(s *infrastructure.InfrastructurePackInstanceStatus) { s.DeployedResources[0].Kind = "" },
	} {
		_, err := update(e.ctx, e.status, "cert-manager-local", func(i *infrastructure.InfrastructurePackInstance) { mutate(&i.Status) })
		if !apierrors.IsInvalid(err) {
			t.Errorf("%s through status: %v, want 422", name, err)
		}
	}

	i, err = update(e.ctx, e.main, "cert-manager-local", func(i *infrastructure.InfrastructurePackInstance) {
		i.Spec.Version = "v1.0.0-r1"
		i.Status.UpgradeDirection, i.Status.DeployedResources = infrastructure.UpgradeDirectionRollback, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if i.Spec.Version != "v1.0.0-r1" || i.Generation != 2 {
		t.Errorf("spec update: generation %d version %s", i.Generation, i.Spec.Version)
	}
	if i.Status.UpgradeDirection != infrastructure.UpgradeDirectionInitial || len(i.Status.DeployedResources) != 1 {
		t.Errorf("the main resource changed the status: %+v", i.Status)
	}
}

func TestFieldSelectors(t *testing.T) {
	e := newEnv(t)
	e.create(body("cert-manager", "v1.0.0"))
	e.create(body("ingress", "v2.0.0-r1"))
	for selector, want := range map[string]string{
		"spec.clusterPackRef=ingress":                                  "ingress-local",
		"spec.clusterPackRef=cert-manager":                             "cert-manager-local",
		"spec.targetClusterRef=local":                                  "cert-manager-local,ingress-local",
		"spec.targetClusterRef=edge":                                   "",
		"spec.version=v2.0.0-r1":                                       "ingress-local",
		"spec.version=v1.0.0,spec.targetClusterRef=local":              "cert-manager-local",
		"spec.clusterPackRef!=ingress,metadata.namespace=" + namespace: "cert-manager-local",
	} {
		sel, err := fields.ParseSelector(selector)
		if err != nil {
			t.Fatal(err)
		}
		list, err := e.main.List(e.ctx, &metainternalversion.ListOptions{FieldSelector: sel})
		if err != nil {
			t.Fatalf("%s: %v", selector, err)
		}
		var names []string
		for _, i := range list.(*infrastructure.InfrastructurePackInstanceList).Items {
			names = append(names, i.Name)
		}
		if strings.Join(names, ",") != want {
			t.Errorf("%s: %v, want %s", selector, names, want)
		}
	}
}

func TestTable(t *testing.T) {
	cond := func(typ string, s metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s}
	}
	var headers []string
	for name, tt := range map[string]struct {
		status infrastructure.InfrastructurePackInstanceStatus
		want   string
	}{
		"not delivered yet": {infrastructure.InfrastructurePackInstanceStatus{}, "[cert-manager local v1.1.0 <none> Unknown Unknown]"},
		"upgraded, in sync": {infrastructure.InfrastructurePackInstanceStatus{UpgradeDirection: infrastructure.UpgradeDirectionUpgrade,
			Conditions: []metav1.Condition{cond(infrastructure.ConditionReady, metav1.ConditionTrue), cond(infrastructure.ConditionDrifted, metav1.ConditionFalse)}},
			"[cert-manager local v1.1.0 Upgrade True False]"},
		"rolled back, drifted": {infrastructure.InfrastructurePackInstanceStatus{UpgradeDirection: infrastructure.UpgradeDirectionRollback,
			Conditions: []metav1.Condition{cond(infrastructure.ConditionDrifted, metav1.ConditionTrue), cond(infrastructure.ConditionReady, metav1.ConditionFalse)}},
			"[cert-manager local v1.1.0 Rollback False True]"},
	} {
		i := &infrastructure.InfrastructurePackInstance{ObjectMeta: metav1.ObjectMeta{Name: "cert-manager-local", Namespace: namespace},
			Spec:   infrastructure.InfrastructurePackInstanceSpec{ClusterPackRef: "cert-manager", TargetClusterRef: "local", Version: "v1.1.0"},
			Status: tt.status}
		tbl, err := Table.ConvertToTable(context.Background(), i, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(tbl.Rows[0].Cells[1:7]); got != tt.want {
			t.Errorf("%s: %s, want %s", name, got, tt.want)
		}
		headers = headers[:0]
		for _, c := range tbl.ColumnDefinitions {
			headers = append(headers, strings.ToUpper(c.Name))
		}
	}
	if got := strings.Join(headers, " "); got != "NAME PACK CLUSTER VERSION DIRECTION READY DRIFTED AGE" {
		t.Errorf("columns %s", got)
	}
	// The store serves the same table for what it lists.
	e := newEnv(t)
	e.create(body("cert-manager", "v1.0.0"))
	list, err := e.main.List(e.ctx, &metainternalversion.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := e.main.ConvertToTable(e.ctx, list, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tbl.Rows) != 1 || fmt.Sprint(tbl.Rows[0].Cells[:7]) != "[cert-manager-local cert-manager local v1.0.0 <none> Unknown Unknown]" {
		t.Errorf("the store's table: %+v", tbl.Rows)
	}
}
