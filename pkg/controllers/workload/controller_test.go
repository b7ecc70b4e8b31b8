package workload

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/errkind"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

// fixture follows sample-controller's controller_test.go: objects are seeded into the fake
// clientsets and straight into the informers' indexers, one key is synced, and the actions the
// controller took and the events it recorded are compared with what was expected.
type fixture struct {
	t *testing.T

	plinth   *fake.Clientset
	kube     *kubefake.Clientset
	recorder *events.FakeRecorder

	workloads  []*v1b1.Workload
	bindings   []*v1b1.ResourceBinding
	plans      []*v1b1.WorkloadPlan
	policies   []*v1b1.PlatformPolicy
	namespaces []*corev1.Namespace
	secrets    []*corev1.Secret

	actions []clienttesting.Action
	events  []string
	// stalled expects the reconcile to end Stalled: inputs that cannot be used.
	stalled bool

	// informers are the Plinth informers of the last newController, whose indexers a test
	// may change between reconciles.
	informers informers.SharedInformerFactory
}

func newFixture(t *testing.T) *fixture {
	return &fixture{t: t, namespaces: []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"tier": "prod"}}}}}
}

func (f *fixture) newController() *Controller {
	f.t.Helper()
	var plinthObjects, kubeObjects []runtime.Object
	for _, o := range f.workloads {
		plinthObjects = append(plinthObjects, o)
	}
	for _, o := range f.bindings {
		plinthObjects = append(plinthObjects, o)
	}
	for _, o := range f.plans {
		plinthObjects = append(plinthObjects, o)
	}
	for _, o := range f.policies {
		plinthObjects = append(plinthObjects, o)
	}
	for _, o := range f.namespaces {
		kubeObjects = append(kubeObjects, o)
	}
	for _, o := range f.secrets {
		kubeObjects = append(kubeObjects, o)
	}
	f.plinth = fake.NewSimpleClientset(plinthObjects...)
	f.kube = kubefake.NewSimpleClientset(kubeObjects...)
	f.recorder = events.NewFakeRecorder(20)
	pf, kf := informers.NewSharedInformerFactory(f.plinth, 0), kubeinformers.NewSharedInformerFactory(f.kube, 0)
	f.informers = pf
	score, core := pf.Score().V1b1(), kf.Core().V1()
	c, err := NewController(context.Background(), f.plinth, f.recorder, score.Workloads(), score.ResourceBindings(), score.WorkloadPlans(),
		score.PlatformPolicies(), core.ConfigMaps(), core.Secrets(), core.Namespaces(), "kubernetes")
	if err != nil {
		f.t.Fatal(err)
	}
	add := func(informer cache.SharedIndexInformer, obj interface{}) {
		if err := informer.GetIndexer().Add(obj); err != nil {
			f.t.Fatal(err)
		}
	}
	for _, o := range f.workloads {
		add(score.Workloads().Informer(), o)
	}
	for _, o := range f.bindings {
		add(score.ResourceBindings().Informer(), o)
	}
	for _, o := range f.plans {
		add(score.WorkloadPlans().Informer(), o)
	}
	for _, o := range f.policies {
		add(score.PlatformPolicies().Informer(), o)
	}
	c.listers.Policies.Set(f.policies)
	for _, o := range f.namespaces {
		add(core.Namespaces().Informer(), o)
	}
	for _, o := range f.secrets {
		add(core.Secrets().Informer(), o)
	}
	return c
}

