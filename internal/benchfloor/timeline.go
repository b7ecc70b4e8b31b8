package benchfloor

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Quantiles formats the median, 90th percentile and maximum (nearest rank).
func Quantiles(v []float64) string {
	if len(v) == 0 {
		return fmt.Sprintf("%8s %8s %8s", "-", "-", "-")
	}
	sort.Float64s(v)
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(v)))) - 1
		return v[min(max(i, 0), len(v)-1)]
	}
	return fmt.Sprintf("%8.0f %8.0f %8.0f", at(0.5), at(0.9), v[len(v)-1])
}

// DeploymentTimeline summarizes when the floor's Deployments were created and became
// Available, in seconds after start (the floor's first apply): median, 90th percentile, last.
func DeploymentTimeline(deployments []appsv1.Deployment, start time.Time) string {
	var created, available []float64
	for i := range deployments {
		d := &deployments[i]
		created = append(created, d.CreationTimestamp.Sub(start).Seconds())
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
				available = append(available, c.LastTransitionTime.Sub(start).Seconds())
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-30s %8s %8s %8s %8s\n", "stage (s after the first apply)", "objects", "p50", "p90", "last")
	fmt.Fprintf(&b, "%-30s %8d %s\n", "Deployment created", len(created), Quantiles(created))
	fmt.Fprintf(&b, "%-30s %8d %s\n", "Deployment Available", len(available), Quantiles(available))
	return b.String()
}
