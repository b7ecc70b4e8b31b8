package resourcebinding

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/errkind"
	listers "github.com/plinth-dev/plinth/pkg/generated/listers/score/v1b1"
)

func TestParseRouteParams(t *testing.T) {
	for name, tc := range map[string]struct {
		params    map[string]interface{}
		want      RouteParams
		wantParam string
	}{
		"all set":              {params: map[string]interface{}{"host": "shop.example.com", "port": float64(80), "path": "/api"}, want: RouteParams{Host: "shop.example.com", Port: 80, Path: "/api"}},
		"path defaults to /":   {params: map[string]interface{}{"host": "shop.example.com", "port": float64(8080)}, want: RouteParams{Host: "shop.example.com", Port: 8080, Path: "/"}},
		"port as a string":     {params: map[string]interface{}{"host": "shop.example.com", "port": "443"}, want: RouteParams{Host: "shop.example.com", Port: 443, Path: "/"}},
		"wildcard host":        {params: map[string]interface{}{"host": "*.example.com", "port": float64(80)}, want: RouteParams{Host: "*.example.com", Port: 80, Path: "/"}},
		"no host":              {params: map[string]interface{}{"port": float64(80)}, wantParam: "host"},
		"host with a scheme":   {params: map[string]interface{}{"host": "https://shop.example.com", "port": float64(80)}, wantParam: "host"},
		"no port":              {params: map[string]interface{}{"host": "shop.example.com"}, wantParam: "port"},
		"port out of range":    {params: map[string]interface{}{"host": "shop.example.com", "port": float64(70000)}, wantParam: "port"},
		"fractional port":      {params: map[string]interface{}{"host": "shop.example.com", "port": 80.5}, wantParam: "port"},
		"port is not a number": {params: map[string]interface{}{"host": "shop.example.com", "port": "http"}, wantParam: "port"},
		"relative path":        {params: map[string]interface{}{"host": "shop.example.com", "port": float64(80), "path": "api"}, wantParam: "path"},
		"path with a query":    {params: map[string]interface{}{"host": "shop.example.com", "port": float64(80), "path": "/a?b=c"}, wantParam: "path"},
		"path not a string":    {params: map[string]interface{}{"host": "shop.example.com", "port": float64(80), "path": float64(1)}, wantParam: "path"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ParseRouteParams(tc.params)
			if tc.wantParam != "" {
				var pe *ParamError
				if !errors.As(err, &pe) || pe.Param != tc.wantParam || pe.Message == "" {
					t.Fatalf("error %v, want a ParamError for %q", err, tc.wantParam)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestRouteCreatesIngressToTheWorkloadService(t *testing.T) {
	client := fake.NewClientset()
	r := &route{env: Env{Client: client, IngressClassName: "public"}}
	b := &v1b1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "site-route", Namespace: "team-a", UID: "uid-1"},
		Spec: v1b1.ResourceBindingSpec{WorkloadRef: v1b1.WorkloadReference{Name: "site"}, Type: "route",
			Params: &common.RawObject{Raw: []byte(`{"host":"site.example.com","port":80,"path":"/shop"}`)}},
	}
	result, err := r.Provision(context.Background(), b)
	if err != nil || !result.Ready || len(result.Values) != 0 {
		t.Fatalf("result %+v, %v", result, err)
	}
	ing, err := client.NetworkingV1().Ingresses("team-a").Get(context.Background(), "site-route", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ing.OwnerReferences) != 1 || ing.OwnerReferences[0].Kind != "ResourceBinding" || ing.OwnerReferences[0].UID != "uid-1" {
		t.Errorf("owner references %+v", ing.OwnerReferences)
	}
	if ing.Spec.IngressClassName == nil || *ing.Spec.IngressClassName != "public" {
		t.Errorf("ingress class %v", ing.Spec.IngressClassName)
	}
	rule := ing.Spec.Rules[0]
	path := rule.HTTP.Paths[0]
	if rule.Host != "site.example.com" || path.Path != "/shop" || *path.PathType != networkingv1.PathTypePrefix ||
		path.Backend.Service.Name != "site" || path.Backend.Service.Port.Number != 80 {
		t.Errorf("rule %+v", rule)
	}

	b.Spec.Params = &common.RawObject{Raw: []byte(`{"host":"site.example.com"}`)}
	if _, err := r.Provision(context.Background(), b); err == nil {
		t.Error("a route without a port was provisioned")
	}
	// The old params must not stay published.
	if _, err := client.NetworkingV1().Ingresses("team-a").Get(context.Background(), "site-route", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Ingress of the old params is still there: %v", err)
	}
}

func TestIngressParamError(t *testing.T) {
	for field, want := range map[string]string{
		"spec.rules[0].host":                                      "host",
		"spec.rules[0].http.paths[0].path":                        "path",
		"spec.rules[0].http.paths[0].backend.service.port.number": "port",
		"spec.ingressClassName":                                   "params",
	} {
		invalid := apierrors.NewInvalid(schema.GroupKind{Group: "networking.k8s.io", Kind: "Ingress"}, "site-route", nil)
		invalid.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: field, Message: "bad"}}
		pe := ingressParamError(invalid)
		if pe.Param != want || !strings.Contains(pe.Message, `"`+want+`"`) {
			t.Errorf("field %s: %+v, want param %q", field, pe, want)
		}
	}
}

func TestServicePortOutputs(t *testing.T) {
	binding := func(params string) *v1b1.ResourceBinding {
		b := &v1b1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: "web-port", Namespace: "team-a"},
			Spec: v1b1.ResourceBindingSpec{WorkloadRef: v1b1.WorkloadReference{Name: "web"}, Type: "service-port"}}
		if params != "" {
			b.Spec.Params = &common.RawObject{Raw: []byte(params)}
		}
		return b
	}
	out, err := servicePortOutputs(binding(`{"port": 8080}`))
	if err != nil || out["hostname"] != "web.team-a.svc" || out["port"] != "8080" {
		t.Errorf("own workload: %v %v", out, err)
	}
	out, err = servicePortOutputs(binding(`{"workload": "api", "port": "9090"}`))
	if err != nil || out["hostname"] != "api.team-a.svc" || out["port"] != "9090" {
		t.Errorf("other workload: %v %v", out, err)
	}
	for _, params := range []string{"", `{}`, `{"port": 0}`, `{"port": 80, "workload": "Not_A_Name"}`, `[1]`} {
		var pe *ParamError
		if _, err := servicePortOutputs(binding(params)); !errors.As(err, &pe) {
			t.Errorf("params %s: error %v, want a ParamError", params, err)
		}
	}
}

