package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	scoreac "github.com/plinth-dev/plinth/pkg/generated/applyconfiguration/score/v1b1"
	clientscheme "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/scheme"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// TestScoreAPI runs one standalone plinth-apiserver (embedded etcd) and exercises the four
// score.dev kinds through the generated clientset.
func TestScoreAPI(t *testing.T) {
	p := framework.StartPlinth(t, framework.Options{})
	ctx := context.Background()
	score := p.Client.ScoreV1b1()

	t.Run("workload CRUD and watch", func(t *testing.T) {
		ns := "crud"
		w, err := score.Workloads(ns).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()

		created, err := score.Workloads(ns).Create(ctx, newWorkload("web", "kubernetes"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if created.Generation != 1 || created.UID == "" {
			t.Errorf("created generation=%d uid=%q", created.Generation, created.UID)
		}
		if got := created.Spec.Service.Ports["web"].Protocol; got != "TCP" {
			t.Errorf("port protocol defaulted to %q, want TCP", got)
		}
		got, err := score.Workloads(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Spec.Resources["db"].Params.Raw) != `{"version":16}` {
			t.Errorf("params = %s", got.Spec.Resources["db"].Params.Raw)
		}
		got.Spec.Containers["main"] = v1b1.Container{Image: "registry.example.com/web:1.1"}
		updated, err := score.Workloads(ns).Update(ctx, got, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if updated.Generation != 2 {
			t.Errorf("generation after spec change = %d, want 2", updated.Generation)
		}
		list, err := score.Workloads(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			t.Fatalf("list = %v, %v", list, err)
		}
		if err := score.Workloads(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := score.Workloads(ns).Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get after delete: %v, want NotFound", err)
		}
		expectEvents(t, w, watch.Added, watch.Modified, watch.Deleted)
	})

	t.Run("platformpolicy, resourcebinding and workloadplan CRUD", func(t *testing.T) {
		ns := "crud-internal"
		pol, err := score.PlatformPolicies().Create(ctx, newPolicy("team-a-defaults", 10), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pol.Namespace != "" {
			t.Errorf("policy namespace = %q, want cluster-scoped", pol.Namespace)
		}
		pol.Spec.Priority = 20
		if pol, err = score.PlatformPolicies().Update(ctx, pol, metav1.UpdateOptions{}); err != nil || pol.Generation != 2 {
			t.Fatalf("policy update: generation=%d err=%v", pol.Generation, err)
		}
		b, err := score.ResourceBindings(ns).Create(ctx, newBinding("web-db", "web", "db"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b.Spec.Class = "large"
		if _, err := score.ResourceBindings(ns).Update(ctx, b, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		plan, err := score.WorkloadPlans(ns).Create(ctx, newPlan("web"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if plan.Spec.Projection.Containers["main"].Env[0].From.OutputKey != "host" {
			t.Errorf("plan env = %+v", plan.Spec.Projection.Containers["main"].Env)
		}
		for _, del := range []func() error{
			func() error { return score.PlatformPolicies().Delete(ctx, "team-a-defaults", metav1.DeleteOptions{}) },
			func() error { return score.ResourceBindings(ns).Delete(ctx, "web-db", metav1.DeleteOptions{}) },
			func() error { return score.WorkloadPlans(ns).Delete(ctx, "web", metav1.DeleteOptions{}) },
		} {
			if err := del(); err != nil {
				t.Error(err)
			}
		}
		pols, _ := score.PlatformPolicies().List(ctx, metav1.ListOptions{})
		bs, _ := score.ResourceBindings(ns).List(ctx, metav1.ListOptions{})
		plans, _ := score.WorkloadPlans(ns).List(ctx, metav1.ListOptions{})
		if len(pols.Items)+len(bs.Items)+len(plans.Items) != 0 {
			t.Errorf("objects left after delete: %d policies, %d bindings, %d plans", len(pols.Items), len(bs.Items), len(plans.Items))
		}
	})

	t.Run("status subresource", func(t *testing.T) {
		ns := "status"
		w, err := score.Workloads(ns).Create(ctx, newWorkload("web", "kubernetes"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Status sent through the main resource is ignored.
		w.Status.Endpoint = ptrTo("https://spoofed.example.com")
		w.Labels["tier"] = "front"
		w, err = score.Workloads(ns).Update(ctx, w, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if w.Status.Endpoint != nil {
			t.Errorf("main update changed status.endpoint to %q", *w.Status.Endpoint)
		}
		if w.Generation != 1 {
			t.Errorf("label change bumped generation to %d", w.Generation)
		}
		// Spec sent through status is ignored; status is taken.
		w.Status = v1b1.WorkloadStatus{
			ObservedGeneration: 1,
			Endpoint:           ptrTo("https://web.team.example.com"),
			Conditions: []metav1.Condition{{
				Type: v1b1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1b1.ReasonBindingPending,
				Message: "Resources are being provisioned.", LastTransitionTime: metav1.Now(),
			}},
			Bindings: []v1b1.BindingSummary{{Key: "db", Phase: v1b1.BindingPhaseBinding}},
		}
		w.Spec.RuntimeClass = "kubevirt"
		w, err = score.Workloads(ns).UpdateStatus(ctx, w, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if w.Spec.RuntimeClass != "kubernetes" {
			t.Errorf("status update changed spec.runtimeClass to %q", w.Spec.RuntimeClass)
		}
		if w.Status.Endpoint == nil || *w.Status.Endpoint != "https://web.team.example.com" {
			t.Errorf("status.endpoint = %v", w.Status.Endpoint)
		}
		if w.Generation != 1 {
			t.Errorf("status update bumped generation to %d", w.Generation)
		}
		// An invalid status is refused and the stored status stays.
		bad := w.DeepCopy()
		bad.Status.Conditions[0].Reason = "PodCrashLooping"
		_, err = score.Workloads(ns).UpdateStatus(ctx, bad, metav1.UpdateOptions{})
		expectInvalid(t, err, "status.conditions[0].reason")

		// Status subresources of the other kinds.
		b, err := score.ResourceBindings(ns).Create(ctx, newBinding("web-db", "web", "db"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b.Status.Phase = v1b1.BindingPhaseBound
		b.Status.BindingTime = &metav1.Time{Time: time.Now().Truncate(time.Second)}
		b.Status.Outputs = &v1b1.BindingOutputs{Metadata: map[string]string{"host": "web-db.status.svc", "port": "5432"},
			Credentials: &v1b1.CredentialsReference{SecretRef: &v1b1.SecretKeyReference{Name: "web-db"}}}
		if b, err = score.ResourceBindings(ns).UpdateStatus(ctx, b, metav1.UpdateOptions{}); err != nil || b.Status.Phase != v1b1.BindingPhaseBound {
			t.Fatalf("binding status: %v %v", b.Status.Phase, err)
		}
		plan, err := score.WorkloadPlans(ns).Create(ctx, newPlan("web"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		plan.Status.Phase = v1b1.PlanPhaseProjected
		if plan, err = score.WorkloadPlans(ns).UpdateStatus(ctx, plan, metav1.UpdateOptions{}); err != nil || plan.Status.Phase != v1b1.PlanPhaseProjected {
			t.Fatalf("plan status: %v %v", plan.Status.Phase, err)
		}
		pol, err := score.PlatformPolicies().Create(ctx, newPolicy("status-policy", 1), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pol.Status.ObservedGeneration = 1
		if pol, err = score.PlatformPolicies().UpdateStatus(ctx, pol, metav1.UpdateOptions{}); err != nil || pol.Status.ObservedGeneration != 1 {
			t.Fatalf("policy status: %v", err)
		}
	})

	t.Run("optimistic concurrency", func(t *testing.T) {
		ns := "occ"
		w, err := score.Workloads(ns).Create(ctx, newWorkload("web", "kubernetes"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		first := w.DeepCopy()
		first.Spec.RuntimeClass = "kubevirt"
		if _, err := score.Workloads(ns).Update(ctx, first, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		stale := w.DeepCopy()
		stale.Spec.RuntimeClass = "nomad"
		_, err = score.Workloads(ns).Update(ctx, stale, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			t.Fatalf("stale update: %v, want 409 Conflict", err)
		}
		got, _ := score.Workloads(ns).Get(ctx, "web", metav1.GetOptions{})
		if got.Spec.RuntimeClass != "kubevirt" {
			t.Errorf("stored runtimeClass = %q, want the first writer's kubevirt", got.Spec.RuntimeClass)
		}
	})

	t.Run("server-side apply", func(t *testing.T) {
		ns := "ssa"
		apply := scoreac.Workload("web", ns).
			WithLabels(map[string]string{"app": "web"}).
			WithSpec(scoreac.WorkloadSpec().
				WithRuntimeClass("kubernetes").
				WithContainers(map[string]scoreac.ContainerApplyConfiguration{
					"main": *scoreac.Container().WithImage("registry.example.com/web:1.0").WithVariables(map[string]string{"MODE": "prod"}),
				}))
		w, err := score.Workloads(ns).Apply(ctx, apply, metav1.ApplyOptions{FieldManager: "team-a", Force: true})
		if err != nil {
			t.Fatal(err)
		}
		if w.Spec.Containers["main"].Variables["MODE"] != "prod" {
			t.Errorf("applied variables = %v", w.Spec.Containers["main"].Variables)
		}
		// A second manager changing the same field conflicts unless it forces.
		other := scoreac.Workload("web", ns).WithSpec(scoreac.WorkloadSpec().WithRuntimeClass("kubevirt"))
		_, err = score.Workloads(ns).Apply(ctx, other, metav1.ApplyOptions{FieldManager: "platform"})
		if !apierrors.IsConflict(err) {
			t.Fatalf("conflicting apply: %v, want 409 Conflict", err)
		}
		// Adding a field another manager does not own merges.
		addPort := scoreac.Workload("web", ns).WithSpec(scoreac.WorkloadSpec().WithService(scoreac.ServiceSpec().
			WithPorts(map[string]scoreac.ServicePortApplyConfiguration{"web": *scoreac.ServicePort().WithPort(80)})))
		w, err = score.Workloads(ns).Apply(ctx, addPort, metav1.ApplyOptions{FieldManager: "platform"})
		if err != nil {
			t.Fatal(err)
		}
		if w.Spec.RuntimeClass != "kubernetes" || w.Spec.Service.Ports["web"].Port != 80 {
			t.Errorf("merged apply: runtimeClass=%q ports=%v", w.Spec.RuntimeClass, w.Spec.Service)
		}
		// Status is applied through the status subresource only.
		statusApply := scoreac.Workload("web", ns).WithStatus(scoreac.WorkloadStatus().
			WithEndpoint("https://web.example.com").
			WithConditions(metav1ac.Condition().WithType("Ready").WithStatus(metav1.ConditionTrue).
				WithReason("Succeeded").WithMessage("The workload is running.").WithLastTransitionTime(metav1.Now())))
		w, err = score.Workloads(ns).ApplyStatus(ctx, statusApply, metav1.ApplyOptions{FieldManager: "orchestrator", Force: true})
		if err != nil {
			t.Fatal(err)
		}
		if w.Status.Endpoint == nil || !meta.IsStatusConditionTrue(w.Status.Conditions, "Ready") {
			t.Errorf("applied status = %+v", w.Status)
		}
		// Status applied through the main resource is dropped.
		sneaky := scoreac.Workload("web", ns).WithStatus(scoreac.WorkloadStatus().WithEndpoint("https://spoofed.example.com"))
		w, err = score.Workloads(ns).Apply(ctx, sneaky, metav1.ApplyOptions{FieldManager: "sneaky", Force: true})
		if err != nil {
			t.Fatal(err)
		}
		if *w.Status.Endpoint != "https://web.example.com" {
			t.Errorf("main-resource apply changed status.endpoint to %q", *w.Status.Endpoint)
		}
		// Managed fields record each manager.
		managers := map[string]bool{}
		for _, mf := range w.ManagedFields {
			managers[mf.Manager+"/"+mf.Subresource] = true
		}
		for _, want := range []string{"platform/", "orchestrator/status"} {
			if !managers[want] {
				t.Errorf("managedFields lack %s: %v", want, managers)
			}
		}
		// Extract gives back what a manager owns, ready to re-apply.
		extracted, err := scoreac.ExtractWorkload(w, "platform")
		if err != nil || extracted.Spec == nil || extracted.Spec.Service == nil {
			t.Errorf("ExtractWorkload(platform) = %+v, %v", extracted, err)
		}
	})

	t.Run("field selectors", func(t *testing.T) {
		ns := "selectors"
		for name, rc := range map[string]string{"a": "kubernetes", "b": "kubevirt", "c": "kubernetes"} {
			if _, err := score.Workloads(ns).Create(ctx, newWorkload(name, rc), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		list, err := score.Workloads(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.runtimeClass=kubernetes"})
		if err != nil {
			t.Fatal(err)
		}
		if names := workloadNames(list.Items); names != "a,c" {
			t.Errorf("spec.runtimeClass=kubernetes → %s, want a,c", names)
		}
		for _, b := range []*v1b1.ResourceBinding{newBinding("a-db", "a", "db"), newBinding("b-db", "b", "db"), newBinding("a-cache", "a", "cache")} {
			created, err := score.ResourceBindings(ns).Create(ctx, b, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if b.Name == "a-db" {
				created.Status.Phase = v1b1.BindingPhaseBound
				if _, err := score.ResourceBindings(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		}
		for selector, want := range map[string]string{
			"spec.workloadRef.name=a":                     "a-cache,a-db",
			"status.phase=Bound":                          "a-db",
			"spec.workloadRef.name=a,status.phase!=Bound": "a-cache",
			"spec.type=postgres,spec.workloadRef.name=b":  "b-db",
			"metadata.name=b-db":                          "b-db",
		} {
			list, err := score.ResourceBindings(ns).List(ctx, metav1.ListOptions{FieldSelector: selector})
			if err != nil {
				t.Errorf("%s: %v", selector, err)
				continue
			}
			var names []string
			for _, b := range list.Items {
				names = append(names, b.Name)
			}
			if got := strings.Join(names, ","); got != want {
				t.Errorf("%s → %s, want %s", selector, got, want)
			}
		}
		// A field that is not selectable is a clear 400, not an empty list.
		_, err = score.Workloads(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.containers=x"})
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "spec.containers") {
			t.Errorf("unsupported field selector: %v, want 400 naming the field", err)
		}
		// Watches honour field selectors too.
		w, err := score.Workloads(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "spec.runtimeClass=kubevirt"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if _, err := score.Workloads(ns).Create(ctx, newWorkload("d", "kubernetes"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := score.Workloads(ns).Create(ctx, newWorkload("e", "kubevirt"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ev := nextEvent(t, w)
		if got := ev.Object.(*v1b1.Workload).Name; got != "b" && got != "e" {
			t.Errorf("selected watch delivered %s", got)
		}
	})

	t.Run("protobuf-preferring clients get JSON", func(t *testing.T) {
		cfg := rest.CopyConfig(p.Config)
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf, application/json"
		cfg.ContentType = "application/json"
		cfg.GroupVersion = &v1b1.SchemeGroupVersion
		cfg.APIPath = "/apis"
		cfg.NegotiatedSerializer = clientscheme.Codecs.WithoutConversion()
		rc, err := rest.RESTClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		res := rc.Get().Resource("workloads").Namespace("selectors").Do(ctx)
		var code int
		res.StatusCode(&code)
		raw, err := res.Raw()
		if err != nil || code != http.StatusOK {
			t.Fatalf("GET with protobuf first: %d %v", code, err)
		}
		var list map[string]interface{}
		if err := json.Unmarshal(raw, &list); err != nil || list["kind"] != "WorkloadList" {
			t.Errorf("answer is not a JSON WorkloadList: %.200s", raw)
		}
	})

	t.Run("discovery", func(t *testing.T) {
		resources, err := p.Client.Discovery().ServerResourcesForGroupVersion("score.dev/v1b1")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, r := range resources.APIResources {
			got[r.Name] = fmt.Sprintf("namespaced=%v short=%v categories=%v", r.Namespaced, r.ShortNames, r.Categories)
		}
		want := map[string]string{
			"workloads":               "namespaced=true short=[wl] categories=[score]",
			"platformpolicies":        "namespaced=false short=[pp] categories=[score]",
			"resourcebindings":        "namespaced=true short=[rb] categories=[score]",
			"workloadplans":           "namespaced=true short=[wp] categories=[score]",
			"workloads/status":        "namespaced=true short=[] categories=[]",
			"platformpolicies/status": "namespaced=false short=[] categories=[]",
			"resourcebindings/status": "namespaced=true short=[] categories=[]",
			"workloadplans/status":    "namespaced=true short=[] categories=[]",
		}
		for name, w := range want {
			if got[name] != w {
				t.Errorf("%s: %s, want %s", name, got[name], w)
			}
		}
	})

	t.Run("health and metrics", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/livez", "/readyz", "/metrics", "/openapi/v2", "/openapi/v3/apis/score.dev/v1b1"} {
			body, err := p.Client.Discovery().RESTClient().Get().AbsPath(path).DoRaw(ctx)
			if err != nil {
				t.Errorf("%s: %v", path, err)
				continue
			}
			if len(body) == 0 {
				t.Errorf("%s: empty answer", path)
			}
		}
	})
}

func ptrTo(s string) *string { return &s }

func workloadNames(items []v1b1.Workload) string {
	var names []string
	for _, w := range items {
		names = append(names, w.Name)
	}
	return strings.Join(names, ",")
}

func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event within 10s")
	}
	return watch.Event{}
}

func expectEvents(t *testing.T, w watch.Interface, types ...watch.EventType) {
	t.Helper()
	for _, want := range types {
		if ev := nextEvent(t, w); ev.Type != want {
			t.Fatalf("watch event %s, want %s", ev.Type, want)
		}
	}
}

// expectInvalid checks for a 422 Invalid status whose causes include each field path.
func expectInvalid(t *testing.T, err error, fields ...string) {
	t.Helper()
	status, ok := err.(apierrors.APIStatus)
	if !ok || !apierrors.IsInvalid(err) {
		t.Fatalf("error %v, want 422 Invalid", err)
	}
	got := map[string]bool{}
	for _, c := range status.Status().Details.Causes {
		got[c.Field] = true
	}
	for _, f := range fields {
		if !got[f] {
			t.Errorf("causes %v lack field %s (%v)", got, f, err)
		}
	}
}
