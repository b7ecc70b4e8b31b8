package v1alpha1

import "github.com/plinth-dev/plinth/pkg/apis/common/conditions"

// Condition types of a Cluster, written by plinth-controller's probes and read by
// plinth-apiserver's placement of governed VMs. Two controllers write them: the prober
// (CredentialsValid, Reachable, KubeVirtAvailable) and the GitOps controller (FluxAvailable).
const (
	// ConditionCredentialsValid says whether the stored kubeconfig decrypts and loads.
	ConditionCredentialsValid = "CredentialsValid"
	// ConditionReachable says whether the cluster's API server answered and is ready.
	ConditionReachable = "Reachable"
	// ConditionKubeVirtAvailable says whether KubeVirt serves VirtualMachines on the cluster.
	ConditionKubeVirtAvailable = "KubeVirtAvailable"
	// ConditionFluxAvailable says whether Flux's source-controller and kustomize-controller
	// serve the cluster (engine Flux only).
	ConditionFluxAvailable = "FluxAvailable"
)

// Reasons of the CredentialsValid condition. The ones other than Loaded also name the event
// of a Cluster whose phase becomes UNKNOWN because its credentials cannot be used.
const (
	// ReasonLoaded: the kubeconfig decrypts and loads.
	ReasonLoaded = "Loaded"
	// ReasonUnknownEncryptionKey: the key that sealed the kubeconfig is not in
	// plinth-controller's key file (or it has none).
	ReasonUnknownEncryptionKey = "UnknownEncryptionKey"
	// ReasonDecryptionFailed: the sealed kubeconfig does not open with its key.
	ReasonDecryptionFailed = "DecryptionFailed"
	// ReasonInvalidKubeconfig: the decrypted kubeconfig is not one Plinth uses.
	ReasonInvalidKubeconfig = "InvalidKubeconfig"
)

// Reasons of the Reachable and KubeVirtAvailable conditions.
const (
	// ReasonReady: the API server answers and is ready (Reachable True).
	ReasonReady = "Ready"
	// ReasonNotReady: the API server answers but its /readyz does not (Reachable False).
	ReasonNotReady = "NotReady"
	// ReasonUnreachable: the cluster does not answer: no connection, no name, or no answer in
	// time. Also FluxAvailable's reason when the cluster could not be asked about Flux, and
	// the event of a Cluster whose phase becomes UNREACHABLE.
	ReasonUnreachable = "Unreachable"
	// ReasonCredentialsRejected: the API server refuses the kubeconfig's credentials.
	ReasonCredentialsRejected = "CredentialsRejected"
	// ReasonProbeFailed: the API server, or reading KubeVirt, answered with an error.
	ReasonProbeFailed = "ProbeFailed"
	// ReasonNoCredentials: the cluster was not probed because its credentials cannot be used
	// (CredentialsValid False says why).
	ReasonNoCredentials = "NoCredentials"
	// ReasonDeployed: KubeVirt is deployed (KubeVirtAvailable True).
	ReasonDeployed = "Deployed"
	// ReasonNotInstalled: KubeVirt is not installed on the cluster.
	ReasonNotInstalled = "NotInstalled"
	// ReasonNotDeployed: KubeVirt is installed but not (yet) in its Deployed phase.
	ReasonNotDeployed = "NotDeployed"
	// ReasonForbidden: the cluster's credentials may not read what the probe or the detection
	// of Flux reads (KubeVirtAvailable, FluxAvailable).
	ReasonForbidden = "Forbidden"
)

// Reasons of the events recorded when a Cluster's phase changes (with ReasonUnreachable and,
// for UNKNOWN, the CredentialsValid reason).
const (
	// ReasonHealthy: the cluster answers and is healthy (phase HEALTHY).
	ReasonHealthy = "Healthy"
	// ReasonUnhealthy: the cluster answers but is not ready, or refuses the credentials
	// (phase UNHEALTHY).
	ReasonUnhealthy = "Unhealthy"
)

// Reasons of the FluxAvailable condition (with ReasonUnreachable and ReasonForbidden).
const (
	// ReasonFluxRunning: Flux's source-controller and kustomize-controller serve the cluster
	// (FluxAvailable True).
	ReasonFluxRunning = "FluxRunning"
	// ReasonFluxNotInstalled: a CRD of Flux's OCIRepository or Kustomization is missing or
	// does not serve v1.
	ReasonFluxNotInstalled = "FluxNotInstalled"
	// ReasonFluxNotRunning: Flux's CRDs are there, a controller of it is not serving.
	ReasonFluxNotRunning = "FluxNotRunning"
	// ReasonFluxInstalling: plinth-controller applied Flux's objects (installFlux) and waits
	// until its CRDs are established and its Deployments Available.
	ReasonFluxInstalling = "FluxInstalling"
	// ReasonFluxInstallFailed: applying Flux's objects failed.
	ReasonFluxInstallFailed = "FluxInstallFailed"
	// ReasonFluxInstallUnavailable: installFlux is set but plinth-controller has no Flux
	// manifests (--flux-manifests-dir).
	ReasonFluxInstallUnavailable = "FluxInstallUnavailable"
)

// Reasons of events only.
const (
	// ReasonRegistryConflict: an OCIRegistry of the Cluster's name that the Cluster does not
	// own is in the way of the registry registryEnabled asks for.
	ReasonRegistryConflict = "RegistryConflict"
)

// Reasons is every reason platform.plinth.dev's conditions and events carry, and which of them
// need the owner's attention.
var Reasons = conditions.Declare(GroupName,
	conditions.Normal(
		ReasonLoaded,
		ReasonReady, ReasonNoCredentials, ReasonDeployed, ReasonNotInstalled, ReasonNotDeployed,
		ReasonHealthy,
		ReasonFluxRunning, ReasonFluxInstalling,
	),
	conditions.Warning(
		// DecryptionFailed and InvalidKubeconfig were recorded as Normal events before the
		// group declared its reasons: a kubeconfig that cannot be used needs its owner.
		ReasonUnknownEncryptionKey, ReasonDecryptionFailed, ReasonInvalidKubeconfig,
		ReasonNotReady, ReasonUnreachable, ReasonCredentialsRejected, ReasonProbeFailed, ReasonForbidden,
		ReasonUnhealthy,
		ReasonFluxNotInstalled, ReasonFluxNotRunning, ReasonFluxInstallFailed, ReasonFluxInstallUnavailable,
		ReasonRegistryConflict,
	),
)
