package integration

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// TestWorkloadTakesOverNothing runs the local platform: a Workload named like a Deployment,
// Service or route Ingress someone else made in its namespace is refused with a message naming
// that object, which is left unchanged and survives the Workload's deletion (the garbage
// collector would delete it with the Workload had the runtime made the plan its controller).
// Once the object in the way is gone, the Workload goes on without waiting for a resync.
func TestWorkloadTakesOverNothing(t *testing.T) {
	p := framework.StartLocalPlatform(t)
	ctx := context.Background()
	adminCfg, err := p.AdminConfig()
	if err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(adminCfg)
	plinth := clientset.NewForConfigOrDie(adminCfg).ScoreV1b1()
	const ns = "team-a"
	alice := func(stdin string, args ...string) {
		t.Helper()
		if out, err := framework.KubectlStdin(p.Kubeconfig("alice"), stdin, args...); err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	workload := func(name, resources string) string {
		return fmt.Sprintf(`apiVersion: score.dev/v1b1
kind: Workload
metadata: {name: %s}
spec:
  containers:
    main:
      image: registry.example.com/%s:2
      files:
      - target: /etc/app.conf
        content: "mode: new"
  service:
    ports:
      web: {port: 80, targetPort: 8080}
%s`, name, name, resources)
	}
	runtimeRefused := func(msg string) func(w *v1b1.Workload) (bool, string) {
		return func(w *v1b1.Workload) (bool, string) {
			c := meta.FindStatusCondition(w.Status.Conditions, v1b1.ConditionRuntimeReady)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1b1.ReasonProjectionError && c.Message == msg, fmt.Sprintf("%+v", c)
		}
	}
	ready := func(w *v1b1.Workload) (bool, string) {
		return meta.IsStatusConditionTrue(w.Status.Conditions, v1b1.ConditionReady), fmt.Sprintf("%+v", w.Status.Conditions)
	}
	labels := map[string]string{"app": "legacy"}
	pod := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "legacy", Image: "registry.example.com/legacy:1"}}}}

	t.Run("a Deployment someone else made is neither changed nor deleted with the workload", func(t *testing.T) {
		legacy, err := kube.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "legacy", Labels: labels},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: pod},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		alice(workload("legacy", ""), "apply", "-f", "-")
		waitForWorkload(t, plinth, ns, "legacy", 60*time.Second, runtimeRefused(`Deployment "legacy" already exists and is not managed by this workload.`))
		unchanged := func(when string) {
			t.Helper()
			live, err := kube.AppsV1().Deployments(ns).Get(ctx, "legacy", metav1.GetOptions{})
			switch {
			case err != nil:
				t.Fatalf("%s: the Deployment: %v", when, err)
			case live.UID != legacy.UID || live.Generation != legacy.Generation || len(live.OwnerReferences) != 0 ||
				!reflect.DeepEqual(live.Labels, legacy.Labels) || live.Spec.Template.Spec.Containers[0].Image != "registry.example.com/legacy:1":
				t.Errorf("%s: the Deployment changed: %+v", when, live.ObjectMeta)
			}
		}
		unchanged("refused")
		// Nothing else of the workload was applied either.
		if _, err := kube.CoreV1().Secrets(ns).Get(ctx, "legacy-files", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("files Secret: %v, want none", err)
		}
		if _, err := kube.CoreV1().Services(ns).Get(ctx, "legacy", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("Service: %v, want none", err)
		}

		alice("", "delete", "workload", "legacy", "-n", ns)
		waitForCondition(t, 120*time.Second, func() (bool, string) {
			_, err := plinth.WorkloadPlans(ns).Get(ctx, "legacy", metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
		// The garbage collector removes a deleted plan's dependents within moments; give it
		// time to show that the Deployment is none of them.
		time.Sleep(5 * time.Second)
		unchanged("after the workload was deleted")
	})

	t.Run("a Service in the way refuses the workload until it is gone", func(t *testing.T) {
		if _, err := kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "api", Labels: labels},
			Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 81, TargetPort: intstr.FromInt32(81)}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		alice(workload("api", ""), "apply", "-f", "-")
		waitForWorkload(t, plinth, ns, "api", 60*time.Second, runtimeRefused(`Service "api" already exists and is not managed by this workload.`))
		if _, err := kube.AppsV1().Deployments(ns).Get(ctx, "api", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("Deployment: %v, want none while the Service is in the way", err)
		}
		// Its deletion wakes the plan: well within the informer resync (10 minutes).
		if err := kube.CoreV1().Services(ns).Delete(ctx, "api", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitForWorkload(t, plinth, ns, "api", 60*time.Second, ready)
		svc, err := kube.CoreV1().Services(ns).Get(ctx, "api", metav1.GetOptions{})
		if err != nil || len(svc.OwnerReferences) != 1 || svc.OwnerReferences[0].Kind != "WorkloadPlan" {
			t.Errorf("the workload's own Service: %v, %v", svc, err)
		}
	})

	t.Run("a route's Ingress someone else made is neither changed nor deleted", func(t *testing.T) {
		legacy, err := kube.NetworkingV1().Ingresses(ns).Create(ctx, &networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Name: "site-route", Labels: labels},
			Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "legacy.example.com", IngressRuleValue: networkingv1.IngressRuleValue{
				HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix),
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "legacy", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		alice(workload("site", `  resources:
    route: {type: route, params: {host: site.example.com, port: 80}}
`), "apply", "-f", "-")
		const msg = `Ingress "site-route" already exists and was not created for resource "route".`
		waitForWorkload(t, plinth, ns, "site", 60*time.Second, func(w *v1b1.Workload) (bool, string) {
			c := meta.FindStatusCondition(w.Status.Conditions, v1b1.ConditionBindingsReady)
			refused := c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1b1.ReasonBindingFailed &&
				len(w.Status.Bindings) == 1 && w.Status.Bindings[0].Message == msg
			return refused, fmt.Sprintf("%+v %+v", c, w.Status.Bindings)
		})
		unchanged := func(when string) {
			t.Helper()
			live, err := kube.NetworkingV1().Ingresses(ns).Get(ctx, "site-route", metav1.GetOptions{})
			switch {
			case err != nil:
				t.Fatalf("%s: the Ingress: %v", when, err)
			case live.UID != legacy.UID || live.Generation != legacy.Generation || len(live.OwnerReferences) != 0 ||
				!reflect.DeepEqual(live.Labels, legacy.Labels) || live.Spec.Rules[0].Host != "legacy.example.com":
				t.Errorf("%s: the Ingress changed: %+v %+v", when, live.ObjectMeta, live.Spec.Rules)
			}
		}
		unchanged("refused")
		alice("", "delete", "workload", "site", "-n", ns)
		waitForCondition(t, 120*time.Second, func() (bool, string) {
			_, err := plinth.ResourceBindings(ns).Get(ctx, "site-route", metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
		time.Sleep(5 * time.Second)
		unchanged("after the workload was deleted")
	})
}
