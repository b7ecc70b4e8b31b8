package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// helmInstall is one `helm install` done with the Helm SDK as the helm command does it.
type helmInstall struct {
	// kubeconfig is the kubeconfig file of the cluster.
	kubeconfig string
	// discoveryCache is the directory of the cached discovery (kubectl's and helm's
	// ~/.kube/cache), shared by the installs of one run as it is by one user's commands.
	discoveryCache string
	// dir holds this install's Helm settings and repository cache: the chart is pulled again.
	dir string
	// qps and burst are the client-side rate limits of Helm's Kubernetes client.
	qps   float32
	burst int
	// chartRef is oci://<registry>/charts/bench; version the chart version; namespace the
	// release namespace, created by the install; release the release name.
	chartRef, version, namespace, release string
}

// helmTimes is how long the parts of an install took.
type helmTimes struct {
	// pulled: setup, then the chart located, pulled from the registry and loaded.
	pulled time.Duration
	// installed: pulled, then action.Install run to its end (Wait false): the release is
	// deployed.
	installed time.Duration
}

// settings are the helm command's settings (cli.New, which reads HELM_* from the
// environment) with the benchmark's kubeconfig, rate limits, namespace and files.
func (h helmInstall) settings() *cli.EnvSettings {
	s := cli.New()
	s.KubeConfig = h.kubeconfig
	s.QPS, s.BurstLimit = h.qps, h.burst
	s.SetNamespace(h.namespace)
	s.RepositoryCache = filepath.Join(h.dir, "repository")
	s.RepositoryConfig = filepath.Join(h.dir, "repositories.yaml")
	s.RegistryConfig = filepath.Join(h.dir, "registry.json")
	if flags, ok := s.RESTClientGetter().(*genericclioptions.ConfigFlags); ok {
		cache := h.discoveryCache
		flags.CacheDir = &cache
	}
	return s
}

// run installs the release as `helm install <release> <chartRef> --version <version>
// --namespace <namespace> --create-namespace --plain-http` does: settings, an
// action.Configuration with the secret storage driver, the registry client, the chart located
// (pulled) and loaded, then action.Install with Wait false. The clock runs from the setup.
func (h helmInstall) run(ctx context.Context) (helmTimes, *release.Release, error) {
	start := time.Now()
	settings := h.settings()
	cfg := new(action.Configuration)
	if err := cfg.Init(settings.RESTClientGetter(), settings.Namespace(), "secret", func(string, ...interface{}) {}); err != nil {
		return helmTimes{}, nil, fmt.Errorf("helm: %w", err)
	}
	rc, err := registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptCredentialsFile(settings.RegistryConfig),
		registry.ClientOptWriter(io.Discard))
	if err != nil {
		return helmTimes{}, nil, fmt.Errorf("helm: %w", err)
	}
	cfg.RegistryClient = rc
	install := action.NewInstall(cfg)
	install.SetRegistryClient(rc)
	install.ReleaseName, install.Namespace, install.CreateNamespace = h.release, h.namespace, true
	install.Version, install.PlainHTTP = h.version, true
	install.Wait = false
	path, err := install.ChartPathOptions.LocateChart(h.chartRef, settings)
	if err != nil {
		return helmTimes{}, nil, fmt.Errorf("helm: locating %s %s: %w", h.chartRef, h.version, err)
	}
	ch, err := loader.Load(path)
	if err != nil {
		return helmTimes{}, nil, fmt.Errorf("helm: loading %s: %w", path, err)
	}
	var t helmTimes
	t.pulled = time.Since(start)
	rel, err := install.RunWithContext(ctx, ch, nil)
	if err != nil {
		return helmTimes{}, nil, fmt.Errorf("helm: installing %s into %s: %w", h.release, h.namespace, err)
	}
	t.installed = time.Since(start)
	if rel.Info == nil || rel.Info.Status != release.StatusDeployed {
		return helmTimes{}, nil, fmt.Errorf("helm: release %s/%s is not deployed: %+v", h.namespace, h.release, rel.Info)
	}
	return t, rel, nil
}

// newHelmDir makes a fresh directory for one install's Helm files under parent.
func newHelmDir(parent, release string) (string, error) {
	dir := filepath.Join(parent, release)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, nil
}
