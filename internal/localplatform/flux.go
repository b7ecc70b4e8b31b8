package localplatform

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/pkg/gitops/fluxinstall"
)

// Flux on the local platform: Flux's source-controller and kustomize-controller, built from
// their Go modules (hack/build-tools.sh), run as processes against the local kube-apiserver,
// the way they run as Deployments in flux-system on a real cluster. Cluster "local" has engine
// Flux, so OCIArtifacts delivered to it are pulled from its registry by these controllers.
const (
	// FluxNamespace is Flux's runtime namespace: its leader-election Leases and, by default,
	// the OCIRepositories and Kustomizations plinth-controller creates.
	FluxNamespace = fluxinstall.Namespace
	// FluxUser is the identity both controllers authenticate as; it is in system:masters (see
	// Identities), as powerful as the cluster-admin binding of Flux's own install.
	FluxUser = "flux"
)

// FluxControllers are the Flux controllers the platform runs, in start order: those
// plinth-controller installs on clusters too.
var FluxControllers = fluxinstall.Controllers

// fluxCRDsDir is where hack/build-tools.sh puts each controller's CRDs and version.
func (p *Platform) fluxCRDsDir() string { return filepath.Join(p.cfg.BinDir, "..", "flux-crds") }

// installFlux installs Flux's CRDs, its namespace and
// what plinth-controller needs of Flux on Cluster local (as the plinth:targets group), and waits
// until the CRDs are established: the controllers exit when a kind they watch is not served.
func (p *Platform) installFlux(ctx context.Context) error {
	var manifest strings.Builder
	var crds []string
	for _, controller := range FluxControllers {
		docs, names, err := fluxCRDs(filepath.Join(p.fluxCRDsDir(), controller), controller)
		if err != nil {
			return err
		}
		manifest.WriteString(docs)
		for _, name := range names {
			crds = append(crds, "crd/"+name)
		}
	}
	fmt.Fprintf(&manifest, `apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
---
# plinth-controller, as a member of plinth:targets, finds Flux (its CRDs, Leases and
# Deployments), and creates, follows and deletes the OCIRepositories and Kustomizations that
# deliver OCIArtifacts, and annotates them for ReconciliationRequests.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: plinth:target-flux
rules:
- apiGroups: [source.toolkit.fluxcd.io]
  resources: [ocirepositories]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [kustomize.toolkit.fluxcd.io]
  resources: [kustomizations]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [apiextensions.k8s.io]
  resources: [customresourcedefinitions]
  verbs: [get, list, watch]
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, list, watch]
- apiGroups: [apps]
  resources: [deployments]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: plinth:target-flux
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: plinth:target-flux}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: "plinth:targets"}
`, FluxNamespace)
	if err := p.kubectlStdin(ctx, manifest.String(), "apply", "--server-side", "--force-conflicts", "-f", "-"); err != nil {
		return err
	}
	return p.kubectl(ctx, append([]string{"wait", "--for=condition=Established", "--timeout=60s"}, crds...)...)
}

// fluxCRDs reads a controller's CRDs from dir (its *.yaml files and VERSION) and returns them
// as one multi-document manifest, labelled as Flux's release manifests label them:
// app.kubernetes.io/component=<controller> and app.kubernetes.io/version=<version>. Outside
// the cluster there is no Deployment whose image tells the version; plinth-controller reads
// these labels instead. names are the CRDs' names.
func fluxCRDs(dir, controller string) (manifest string, names []string, err error) {
	missing := fmt.Errorf("%s's CRDs are missing under %s (hack/build-tools.sh %s writes them)", controller, dir, controller)
	version, err := os.ReadFile(filepath.Join(dir, "VERSION"))
	if err != nil || strings.TrimSpace(string(version)) == "" {
		return "", nil, missing
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return "", nil, missing
	}
	sort.Strings(files)
	var b strings.Builder
	for _, f := range files {
		crd, err := fluxinstall.ReadCRD(f)
		if err != nil {
			return "", nil, err
		}
		labels := crd.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[fluxinstall.LabelComponent] = controller
		labels[fluxinstall.LabelVersion] = strings.TrimSpace(string(version))
		labels[fluxinstall.LabelPartOf] = "flux"
		crd.SetLabels(labels)
		out, err := crd.MarshalJSON()
		if err != nil {
			return "", nil, err
		}
		// JSON is YAML: kubectl reads the documents as they are.
		b.Write(out)
		b.WriteString("\n---\n")
		names = append(names, crd.GetName())
	}
	return b.String(), names, nil
}

// fluxAddrs are the loopback addresses of the Flux controllers: each one's health endpoint,
// and source-controller's artifact server, from which kustomize-controller fetches what
// source-controller pulled.
type fluxAddrs struct {
	health  map[string]string
	storage string
}

// startFlux starts Flux's controllers as the flux identity, with leader election, as they
// run in a cluster (their Leases in flux-system are how plinth-controller finds them), on
// free loopback ports. It does not wait: fluxReady tells when they serve.
func (p *Platform) startFlux() error {
	ports, err := FreePorts(len(FluxControllers)+1, p.configuredPorts()...)
	if err != nil {
		return err
	}
	p.flux = fluxAddrs{health: map[string]string{}, storage: "127.0.0.1:" + strconv.Itoa(ports[len(FluxControllers)])}
	storage := filepath.Join(p.cfg.Dir, "flux", "source-controller")
	if err := os.MkdirAll(storage, 0o755); err != nil {
		return err
	}
	env := []string{"KUBECONFIG=" + p.Kubeconfig(FluxUser), "RUNTIME_NAMESPACE=" + FluxNamespace}
	for i, controller := range FluxControllers {
		health := "127.0.0.1:" + strconv.Itoa(ports[i])
		p.flux.health[controller] = health
		// Kubernetes' own lease timings rather than Flux's 35s/30s/5s: a controller that crashed
		// is replaced within 15 seconds instead of 35.
		args := []string{"--enable-leader-election", "--leader-election-lease-duration=15s", "--leader-election-renew-deadline=10s",
			"--leader-election-retry-period=2s", "--metrics-addr=0", "--health-addr=" + health, "--log-level=info"}
		if controller == "source-controller" {
			args = append(args, "--storage-path="+storage, "--storage-addr="+p.flux.storage, "--storage-adv-addr="+p.flux.storage)
		}
		proc, err := p.runEnv(controller, env, healthy(health), args...)
		if err != nil {
			return err
		}
		p.fluxProcs = append(p.fluxProcs, proc)
	}
	return nil
}

// fluxReady waits until every Flux controller's health endpoint answers.
func (p *Platform) fluxReady(ctx context.Context) error {
	for i, controller := range FluxControllers {
		if err := waitFor(ctx, controller, 60*time.Second, p.fluxProcs[i], healthy(p.flux.health[controller])); err != nil {
			return err
		}
	}
	return nil
}

// healthy is a check that passes once a controller-runtime health endpoint at addr reports
// ready.
func healthy(addr string) func(context.Context) error {
	client := &http.Client{Timeout: time.Second}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s/readyz answered %s", addr, resp.Status)
		}
		return nil
	}
}

// FluxPID is the process id of a Flux controller (see FluxControllers), 0 while it is down.
func (p *Platform) FluxPID(controller string) int {
	for i, c := range FluxControllers {
		if c == controller && i < len(p.fluxProcs) {
			return p.fluxProcs[i].PID()
		}
	}
	return 0
}
