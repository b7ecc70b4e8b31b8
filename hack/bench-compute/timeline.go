package main

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/plinth-dev/plinth/internal/benchfloor"
	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
)

// Stages of a tenant on its way to Ready, as its objects record them (to the second).
var stages = []string{"TenantCompute created", "provisioned (provisionedAt)", "Deployment created", "Deployment Available", "TenantCompute Ready"}

// timeline is when each tenant reached each stage; a stage not recorded is the zero time.
type timeline map[string][]time.Time

// readTimeline reads the stages of the TenantComputes in team-a and their Deployments.
func readTimeline(ctx context.Context, plinth clientset.Interface, kube kubernetes.Interface) (timeline, error) {
	tcs, err := plinth.ComputeV1alpha1().TenantComputes("team-a").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	deployments, err := kube.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelTenantID})
	if err != nil {
		return nil, err
	}
	return buildTimeline(tcs.Items, deployments.Items), nil
}

func buildTimeline(tcs []v1alpha1.TenantCompute, deployments []appsv1.Deployment) timeline {
	byTenant := map[string]*appsv1.Deployment{}
	for i := range deployments {
		byTenant[deployments[i].Labels[v1alpha1.LabelTenantID]] = &deployments[i]
	}
	out := timeline{}
	for i := range tcs {
		tc := &tcs[i]
		times := make([]time.Time, len(stages))
		times[0] = tc.CreationTimestamp.Time
		if pr := tc.Status.ProvisionResult; pr != nil && pr.ProvisionedAt != nil {
			times[1] = pr.ProvisionedAt.Time
		}
		if d := byTenant[tc.Spec.TenantID]; d != nil {
			times[2] = d.CreationTimestamp.Time
			for _, c := range d.Status.Conditions {
				if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
					times[3] = c.LastTransitionTime.Time
				}
			}
		}
		if c := meta.FindStatusCondition(tc.Status.Conditions, v1alpha1.ConditionReady); c != nil && c.Status == metav1.ConditionTrue {
			times[4] = c.LastTransitionTime.Time
		}
		out[tc.Name] = times
	}
	return out
}

// String summarizes the timeline: when the tenants reached each stage, and how long the
// controller took from an Available Deployment to a Ready TenantCompute.
func (t timeline) String() string {
	return benchfloor.StageTable(stages, t, [][2]int{{3, 4}})
}
