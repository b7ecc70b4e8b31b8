package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/registry"

	"github.com/plinth-dev/plinth/internal/localplatform"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/oci/registryauth"
)

// registerEdge registers the second cluster as Cluster name with GitOps engine Kubectl, unless
// a Cluster of that name exists (what its admin changed since is kept).
func registerEdge(ctx context.Context, platform, edge *localplatform.Platform, bin, name string) error {
	kubeconfig, err := edge.AdminTargetKubeconfig()
	if err != nil {
		return err
	}
	manifest, err := localplatform.GitOpsClusterManifest(name, "A second cluster of the local platform (its own etcd, kube-apiserver and kwok), delivered to by server-side apply.",
		kubeconfig, platformv1alpha1.ClusterGitOps{Engine: platformv1alpha1.GitOpsEngineKubectl})
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "kubectl"), "--kubeconfig", platform.AdminKubeconfig(), "create", "-f", "-")
	cmd.Stdin = strings.NewReader(manifest)
	if out, err := cmd.CombinedOutput(); err != nil && !strings.Contains(string(out), "AlreadyExists") {
		// kubectl's message names the object, never the kubeconfig.
		return fmt.Errorf("registering Cluster %s: %v\n%s", name, err, out)
	}
	return nil
}

// pushDemoChart packages the chart in dir with the Helm SDK and pushes it to the local
// registry as oci://<endpoint>/charts/<name>:<version>, once the registry answers (plinth-
// controller starts it after the platform is up). Pushing the same chart again is harmless.
func pushDemoChart(ctx context.Context, endpoint string, credential func() (registryauth.Credential, error), dir string) (string, error) {
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "plinth-chart-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	archive, err := chartutil.Save(ch, tmp)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(archive)
	if err != nil {
		return "", err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get("http://" + endpoint + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the registry on %s did not answer within two minutes", endpoint)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	// The registry takes pushes only with its credential, which plinth-controller wrote beside
	// the registry's storage before the registry answered.
	cred, err := credential()
	if err != nil {
		return "", fmt.Errorf("reading the registry's credential: %w", err)
	}
	client, err := registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptCredentialsFile(os.DevNull),
		registry.ClientOptBasicAuth(cred.Username, cred.Password))
	if err != nil {
		return "", err
	}
	ref := fmt.Sprintf("%s/charts/%s:%s", endpoint, ch.Metadata.Name, ch.Metadata.Version)
	if _, err := client.Push(data, ref); err != nil {
		return "", err
	}
	return "oci://" + ref, nil
}
