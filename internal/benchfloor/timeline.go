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

// StageTable summarizes when the objects of a run reached each of stages: times[name][i] is
// when object name reached stages[i], the zero time if it did not. For each stage it gives how
// many objects reached it and when, in seconds after the earliest first stage (median, 90th
// percentile, last); then, for each step {from, to}, the seconds each object took from one
// stage to the other. A stage named with " (last)" is the last of several objects per
// object (the last binding of a Workload); step labels leave that out.
func StageTable(stages []string, times map[string][]time.Time, steps [][2]int) string {
	var start time.Time
	for _, t := range times {
		if len(t) > 0 && !t[0].IsZero() && (start.IsZero() || t[0].Before(start)) {
			start = t[0]
		}
	}
	stepLabel := func(s [2]int) string {
		return strings.TrimSuffix(stages[s[0]], " (last)") + " → " + strings.TrimSuffix(stages[s[1]], " (last)")
	}
	// The label column is as wide as its longest label, so that the columns line up whatever
	// the stages are called.
	width := len("stage (s after the first create)")
	for _, s := range stages {
		width = max(width, len(s))
	}
	for _, s := range steps {
		width = max(width, len([]rune(stepLabel(s))))
	}
	reached := func(i int) []time.Time {
		var out []time.Time
		for _, t := range times {
			if i < len(t) && !t[i].IsZero() {
				out = append(out, t[i])
			}
		}
		return out
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-*s %8s %8s %8s %8s\n", width, "stage (s after the first create)", "count", "p50", "p90", "last")
	for i, stage := range stages {
		var offsets []float64
		for _, t := range reached(i) {
			offsets = append(offsets, t.Sub(start).Seconds())
		}
		fmt.Fprintf(&b, "%-*s %8d %s\n", width, stage, len(offsets), Quantiles(offsets))
	}
	if len(steps) == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, "%-*s %8s %8s %8s %8s\n", width, "step (s per object)", "count", "p50", "p90", "max")
	for _, s := range steps {
		var d []float64
		for _, t := range times {
			if max(s[0], s[1]) < len(t) && !t[s[0]].IsZero() && !t[s[1]].IsZero() {
				d = append(d, t[s[1]].Sub(t[s[0]]).Seconds())
			}
		}
		// %-*s pads by bytes; the arrow is three bytes and one column wide.
		label := stepLabel(s)
		fmt.Fprintf(&b, "%-*s %8d %s\n", width+len(label)-len([]rune(label)), label, len(d), Quantiles(d))
	}
	return b.String()
}