// run syncs one workload and checks the actions and events against the expectations.
func (f *fixture) run(name string) {
	f.t.Helper()
	c := f.newController()
	if err := c.reconcile(context.Background(), cache.NewObjectName("team-a", name)); errkind.IsStalled(err) != f.stalled || (err != nil && !f.stalled) {
		f.t.Fatalf("sync %s: %v (stalled expected: %v)", name, err, f.stalled)
	}
	var got []clienttesting.Action
	for _, a := range f.plinth.Actions() {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" {
			got = append(got, a)
		}
	}
	ignore := cmp.Options{
		cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime"),
		cmpopts.EquateEmpty(),
		cmp.Comparer(func(a, b common.RawObject) bool { return string(a.Raw) == string(b.Raw) }),
	}
	if len(got) != len(f.actions) {
		f.t.Fatalf("%d actions, want %d:\n%s", len(got), len(f.actions), cmp.Diff(describe(f.actions), describe(got)))
	}
	for i := range got {
		want := f.actions[i]
		if got[i].GetVerb() != want.GetVerb() || got[i].GetResource() != want.GetResource() || got[i].GetSubresource() != want.GetSubresource() {
			f.t.Errorf("action %d: got %s, want %s", i, describe(got[i:i+1]), describe([]clienttesting.Action{want}))
			continue
		}
		if w, ok := want.(objectAction); ok && w.GetObject() != nil {
			if diff := cmp.Diff(w.GetObject(), got[i].(objectAction).GetObject(), ignore); diff != "" {
				f.t.Errorf("action %d %s %s (-want +got):\n%s", i, want.GetVerb(), want.GetResource().Resource, diff)
			}
		}
	}
	var recorded []string
	for len(f.recorder.Events) > 0 {
		recorded = append(recorded, <-f.recorder.Events)
	}
	if diff := cmp.Diff(f.events, recorded, cmpopts.EquateEmpty()); diff != "" {
		f.t.Errorf("events (-want +got):\n%s", diff)
	}
}

type objectAction interface {
	clienttesting.Action
	GetObject() runtime.Object
}

func describe(actions ...[]clienttesting.Action) []string {
	var out []string
	for _, list := range actions {
		for _, a := range list {
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource+"/"+a.GetSubresource())
		}
	}
	return out
}

var (
	workloadsResource = v1b1.SchemeGroupVersion.WithResource("workloads")
	bindingsResource  = v1b1.SchemeGroupVersion.WithResource("resourcebindings")
	plansResource     = v1b1.SchemeGroupVersion.WithResource("workloadplans")
)

func (f *fixture) expectCreate(resource string, obj runtime.Object) {
	f.actions = append(f.actions, clienttesting.NewCreateAction(v1b1.SchemeGroupVersion.WithResource(resource), "team-a", obj))
}

func (f *fixture) expectStatus(w *v1b1.Workload) {
	f.actions = append(f.actions, clienttesting.NewUpdateSubresourceAction(workloadsResource, "status", "team-a", w))
}

// newWorkload is a workload with one container that reads a database's host and exposes a port.
func newWorkload(name, image string) *v1b1.Workload {
	return &v1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", UID: types.UID("uid-" + name), Generation: 2},
		Spec: v1b1.WorkloadSpec{
			Containers: map[string]v1b1.Container{"main": {Image: image, Variables: map[string]string{"DB_HOST": "${resources.db.host}"}}},
			Resources:  map[string]v1b1.ResourceSpec{"db": {Type: "postgres"}},
		},
	}
}

func condition(t string, ok bool, reason, message string) metav1.Condition {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: message, ObservedGeneration: 2}
}

func wantBinding(w *v1b1.Workload) *v1b1.ResourceBinding {
	return &v1b1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Name: v1b1.ResourceBindingName(w.Name, "db"), Namespace: "team-a",
			Labels:          map[string]string{v1b1.WorkloadBindingLabel(w.Name): "db", v1b1.WorkloadLabel: w.Name},
			OwnerReferences: []metav1.OwnerReference{ownerRef(w)}},
		Spec: v1b1.ResourceBindingSpec{WorkloadRef: v1b1.WorkloadReference{Name: w.Name, UID: string(w.UID)},
			ResourceKey: "db", Type: "postgres", Provisioner: "plinth"},
	}
}

