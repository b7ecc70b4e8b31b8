package kubernetes

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

// runtimePlan exercises every part of the runtime's projection: two containers, static and
// bound variables, a secret output, a file, a volume, resources, both probe kinds and ports.
func runtimePlan() (*v1b1.WorkloadPlan, map[string]*v1b1.ResourceBinding) {
	plan := &v1b1.WorkloadPlan{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop", UID: "plan-uid"},
		Spec: v1b1.WorkloadPlanSpec{
			WorkloadRef:  v1b1.PlanWorkloadReference{Name: "shop"},
			RuntimeClass: "kubernetes",
			Metadata:     &v1b1.PlanMetadata{Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "x"}},
			Projection: v1b1.WorkloadProjection{
				Containers: map[string]v1b1.ContainerProjection{
					"web": {
						Image: "nginx:1.27", Command: []string{"nginx"}, Args: []string{"-g", "daemon off;"},
						Env: []v1b1.EnvProjection{
							{Name: "MODE", Value: ptr.To("prod")},
							{Name: "DB_HOST", From: &v1b1.BindingOutputSource{BindingKey: "db", OutputKey: "host"}},
							{Name: "DB_PASSWORD", From: &v1b1.BindingOutputSource{BindingKey: "db", OutputKey: "password"}},
						},
						Files:   []v1b1.ContainerFile{{Target: "/etc/motd", Content: ptr.To("hello")}},
						Volumes: []v1b1.ContainerVolume{{Target: "/data", Source: "cache.data", ReadOnly: true}},
						Resources: &v1b1.ContainerResources{
							Requests: &v1b1.ResourceAmounts{CPU: "250m", Memory: "128Mi"},
							Limits:   &v1b1.ResourceAmounts{CPU: "1", Memory: "256Mi"},
						},
						LivenessProbe: &v1b1.ContainerProbe{HTTPGet: &v1b1.HTTPGetProbe{Path: "/healthz", Port: 8080, Scheme: "HTTP",
							HTTPHeaders: []v1b1.HTTPHeader{{Name: "X-Probe", Value: "1"}}}},
						ReadinessProbe: &v1b1.ContainerProbe{Exec: &v1b1.ExecProbe{Command: []string{"true"}}},
					},
					"sidecar": {Image: "busybox:1.36"},
				},
				Service: &v1b1.ServiceProjection{
					Annotations: map[string]string{"svc": "y"},
					Ports: map[string]v1b1.ServicePort{
						"web":     {Port: 80, TargetPort: 8080, Protocol: "TCP"},
						"metrics": {Port: 9090, Protocol: "TCP"},
					},
				},
			},
		},
	}
	bindings := map[string]*v1b1.ResourceBinding{"db": {Status: v1b1.ResourceBindingStatus{Outputs: &v1b1.BindingOutputs{
		Metadata:    map[string]string{"host": "db.team-a.svc"},
		Credentials: &v1b1.CredentialsReference{SecretRef: &v1b1.SecretKeyReference{Name: "db-credentials"}},
	}}}}
	return plan, bindings
}

// The runtime's manifests are pinned byte for byte (testdata/runtime-*.json): the builders it
// shares with the tenant-compute provider must not change what it applies, or every plan in a
// running platform would be applied again.
func TestRuntimeManifests(t *testing.T) {
	kube := kubefake.NewClientset()
	factory := kubeinformers.NewSharedInformerFactory(kube, 0)
	apps, core := factory.Apps().V1(), factory.Core().V1()
	rt := New(kube, apps.Deployments().Lister(), core.Services().Lister(), core.Secrets().Lister())
	plan, bindings := runtimePlan()
	if _, err := rt.Apply(context.Background(), plan, bindings); err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	for _, a := range kube.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok {
			got[a.GetResource().Resource] = p.GetPatch()
		}
	}
	for _, resource := range []string{"deployments", "services", "secrets"} {
		want, err := os.ReadFile(filepath.Join("testdata", "runtime-"+resource+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var gotDoc, wantDoc interface{}
		if err := json.Unmarshal(got[resource], &gotDoc); err != nil {
			t.Fatalf("%s: %v", resource, err)
		}
		if err := json.Unmarshal(want, &wantDoc); err != nil {
			t.Fatalf("%s golden: %v", resource, err)
		}
		if !reflect.DeepEqual(gotDoc, wantDoc) {
			t.Errorf("%s applied:\n%s\nwant:\n%s", resource, got[resource], want)
		}
	}
}

// A resource amount that is not a quantity is the workload's error, not a crash.
func TestRuntimeRefusesAmountsThatAreNotQuantities(t *testing.T) {
	kube := kubefake.NewClientset()
	factory := kubeinformers.NewSharedInformerFactory(kube, 0)
	apps, core := factory.Apps().V1(), factory.Core().V1()
	rt := New(kube, apps.Deployments().Lister(), core.Services().Lister(), core.Secrets().Lister())
	plan, bindings := runtimePlan()
	web := plan.Spec.Projection.Containers["web"]
	web.Resources.Limits.Memory = "lots"
	plan.Spec.Projection.Containers["web"] = web
	status, err := rt.Apply(context.Background(), plan, bindings)
	if err == nil || status.Reason != v1b1.ReasonProjectionError {
		t.Fatalf("Apply = %+v, %v; want a ProjectionError", status, err)
	}
	for _, a := range kube.Actions() {
		if a.GetResource().Resource == "deployments" {
			t.Errorf("applied a Deployment: %v", a)
		}
	}
}

// Every step of provisioning reports one message, so that a plan's Ready condition (and the
// Workload's copy) is written once for RuntimeProvisioning, not once per step; the state
// tells the steps apart.
func TestRuntimeProvisioningHasOneMessage(t *testing.T) {
	plan, _ := runtimePlan()
	deployment := func(generation, observed int64, updated, available int32) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: plan.Namespace, Name: plan.Name, Generation: generation},
			Spec:   appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: observed, UpdatedReplicas: updated, AvailableReplicas: available}}
	}
	states := map[string]*appsv1.Deployment{
		"not made yet":            nil,
		"spec not observed":       deployment(2, 1, 2, 0),
		"replicas being replaced": deployment(1, 1, 1, 0),
		"updated, none available": deployment(1, 1, 2, 0),
	}
	seen := map[string]bool{}
	for name, d := range states {
		kube := kubefake.NewClientset()
		factory := kubeinformers.NewSharedInformerFactory(kube, 0)
		apps, core := factory.Apps().V1(), factory.Core().V1()
		if d != nil {
			if err := apps.Deployments().Informer().GetIndexer().Add(d); err != nil {
				t.Fatal(err)
			}
		}
		rt := New(kube, apps.Deployments().Lister(), core.Services().Lister(), core.Secrets().Lister())
		st, err := rt.status(plan)
		if err != nil || st.Ready || st.Reason != v1b1.ReasonRuntimeProvisioning {
			t.Errorf("%s: status %+v, %v; want RuntimeProvisioning", name, st, err)
			continue
		}
		seen[st.Message] = true
	}
	if len(seen) != 1 || !seen["The workload is being materialized."] {
		t.Errorf("messages while provisioning: %v, want one", seen)
	}
}
