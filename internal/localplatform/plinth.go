package localplatform

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/plinth-dev/plinth/pkg/oci/registryauth"
	"github.com/plinth-dev/plinth/pkg/pki"
)

// APIServices are the APIService objects plinth-apiserver serves, one per group/version.
var APIServices = []string{"v1b1.score.dev", "v1alpha1.governance.plinth.dev", "v1alpha1.platform.plinth.dev", "v1alpha1.compute.plinth.dev",
	"v1alpha1.gitops.plinth.dev", "v1alpha1.infrastructure.ontai.dev"}

// StartPlinth starts plinth-apiserver and waits until its APIServices answer through
// kube-apiserver and its OpenAPI is served there.
func (p *Platform) StartPlinth(ctx context.Context) error {
	serving := pki.PairIn(p.pkiDir, "plinth-serving")
	// Audited with the policy of artifacts/deploy, into AuditLogPath.
	audit, err := p.auditArgs()
	if err != nil {
		return err
	}
	p.plinth, err = p.run("plinth-apiserver", p.plinthReady, append([]string{
		"--etcd-servers", p.EtcdURL(),
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(p.cfg.PlinthPort),
		"--tls-cert-file", serving.Cert, "--tls-private-key-file", serving.Key,
		"--kubeconfig", p.plinthKubeconfig(),
		"--authentication-kubeconfig", p.plinthKubeconfig(),
		"--authorization-kubeconfig", p.plinthKubeconfig(),
		"--encryption-key-file", p.EncryptionKeyFile(),
		"--approver-groups", ApproverGroup,
	}, append(audit, p.cfg.PlinthArgs...)...)...)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, "plinth-apiserver's APIServices", 90*time.Second, p.plinth, p.plinthReady); err != nil {
		return err
	}
	// The aggregated OpenAPI appears shortly after the APIService turns Available; kubectl
	// explain and server-side apply need it.
	return waitFor(ctx, "plinth-apiserver's OpenAPI", 60*time.Second, p.plinth, p.openAPIServed(
		"/openapi/v3/apis/score.dev/v1b1", "/openapi/v3/apis/governance.plinth.dev/v1alpha1", "/openapi/v3/apis/platform.plinth.dev/v1alpha1",
		"/openapi/v3/apis/compute.plinth.dev/v1alpha1", "/openapi/v3/apis/gitops.plinth.dev/v1alpha1",
		"/openapi/v3/apis/infrastructure.ontai.dev/v1alpha1"))
}

// StopPlinth stops plinth-apiserver only.
func (p *Platform) StopPlinth() {
	p.plinth.Stop(30 * time.Second)
	p.plinth = nil
}

// StartController starts plinth-controller (with leader election) as the controller's
// service account, and waits until it serves its health port. Several may run; one leads.
func (p *Platform) StartController() error {
	address := fmt.Sprintf("127.0.0.1:%d", p.cfg.ControllerPort)
	args, err := p.controllerArgs(address)
	if err != nil {
		return err
	}
	if p.controller, err = p.run("plinth-controller", listening(address), args...); err != nil {
		return err
	}
	return waitFor(context.Background(), "plinth-controller", 30*time.Second, p.controller, listening(address))
}

// controllerArgs is plinth-controller's command line, serving its health port on address.
func (p *Platform) controllerArgs(address string) ([]string, error) {
	// The registries' data lives in the platform directory, so that it outlives
	// plinth-controller and the platform's restarts as registry:3's volume would.
	args := []string{"--kubeconfig", p.Kubeconfig(ControllerUser), "--bind-address", address,
		"--encryption-key-file", p.EncryptionKeyFile(), "--registry-volume-dir", p.RegistryVolumeDir()}
	if p.cfg.ProvisionersConfig != "" {
		args = append(args, "--provisioners-config", p.cfg.ProvisionersConfig)
	}
	// The CRDs hack/build-tools.sh copied from Flux's modules, with which plinth-controller
	// installs Flux on Clusters with spec.gitOps.installFlux, as an image would ship them.
	fluxCRDs, err := filepath.Abs(p.fluxCRDsDir())
	if err != nil {
		return nil, err
	}
	args = append(args, "--flux-manifests-dir", fluxCRDs)
	return append(args, p.cfg.ControllerArgs...), nil
}

// RegistryVolumeDir is where plinth-controller keeps the OCI registries' data
// (--registry-volume-dir): <platform dir>/registries, absolute as the flag requires (the
// platform directory may be given relative to the working directory).
func (p *Platform) RegistryVolumeDir() string {
	dir := filepath.Join(p.cfg.Dir, "registries")
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// RegistryCredential is the write credential of Cluster local's registry, which
// plinth-controller creates in the registry's data directory when the registry first starts
// (an error before): the registry takes pushes only with it. Cluster local's OCIRegistry is
// named after the Cluster in plinth-system, and its volume is <namespace>-<name>. Tests and
// tools that push to the registry as plinth-controller does use it; it is readable only by the
// user the platform runs as.
func (p *Platform) RegistryCredential() (registryauth.Credential, error) {
	return registryauth.Read(filepath.Join(p.RegistryVolumeDir(), "plinth-system-"+LocalCluster))
}

// StopController stops plinth-controller.
func (p *Platform) StopController() {
	p.controller.Stop(20 * time.Second)
	p.controller = nil
}

// KillController kills plinth-controller without letting it release its lease, as a crash
// would, and leaves it down.
func (p *Platform) KillController() {
	p.controller.Kill()
	p.controller = nil
}

// ControllerURL is plinth-controller's health and metrics address.
func (p *Platform) ControllerURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d", p.cfg.ControllerPort)
}