func boundBinding(w *v1b1.Workload) *v1b1.ResourceBinding {
	b := wantBinding(w)
	b.Status = v1b1.ResourceBindingStatus{Phase: v1b1.BindingPhaseBound,
		Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "The resource is provisioned and ready."}},
		Outputs:    &v1b1.BindingOutputs{Metadata: map[string]string{"host": "hello-db.team-a.svc"}}}
	return b
}

func TestNewWorkloadGetsItsBindingsAndWaitsForThem(t *testing.T) {
	f := newFixture(t)
	w := newWorkload("hello", "registry.example.com/hello:1.0")
	f.workloads = append(f.workloads, w)
	f.expectCreate("resourcebindings", wantBinding(w))
	status := w.DeepCopy()
	status.Status = v1b1.WorkloadStatus{ObservedGeneration: 2,
		Conditions: []metav1.Condition{
			condition(v1b1.ConditionInputsValid, true, v1b1.ReasonSucceeded, "The specification is valid."),
			condition(v1b1.ConditionBindingsReady, false, v1b1.ReasonBindingPending, "Resources are being provisioned."),
			condition(v1b1.ConditionRuntimeReady, false, v1b1.ReasonBindingPending, "The workload waits for its resources before it is materialized."),
			condition(v1b1.ConditionReady, false, v1b1.ReasonBindingPending, "Resources are being provisioned."),
		},
		Bindings: []v1b1.BindingSummary{{Key: "db", Phase: v1b1.BindingPhasePending, Reason: v1b1.ReasonBindingPending, Message: "The resource is waiting to be provisioned."}},
	}
	f.expectStatus(status)
	f.events = []string{"Normal BindingPending Resources are being provisioned."}
	f.run("hello")
	// Unchanged on the next pass: no write and no second event (the binding is still pending).
	status.Status.Conditions[0].LastTransitionTime = metav1.Now()
	again := newFixture(t)
	again.workloads, again.bindings = []*v1b1.Workload{status}, []*v1b1.ResourceBinding{wantBinding(w)}
	again.run("hello")
}

func TestBoundResourcesLeadToAPlan(t *testing.T) {
	f := newFixture(t)
	w := newWorkload("hello", "registry.example.com/hello:1.0")
	f.workloads = append(f.workloads, w)
	f.bindings = append(f.bindings, boundBinding(w))
	f.actions = append(f.actions, clienttesting.NewCreateAction(plansResource, "team-a", nil))
	f.actions = append(f.actions, clienttesting.NewUpdateSubresourceAction(workloadsResource, "status", "team-a", nil))
	f.events = []string{
		"Normal BindingsReady All resources are bound.",
		"Normal RuntimeProvisioning The workload is being materialized.",
	}
	f.run("hello")
	plan := f.plinth.Actions()[len(f.plinth.Actions())-2].(clienttesting.CreateAction).GetObject().(*v1b1.WorkloadPlan)
	env := plan.Spec.Projection.Containers["main"].Env
	if diff := cmp.Diff([]string{"DB_HOST=hello-db.team-a.svc"}, envStrings(env)); diff != "" {
		t.Errorf("the plan's environment (-want +got):\n%s", diff)
	}
}

func TestReadyPlanMakesTheWorkloadReadyOnce(t *testing.T) {
	f := newFixture(t)
	w := newWorkload("hello", "registry.example.com/hello:1.0")
	f.workloads = append(f.workloads, w)
	f.bindings = append(f.bindings, boundBinding(w))
	// A first pass creates the plan; the runtime then reports it Ready.
	first := newFixture(t)
	first.workloads, first.bindings = f.workloads, f.bindings
	c := first.newController()
	if err := c.reconcile(context.Background(), cache.NewObjectName("team-a", "hello")); err != nil {
		t.Fatal(err)
	}
	plan, err := first.plinth.ScoreV1b1().WorkloadPlans("team-a").Get(context.Background(), "hello", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plan.Status = v1b1.WorkloadPlanStatus{ObservedGeneration: plan.Generation,
		Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "Available."}}}
	f.plans = append(f.plans, plan)
	f.actions = append(f.actions, clienttesting.NewUpdateSubresourceAction(workloadsResource, "status", "team-a", nil))
	f.events = []string{"Normal BindingsReady All resources are bound.", "Normal Ready The workload is ready."}
	f.run("hello")

	// Synced again with the status it wrote, nothing changes: no write, no event.
	ready, err := f.plinth.ScoreV1b1().Workloads("team-a").Get(context.Background(), "hello", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	again := newFixture(t)
	again.workloads, again.bindings, again.plans = []*v1b1.Workload{ready}, f.bindings, f.plans
	again.run("hello")
}

