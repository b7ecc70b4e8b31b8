package main

import (
	"io"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// TestHelmInstallAndUpgrade runs the chart through Helm's own install and upgrade actions
// against a fake cluster: the chart's kubeVersion accepts the cluster, the manifests sort and
// build, NOTES.txt renders, and an upgrade to the HA profile replaces the bundled etcd's single
// member with three. (The fake has no REST client, so lookup finds nothing here;
// TestUpgradeReusesSecrets covers the reuse.)
func TestHelmInstallAndUpgrade(t *testing.T) {
	cfg := &action.Configuration{
		Releases:     storage.Init(driver.NewMemory()),
		KubeClient:   &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: Capabilities,
		Log:          t.Logf,
	}
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace = Release.Name, Release.Namespace
	rel, err := install.Run(loadChart(t), parseValues(t, "image: {tag: v0.4.0}"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"plinth-apiserver (2 replicas)", "plinth-controller (2, leader-elected)", "bundled (1 member(s)", "plinth-encryption-keys"} {
		if !strings.Contains(rel.Info.Notes, want) {
			t.Errorf("NOTES lack %q:\n%s", want, rel.Info.Notes)
		}
	}
	if !strings.Contains(rel.Manifest, "image: ghcr.io/plinth-dev/plinth-apiserver:v0.4.0") {
		t.Error("the manifest lacks the plinth-apiserver image of image.tag")
	}

	upgrade := action.NewUpgrade(cfg)
	upgrade.Namespace = Release.Namespace
	rel, err = upgrade.Run(Release.Name, loadChart(t), valuesFile(t, "values-ha.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if rel.Version != 2 || !strings.Contains(rel.Manifest, "plinth-etcd-2=http://plinth-etcd-2.plinth-etcd.plinth-system.svc:2380") {
		t.Errorf("revision %d: the upgraded manifest lacks the third etcd member", rel.Version)
	}
}
