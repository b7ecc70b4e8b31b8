package clusterpack

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

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/infrastructure"
	"github.com/plinth-dev/plinth/pkg/registry/infrastructure/infrastructuretest"
	"github.com/plinth-dev/plinth/pkg/registry/store"
)

// rawBody is a v1alpha1 raw pack as kubectl sends it: no policy, namespace or history limit.
const rawBody = `{"apiVersion":"infrastructure.ontai.dev/v1alpha1","kind":"InfrastructureClusterPack",
	"metadata":{"name":"ingress","namespace":"plinth-system"},
	"spec":{"version":"v1.0.0","targetClusters":["local"],
		"manifests":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ingress-config"},"data":{"color":"blue"}}]},
	"status":{"revision":7,"version":"v9.9.9"}}`

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
	return &env{t: t, main: main, status: status, ctx: infrastructuretest.As("plinth-system", "dana", "platform:admins")}
}

func (e *env) create(body string) *infrastructure.InfrastructureClusterPack {
	e.t.Helper()
	return storetest.Create[*infrastructure.InfrastructureClusterPack](e.t, e.ctx, e.main, infrastructuretest.Decode(e.t, body))
}

func (e *env) get(name string) *infrastructure.InfrastructureClusterPack {
	e.t.Helper()
	return storetest.Get[*infrastructure.InfrastructureClusterPack](e.t, e.ctx, e.main, name)
}

// update updates name through r as an update request does.
var update = storetest.Update[*infrastructure.InfrastructureClusterPack]

// A pack is stored with the seed's defaults and without the status its client sent, and reads
// back the same.
func TestCreateAppliesDefaults(t *testing.T) {
	e := newEnv(t)
	created := e.create(rawBody)
	for _, p := range []*infrastructure.InfrastructureClusterPack{created, e.get("ingress")} {
		s := p.Spec
		if s.DriftPolicy != infrastructure.DriftPolicyDetect || s.DependencyPolicy == nil || s.DependencyPolicy.OnDrift != infrastructure.OnDriftWarn ||
			s.TargetNamespace != infrastructure.DefaultTargetNamespace || s.RevisionHistoryLimit == nil || *s.RevisionHistoryLimit != 10 {
			t.Errorf("defaults: driftPolicy %q dependencyPolicy %+v targetNamespace %q revisionHistoryLimit %v",
				s.DriftPolicy, s.DependencyPolicy, s.TargetNamespace, s.RevisionHistoryLimit)
		}
		if p.Status.Revision != 0 || p.Status.Version != "" || p.Generation != 1 {
			t.Errorf("a new pack: generation %d status %+v", p.Generation, p.Status)
		}
	}
	// What the client sets is kept.
	set := strings.Replace(rawBody, `"version":"v1.0.0",`, `"version":"v1.0.0","driftPolicy":"Correct","dependencyPolicy":{"onDrift":"Block"},"targetNamespace":"ingress","revisionHistoryLimit":3,`, 1)
	set = strings.Replace(set, `"name":"ingress",`, `"name":"ingress-set",`, 1)
	p := e.create(set)
	if s := p.Spec; s.DriftPolicy != infrastructure.DriftPolicyCorrect || s.DependencyPolicy.OnDrift != infrastructure.OnDriftBlock ||
		s.TargetNamespace != "ingress" || *s.RevisionHistoryLimit != 3 {
		t.Errorf("set fields: %+v", s)
	}
}