// A route takes over no Ingress of its name that it does not control: applying over it would
// make the binding its controller, and the garbage collector would delete it with the binding.
// The binding is refused with one sentence naming it, and params gone bad delete it neither.
func TestRouteTakesOverNothing(t *testing.T) {
	b := &v1b1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "site-route", Namespace: "team-a", UID: "uid-1"},
		Spec: v1b1.ResourceBindingSpec{WorkloadRef: v1b1.WorkloadReference{Name: "site"}, ResourceKey: "route", Type: "route",
			Params: &common.RawObject{Raw: []byte(`{"host":"site.example.com","port":80}`)}},
	}
	bad := b.DeepCopy()
	bad.Spec.Params = &common.RawObject{Raw: []byte(`{"port":80}`)}
	legacy := func() *networkingv1.Ingress {
		return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "site-route", Namespace: "team-a", Labels: map[string]string{"app": "legacy"}},
			Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "legacy.example.com"}}}}
	}
	for name, binding := range map[string]*v1b1.ResourceBinding{"params": b, "params gone bad": bad} {
		t.Run(name, func(t *testing.T) {
			client := fake.NewClientset(legacy())
			r := &route{env: Env{Client: client}}
			_, err := r.Provision(context.Background(), binding)
			var taken *ForeignObjectError
			var param *ParamError
			switch {
			case binding == b && (!errors.As(err, &taken) || !errkind.IsStalled(err) || err.Error() != `Ingress "site-route" already exists and was not created for resource "route".`):
				t.Errorf("Provision: %v, want the Ingress refused", err)
			case binding == bad && (!errors.As(err, &param) || !errkind.IsStalled(err)):
				t.Errorf("Provision: %v, want the param error", err)
			}
			for _, a := range client.Actions() {
				if a.GetVerb() != "get" {
					t.Errorf("wrote %s %s", a.GetVerb(), a.GetResource().Resource)
				}
			}
			live, err := client.NetworkingV1().Ingresses("team-a").Get(context.Background(), "site-route", metav1.GetOptions{})
			if err != nil || !reflect.DeepEqual(live, legacy()) {
				t.Errorf("the Ingress is now %+v, %v; want it unchanged", live, err)
			}
		})
	}

	// Its own Ingress is still removed when the params go bad.
	client := fake.NewClientset()
	r := &route{env: Env{Client: client}}
	if _, err := r.Provision(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Provision(context.Background(), bad); err == nil {
		t.Fatal("bad params accepted")
	}
	if _, err := client.NetworkingV1().Ingresses("team-a").Get(context.Background(), "site-route", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the route's own Ingress: %v, want it deleted", err)
	}
}

// An Ingress in a Failed route's way wakes the route when it changes or goes; nothing else does.
func TestRefusedRouteWokenByTheIngressInTheWay(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for name, phase := range map[string]v1b1.BindingPhase{"site-route": v1b1.BindingPhaseFailed, "shop-route": v1b1.BindingPhaseBound} {
		if err := indexer.Add(&v1b1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name}, Status: v1b1.ResourceBindingStatus{Phase: phase}}); err != nil {
			t.Fatal(err)
		}
	}
	c := &Controller{bindings: listers.NewResourceBindingLister(indexer)}
	ingress := func(name string, owners ...metav1.OwnerReference) *networkingv1.Ingress {
		return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, OwnerReferences: owners}}
	}
	own := metav1.OwnerReference{APIVersion: v1b1.SchemeGroupVersion.String(), Kind: "ResourceBinding", Name: "site-route", UID: "u", Controller: ptr.To(true)}
	site := []cache.ObjectName{cache.NewObjectName("team-a", "site-route")}
	for name, c2 := range map[string]struct {
		obj  interface{}
		want []cache.ObjectName
	}{
		"someone's Ingress":             {obj: ingress("site-route"), want: site},
		"a deleted one, as a tombstone": {obj: cache.DeletedFinalStateUnknown{Obj: ingress("site-route")}, want: site},
		"the route's own":               {obj: ingress("site-route", own)},
		"named after a bound route":     {obj: ingress("shop-route")},
		"named after no route":          {obj: ingress("web")},
	} {
		if got := c.refusedRouteOf(c2.obj); !reflect.DeepEqual(got, c2.want) {
			t.Errorf("%s: woke %v, want %v", name, got, c2.want)
		}
	}
}