func TestPolicyViolationBindsNothing(t *testing.T) {
	f := newFixture(t)
	w := newWorkload("hello", "docker.io/hello:latest")
	f.workloads = append(f.workloads, w)
	f.policies = append(f.policies, &v1b1.PlatformPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "prod-registries"},
		Spec: v1b1.PlatformPolicySpec{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}},
			Constraints:       &v1b1.PolicyConstraints{Images: &v1b1.ImageConstraints{AllowedRegistries: []string{"registry.example.com"}}},
		},
	})
	f.actions = append(f.actions, clienttesting.NewUpdateSubresourceAction(workloadsResource, "status", "team-a", nil))
	f.events = []string{`Warning PolicyViolation The workload violates platform policy "prod-registries" at spec.containers[main].image.`}
	f.stalled = true
	f.run("hello")
	got := f.plinth.Actions()[len(f.plinth.Actions())-1].(clienttesting.UpdateAction).GetObject().(*v1b1.Workload)
	ready := findCondition(got.Status.Conditions, v1b1.ConditionReady)
	if ready == nil || ready.Reason != v1b1.ReasonPolicyViolation {
		t.Fatalf("Ready: %+v", ready)
	}
}

func TestDeletedWorkloadIsLeftToGarbageCollection(t *testing.T) {
	f := newFixture(t)
	f.run("gone")
}

func findCondition(conditions []metav1.Condition, t string) *metav1.Condition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}

func envStrings(env []v1b1.EnvProjection) []string {
	var out []string
	for _, e := range env {
		switch {
		case e.Value != nil:
			out = append(out, e.Name+"="+*e.Value)
		case e.From != nil:
			out = append(out, e.Name+" from "+e.From.BindingKey+"."+e.From.OutputKey)
		}
	}
	return out
}

// A binding's credentials Secret can arrive after the binding turned Bound; it must wake the
// workloads that use the binding, and a namespace's labels must wake the workloads in it.
func TestSecretsAndNamespacesWakeTheirWorkloads(t *testing.T) {
	f := newFixture(t)
	w := newWorkload("hello", "registry.example.com/hello:1.0")
	shared := boundBinding(w)
	shared.Labels[v1b1.WorkloadBindingLabel("other")] = "db"
	f.workloads, f.bindings = []*v1b1.Workload{w, newWorkload("other", "registry.example.com/other:1.0")}, []*v1b1.ResourceBinding{shared}
	c := f.newController()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: shared.Name, Namespace: "team-a",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: v1b1.SchemeGroupVersion.String(), Kind: "ResourceBinding", Name: shared.Name}}}}
	got := c.workloadsUsingSecret(klog.Background())(secret)
	want := []cache.ObjectName{cache.NewObjectName("team-a", "hello"), cache.NewObjectName("team-a", "other")}
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b cache.ObjectName) bool { return a.String() < b.String() })); diff != "" {
		t.Errorf("workloads woken by the Secret (-want +got):\n%s", diff)
	}
	if got := c.workloadsUsingSecret(klog.Background())(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "unrelated", Namespace: "team-a"}}); len(got) != 0 {
		t.Errorf("an unrelated Secret woke %v", got)
	}
	if got := c.workloadsInNamespace(klog.Background())(f.namespaces[0]); len(got) != 2 {
		t.Errorf("workloads woken by the namespace: %v", got)
	}
	if got := c.allWorkloads(klog.Background()); len(got) != 2 {
		t.Errorf("workloads woken by a policy: %v", got)
	}
	if got := c.workloadsUsingConfigMap(klog.Background())(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "src", Namespace: "team-a"}}); len(got) != 0 {
		t.Errorf("workloads woken by a ConfigMap none of them reads: %v", got)
	}
}

