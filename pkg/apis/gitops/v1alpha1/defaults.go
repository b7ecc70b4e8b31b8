package v1alpha1

import (
	"net"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/gitops"
)

// DefaultReconciliationTimeout is how long a ReconciliationRequest's targets have unless it says.
const DefaultReconciliationTimeout = 5 * time.Minute

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}

// SetDefaults_OCIRegistrySpec fills the endpoint from the port and the port from the endpoint,
// so that either is enough.
func SetDefaults_OCIRegistrySpec(obj *OCIRegistrySpec) {
	if obj.Endpoint == "" && obj.Port != 0 {
		obj.Endpoint = net.JoinHostPort("localhost", strconv.Itoa(int(obj.Port)))
	}
	if obj.Port == 0 && obj.Endpoint != "" {
		if _, port, err := net.SplitHostPort(obj.Endpoint); err == nil {
			if n, err := strconv.ParseInt(port, 10, 32); err == nil {
				obj.Port = int32(n)
			}
		}
	}
}

// SetDefaults_OCIArtifactSpec names the repository after the artifact and tags the version as
// itself; '+' (semver build metadata) is not allowed in a tag and becomes '_', as Helm does.
func SetDefaults_OCIArtifactSpec(obj *OCIArtifactSpec) {
	if obj.Repository == "" {
		obj.Repository = obj.Name
	}
	if obj.Tag == "" && obj.Version != "" {
		obj.Tag = gitops.DefaultTag(obj.Version)
	}
}

// SetDefaults_ArtifactTarget puts Flux objects in flux-system, applies the whole artifact and
// prunes.
func SetDefaults_ArtifactTarget(obj *ArtifactTarget) {
	if obj.Namespace == "" {
		obj.Namespace = DefaultFluxNamespace
	}
	if obj.Path == "" {
		obj.Path = DefaultPath
	}
	if obj.Prune == nil {
		obj.Prune = ptr.To(true)
	}
}

// SetDefaults_ReconciliationRequestSpec makes a request Manual with a 5 minute timeout. The
// request time is the creation time, set by the server.
func SetDefaults_ReconciliationRequestSpec(obj *ReconciliationRequestSpec) {
	if obj.Mode == "" {
		obj.Mode = ReconciliationModeManual
	}
	if obj.Timeout == nil {
		obj.Timeout = &metav1.Duration{Duration: DefaultReconciliationTimeout}
	}
}

// SetDefaults_ReconciliationTarget puts Flux targets in flux-system.
func SetDefaults_ReconciliationTarget(obj *ReconciliationTarget) {
	if obj.Namespace == "" && (obj.Kind == TargetKindOCIRepository || obj.Kind == TargetKindKustomization) {
		obj.Namespace = DefaultFluxNamespace
	}
}
