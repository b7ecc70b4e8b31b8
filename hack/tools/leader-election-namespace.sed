# Applied by hack/build-tools.sh to controller-runtime's pkg/leaderelection/leader_election.go when it
# builds Flux's controllers (on a copy under _output/flux-build; the module cache is left as it is).
# controller-runtime finds the namespace of its leader-election Lease only in the file a pod gets,
# /var/run/secrets/kubernetes.io/serviceaccount/namespace, and Flux has no flag for it: outside a
# pod, leader election fails. With this, it falls back to RUNTIME_NAMESPACE, which Flux's
# Deployments set to the pod's own namespace, so the Lease is where it would be in a cluster.
/return "", fmt.Errorf("not running in-cluster, please specify LeaderElectionNamespace")/i\
		if ns := os.Getenv("RUNTIME_NAMESPACE"); ns != "" {\
			return ns, nil\
		}
