// Package kubernetes is the `kubernetes` compute provider, in both of its roles: the Score
// runtime (Runtime: a WorkloadPlan becomes a Deployment, a Service when ports are declared, and
// a Secret for files, in the workload's namespace, all owned by the plan, which the Workload
// owns) and the tenant-compute provider (Provider: a TenantCompute becomes a Deployment, a
// Service and an Ingress in namespace tenant-<tenantID>). Both build their objects with the
// same builders and apply them with server-side apply through the same applier, which skips
// an apply when nothing changed since the last one.
package kubernetes
