package resourcebinding

import (
	"context"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
	"github.com/plinth-dev/plinth/pkg/errkind"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	listers "github.com/plinth-dev/plinth/pkg/generated/listers/score/v1b1"
)

// postgresBinding is resource db of workload shop, type postgres: binding shop-db.
func postgresBinding() *v1b1.ResourceBinding {
	b := binding("")
	b.Spec.Type = "postgres"
	return b
}

// datastoreEnv is an Env whose clients hold objects and whose caches hold cached (objects the
// caches have not seen yet are only in the client).
func datastoreEnv(t *testing.T, objects []runtime.Object, cached ...runtime.Object) (Env, *kubefake.Clientset) {
	t.Helper()
	kube := kubefake.NewClientset(objects...)
	indexer := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	secrets, services, statefulSets := indexer(), indexer(), indexer()
	for _, o := range cached {
		var err error
		switch o.(type) {
		case *corev1.Secret:
			err = secrets.Add(o)
		case *corev1.Service:
			err = services.Add(o)
		case *appsv1.StatefulSet:
			err = statefulSets.Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return Env{Client: kube, Secrets: corelisters.NewSecretLister(secrets), Services: corelisters.NewServiceLister(services),
		StatefulSets: appslisters.NewStatefulSetLister(statefulSets)}, kube
}

// foreignSecret is a Secret named like the binding that someone else made: a password and more.
func foreignSecret() *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shop-db", Namespace: "team-a",
		// A label is anyone's to write: it does not make the Secret the binding's.
		Labels: map[string]string{"app.kubernetes.io/managed-by": "plinth", BindingLabel: "shop-db"}},
		Data: map[string][]byte{"password": []byte("not-yours"), "api-token": []byte("not-yours-either")}}
}

// A Secret, Service or StatefulSet named like a database binding that the binding did not make
// is neither read, used nor changed: the binding fails naming it, and its outputs name no
// credentials Secret, so no workload receives the Secret's keys.
func TestADatastoreUsesOnlyObjectsItMade(t *testing.T) {
	someoneElses := func(obj metav1.Object) metav1.Object {
		obj.SetName("shop-db")
		obj.SetNamespace("team-a")
		return obj
	}
	for _, tc := range []struct {
		kind string
		obj  runtime.Object
	}{
		{"Secret", foreignSecret()},
		{"Service", someoneElses(&corev1.Service{}).(runtime.Object)},
		{"StatefulSet", someoneElses(&appsv1.StatefulSet{Status: appsv1.StatefulSetStatus{ReadyReplicas: 1}}).(runtime.Object)},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			env, kube := datastoreEnv(t, []runtime.Object{tc.obj}, tc.obj)
			b := postgresBinding()
			res, err := Builtins(env)["postgres"].Provision(context.Background(), b)
			var foreign *ForeignObjectError
			if !errors.As(err, &foreign) {
				t.Fatalf("Provision: %+v, %v; want a ForeignObjectError", res, err)
			}
			want := tc.kind + ` "shop-db" already exists and was not created for resource "db".`
			if got := foreign.Error(); got != want {
				t.Errorf("message %q, want %q", got, want)
			}
			if res.SecretName != "" {
				t.Errorf("outputs name credentials Secret %q", res.SecretName)
			}
			for _, a := range kube.Actions() {
				if a.GetVerb() == "update" || a.GetVerb() == "patch" || a.GetVerb() == "delete" {
					t.Errorf("changed someone else's object: %s %s", a.GetVerb(), a.GetResource().Resource)
				}
			}
			if tc.kind == "Secret" {
				s, err := kube.CoreV1().Secrets("team-a").Get(context.Background(), "shop-db", metav1.GetOptions{})
				if err != nil || string(s.Data["password"]) != "not-yours" || len(s.OwnerReferences) != 0 {
					t.Errorf("the Secret was changed: %+v, %v", s, err)
				}
			}
		})
	}

	// Through the controller: the binding goes Failed with the sentence and no outputs.
	b := postgresBinding()
	plinth := fake.NewSimpleClientset(b)
	looptest.ResourceVersions(&plinth.Fake, plinth.Tracker(), v1b1.SchemeGroupVersion.WithResource("resourcebindings"))
	cachedBindings := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := cachedBindings.Add(b); err != nil {
		t.Fatal(err)
	}
	env, _ := datastoreEnv(t, []runtime.Object{foreignSecret()}, foreignSecret())
	c := &Controller{bindings: listers.NewResourceBindingLister(cachedBindings),
		builtins: Builtins(env), state: newStateStore(env.Client, env.Secrets),
		templates: newTemplateSet(nil, listers.NewProvisionerLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})))}
	c.writeStatusWith(plinth, events.NewFakeRecorder(10))
	c.Loop = loop.New(Name, c.reconcile)
	if err := c.reconcile(context.Background(), cache.NewObjectName("team-a", "shop-db")); !errkind.IsStalled(err) {
		t.Fatalf("a binding that cannot be provisioned as it stands is not retried: %v", err)
	}
	got, err := plinth.ScoreV1b1().ResourceBindings("team-a").Get(context.Background(), "shop-db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ready := got.Status.Conditions[len(got.Status.Conditions)-1]
	if got.Status.Phase != v1b1.BindingPhaseFailed || ready.Message != `Secret "shop-db" already exists and was not created for resource "db".` {
		t.Errorf("status: phase %s, %+v", got.Status.Phase, got.Status.Conditions)
	}
	if got.Status.Outputs != nil {
		t.Errorf("outputs of a binding that failed: %+v", got.Status.Outputs)
	}
}

