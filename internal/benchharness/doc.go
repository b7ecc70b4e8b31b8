// Package benchharness is what the end-to-end benchmarks (hack/bench-workloads,
// hack/bench-compute) share: a fresh local platform tuned for measuring, a process's CPU time
// and peak memory from /proc, creates by parallel clients, a watch that waits until N objects
// are ready, and the request counts of kube-apiserver and the reconcile counts of
// plinth-controller from their metrics.
package benchharness
