// Package gitops holds what GitOps OCI delivery shares between plinth-apiserver and
// plinth-controller: manifests (parsing and validating the objects an OCIArtifact packages) and
// delivery (the contract of the engines that apply a pushed artifact to a target Cluster).
package gitops