// The objects a binding made are its own after a restart too, and even before the caches have
// seen them: the Secret's password stays the one it drew, so the database and its workloads
// agree.
func TestADatastoreKeepsTheObjectsItMade(t *testing.T) {
	b := postgresBinding()
	owned := metav1.ObjectMeta{Name: "shop-db", Namespace: "team-a", OwnerReferences: []metav1.OwnerReference{ownerRef(b)}}
	secret := &corev1.Secret{ObjectMeta: owned, Data: map[string][]byte{"username": []byte("app"), "password": []byte("drawn-before")}}
	sts := &appsv1.StatefulSet{ObjectMeta: owned, Status: appsv1.StatefulSetStatus{ReadyReplicas: 1}}
	svc := &corev1.Service{ObjectMeta: owned}
	for name, cached := range map[string][]runtime.Object{
		"cached (a restart)": {secret, svc, sts},
		"not cached yet":     nil,
	} {
		t.Run(name, func(t *testing.T) {
			env, kube := datastoreEnv(t, []runtime.Object{secret.DeepCopy(), svc.DeepCopy(), sts.DeepCopy()}, cached...)
			res, err := Builtins(env)["postgres"].Provision(context.Background(), b)
			if err != nil || !res.Ready || res.SecretName != "shop-db" {
				t.Fatalf("Provision: %+v, %v", res, err)
			}
			s, err := kube.CoreV1().Secrets("team-a").Get(context.Background(), "shop-db", metav1.GetOptions{})
			if err != nil || string(s.Data["password"]) != "drawn-before" {
				t.Errorf("the password changed: %+v, %v", s, err)
			}
		})
	}

	// A first reconcile creates all three, owned by the binding; the next uses them.
	env, kube := datastoreEnv(t, nil)
	if _, err := Builtins(env)["postgres"].Provision(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	s, err := kube.CoreV1().Secrets("team-a").Get(context.Background(), "shop-db", metav1.GetOptions{})
	if err != nil || !metav1.IsControlledBy(s, b) {
		t.Fatalf("created Secret: %+v, %v", s, err)
	}
	res, err := Builtins(env)["postgres"].Provision(context.Background(), b)
	if err != nil || res.SecretName != "shop-db" {
		t.Errorf("second reconcile: %+v, %v", res, err)
	}
}

// A binding deleted and made again under its name finds what its predecessor owned still there
// until the garbage collector removes it: it waits rather than use or refuse it.
func TestADatastoreWaitsForItsPredecessorsObjects(t *testing.T) {
	b := postgresBinding()
	old := ownerRef(b)
	old.UID = "an-earlier-binding"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shop-db", Namespace: "team-a", OwnerReferences: []metav1.OwnerReference{old}},
		Data: map[string][]byte{"password": []byte("the-old-one")}}
	env, _ := datastoreEnv(t, []runtime.Object{secret}, secret)
	res, err := Builtins(env)["postgres"].Provision(context.Background(), b)
	if err != nil || res.Ready || res.SecretName != "" {
		t.Errorf("Provision: %+v, %v; want not ready, no credentials, no error", res, err)
	}

	// An owner that is not the controller does not count.
	notController := ownerRef(b)
	notController.Controller = ptr.To(false)
	secret.OwnerReferences = []metav1.OwnerReference{notController}
	env, _ = datastoreEnv(t, []runtime.Object{secret}, secret)
	var foreign *ForeignObjectError
	if _, err := Builtins(env)["postgres"].Provision(context.Background(), b); !errors.As(err, &foreign) {
		t.Errorf("a Secret the binding does not control: %v, want a ForeignObjectError", err)
	}
}