// The plan carries who last wrote the workload's spec, as the server recorded it, so that a
// runtime's requests for it (a governed VM's ticket) name that user.
func TestPlanCarriesWhoWroteTheWorkload(t *testing.T) {
	plan := func(w *v1b1.Workload, plans ...*v1b1.WorkloadPlan) *v1b1.WorkloadPlan {
		t.Helper()
		f := newFixture(t)
		f.workloads, f.bindings, f.plans = []*v1b1.Workload{w}, []*v1b1.ResourceBinding{boundBinding(w)}, plans
		if err := f.newController().reconcile(context.Background(), cache.NewObjectName("team-a", "hello")); err != nil {
			t.Fatal(err)
		}
		p, err := f.plinth.ScoreV1b1().WorkloadPlans("team-a").Get(context.Background(), "hello", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	w := newWorkload("hello", "registry.example.com/hello:1.0")
	w.Annotations = map[string]string{common.AnnotationRequestedBy: "alice"}
	first := plan(w)
	if got := first.Annotations[common.AnnotationRequestedBy]; got != "alice" {
		t.Errorf("the new plan names %q, want alice", got)
	}
	changed := newWorkload("hello", "registry.example.com/hello:1.1")
	changed.Generation, changed.Annotations = 3, map[string]string{common.AnnotationRequestedBy: "bob"}
	if got := plan(changed, first).Annotations[common.AnnotationRequestedBy]; got != "bob" {
		t.Errorf("the updated plan names %q, want bob", got)
	}
	unknown := newWorkload("hello", "registry.example.com/hello:1.1")
	unknown.Generation = 3
	if got, ok := plan(unknown, first).Annotations[common.AnnotationRequestedBy]; ok {
		t.Errorf("a plan of a workload without a recorded writer names %q", got)
	}
}

// Params that cannot be used are invalid inputs found while binding: SpecInvalid naming the
// resource, nothing bound for it, and a Stalled reconcile (retrying cannot help until the
// workload or the outputs change). A cycle is found before anything is bound.
func TestUnusableParamsAreInvalidInputs(t *testing.T) {
	for name, tc := range map[string]struct {
		params  string
		message string
	}{
		"a secret output": {`{"host":"${resources.db.password}"}`, `The params of resource "route" cannot be resolved.`},
		"a cycle":         {`{"host":"${resources.route.host}"}`, "The params of resources route refer to each other in a cycle."},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			w := newWorkload("hello", "registry.example.com/hello:1.0")
			w.Spec.Resources["route"] = v1b1.ResourceSpec{Type: "route", Params: &common.RawObject{Raw: []byte(tc.params)}}
			db := boundBinding(w)
			db.Status.Outputs.Secrets = map[string]v1b1.SecretKeyReference{"password": {Name: "hello-db", Key: "password"}}
			f.workloads, f.bindings = []*v1b1.Workload{w}, []*v1b1.ResourceBinding{db}
			f.actions = append(f.actions, clienttesting.NewUpdateSubresourceAction(workloadsResource, "status", "team-a", nil))
			f.events = []string{"Warning SpecInvalid " + tc.message}
			f.stalled = true
			f.run("hello")
			actions := f.plinth.Actions()
			written := actions[len(actions)-1].(clienttesting.UpdateAction).GetObject().(*v1b1.Workload)
			if c := findCondition(written.Status.Conditions, v1b1.ConditionInputsValid); c == nil || c.Reason != v1b1.ReasonSpecInvalid || c.Message != tc.message {
				t.Errorf("InputsValid: %+v", c)
			}
		})
	}
}
