// Package benchharness is what the end-to-end benchmarks (hack/bench-workloads,
// hack/bench-compute, hack/bench-gitops, hack/bench-packs) share: a fresh local platform tuned
// for measuring, a process's CPU time and peak memory from /proc, creates by parallel clients,
// a watch that waits until N objects are ready, milestones of a round watched before its clock
// starts, and the request counts of kube-apiserver and the reconcile counts of
// plinth-controller from their metrics.
package benchharness