// A bad pack is a 422 naming its fields, and nothing is stored.
func TestBadCreateStoresNothing(t *testing.T) {
	e := newEnv(t)
	bad := strings.Replace(rawBody, `"version":"v1.0.0"`, `"version":"1.0.0"`, 1)
	bad = strings.Replace(bad, `"targetClusters":["local"]`, `"targetClusters":["local"],"dependencyPolicy":{"onDrift":"Stop"}`, 1)
	_, err := e.main.Create(e.ctx, infrastructuretest.Decode(t, bad), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("a bad pack: %v, want 422", err)
	}
	var got []string
	for _, c := range err.(apierrors.APIStatus).Status().Details.Causes {
		got = append(got, c.Field+" "+string(c.Type))
	}
	if want := "spec.version FieldValueInvalid spec.dependencyPolicy.onDrift FieldValueNotSupported"; strings.Join(got, " ") != want {
		t.Errorf("causes %q, want %s", got, want)
	}
	if _, err := e.main.Get(e.ctx, "ingress", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after a refused create: %v, want 404", err)
	}
	list, err := e.main.List(e.ctx, &metainternalversion.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if items := list.(*infrastructure.InfrastructureClusterPackList).Items; len(items) != 0 {
		t.Errorf("stored after a refused create: %+v", items)
	}
}

// The main resource changes the spec and never the status; the status subresource changes the
// status and never the spec.
func TestSpecAndStatusAreSeparate(t *testing.T) {
	e := newEnv(t)
	e.create(rawBody)
	p, err := update(e.ctx, e.status, "ingress", func(p *infrastructure.InfrastructureClusterPack) {
		p.Spec.Version = "v2.0.0"
		p.Spec.TargetClusters = []string{"edge"}
		p.Status.Revision, p.Status.Version, p.Status.ObservedGeneration = 1, "v1.0.0", 1
		p.Status.Clusters = []infrastructure.PackClusterStatus{{Cluster: "local", Phase: infrastructure.ClusterPhaseReady, Revision: 1}}
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.Version != "v1.0.0" || p.Spec.TargetClusters[0] != "local" || p.Generation != 1 {
		t.Errorf("the status subresource changed the spec: generation %d spec %+v", p.Generation, p.Spec)
	}
	if p.Status.Revision != 1 || len(p.Status.Clusters) != 1 {
		t.Errorf("status not written: %+v", p.Status)
	}
	if _, err := update(e.ctx, e.status, "ingress", func(p *infrastructure.InfrastructureClusterPack) { p.Status.Clusters[0].Phase = "Up" }); !apierrors.IsInvalid(err) {
		t.Errorf("an unknown phase through status: %v, want 422", err)
	}

	p, err = update(e.ctx, e.main, "ingress", func(p *infrastructure.InfrastructureClusterPack) {
		p.Spec.Version = "v1.1.0"
		p.Status.Revision, p.Status.Version = 9, "v9.0.0"
		p.Status.Clusters = nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.Version != "v1.1.0" || p.Generation != 2 {
		t.Errorf("spec update: generation %d version %s", p.Generation, p.Spec.Version)
	}
	if p.Status.Revision != 1 || p.Status.Version != "v1.0.0" || len(p.Status.Clusters) != 1 {
		t.Errorf("the main resource changed the status: %+v", p.Status)
	}
	if _, err := update(e.ctx, e.main, "ingress", func(p *infrastructure.InfrastructureClusterPack) { p.Spec.Version = "v1" }); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "spec.version") {
		t.Errorf("a bad version on update: %v", err)
	}
	if got := e.get("ingress"); got.Spec.Version != "v1.1.0" {
		t.Errorf("after a refused update: version %s", got.Spec.Version)
	}
}

func TestFieldSelectors(t *testing.T) {
	e := newEnv(t)
	e.create(rawBody)
	e.create(strings.NewReplacer(`"name":"ingress",`, `"name":"ingress-next",`, `"version":"v1.0.0"`, `"version":"v1.1.0-r1"`).Replace(rawBody))
	for selector, want := range map[string]string{
		"spec.version=v1.1.0-r1":     "ingress-next",
		"spec.version=v1.0.0":        "ingress",
		"spec.version!=v1.0.0":       "ingress-next",
		"metadata.name=ingress-next": "ingress-next",
		"spec.version=v3.0.0":        "",
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
		for _, p := range list.(*infrastructure.InfrastructureClusterPackList).Items {
			names = append(names, p.Name)
		}
		if strings.Join(names, ",") != want {
			t.Errorf("%s: %v, want %s", selector, names, want)
		}
	}
}

func TestTable(t *testing.T) {
	ready := func(s metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{{Type: infrastructure.ConditionReady, Status: s}}
	}
	chart := &infrastructure.PackChart{URL: "oci://localhost:5000/charts", Name: "cert-manager", Version: ">=1.14.0 <2"}
	var headers []string
	for name, tt := range map[string]struct {
		chart     *infrastructure.PackChart
		kustomize *infrastructure.PackKustomize
		status    infrastructure.InfrastructureClusterPackStatus
		want      string
	}{
		"new raw pack": {nil, nil, infrastructure.InfrastructureClusterPackStatus{}, "[v1.2.0 0 manifests 0/0 0 Unknown]"},
		"chart, version not resolved yet": {chart, nil, infrastructure.InfrastructureClusterPackStatus{},
			"[v1.2.0 0 chart cert-manager@>=1.14.0 <2 0/0 0 Unknown]"},
		"chart delivered": {chart, nil, infrastructure.InfrastructureClusterPackStatus{Revision: 4, ChartVersion: "1.14.5",
			Summary:  infrastructure.PackSummary{Ready: 1, Drifted: 1},
			Clusters: []infrastructure.PackClusterStatus{{Cluster: "local"}, {Cluster: "edge"}}, Conditions: ready(metav1.ConditionFalse)},
			"[v1.2.0 4 chart cert-manager@1.14.5 2/2 1 False]"},
		"kustomize everywhere": {nil, &infrastructure.PackKustomize{ConfigMapRef: &infrastructure.LocalObjectReference{Name: "k"}},
			infrastructure.InfrastructureClusterPackStatus{Revision: 2, Summary: infrastructure.PackSummary{Ready: 3},
				Clusters: make([]infrastructure.PackClusterStatus, 3), Conditions: ready(metav1.ConditionTrue)},
			"[v1.2.0 2 kustomize 3/3 0 True]"},
	} {
		p := &infrastructure.InfrastructureClusterPack{ObjectMeta: metav1.ObjectMeta{Name: "ingress"},
			Spec:   infrastructure.InfrastructureClusterPackSpec{Version: "v1.2.0", Chart: tt.chart, Kustomize: tt.kustomize},
			Status: tt.status}
		if tt.chart == nil && tt.kustomize == nil {
			p.Spec.Manifests = []common.RawObject{{Raw: []byte(`{}`)}}
		}
		tbl, err := Table.ConvertToTable(context.Background(), p, nil)
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
	if got := strings.Join(headers, " "); got != "NAME VERSION REVISION CONTENT CLUSTERS DRIFTED READY AGE" {
		t.Errorf("columns %s", got)
	}
	// The store serves the same table for what it lists.
	e := newEnv(t)
	e.create(rawBody)
	list, err := e.main.List(e.ctx, &metainternalversion.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := e.main.ConvertToTable(e.ctx, list, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tbl.Rows) != 1 || fmt.Sprint(tbl.Rows[0].Cells[:7]) != "[ingress v1.0.0 0 manifests 0/0 0 Unknown]" || len(tbl.ColumnDefinitions) != 8 {
		t.Errorf("the store's table: %+v", tbl)
	}
}
